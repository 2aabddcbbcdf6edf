"""The archive's speed: a guild with 10,000 archived games, its leaderboards and statistics,
and the picture of a 10-city game of 1,000 players.

1. Fills a fresh database with ``--games`` (default 10,000) finished games of one
   guild, each archived the way the bot archives a game that has just ended
   (one transaction: the archive rows, the per-player figures, the openskill
   ratings). The games are 50 real games of 16 players in 2 cities, played to
   the end by a seeded driver and replayed, their players drawn each time from
   the guild's 400 members.
2. Times what ``/mafia top`` (its three boards and the server's sides and statuses) and
   ``/mafia stats`` do to answer (the storage queries and the text), p50 and p99 of 300 runs each, on that database.
3. Times ``mafia-bot rebuild-stats`` (every figure and rating again from the archive).
4. Plays a 10-city game of 1,000 players to its end, archives it and times
   drawing its picture (median of 5), with its size in pixels and bytes.

Run: ``python benchmarks/archive_bench.py [--games N]``
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.archive import build_archive, rate_game, rebuild_stats  # noqa: E402
from bot.picture import UPLOAD_LIMIT, render_png  # noqa: E402
from bot.storage import ArchivedGame, Storage  # noqa: E402
from cogs.history import MIN_GAMES, TOP, stats_lines, top_lines  # noqa: E402
from tests.archive_play import crowd_game, source_of  # noqa: E402

GUILD = 4242
MEMBERS = 400
TEMPLATES = 50


def relabel(template: ArchivedGame, game_id: int, members: list[str]) -> ArchivedGame:
    """The same game played by other members of the guild."""
    seat = dict(zip([p.player for p in template.players], members, strict=False))
    return dataclasses.replace(
        template,
        game_id=game_id,
        guild_id=GUILD,
        names={seat[p]: f"Игрок {seat[p]}" for p in seat},
        players=[
            dataclasses.replace(p, player=seat[p.player], name=f"Игрок {seat[p.player]}")
            for p in template.players
        ],
        deaths=[dataclasses.replace(d, player=seat[d.player]) for d in template.deaths],
        votes=[
            dataclasses.replace(v, voter=seat[v.voter], candidate=seat[v.candidate])
            for v in template.votes
        ],
        last_words=[],
    )


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def fill(storage: Storage, games: int) -> float:
    templates = []
    for seed in range(TEMPLATES):
        game, log = crowd_game(2, 8, seed, maniac=seed % 3 == 0)
        templates.append(build_archive(source_of(game, log, game_id=seed + 1, guild_id=GUILD)))
    rng = random.Random(7)
    members = [str(10_000 + i) for i in range(MEMBERS)]
    # the archive's rows name real games: make the games table hold them
    async with storage.transaction() as db:
        await db.executemany(
            "INSERT INTO games (id, guild_id, host_id, state, created_at, lobby) VALUES (?, ?, 1, 'over', 0, '{}')",
            [(n, GUILD + 1000) for n in range(1, games + 1)],
        )
    start = time.perf_counter()
    for number in range(1, games + 1):
        archived = relabel(templates[number % TEMPLATES], number, rng.sample(members, 16))
        await storage.archive_game(archived, rate=rate_game)
    return time.perf_counter() - start


async def time_commands(storage: Storage, runs: int) -> tuple[list[float], list[float]]:
    rows = await storage.leaderboard(GUILD, "rating", limit=MEMBERS)
    players = [row.player for row in rows]
    top, stats = [], []
    for index in range(runs):
        start = time.perf_counter()
        boards = {
            by: await storage.leaderboard(
                GUILD, by, limit=TOP, min_games=MIN_GAMES if by == "win_rate" else 1
            )
            for by in ("wins", "win_rate", "rating")
        }
        text = "\n".join(top_lines("ru", boards, MIN_GAMES, await storage.guild_results(GUILD)))
        top.append(time.perf_counter() - start)
        assert "1." in text and "Чаще всех побеждает" in text
        start = time.perf_counter()
        found = await storage.player_stats(GUILD, players[index % len(players)])
        text = "\n".join(stats_lines("ru", f"<@{players[index % len(players)]}>", found))
        stats.append(time.perf_counter() - start)
        assert "Рейтинг" in text
    return top, stats


def time_picture() -> tuple[list[float], int, ArchivedGame, tuple[int, int]]:
    from io import BytesIO

    from PIL import Image

    game, log = crowd_game(10, 100, 3)
    archived = build_archive(source_of(game, log))
    times = []
    png = b""
    for _ in range(5):
        start = time.perf_counter()
        png = render_png(archived, "ru")
        times.append(time.perf_counter() - start)
    size = Image.open(BytesIO(png)).size
    assert len(png) < UPLOAD_LIMIT
    return times, len(png), archived, size


async def main(games: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        storage = await Storage.open(Path(folder) / "bench.sqlite3")
        try:
            took = await fill(storage, games)
            print(
                f"archived {games:,} games of 16 players in one guild ({MEMBERS} members): "
                f"{took:.1f} s, {took / games * 1000:.2f} ms per game (archive + figures + ratings)"
            )
            top, stats = await time_commands(storage, 300)
            print(
                f"/mafia top   (3 boards, sides and statuses, text): p50 {statistics.median(top) * 1000:.2f} ms, "
                f"p99 {percentile(top, 0.99) * 1000:.2f} ms   (goal < 50 ms)"
            )
            print(
                f"/mafia stats (player + text):   p50 {statistics.median(stats) * 1000:.2f} ms, "
                f"p99 {percentile(stats, 0.99) * 1000:.2f} ms   (goal < 50 ms)"
            )
            start = time.perf_counter()
            counted = await rebuild_stats(storage)
            print(
                f"rebuild-stats from the archive: {counted:,} games in {time.perf_counter() - start:.1f} s"
            )
        finally:
            await storage.close()
    times, size, archived, pixels = time_picture()
    print(
        f"picture of a 10-city game of {len(archived.players):,} players, {archived.last_phase}, "
        f"{len(archived.deaths)} deaths: median {statistics.median(times) * 1000:.0f} ms, "
        f"max {max(times) * 1000:.0f} ms, {pixels[0]}x{pixels[1]} px, {size / 1024:.0f} KiB   (goal < 300 ms)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=10_000)
    asyncio.run(main(parser.parse_args().games))
