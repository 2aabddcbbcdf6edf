"""The bot on PostgreSQL: the service benchmark, and two bot processes on two shards of one bot
against one fake Discord and one PostgreSQL.

A PostgreSQL server is started for the run (initdb into a temporary folder, default settings:
every commit flushed to disk; see ``tests/storage/server.py``), each run on an empty schema.

1. ``service``: ``benchmarks/service_bench.py``'s latency run (``--games`` games of 16
   players at once, one command per game every ``--pace`` s, and the floor) with the bot on
   PostgreSQL.
2. ``shards``: two ``python -m bot run`` processes, ``--shards 0 --shard-count 2`` and
   ``--shards 1 --shard-count 2``, same config, same database; the fake in this process
   routes each guild's events to its shard's connection. ``--games`` games (spread over the
   shards by their guild ids) play a day at once: the latency per process. Then the
   cross-process rule: ``--pairs`` pairs of lobbies, one on each process, share one player;
   both hosts press start at the same moment: in every pair exactly one game may start.

Run: ``python benchmarks/postgres_bench.py`` (both, about two minutes), or one of them:
``python benchmarks/postgres_bench.py shards --games 50``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
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
sys.path.insert(0, str(ROOT / "benchmarks"))

import service_bench  # noqa: E402
from service_bench import Bench, percentile  # noqa: E402

from bot.i18n import t  # noqa: E402
from tests.storage.plugin import raw  # noqa: E402
from tests.storage.server import running_server  # noqa: E402

CONFIG = """\
database: {database}
log_level: INFO
timers: {{discussion: 0, voting: 0, night: 0, reminders: []}}
"""


def shard_of(guild_id: int) -> int:
    return (guild_id >> 22) % 2


def figures(latencies: list[float]) -> str:
    return (
        f"n={len(latencies)}: p50 {statistics.median(latencies):.2f} ms, "
        f"p99 {percentile(latencies, 0.99):.2f} ms, max {max(latencies):.2f} ms"
    )


class TwoShards(Bench):
    """service_bench's guilds and games, served by two processes, one per shard."""

    def __init__(self, games: int, players: int, pairs: int) -> None:
        super().__init__(games, players)
        self.processes: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []
        # pairs of guilds, one on each shard, with one member in both
        on: dict[int, list] = {0: [], 1: []}
        while min(len(on[0]), len(on[1])) < pairs:
            owner = self.fake.create_user(f"pairhost{len(on[0]) + len(on[1])}")
            guild = self.fake.create_guild(
                f"Pair {len(on[0]) + len(on[1])}", owner=owner, preferred_locale="ru"
            )
            general = self.fake.create_channel(guild.id, "general")
            members = [self.fake.add_member(guild.id, f"pair{guild.id}p{p}") for p in range(8)]
            on[shard_of(guild.id)].append((guild, owner, general, members))
            time.sleep(0.001)  # the next snowflake's millisecond: the other shard, likely
        self.pairs = list(zip(on[0][:pairs], on[1][:pairs], strict=True))
        for (_, _, _, left), (guild, _, _, right) in self.pairs:
            wanderer = left[0].user
            self.fake.add_member(guild.id, wanderer)
            right[0] = guild.members[wanderer.id]  # he plays in both; the right one's first seat

    async def start_bot(self, folder: Path) -> None:  # type: ignore[override]
        await self.fake.start()
        config = folder / "config.yaml"
        config.write_text(CONFIG.format(database=json.dumps(service_bench.DATABASE)))
        env = {
            **os.environ,
            "DISCORD_TOKEN": self.fake.token,
            "DISCORD_API_BASE": self.fake.api_base,
            "DISCORD_GATEWAY_URL": self.fake.gateway_url,
            "PYTHONPATH": str(ROOT),
        }
        for shard in (0, 1):
            log = folder / f"shard{shard}.log"
            self.logs.append(log)
            with log.open("wb") as out:
                self.processes.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "bot",
                            "run",
                            "--config",
                            str(config),
                            "--shards",
                            str(shard),
                            "--shard-count",
                            "2",
                        ],
                        env=env,
                        cwd=folder,
                        stdout=out,
                        stderr=out,
                    )
                )  # its files (last words) there
        for log in self.logs:
            await self.fake.wait_until(
                lambda log=log: "ready as" in log.read_text(errors="replace") or None,
                60.0,
                f"{log.name}: the bot was never ready",
            )
        await asyncio.sleep(1.0)

    async def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
        await self.fake.close()

    async def race(self, pair: tuple) -> tuple[list[str], list[str]]:
        """Both lobbies fill (the shared player in both), both hosts start at once: their
        answers, and the states of the two games afterwards."""
        for guild, owner, general, _ in pair:
            opened = await self.fake.slash(
                guild.id,
                owner.id,
                "mafia new",
                {},
                channel_id=general.id,
                locale="ru",
                timeout=30.0,
            )
            await opened.wait_original(30.0)
        ids = []
        for guild, owner, general, members in pair:
            lobby = await self.fake.wait_until(
                lambda general=general: next(
                    (
                        m
                        for m in self.fake.messages(general.id)
                        if any(c.startswith("mafia:join:") for c in m.custom_ids())
                    ),
                    None,
                ),
                30.0,
                "no lobby",
            )
            game_id = next(c for c in lobby.custom_ids() if c.startswith("mafia:join:")).split(":")[
                2
            ]
            ids.append(int(game_id))
            for member in members:
                joined = await self.fake.click(
                    lobby, f"mafia:join:{game_id}", member.user.id, timeout=30.0
                )
                assert joined.callback_type == 4, joined.describe()
            await self.slash(guild, owner, "host setup", {"cities": "Верона", "maniac": False})
        started = await asyncio.gather(
            *(self.slash(guild, owner, "host start") for guild, owner, _, _ in pair)
        )
        answers = []
        for result in started:
            await result.wait_original(60.0)
            answers.append(result.text)
        states = [
            row[0]
            for game_id in ids
            for row in await raw(
                service_bench.DATABASE, "SELECT state FROM games WHERE id = ?", (game_id,)
            )
        ]
        return answers, states


async def shards_run(games: int, pace: float, pairs: int) -> None:
    bench = TwoShards(games, 16, pairs)
    per_shard = [sum(1 for g in bench.guilds if shard_of(g[0].id) == s) for s in (0, 1)]
    with tempfile.TemporaryDirectory() as folder:
        try:
            await bench.start_bot(Path(folder))
            began = time.perf_counter()
            for index in range(games):
                await bench.start_game(index, "Верона, Падуя")
            print(
                f"two processes, shards 0 and 1 of 2, one PostgreSQL: started {games} games "
                f"({per_shard[0]} on shard 0, {per_shard[1]} on shard 1) in "
                f"{time.perf_counter() - began:.1f} s"
            )
            floor = await bench.floor(200)
            rng = random.Random(7)
            began = time.perf_counter()
            rounds = await asyncio.gather(
                *(bench.play_day(i, random.Random(rng.random()), pace) for i in range(games))
            )
            elapsed = time.perf_counter() - began
            everything = [ms for game in rounds for ms in game]
            print(
                f"player commands, one every {pace} s per game ({len(everything) / elapsed:.0f}/s "
                f"in all): {figures(everything)}"
            )
            for shard in (0, 1):
                mine = [
                    ms
                    for (guild, *_), game in zip(bench.guilds, rounds, strict=True)
                    if shard_of(guild.id) == shard
                    for ms in game
                ]
                if mine:
                    print(f"  process of shard {shard}: {figures(mine)}")
            print(
                f"floor (/mafia status with no game, shard {shard_of(bench.empty_guild.id)}): "
                f"{figures(floor)}"
            )
            began = time.perf_counter()
            outcomes = await asyncio.gather(*(bench.race(pair) for pair in bench.pairs))
            elapsed = time.perf_counter() - began
            one = sum(1 for _, states in outcomes if sorted(states) == ["lobby", "running"])
            both = sum(1 for _, states in outcomes if states.count("running") == 2)
            refusals = {
                t("ru", "error.player_in_other_game", player=f"<@{left[3][0].user.id}>")
                for left, _ in bench.pairs
            }
            refused = sum(
                1 for answers, _ in outcomes if any(answer in refusals for answer in answers)
            )
            print(
                f"cross-process rule: {len(outcomes)} pairs of lobbies (one per process) sharing a "
                f"player, both started at once: {one} started one game, {both} started both, "
                f"{refused} refusals named the player ({elapsed:.1f} s)"
            )
            for answers, states in outcomes:
                if not any(answer in refusals for answer in answers):
                    print(f"  a pair answered otherwise: {answers} -> {states}")
            rows = await raw(
                service_bench.DATABASE,
                "SELECT COUNT(*), COUNT(DISTINCT user_id) FROM active_players",
            )
            print(f"active_players: {rows[0][0]} rows, {rows[0][1]} players (one row each)")
        finally:
            await bench.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", nargs="*", choices=("service", "shards"), default=[])
    parser.add_argument(
        "--games",
        type=int,
        nargs="+",
        default=None,
        help="games at once (service: one run per number; default 50 200; shards: 50)",
    )
    parser.add_argument(
        "--pace", type=float, default=0.5, help="mean seconds between two commands of one game"
    )
    parser.add_argument("--pairs", type=int, default=20, help="shards: lobby pairs in the race")
    args = parser.parse_args()
    wanted = args.what or ["service", "shards"]
    with running_server(durable=True) as server:
        if "service" in wanted:
            for games in args.games or [50, 200]:
                service_bench.DATABASE = server.new_url()
                print(f"--- service_bench on PostgreSQL, {games} games")
                asyncio.run(service_bench.latency_run(games, args.pace))
        if "shards" in wanted:
            service_bench.DATABASE = server.new_url()
            print("--- two processes on two shards")
            asyncio.run(shards_run((args.games or [50])[0], args.pace, args.pairs))


if __name__ == "__main__":
    main()
