"""Startup with many guilds on one gateway connection, and a restart with many open games.

The fake Discord runs in this process with ``--guilds`` guilds (each an owner,
``--members`` members and a text channel); the bot runs as its own process
(``python -m bot run``) pointed at it. Two runs:

1. a first start on an empty database: the time from launching the process
   to the bot's ``on_ready`` (its "ready as" log line);
2. a restart on a database holding ``--games`` running games (one per guild,
   16 players in 2 cities, a discussion deadline an hour ahead), written
   beforehand through the game service, each with its roles and channels made in the
   fake guild and its living players holding their city's role (so the footprint's
   first pass after the restart asks Discord for the players, as a real restart
   does): the time to every game restored and every deadline re-armed (the bot's
   "restored" log line) and to ready; then ``--watch`` seconds of its member lookups.

``--postgres`` runs both on a PostgreSQL server this script starts (initdb into a temporary
folder; see ``tests/storage/server.py``), ``--database URL`` on an empty one of yours.

For each run it prints what the bot sent on the gateway: the most events
in any 60 s window (Discord closes a connection past 120) and the sends per minute
of each minute, the requests for members (op 8) and the ids they named, the sends
discord.py held (its "is ratelimited, waiting" lines: a voice join held among them),
the connections Discord closed with 4008, RATE_LIMITED answers, IDENTIFYs refused
as too soon, and the longest gap between two heartbeats against the interval Discord
asked for (a late heartbeat gets a connection dropped).

Run: ``python benchmarks/startup_bench.py`` (1,000 games: the member lookups take about 13
minutes at 80 a minute; ``--games 200 --watch 170`` sees a modest restart to its end).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.config import Config, Timers  # noqa: E402
from bot.service import GameService  # noqa: E402
from bot.storage import Storage  # noqa: E402
from rules import RoleCounts, RuleOptions, deal  # noqa: E402
from tests.fakediscord import ChannelType, FakeDiscord  # noqa: E402

CONFIG = """\
database: {database}
log_level: INFO
timers: {{discussion: 3600, voting: 3600, night: 3600, reminders: []}}
"""
OP_HEARTBEAT, OP_REQUEST_MEMBERS = 1, 8
READY = re.compile(r"ready as .* in (\d+) guild")
HELD = re.compile(r"is ratelimited, waiting")
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


def make_footprint(
    fake: FakeDiscord, guild_id: int, players: list[int], cities: list[list[int]] | None = None
) -> dict[str, Any]:
    """A game's roles and channels made in the fake guild, its players holding their city's
    living role: the record's ``channels`` that point at them (``cities``: who sits in Верона
    and in Падуя; the first eight players and the rest by default)."""
    bot_id = fake.state.bot_user.id
    category = fake.create_channel(guild_id, "Мафия", ChannelType.GUILD_CATEGORY).id

    def channel(name: str, kind: int = ChannelType.GUILD_TEXT) -> int:
        return fake.create_channel(guild_id, name, kind, parent_id=category).id

    cities, roles = {}, {}
    seatings = cities or [players[:8], players[8:]]
    for name, seated in zip(("Верона", "Падуя"), seatings, strict=True):
        living = fake.create_role(guild_id, f"{name}: живые").id
        for player in seated:
            fake.add_member_role(guild_id, player, living)
        cities[name] = {"text": channel(name.lower()), "mafia": channel(f"{name.lower()}-мафия")}
        roles[name] = {"living": living}
    return {
        "guild_id": guild_id,
        "bot_id": bot_id,
        "host_id": fake.state.guilds[guild_id].owner_id,
        "category": category,
        "voice": channel("голос", ChannelType.GUILD_VOICE),
        "dead": channel("мёртвые"),
        "log": channel("журнал"),
        "cities": cities,
        "roles": {"dead": fake.create_role(guild_id, "Мёртвые").id, "cities": roles},
        "everyone_reads": True,
    }


async def write_games(
    fake: FakeDiscord, database: Path | str, guilds: list[tuple[int, int, list[int]]], games: int
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
            setup = deal(seats, seed, RoleCounts(maniac=False), RuleOptions())
            footprint = make_footprint(fake, guild_id, players)

            def channels(live: Any, made: dict[str, Any] = footprint) -> list[Any]:
                live.record.channels = made
                return []

            await service.start(live.id, setup, seed, prepare=channels)
    finally:
        await storage.close()


def gateway_figures(fake: FakeDiscord, since: float, held: int) -> str:
    received = [(at, op, d) for at, op, d in fake.gateway.received if at >= since]
    times = [at for at, _, _ in received]
    window = 0
    start = 0
    for end, at in enumerate(times):
        while at - times[start] > 60.0:
            start += 1
        window = max(window, end - start + 1)
    minutes: dict[int, int] = {}
    for at in times:
        minutes[int((at - times[0]) // 60)] = minutes.get(int((at - times[0]) // 60), 0) + 1
    per_minute = [minutes.get(m, 0) for m in range(max(minutes, default=-1) + 1)]
    beats = [at for at, op, _ in received if op == OP_HEARTBEAT]
    gaps = [b - a for a, b in zip(beats, beats[1:], strict=False)]
    interval = fake.gateway.heartbeat_interval_ms / 1000
    requests = [d for _, op, d in received if op == OP_REQUEST_MEMBERS]
    ids = sum(len(d.get("user_ids") or ()) for d in requests if isinstance(d, dict))
    closes = sum(1 for c in fake.gateway.history if c.opened_at >= since and c.close_code == 4008)
    limits = fake.gateway.limits
    beat = (
        f"longest heartbeat gap {max(gaps):.1f} s (interval {interval:.1f} s)"
        if gaps
        else f"{len(beats)} heartbeat(s), no gap to measure"
    )
    return (
        f"gateway: {len(received)} events sent, at most {window} in 60 s (limit 120), "
        f"sends per minute {per_minute}; {len(requests)} member requests (op 8) naming {ids} "
        f"ids; {held} send(s) held by discord.py; {closes} closed with 4008; "
        f"{limits.members_rate_limited} RATE_LIMITED; {limits.identifies_too_soon} IDENTIFY "
        f"too soon; {beat}"
    )


async def run_bot(
    fake: FakeDiscord, folder: Path, *, watch_for: float, database: Path | str
) -> dict[str, float]:
    """Start the bot process; the seconds from launch to 'restored' and 'ready', and the sends
    discord.py held until ``watch_for`` s after ready; stop it."""
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
    figures: dict[str, float] = {"held": 0.0}
    assert process.stderr is not None
    stderr = process.stderr

    async def read_until(done: Callable[[], bool]) -> None:
        while not done():
            line = (await stderr.readline()).decode(errors="replace")
            if not line:
                raise RuntimeError("the bot stopped")
            if HELD.search(line):
                figures["held"] += 1
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

    try:
        await asyncio.wait_for(read_until(lambda: "ready" in figures), 600)
        # keep reading (the pipe must not fill) while the lookups and heartbeats go on
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(read_until(lambda: False), watch_for)
        figures["gateway_since"] = began_gateway
    finally:
        process.terminate()
        await process.wait()
    return figures


async def main_async(
    guilds: int, members: int, games: int, watch_for: float, database: str | None = None
) -> None:
    fake, made = build_fake(guilds, members)
    fake.gateway.heartbeat_interval_ms = min(41250, int(watch_for * 1000 / 2.5))
    await fake.start()
    try:
        with tempfile.TemporaryDirectory() as folder:
            where: Path | str = database or Path(folder) / "bench.sqlite3"
            print(f"database: {'PostgreSQL' if database else 'SQLite'}")
            # (the first start asks for no member: a few heartbeats are all there is to watch)
            first = await run_bot(
                fake, Path(folder), watch_for=min(watch_for, 10.0), database=where
            )
            print(
                f"first start, {guilds} guilds of {members} members: ready in "
                f"{first['ready']:.2f} s ({first['guilds']:.0f} guilds)"
            )
            print("  " + gateway_figures(fake, first["gateway_since"], int(first["held"])))
            await write_games(fake, where, made, games)
            again = await run_bot(fake, Path(folder), watch_for=watch_for, database=where)
            print(
                f"restart with {again['games']:.0f} open games: restored and "
                f"{again['armed']:.0f} deadlines armed {again['restored']:.2f} s after launch "
                f"(restore itself {again['restore_s']:.2f} s); ready in {again['ready']:.2f} s"
            )
            print("  " + gateway_figures(fake, again["gateway_since"], int(again["held"])))
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
        help="seconds to keep the restarted bot connected after ready (its member lookups, "
        "heartbeats); the first start is watched 10 s at most",
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
