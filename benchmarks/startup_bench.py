"""Startup with many guilds on one gateway connection, and a restart with many open games.

The fake Discord runs in this process with ``--guilds`` guilds (each an owner,
``--members`` members and a text channel); the bot runs as its own process
(``python -m bot run``) pointed at it. Two runs:

1. a first start on an empty database: the time from launching the process
   to the bot's ``on_ready`` (its "ready as" log line);
2. a restart on a database holding ``--games`` running games (one per guild,
   16 players in 2 cities, a discussion deadline an hour ahead), written
   beforehand through the game service: the time to every game restored and
   every deadline re-armed (the bot's "restored" log line) and to ready.

``--postgres`` runs both on a PostgreSQL server this script starts (initdb into a temporary
folder; see ``tests/storage/server.py``), ``--database URL`` on an empty one of yours.

For each run it prints what the bot sent on the gateway: the most events
in any 60 s window (Discord closes a connection past 120), the requests for
member lists (op 8), and the longest gap between two heartbeats against the
interval Discord asked for (a late heartbeat gets a connection dropped).

Run: ``python benchmarks/startup_bench.py`` (about a minute).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.config import Config, Timers  # noqa: E402
from bot.service import GameService  # noqa: E402
from bot.storage import Storage  # noqa: E402
from rules import RoleCounts, RuleOptions, deal  # noqa: E402
from tests.fakediscord import FakeDiscord  # noqa: E402

CONFIG = """\
database: {database}
log_level: INFO
timers: {{discussion: 3600, voting: 3600, night: 3600, reminders: []}}
"""
OP_HEARTBEAT, OP_REQUEST_MEMBERS = 1, 8
READY = re.compile(r"ready as .* in (\d+) guild")
RESTORED = re.compile(r"restored (\d+) open game\(s\) in ([\d.]+) s; (\d+) deadline")


def build_fake(guilds: int, members: int) -> tuple[FakeDiscord, list[tuple[int, int, list[int]]]]:
    fake = FakeDiscord(heartbeat_interval_ms=41250)
    made = []
    for g in range(guilds):
        owner = fake.create_user(f"host{g}")
        guild = fake.create_guild(f"Club {g}", owner=owner, preferred_locale="ru")
        fake.create_channel(guild.id, "general")
        ids = [fake.add_member(guild.id, f"g{g}p{p}").user.id for p in range(members)]
        made.append((guild.id, owner.id, ids))
    return fake, made


async def write_games(
    database: Path | str, guilds: list[tuple[int, int, list[int]]], games: int
) -> None:
    """Running games straight through the game service, as a bot would have left them."""
    config = Config(
        database=database, timers=Timers(discussion=3600, voting=3600, night=3600, reminders=())
    )
    storage = await Storage.open(database)
    service = GameService(storage, config)
    try:
        for index, (guild_id, host_id, members) in enumerate(guilds[:games]):
            players = members[:16]
            lobby = {
                "players": [{"id": p, "name": f"p{p}"} for p in players],
                "channel_id": 1,
                "setup": {},
                "rules": {},
                "timers": {},
                "everyone_reads": True,
                "at_end": "keep",
            }
            live = await service.create(guild_id, host_id, lobby)
            seats = {
                "Верона": [str(p) for p in players[:8]],
                "Падуя": [str(p) for p in players[8:]],
            }
            seed = random.Random(index).randrange(2**31)
            setup = deal(seats, seed, RoleCounts(None, None, None, False), RuleOptions())

            def channels(live, base=index * 100):  # ids of channels the bot made for the game
                live.record.channels = {
                    "category": base + 1,
                    "voice": base + 2,
                    "dead": base + 3,
                    "log": base + 4,
                    "cities": {
                        "Верона": {"text": base + 5, "mafia": base + 6},
                        "Падуя": {"text": base + 7, "mafia": base + 8},
                    },
                    "everyone_reads": True,
                }
                return []

            await service.start(live.id, setup, seed, prepare=channels)
    finally:
        await storage.close()


def gateway_figures(fake: FakeDiscord, since: float) -> str:
    received = [(at, op) for at, op, _ in fake.gateway.received if at >= since]
    times = [at for at, _ in received]
    window = 0
    start = 0
    for end, at in enumerate(times):
        while at - times[start] > 60.0:
            start += 1
        window = max(window, end - start + 1)
    beats = [at for at, op in received if op == OP_HEARTBEAT]
    gaps = [b - a for a, b in zip(beats, beats[1:], strict=False)]
    interval = fake.gateway.heartbeat_interval_ms / 1000
    requests = sum(1 for _, op in received if op == OP_REQUEST_MEMBERS)
    beat = (
        f"longest heartbeat gap {max(gaps):.1f} s (interval {interval:.1f} s)"
        if gaps
        else f"{len(beats)} heartbeat(s), no gap to measure"
    )
    return (
        f"gateway: {len(received)} events sent, at most {window} in 60 s (limit 120), "
        f"{requests} member-list requests (op 8), {beat}"
    )


async def run_bot(
    fake: FakeDiscord, folder: Path, *, watch_for: float, database: Path | str
) -> dict[str, float]:
    """Start the bot process; the seconds from launch to 'restored' and 'ready'; stop it."""
    config = folder / "config.yaml"
    config.write_text(CONFIG.format(database=json.dumps(str(database))))
    env = {
        **os.environ,
        "DISCORD_TOKEN": fake.token,
        "DISCORD_API_BASE": fake.api_base,
        "DISCORD_GATEWAY_URL": fake.gateway_url,
        "PYTHONPATH": str(ROOT),
    }
    began_gateway = time.monotonic()
    began = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "run",
        "--config",
        str(config),
        env=env,
        cwd=ROOT,
        stderr=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.DEVNULL,
    )
    figures: dict[str, float] = {}
    assert process.stderr is not None
    try:
        while "ready" not in figures:
            line = (await asyncio.wait_for(process.stderr.readline(), 600)).decode(errors="replace")
            if not line:
                raise RuntimeError("the bot stopped before it was ready")
            if match := RESTORED.search(line):
                figures["restored"] = time.perf_counter() - began
                figures["games"], figures["restore_s"], figures["armed"] = (
                    float(match[1]),
                    float(match[2]),
                    float(match[3]),
                )
            if match := READY.search(line):
                figures["ready"] = time.perf_counter() - began
                figures["guilds"] = float(match[1])
        await asyncio.sleep(watch_for)  # long enough for a heartbeat or two after ready
        figures["gateway_since"] = began_gateway
    finally:
        process.terminate()
        await process.wait()
    return figures


async def main_async(
    guilds: int, members: int, games: int, watch_for: float, database: str | None = None
) -> None:
    fake, made = build_fake(guilds, members)
    fake.gateway.heartbeat_interval_ms = int(watch_for * 1000 / 2.5)
    await fake.start()
    try:
        with tempfile.TemporaryDirectory() as folder:
            where: Path | str = database or Path(folder) / "bench.sqlite3"
            print(f"database: {'PostgreSQL' if database else 'SQLite'}")
            first = await run_bot(fake, Path(folder), watch_for=watch_for, database=where)
            print(
                f"first start, {guilds} guilds of {members} members: ready in "
                f"{first['ready']:.2f} s ({first['guilds']:.0f} guilds)"
            )
            print("  " + gateway_figures(fake, first["gateway_since"]))
            await write_games(where, made, games)
            again = await run_bot(fake, Path(folder), watch_for=watch_for, database=where)
            print(
                f"restart with {again['games']:.0f} open games: restored and "
                f"{again['armed']:.0f} deadlines armed {again['restored']:.2f} s after launch "
                f"(restore itself {again['restore_s']:.2f} s); ready in {again['ready']:.2f} s"
            )
            print("  " + gateway_figures(fake, again["gateway_since"]))
    finally:
        await fake.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--guilds", type=int, default=1000)
    parser.add_argument("--members", type=int, default=20)
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument(
        "--watch",
        type=float,
        default=5.0,
        help="seconds to keep the bot connected after ready (heartbeats)",
    )
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="on a PostgreSQL server started for the run (needs initdb, asyncpg)",
    )
    parser.add_argument("--database", help="on this empty PostgreSQL database (postgresql:// URL)")
    args = parser.parse_args()
    games = min(args.games, args.guilds)
    if args.postgres:
        from tests.storage.server import running_server

        with running_server(durable=True) as server:
            asyncio.run(main_async(args.guilds, args.members, games, args.watch, server.new_url()))
    else:
        asyncio.run(main_async(args.guilds, args.members, games, args.watch, args.database))


if __name__ == "__main__":
    main()
