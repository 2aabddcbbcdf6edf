"""The cost of durable commits and the size of the WAL under sustained load, SQLite.

The game service on a SQLite file in this process (no Discord: the storage is the subject):
``--games`` games of 16 players in their voting, one task per game sending a vote or an unvote
``--pace`` seconds (on average) after its last one was committed, for ``--seconds``; every event is rendered as an outbox
item of some 300 bytes, a snapshot every 50 commands, as the bot does. Each variant is a fresh
file, all in one run:

- ``synchronous``: ``normal`` (the old setting: the WAL reaches the disk at checkpoints) or
  ``full`` (each commit is on the disk when it returns: one fsync per group commit);
- ``checkpoints``: ``old`` (a PASSIVE checkpoint every 10 s, as before: under load it never
  catches up) or ``new`` (every second, copied to the end under the writers' lock when more
  than :data:`bot.storage.sqlite.RESTART_FRAMES` frames remain; ``journal_size_limit``).

Printed per variant: commands a second, a command's commit latency (``apply`` under its game's
lock, p50/p99/max), the WAL's largest size (sampled every 20 ms) and its size at the end, the
database's size.

Run: ``python benchmarks/wal_bench.py`` (four variants of 15 s).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import bot.storage  # noqa: E402
from bot.config import Config, Timers  # noqa: E402
from bot.service import GameService, LiveGame  # noqa: E402
from bot.storage import OutboxItem, Storage  # noqa: E402
from rules import CastVote, Event, Nominate, RuleError, StartVoting, Unvote, deal  # noqa: E402

CITIES = {"A": [f"a{i}" for i in range(8)], "B": [f"b{i}" for i in range(8)]}
MIB = 1024 * 1024


def render(live: LiveGame, events: list[Event]) -> list[OutboxItem]:
    return [
        OutboxItem(
            "send",
            {"channel_id": 1000 + live.id},
            {"content": f"{event.kind}: " + "·" * 280, "allowed_mentions": {"parse": []}},
        )
        for event in events
    ]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def variant(
    folder: Path, games: int, seconds: float, pace: float, synchronous: str, checkpoints: str
) -> str:
    path = folder / f"{synchronous}-{checkpoints}.sqlite3"
    wal = Path(f"{path}-wal")
    if checkpoints == "old":  # every 10 s, PASSIVE alone, no journal_size_limit
        bot.storage.sqlite.CHECKPOINT_SECONDS, bot.storage.sqlite.RESTART_FRAMES = 10.0, 1 << 62
        bot.storage.sqlite.WAL_LIMIT_BYTES = 1 << 62
    else:
        bot.storage.sqlite.CHECKPOINT_SECONDS, bot.storage.sqlite.RESTART_FRAMES = NEW
        bot.storage.sqlite.WAL_LIMIT_BYTES = WAL_LIMIT_BYTES
    storage = await Storage.open(path, synchronous=synchronous)
    service = GameService(storage, Config(database=path, timers=Timers(0, 0, 0, ())))
    service.render = render
    lives = []
    for index in range(games):
        live = await service.create(index + 1, 9, {"players": []})
        await service.start(live.id, deal(CITIES, index), index)
        game = live.game
        assert game is not None
        for players in CITIES.values():
            alive = [p for p in players if game.players[p].alive]
            await service.apply(live.id, Nominate(alive[0], alive[1]), source="player")
        await service.apply(live.id, StartVoting(), source="host")
        lives.append(live)
    latencies: list[float] = []
    largest = 0
    stop = time.monotonic() + seconds

    async def play(live: LiveGame, rng: random.Random) -> None:
        game = live.game
        assert game is not None
        voted: set[str] = set()
        while time.monotonic() < stop:
            voter = rng.choice([p for p in game.players if game.players[p].alive])
            command = (
                Unvote(voter)
                if voter in voted
                else CastVote(voter, rng.choice(sorted(game.nominations[game.players[voter].city])))
            )
            began = time.perf_counter()
            try:
                await service.apply(live.id, command, source="player")
            except RuleError:
                voted.discard(voter)
                continue
            latencies.append((time.perf_counter() - began) * 1000)
            voted.symmetric_difference_update({voter})
            # the next command comes from the network: at least a turn of the loop
            await asyncio.sleep(rng.expovariate(1 / pace) if pace else 0)

    async def sample() -> None:
        nonlocal largest
        while True:
            with_wal = wal.stat().st_size if wal.exists() else 0
            largest = max(largest, with_wal)
            await asyncio.sleep(0.02)

    sampler = asyncio.create_task(sample())
    began = time.monotonic()
    rng = random.Random(7)
    await asyncio.gather(*(play(live, random.Random(rng.random())) for live in lives))
    elapsed = time.monotonic() - began
    sampler.cancel()
    at_end = wal.stat().st_size if wal.exists() else 0
    database = path.stat().st_size
    await storage.close()
    return (
        f"synchronous={synchronous:<6} checkpoints={checkpoints}: {len(latencies) / elapsed:6.0f} commands/s, "
        f"commit p50 {percentile(latencies, 0.5):.1f} ms, p99 {percentile(latencies, 0.99):.1f} ms, "
        f"max {max(latencies):.0f} ms; WAL largest {largest / MIB:.1f} MiB, at the end "
        f"{at_end / MIB:.1f} MiB; database {database / MIB:.1f} MiB"
    )


NEW = bot.storage.sqlite.CHECKPOINT_SECONDS, bot.storage.sqlite.RESTART_FRAMES
WAL_LIMIT_BYTES = bot.storage.sqlite.WAL_LIMIT_BYTES


async def main_async(
    games: int, seconds: float, pace: float, variants: list[tuple[str, str]]
) -> None:
    print(
        f"{games} games voting, each sending its next command {pace} s (on average) after the "
        f"last is committed, {seconds:.0f} s a variant; {os.cpu_count()} CPUs"
    )
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as folder:
        for synchronous, checkpoints in variants:
            print(
                await variant(Path(folder), games, seconds, pace, synchronous, checkpoints),
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument(
        "--pace",
        type=float,
        default=0.25,
        help="mean seconds between two commands of a game (0: none but a turn of the loop)",
    )
    parser.add_argument(
        "--variants",
        default="normal/old,full/old,normal/new,full/new",
        help="synchronous/checkpoints pairs, separated by commas",
    )
    args = parser.parse_args()
    variants = [tuple(pair.split("/")) for pair in args.variants.split(",")]
    asyncio.run(main_async(args.games, args.seconds, args.pace, variants))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
