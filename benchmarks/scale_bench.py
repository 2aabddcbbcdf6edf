"""The moonshot: one process on many guilds and shards with a thousand games at once, a day of
commands, then a restart; and the same over two processes on one PostgreSQL.

The fake Discord runs in this process with ``--guilds`` guilds; ``--games`` of them hold a
running game, written beforehand through the game service with its roles and channels made in
the fake guild (each channel with the overwrites the game declares, as the bot leaves them), of
mixed sizes (8, 16 and 30 players in turn, two cities each). Then:

1. **A bare discord.py client** (``AutoShardedClient`` with the bot's intents, nothing else)
   connects with ``--shards`` shards: its time to ready is the yardstick of the bot's.
2. **The bot** (``python -m bot run --shards 0-N``) starts on the database: its time to every
   game restored and to ready, its resident memory (VmRSS) once ready, and what it sent on the
   gateway (sends a minute, member requests, sends discord.py held, 4008 closes).
3. **The floor**: ``/mafia status`` in guilds with no game, at the day's pace: one lookup, one
   answer, the least a command costs. Alone for ``--floor-seconds`` first, and then as one
   command in five of the day (:data:`FLOOR_SHARE`): the day's p99 is set beside the floor's
   measured at the same moments, on the same load (the machine's other work, a start's passes
   still running, a garbage collection, stall both alike), so the ratio is what a game's
   command costs more than the least one.
4. **A day of commands** at ``--rate`` a second for ``--seconds``: in random game guilds a
   living player nominates another of his city, or asks ``/mafia status``. Latency is the
   fake's (INTERACTION_CREATE to the callback); an interaction Discord would no longer take
   (no callback within 3 s, or a late one refused) is counted as **expired**, never an abort.
   The bot's CPU per command (user + system from ``/proc``).
5. **A restart**: the bot stopped and started again on the same database: restored and ready.

With ``--postgres`` the same runs on a PostgreSQL server this script starts, the shards split
between two processes (``--shards 0-1`` and ``2-3``); their figures are summed (memory) or taken
over both (latencies). Every figure is printed beside its yardstick; the run never stops short
for a slow answer. ``--small`` is the size CI runs (``tests/test_scale_bench.py``).

Run: ``python benchmarks/scale_bench.py`` (10,000 guilds, 4 shards, 1,000 games, 100 commands a
second for 60 s; about ten minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import random
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.service_bench import EXPIRED, latency_ms, percentile  # noqa: E402
from benchmarks.startup_bench import gateway_figures, make_footprint  # noqa: E402
from bot.channels import Layout  # noqa: E402
from bot.config import Config, Timers  # noqa: E402
from bot.footprint.declared import declared  # noqa: E402
from bot.service import GameService  # noqa: E402
from bot.storage import Storage  # noqa: E402
from rules import RoleCounts, RuleOptions, deal  # noqa: E402
from tests.fakediscord import FakeDiscord, InteractionResult  # noqa: E402
from tests.fakediscord.permissions import Overwrite  # noqa: E402

SIZES = (8, 16, 30)
#: the share of the day's commands that are the floor's: measured beside the game's commands
FLOOR_SHARE = 0.2
READY = re.compile(r"ready as .* in (\d+) guild")
RESTORED = re.compile(r"restored (\d+) open game\(s\) in ([\d.]+) s")
HELD = re.compile(r"is ratelimited, waiting")
REPAIRED = re.compile(r"footprint repaired|grants beyond the rules removed")
REFUSED = re.compile(r"refused by Discord")
CONFIG = """\
database: {database}
log_level: INFO
timers: {{discussion: 7200, voting: 7200, night: 7200, reminders: []}}
"""
BARE = """\
import asyncio, os, sys, time
sys.path.insert(0, {root!r})
import discord
from bot.discord_endpoint import point_from_environment
point_from_environment()
began = time.perf_counter()
intents = discord.Intents.none()
intents.guilds = intents.members = intents.voice_states = True
client = discord.AutoShardedClient(intents=intents, shard_count={shards}, chunk_guilds_at_startup=False)
@client.event
async def on_ready():
    print(f"bare ready {{time.perf_counter() - began:.2f}}", flush=True)
    await client.close()
client.run(os.environ["DISCORD_TOKEN"], log_handler=None)
"""


@dataclass
class Game:
    guild: int
    channel: int
    cities: list[list[int]]


@dataclass
class Run:
    """One bot process's figures."""

    ready: float = 0.0
    restored: float = 0.0
    games: int = 0
    held: int = 0
    repaired: int = 0
    """Passes that found something to repair (a restart on what the bot left: none)."""
    refused: int = 0
    """Outbox items Discord refused for good."""
    lines: list[str] = field(default_factory=list)


def build(guilds: int, games: int) -> tuple[FakeDiscord, list[tuple[int, int, int, list[int]]]]:
    fake = FakeDiscord(openapi=None, heartbeat_interval_ms=41250)
    made = []
    for g in range(guilds):
        owner = fake.create_user(f"host{g}")
        guild = fake.create_guild(f"Club {g}", owner=owner, preferred_locale="ru")
        channel = fake.create_channel(guild.id, "general").id
        count = SIZES[g % len(SIZES)] if g < games else 4
        ids = [fake.add_member(guild.id, f"g{g}p{p}").user.id for p in range(count)]
        made.append((guild.id, owner.id, channel, ids))
    return fake, made


async def write_games(
    fake: FakeDiscord, database: Path | str, made: list[tuple[int, int, int, list[int]]], games: int
) -> list[Game]:
    """Running games of mixed sizes through the game service, each with its footprint."""
    config = Config(database=database, timers=Timers(discussion=7200, reminders=()))
    storage = await Storage.open(database)
    service = GameService(storage, config)
    written = []
    try:
        for index, (guild_id, host_id, channel, members) in enumerate(made[:games]):
            half = len(members) // 2
            lobby: Any = {
                "players": [{"id": p, "name": f"p{p}"} for p in members],
                "channel_id": channel,
                "setup": {},
                "rules": {},
                "timers": {},
                "everyone_reads": True,
                "at_end": "keep",
            }
            live = await service.create(guild_id, host_id, lobby)
            cities = [members[:half], members[half:]]
            seats = {"Верона": [str(p) for p in cities[0]], "Падуя": [str(p) for p in cities[1]]}
            seed = random.Random(index).randrange(2**31)
            setup = deal(seats, seed, RoleCounts(maniac=False), RuleOptions())
            made_channels = make_footprint(fake, guild_id, members, cities)

            def channels(live: Any, done: dict[str, Any] = made_channels) -> list[Any]:
                live.record.channels = done
                return []

            await service.start(live.id, setup, seed, prepare=channels)
            started = service.find(live.id)
            assert started is not None and started.game is not None
            # the overwrites and roles as the bot leaves them: a restart finds nothing to repair
            footprint = declared(
                started, started.game, Layout.from_channels(started.record.channels)
            )
            for place in footprint.places:
                fake.state.channel(int(place.id)).overwrites = [
                    Overwrite(int(o.target), o.type, allow=o.allow, deny=o.deny)
                    for o in place.overwrites
                ]
            game_roles = {int(role) for role in footprint.role_ids}
            for seat in footprint.seats:
                for role in set(fake.state.member(guild_id, seat.user).roles) & game_roles:
                    fake.remove_member_role(guild_id, seat.user, role)
                fake.add_member_role(guild_id, seat.user, int(seat.role))
            written.append(Game(guild_id, channel, cities))
    finally:
        await storage.close()
    return written


@contextlib.contextmanager
def uncollected() -> Iterator[None]:
    """No garbage collection in this process while commands are measured: what the fake
    records meanwhile (every call, every message) made each full collection longer than the
    last, 176 to 321 ms every 11 s of the day, each an answer's wait that Discord's servers do
    not add. Reference counting frees the rest; what a cycle holds waits until the end."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        settled()


def settled() -> None:
    """The fake's world, built, is kept out of this process's garbage collections: the fake
    answers in this process, and a full collection walking 10,000 guilds' members, channels and
    recorded calls stood its loop still for 1.4 s twice a minute, every interaction's answer
    waiting meanwhile (what the fake measures, not what the bot did)."""
    gc.collect()
    gc.freeze()


def environment(fake: FakeDiscord) -> dict[str, str]:
    return {
        **os.environ,
        "DISCORD_TOKEN": fake.token,
        "DISCORD_API_BASE": fake.api_base,
        "DISCORD_GATEWAY_URL": fake.gateway_url,
        # the project first; what the caller had after it (a tracer's sitecustomize, say)
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }


async def bare_ready(fake: FakeDiscord, shards: int) -> float:
    """Seconds a bare discord.py client with the bot's intents takes to be ready."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        BARE.format(root=str(ROOT), shards=shards),
        env=environment(fake),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    out, _ = await asyncio.wait_for(process.communicate(), 900)
    found = re.search(r"bare ready ([\d.]+)", out.decode())
    return float(found[1]) if found else float("nan")


class Bot:
    """One ``python -m bot run`` process on a range of shards, its log read as it goes."""

    def __init__(
        self, fake: FakeDiscord, folder: Path, database: Path | str, shards: str, count: int
    ) -> None:
        self.fake, self.shards, self.count = fake, shards, count
        self.config = folder / f"bot-{shards}.yaml"
        self.config.write_text(CONFIG.format(database=json.dumps(str(database))))
        self.process: asyncio.subprocess.Process | None = None
        self.run = Run()
        self.reader: asyncio.Task[None] | None = None
        self.log: Path | None = None
        """Where the process's whole log is kept (``--logs``), or None."""

    async def start(self) -> Run:
        self.run = Run()
        began = time.perf_counter()
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "run",
            "--config",
            str(self.config),
            "--shards",
            self.shards,
            "--shard-count",
            str(self.count),
            env=environment(self.fake),
            cwd=self.config.parent,
            stderr=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.DEVNULL,
        )
        self.reader = asyncio.create_task(self._read(began))
        while not self.run.ready:
            if self.reader.done():
                raise RuntimeError("the bot stopped:\n" + "".join(self.run.lines[-30:]))
            await asyncio.sleep(0.1)
        return self.run

    async def _read(self, began: float) -> None:
        assert self.process is not None and self.process.stderr is not None
        while line := (await self.process.stderr.readline()).decode(errors="replace"):
            self.run.lines.append(line)
            if self.log is not None:
                with self.log.open("a", encoding="utf-8") as kept:
                    kept.write(line)
            del self.run.lines[:-200]
            if HELD.search(line):
                self.run.held += 1
            self.run.repaired += bool(REPAIRED.search(line))
            self.run.refused += bool(REFUSED.search(line))
            if found := RESTORED.search(line):
                self.run.restored, self.run.games = time.perf_counter() - began, int(found[1])
            if READY.search(line):
                self.run.ready = time.perf_counter() - began

    def rss_mib(self) -> float:
        assert self.process is not None
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+)", status)[1]) / 1024  # type: ignore[index]

    def cpu_s(self) -> float:
        assert self.process is not None
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            await self.process.wait()
        if self.reader is not None:
            await self.reader


async def commands(
    fake: FakeDiscord, make: Any, rate: float, seconds: float
) -> tuple[list[tuple[Any, ...]], list[float], int]:
    """``make()`` gives (guild, user, channel, command, options) of one command; they go at
    ``rate`` a second for ``seconds``. The commands sent, the latency of each (ms;
    :data:`EXPIRED` for one Discord would no longer take) and how many expired."""
    made: list[tuple[Any, ...]] = []
    results: list[InteractionResult] = []
    gap, began = 1.0 / rate, time.perf_counter()
    sent = 0
    while time.perf_counter() - began < seconds:
        guild, user, channel, name, options = command = make()
        made.append(command)
        # not waited for: the commands go at the rate whatever the answers take, and one the bot
        # never answers (it heard of it too late for Discord to take an answer) is expired
        results.append(
            await fake.slash(
                guild, user, name, options, channel_id=channel, locale="ru", wait=False
            )
        )
        sent += 1
        await asyncio.sleep(max(0.0, began + sent * gap - time.perf_counter()))
    await asyncio.sleep(3.5)  # what is not answered by now, Discord would no longer take
    latencies = [latency_ms(result) for result in results]
    latencies = [EXPIRED if value > 3000 else value for value in latencies]
    return made, latencies, sum(1 for value in latencies if value == EXPIRED)


def footprint_figures(bots: list[Bot]) -> str:
    """What the start's passes found to repair: a restart on what the bot left finds nothing."""
    repaired = sum(bot.run.repaired for bot in bots)
    refused = sum(bot.run.refused for bot in bots)
    return (
        f"footprint: {repaired} pass(es) found something to repair, {refused} outbox item(s) "
        "refused by Discord"
    )


def shown(latencies: list[float]) -> str:
    kept = [value for value in latencies if value != EXPIRED] or [float("nan")]
    return f"p50 {percentile(kept, 0.5):.1f} ms, p99 {percentile(kept, 0.99):.1f} ms"


def split(shards: int, processes: int) -> list[str]:
    """The shard ranges of ``processes`` processes (``0-1``, ``2-3``)."""
    size = -(-shards // processes)
    return [f"{start}-{min(start + size, shards) - 1}" for start in range(0, shards, size)]


async def start_all(bots: list[Bot]) -> tuple[float, float, int, int]:
    """Start the processes at once (they take turns to IDENTIFY through the database); the
    last ready, the last restored (each from the common launch), the games restored in all,
    the sends held in all."""
    runs = await asyncio.gather(*(bot.start() for bot in bots))
    return (
        max(run.ready for run in runs),
        max(run.restored for run in runs),
        sum(run.games for run in runs),
        sum(run.held for run in runs),
    )


async def main_async(args: argparse.Namespace, database: str | None) -> None:
    fake, made = build(args.guilds, args.games)
    await fake.start()
    processes = 2 if database else 1
    try:
        with tempfile.TemporaryDirectory() as folder:
            where: Path | str = database or Path(folder) / "scale.sqlite3"
            games = await write_games(fake, where, made, args.games)
            sizes = {
                size: sum(1 for g in games if sum(map(len, g.cities)) == size) for size in SIZES
            }
            print(
                f"{args.guilds} guilds on {args.shards} shards, {len(games)} games "
                f"({', '.join(f'{n} of {size}' for size, n in sizes.items())}), "
                f"{'PostgreSQL, 2 processes' if database else 'SQLite, 1 process'}"
            )
            settled()
            bare = await bare_ready(fake, args.shards)
            await asyncio.sleep(5.5)  # its IDENTIFY's turn over: the bot's first is not refused
            bots = [
                Bot(fake, Path(folder), where, part, args.shards)
                for part in split(args.shards, processes)
            ]
            for bot in bots:
                bot.log = Path(args.logs) / f"bot-{bot.shards}.log" if args.logs else None
            since = time.monotonic()
            ready, restored, count, held = await start_all(bots)
            rss = sum(bot.rss_mib() for bot in bots)
            print(
                f"start: ready in {ready:.1f} s (a bare discord.py client: {bare:.1f} s, "
                f"{ready / bare:.2f}x); {count} games restored {restored:.1f} s after launch; "
                f"RSS {rss:.0f} MiB"
            )
            together = f" ({args.shards} connections together: past 120 a minute the fake closes one of its own with 4008)"
            print("  " + gateway_figures(fake, since, held) + together)
            settled()
            idle = [(g, owner, channel, ids) for g, owner, channel, ids in made[args.games :]]
            rng = random.Random(1)

            def floor() -> tuple[int, int, int, str, dict[str, Any]]:
                guild, _, channel, ids = rng.choice(idle)
                return guild, rng.choice(ids), channel, "mafia status", {}

            def play() -> tuple[int, int, int, str, dict[str, Any]]:
                if rng.random() < FLOOR_SHARE:  # the floor, at the same moment and on the same load
                    return floor()
                game = rng.choice(games)
                city = rng.choice(game.cities)
                user, other = rng.sample(city, 2)
                if rng.random() < 0.5:
                    return game.guild, user, game.channel, "mafia status", {}
                return game.guild, user, game.channel, "nominate", {"player": str(other)}

            print(f"floor from {time.time():.1f}", file=sys.stderr, flush=True)
            with uncollected():
                _, alone_ms, alone_expired = await commands(
                    fake, floor, args.rate, args.floor_seconds
                )
            print(
                f"floor alone (/mafia status, no game), {len(alone_ms)} at {args.rate:g}/s: "
                f"{shown(alone_ms)}, {alone_expired} expired"
            )
            cpu = sum(bot.cpu_s() for bot in bots)
            print(f"day from {time.time():.1f}", file=sys.stderr, flush=True)
            fake_cpu, day_began = time.process_time(), time.perf_counter()
            with uncollected():
                sent, all_ms, _ = await commands(fake, play, args.rate, args.seconds)
            fake_busy = (time.process_time() - fake_cpu) / (time.perf_counter() - day_began)
            per = (sum(bot.cpu_s() for bot in bots) - cpu) / max(1, len(all_ms)) * 1000
            quiet = {guild for guild, *_ in idle}
            floor_ms = [ms for (guild, *_), ms in zip(sent, all_ms, strict=True) if guild in quiet]
            day_ms = [
                ms for (guild, *_), ms in zip(sent, all_ms, strict=True) if guild not in quiet
            ]
            expired = sum(1 for value in day_ms if value == EXPIRED)
            floor_expired = sum(1 for value in floor_ms if value == EXPIRED)
            p99, floor_p99 = percentile(day_ms, 0.99), percentile(floor_ms, 0.99)
            # the same past the day's first third: whether a slow tail is the start's, still running
            later = [value for value in day_ms[len(day_ms) // 3 :] if value != EXPIRED]
            later_p99 = percentile(later or [float("nan")], 0.99)
            print(
                f"floor in the day (/mafia status, no game, one command in "
                f"{round(1 / FLOOR_SHARE)}), {len(floor_ms)}: {shown(floor_ms)}, "
                f"{floor_expired} expired"
            )
            print(
                f"day, {len(day_ms)} commands in {len(games)} games ({args.rate:g}/s with the "
                f"floor's): {shown(day_ms)} (p99 {p99 / floor_p99:.2f}x the floor's in the day, "
                f"{p99 / percentile(alone_ms, 0.99):.2f}x the floor's alone; past its first third "
                f"{later_p99:.1f} ms, {later_p99 / floor_p99:.2f}x), {expired} expired; "
                f"{per:.2f} ms of the bot's CPU per command; RSS "
                f"{sum(bot.rss_mib() for bot in bots):.0f} MiB"
            )
            # the fake answers and measures in this process: a busy one delays every command alike
            print(f"  the fake's own CPU over the day: {fake_busy:.0%} of a core")
            print("  " + footprint_figures(bots))
            for bot in bots:
                await bot.stop()
            since = time.monotonic()
            ready, restored, count, held = await start_all(bots)
            print(
                f"restart: {count} games restored {restored:.1f} s after launch; ready in "
                f"{ready:.1f} s; RSS {sum(bot.rss_mib() for bot in bots):.0f} MiB"
            )
            await asyncio.sleep(args.watch)
            print("  " + gateway_figures(fake, since, sum(bot.run.held for bot in bots)) + together)
            print("  " + footprint_figures(bots))
            for bot in bots:
                await bot.stop()
    finally:
        await fake.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--guilds", type=int, default=10_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=100.0, help="commands a second")
    parser.add_argument("--seconds", type=float, default=60.0, help="the day's length")
    parser.add_argument("--floor-seconds", type=float, default=10.0)
    parser.add_argument(
        "--watch", type=float, default=30.0, help="seconds watched after the restart"
    )
    parser.add_argument("--postgres", action="store_true", help="two processes on one PostgreSQL")
    parser.add_argument("--logs", help="a folder to keep each bot process's whole log in")
    parser.add_argument("--small", action="store_true", help="the size CI runs")
    args = parser.parse_args(argv)
    if args.small:
        args.guilds, args.shards, args.games = 120, 2, 30
        args.rate, args.seconds, args.floor_seconds, args.watch = 20.0, 5.0, 3.0, 2.0
    args.games = min(args.games, args.guilds - 10)
    if args.postgres:
        from tests.storage.server import running_server

        with running_server(durable=True) as server:
            asyncio.run(main_async(args, server.new_url()))
    else:
        asyncio.run(main_async(args, None))


if __name__ == "__main__":
    main()
