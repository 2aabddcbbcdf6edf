"""Latency and memory of the bot process, measured through the local fake Discord.

The fake Discord runs in this process; the bot runs as its own process
(``python -m bot run``), pointed at the fake over loopback, exactly as in
production but for the two URLs. Latency is measured by the fake: from the
moment it sends INTERACTION_CREATE on the gateway to the moment the bot's
interaction callback arrives.

1. ``--games 50``: 50 guilds each start a game of 16 players (2 cities);
   then every game plays a day at once (nominations and votes from all 50
   games interleaved) and the latency of each player command is recorded.
   The floor is a trivial command: ``/mafia status`` in a guild with no game
   (one lookup, one answer).
2. ``--memory-games 200``: 200 guilds each start a game of 30 players; the
   bot's resident memory (VmRSS) is read once they all run.

Run: ``python benchmarks/service_bench.py`` (about a minute).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakediscord import FakeDiscord, InteractionResult  # noqa: E402

#: ``--database``: a postgresql:// URL of an empty database instead of a SQLite file
DATABASE: str | None = None
CONFIG = """\
database: {database}
log_level: WARNING
timers: {{discussion: 0, voting: 0, night: 0, reminders: []}}
"""


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def latency_ms(result: InteractionResult) -> float:
    assert result.callback is not None, result.describe()
    return (result.callback.time - result.sent_at) * 1000


class Bench:
    def __init__(self, guilds: int, players: int) -> None:
        self.fake = FakeDiscord()
        self.guilds = []
        for g in range(guilds):
            owner = self.fake.create_user(f"host{g}")
            guild = self.fake.create_guild(f"Club {g}", owner=owner, preferred_locale="ru")
            general = self.fake.create_channel(guild.id, "general")
            members = [self.fake.add_member(guild.id, f"g{g}p{p}") for p in range(players)]
            self.guilds.append((guild, owner, general, members))
        self.empty_guild = self.fake.create_guild("Empty", owner=self.fake.create_user("nobody"))
        self.empty_channel = self.fake.create_channel(self.empty_guild.id, "general")
        self.process: subprocess.Popen[bytes] | None = None

    async def start_bot(self, folder: Path) -> None:
        await self.fake.start()
        config = folder / "config.yaml"
        config.write_text(CONFIG.format(database=DATABASE or folder / "bench.sqlite3"))
        env = {**os.environ, "DISCORD_TOKEN": self.fake.token, "DISCORD_API_BASE": self.fake.api_base,
               "DISCORD_GATEWAY_URL": self.fake.gateway_url, "PYTHONPATH": str(ROOT)}
        command = os.environ.get("BENCH_BOT_COMMAND", f"{sys.executable} -m bot run").split()
        self.process = subprocess.Popen([*command, "--config", str(config)], env=env, cwd=ROOT)
        await self.fake.wait_until(
            lambda: self.fake.calls("PUT", "/applications/{application_id}/commands") or None, 60.0,
            "the bot did not sync its commands")
        await self.fake.wait_for_session()
        await asyncio.sleep(1.0)

    def rss_mib(self) -> float:
        assert self.process is not None
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    async def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        await self.fake.close()

    async def slash(self, guild, user, command, options=None) -> InteractionResult:
        result = await self.fake.slash(guild.id, user.id, command, options or {}, locale="ru",
                                       timeout=30.0)
        await result.wait_callback(30.0)
        return result

    async def start_game(self, index: int, cities: str) -> None:
        guild, owner, general, members = self.guilds[index]
        opened = await self.fake.slash(guild.id, owner.id, "mafia new", {}, channel_id=general.id,
                                       locale="ru", timeout=30.0)
        await opened.wait_original(30.0)
        # the lobby message is posted by the outbox, with the Join button carrying the game's id
        lobby = await self.fake.wait_until(lambda: next(
            (m for m in self.fake.messages(general.id) if any(
                c.startswith("mafia:join:") for c in m.custom_ids())), None), 30.0, "no lobby message")
        game_id = next(c for c in lobby.custom_ids() if c.startswith("mafia:join:")).split(":")[2]
        for member in members:
            await self.fake.click(lobby, f"mafia:join:{game_id}", member.user.id, timeout=30.0)
        await self.slash(guild, owner, "host setup", {"cities": cities, "maniac": False})
        started = await self.slash(guild, owner, "host start")
        await started.wait_original(60.0)
        assert "началась" in started.text, started.text

    async def play_day(self, index: int, rng: random.Random, pace: float) -> list[float]:
        """Nominations then votes of one game; the latency of each command.

        Each game sends a command every ``pace`` seconds on average (people
        type slower than that), so the fake Discord in this process is not
        the bottleneck and the figures are the bot's.
        """
        guild, owner, general, members = self.guilds[index]
        latencies = []
        half = len(members) // 2
        cities = [members[:half], members[half:]]
        for city in cities:
            for nominator in rng.sample(city, 3):
                target = rng.choice(members)
                await asyncio.sleep(rng.uniform(0, 2 * pace))
                result = await self.slash(guild, nominator, "nominate", {"player": str(target.user.id)})
                latencies.append(latency_ms(result))
        await self.slash(guild, owner, "host next")
        for member in members:
            candidate = rng.choice(members)
            await asyncio.sleep(rng.uniform(0, 2 * pace))
            result = await self.slash(guild, member, "vote", {"player": str(candidate.user.id)})
            latencies.append(latency_ms(result))
        return latencies


async def latency_run(games: int, pace: float) -> None:
    bench = Bench(games, 16)
    with tempfile.TemporaryDirectory() as folder:
        try:
            await bench.start_bot(Path(folder))
            began = time.perf_counter()
            for index in range(games):
                await bench.start_game(index, "Верона, Падуя")
            print(f"started {games} games of 16 players in {time.perf_counter() - began:.1f} s")
            floor = []
            for _ in range(300):
                result = await bench.fake.slash(bench.empty_guild.id, bench.empty_guild.owner_id,
                                                "mafia status", {}, locale="ru")
                await result.wait_callback()
                floor.append(latency_ms(result))
            rng = random.Random(7)
            if os.environ.get("BENCH_PYSPY"):  # sample the bot while the games play
                assert bench.process is not None
                subprocess.Popen(["py-spy", "record", "-o", os.environ["BENCH_PYSPY"], "-f", "raw",
                                  "-r", "250", "-d", "7", "-p", str(bench.process.pid)])
            began = time.perf_counter()
            rounds = await asyncio.gather(*(bench.play_day(i, random.Random(rng.random()), pace)
                                            for i in range(games)))
            elapsed = time.perf_counter() - began
            latencies = [ms for game in rounds for ms in game]
            print(f"player commands in {games} concurrent games, one every {pace} s per game: "
                  f"n={len(latencies)} "
                  f"({len(latencies) / elapsed:.0f}/s): p50 {statistics.median(latencies):.2f} ms, "
                  f"p99 {percentile(latencies, 0.99):.2f} ms, max {max(latencies):.2f} ms")
            print(f"floor (/mafia status with no game): n={len(floor)}: "
                  f"p50 {statistics.median(floor):.2f} ms, p99 {percentile(floor, 0.99):.2f} ms")
            print(f"bot RSS with {games} games running: {bench.rss_mib():.0f} MiB")
        finally:
            await bench.stop()


async def memory_run(games: int) -> None:
    bench = Bench(games, 30)
    with tempfile.TemporaryDirectory() as folder:
        try:
            await bench.start_bot(Path(folder))
            idle = bench.rss_mib()
            began = time.perf_counter()
            for index in range(games):
                await bench.start_game(index, "Верона, Падуя, Мантуя")
            print(f"started {games} games of 30 players in {time.perf_counter() - began:.1f} s")
            await asyncio.sleep(2.0)
            print(f"bot RSS: {idle:.0f} MiB idle, {bench.rss_mib():.0f} MiB with {games} games "
                  f"of 30 players running")
        finally:
            await bench.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=50)
    parser.add_argument("--memory-games", type=int, default=200)
    parser.add_argument("--pace", type=float, default=0.5,
                        help="mean seconds between two commands of one game")
    parser.add_argument("--database", help="an empty PostgreSQL database's postgresql:// URL "
                        "(one run per database: use --memory-games 0 with --games)")
    args = parser.parse_args()
    global DATABASE
    DATABASE = args.database
    if args.games:
        asyncio.run(latency_run(args.games, args.pace))
    if args.memory_games:
        asyncio.run(memory_run(args.memory_games))


if __name__ == "__main__":
    main()
