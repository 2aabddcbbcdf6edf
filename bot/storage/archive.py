"""The archive of finished games and the statistics drawn from it."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterable

import aiosqlite

from bot.storage.games import (
    GameQueries,
)
from bot.storage.records import (
    FINISHED,
    SIDE_OF,
    ArchivedDeath,
    ArchivedGame,
    ArchivedLastWord,
    ArchivedPlayer,
    ArchivedSummary,
    ArchivedVote,
    ArchiveSource,
    GameState,
    GuildResults,
    LoggedCommand,
    OutboxItem,
    PlayerStats,
    RateGame,
    Statements,
    _archived_player,
    _dumps,
    _player_stats,
    sql_states,
)


class ArchiveQueries(GameQueries):
    """The archive's queries."""

    async def games_to_archive(self) -> list[tuple[int, bool]]:
        """Finished (dealt) games not archived yet, oldest first: (game id, finished before the
        archive existed)."""
        rows = await self._fetchall(
            "SELECT g.id, b.game_id IS NOT NULL AS backfill FROM games g "
            "LEFT JOIN archive a ON a.game_id = g.id "
            "LEFT JOIN archive_backfill b ON b.game_id = g.id "
            f"WHERE g.state IN ({sql_states(FINISHED)}) AND g.setup IS NOT NULL "
            "AND g.seed IS NOT NULL "
            f"AND a.game_id IS NULL{self._owned('g.')} ORDER BY g.id"
        )
        return [(int(row[0]), bool(row[1])) for row in rows]

    async def archive_source(self, game_id: int) -> ArchiveSource | None:
        """What a game's archive is made of: its record, its log with times, its last words' items."""
        record = await self.game(game_id)
        if record is None:
            return None
        rows = await self._fetchall(
            "SELECT seq, command, source, created_at FROM commands WHERE game_id = ? ORDER BY seq",
            (game_id,),
        )
        voice = await self._fetchall(
            "SELECT id, seq, payload FROM outbox WHERE game_id = ? AND kind = 'voice' ORDER BY id",
            (game_id,),
        )
        return ArchiveSource(
            record=record,
            log=[
                LoggedCommand(
                    row["seq"], json.loads(row["command"]), row["source"], row["created_at"]
                )
                for row in rows
            ],
            voice=[(row["id"], row["seq"], json.loads(row["payload"])) for row in voice],
        )

    async def is_archived(self, game_id: int) -> bool:
        """Whether a game is in the archive."""
        return (
            await self._fetchone("SELECT 1 FROM archive WHERE game_id = ?", (game_id,)) is not None
        )

    async def archive_game(
        self,
        game: ArchivedGame,
        *,
        rate: RateGame,
        outbox: Iterable[OutboxItem] = (),
    ) -> bool:
        """Store a finished game's archive, add it to the figures and store ``outbox``, in one
        transaction. Returns False, changing nothing, when the game is archived already.

        ``rate`` computes the new ratings of the game's players and sides from the stored ones
        (called inside the transaction, only for a game played to the end).
        """
        async with self.transaction(game.game_id) as db:
            async with db.execute(
                "SELECT 1 FROM archive WHERE game_id = ?", (game.game_id,)
            ) as cursor:
                if await cursor.fetchone() is not None:
                    await db.execute(
                        "DELETE FROM archive_backfill WHERE game_id = ?", (game.game_id,)
                    )
                    return False
            await db.execute(INSERT_ARCHIVE, _archive_row(game))
            for sql, rows in _archive_details(game):
                await db.executemany(sql, rows)
            if game.ended == GameState.OVER:
                await self._count_game(db, game.guild_id, game.players, rate)
                await self._count_replaced(db, game.guild_id, game.replaced)
            await self._insert_outbox(db, game.game_id, None, outbox, time.time())
            await db.execute("DELETE FROM archive_backfill WHERE game_id = ?", (game.game_id,))
        return True

    async def _count_replaced(
        self, db: aiosqlite.Connection, guild_id: int, replaced: list[ArchivedPlayer]
    ) -> None:
        """Count the games these players left to a replacement (no game played, no rating)."""
        await db.executemany(
            "INSERT INTO player_stats (guild_id, player, name, games, wins, survived, executed, "
            "votes, votes_mafia, checks, hits, mu, sigma, rating, replaced) "
            "VALUES (?, ?, ?, 0, 0, 0, 0, 0, 0, 0, 0, ?, ?, ?, 1) "
            "ON CONFLICT (guild_id, player) DO UPDATE SET replaced = player_stats.replaced + 1",
            [(guild_id, p.player, p.name, *FRESH, FRESH[0] - 3 * FRESH[1]) for p in replaced],
        )

    async def _count_game(
        self, db: aiosqlite.Connection, guild_id: int, players: list[ArchivedPlayer], rate: RateGame
    ) -> None:
        """Add one game played to the end to the guild's figures and ratings."""
        if not players:
            return
        ids = [p.player for p in players]
        marks = ",".join("?" * len(ids))
        async with db.execute(
            f"SELECT player, mu, sigma FROM player_stats WHERE guild_id = ? AND player IN ({marks})",
            (guild_id, *ids),
        ) as cursor:
            ratings = {row[0]: (row[1], row[2]) for row in await cursor.fetchall()}
        async with db.execute(
            "SELECT side, mu, sigma FROM side_ratings WHERE guild_id = ?", (guild_id,)
        ) as cursor:
            sides = {row[0]: (row[1], row[2]) for row in await cursor.fetchall()}
        new_ratings, new_sides = rate(players, ratings, sides)
        await db.executemany(
            "INSERT INTO player_stats (guild_id, player, name, games, wins, survived, executed, votes, "
            "votes_mafia, checks, hits, mu, sigma, rating) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (guild_id, player) DO UPDATE SET name = excluded.name, "
            "games = player_stats.games + 1, wins = player_stats.wins + excluded.wins, "
            "survived = player_stats.survived + excluded.survived, "
            "executed = player_stats.executed + excluded.executed, "
            "votes = player_stats.votes + excluded.votes, "
            "votes_mafia = player_stats.votes_mafia + excluded.votes_mafia, "
            "checks = player_stats.checks + excluded.checks, hits = player_stats.hits + excluded.hits, "
            "mu = excluded.mu, sigma = excluded.sigma, "
            "rating = excluded.rating",
            [
                (
                    guild_id,
                    p.player,
                    p.name,
                    *p.figures,
                    new_ratings[p.player][0],
                    new_ratings[p.player][1],
                    new_ratings[p.player][0] - 3 * new_ratings[p.player][1],
                )
                for p in players
            ],
        )
        await db.executemany(
            "INSERT INTO player_status_stats (guild_id, player, status, games, wins) VALUES (?, ?, ?, 1, ?) "
            "ON CONFLICT (guild_id, player, status) DO UPDATE SET games = player_status_stats.games + 1, "
            "wins = player_status_stats.wins + excluded.wins",
            [(guild_id, p.player, p.status, p.won) for p in players],
        )
        await db.executemany(
            "INSERT INTO side_ratings (guild_id, side, mu, sigma) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (guild_id, side) DO UPDATE SET mu = excluded.mu, sigma = excluded.sigma",
            [(guild_id, side, mu, sigma) for side, (mu, sigma) in new_sides.items()],
        )

    async def rebuild_stats(self, rate: RateGame, guild_id: int | None = None) -> int:
        """Compute the figures and ratings again from the archive (of one guild, or all), in the
        order games were archived, in one transaction. Returns how many games were counted."""
        where, params = ("WHERE guild_id = ?", (guild_id,)) if guild_id is not None else ("", ())
        counted = 0
        async with self.transaction() as db:
            for table in ("player_stats", "player_status_stats", "side_ratings"):
                await db.execute(f"DELETE FROM {table} {where}", params)
            archive_where = f"WHERE ended = '{GameState.OVER.value}'" + (
                " AND guild_id = ?" if guild_id is not None else ""
            )
            async with db.execute(
                f"SELECT game_id, guild_id FROM archive {archive_where} ORDER BY seq", params
            ) as cursor:
                games = [(row[0], row[1]) for row in await cursor.fetchall()]
            for game_id, guild in games:
                async with db.execute(
                    "SELECT * FROM archive_players WHERE game_id = ? ORDER BY rowid", (game_id,)
                ) as cursor:
                    rows = [_archived_player(row) for row in await cursor.fetchall()]
                players = [p for p in rows if p.replaced_by is None]
                await self._count_game(db, guild, players, rate)
                await self._count_replaced(db, guild, [p for p in rows if p.replaced_by])
                counted += 1
        return counted

    async def archived_games(
        self, guild_id: int, *, offset: int, limit: int
    ) -> tuple[list[ArchivedSummary], int]:
        """A page of the guild's archive, newest first, and how many games it holds."""
        rows = await self._fetchall(
            "SELECT game_id, host_id, ended, ended_at, winners, last_phase, players, cities "
            "FROM archive WHERE guild_id = ? ORDER BY seq DESC LIMIT ? OFFSET ?",
            (guild_id, limit, offset),
        )
        total = await self._fetchone("SELECT COUNT(*) FROM archive WHERE guild_id = ?", (guild_id,))
        return [
            ArchivedSummary(
                row["game_id"],
                row["host_id"],
                row["ended"],
                row["ended_at"],
                json.loads(row["winners"]),
                row["last_phase"],
                row["players"],
                json.loads(row["cities"]),
            )
            for row in rows
        ], int(total[0]) if total else 0

    async def archived_game(self, game_id: int) -> ArchivedGame | None:
        """One archived game, whole (its last words with the message that posted them, if sent)."""
        row = await self._fetchone("SELECT * FROM archive WHERE game_id = ?", (game_id,))
        if row is None:
            return None
        deaths = await self._fetchall(
            "SELECT * FROM archive_deaths WHERE game_id = ? ORDER BY ordinal", (game_id,)
        )
        votes = await self._fetchall(
            "SELECT * FROM archive_votes WHERE game_id = ? ORDER BY day, rowid", (game_id,)
        )
        words = await self._fetchall(
            "SELECT w.*, o.state AS posted, o.message_id, o.target FROM archive_last_words w "
            "LEFT JOIN outbox o ON o.id = w.outbox_id WHERE w.game_id = ? ORDER BY w.seq",
            (game_id,),
        )
        players = await self._fetchall(
            "SELECT * FROM archive_players WHERE game_id = ? ORDER BY rowid", (game_id,)
        )
        return ArchivedGame(
            game_id=row["game_id"],
            guild_id=row["guild_id"],
            host_id=row["host_id"],
            ended=row["ended"],
            created_at=row["created_at"],
            ended_at=row["ended_at"],
            seed=row["seed"],
            setup=json.loads(row["setup"]),
            names=json.loads(row["names"]),
            log=[(command, source) for command, source in json.loads(row["log"])],
            winners=json.loads(row["winners"]),
            last_phase=row["last_phase"],
            cities=json.loads(row["cities"]),
            deaths=[
                ArchivedDeath(
                    d["player"], d["city"], d["status"], d["cause"], d["phase"], d["by_city"]
                )
                for d in deaths
            ],
            votes=[ArchivedVote(v["day"], v["city"], v["voter"], v["candidate"]) for v in votes],
            last_words=[
                ArchivedLastWord(
                    w["seq"],
                    w["player"],
                    w["phase"],
                    w["outbox_id"],
                    w["path"],
                    w["duration"],
                    channel_id=(
                        int(json.loads(w["target"])["channel_id"])
                        if w["posted"] == "sent" and w["target"]
                        else None
                    ),
                    message_id=w["message_id"] if w["posted"] == "sent" else None,
                )
                for w in words
            ],
            players=[_archived_player(p) for p in players if p["replaced_by"] is None],
            replaced=[_archived_player(p) for p in players if p["replaced_by"] is not None],
        )

    async def save_reading(self, game_id: int, data: bytes) -> None:
        """Store what was read of a game's channels (:class:`bot.transcript_page.Reading`,
        packed), replacing an earlier reading."""
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO transcript_pages (game_id, data) VALUES (?, ?) "
                "ON CONFLICT (game_id) DO UPDATE SET data = excluded.data",
                (game_id, base64.b64encode(data).decode("ascii")),
            )

    async def reading(self, game_id: int) -> bytes | None:
        """What was read of a game's channels, packed (None: its transcript was never made)."""
        row = await self._fetchone(
            "SELECT data FROM transcript_pages WHERE game_id = ?", (game_id,)
        )
        return base64.b64decode(row["data"]) if row else None

    async def archived_ids(self, guild_id: int | None = None) -> list[tuple[int, int]]:
        """(guild, game) of every archived game (of one guild), oldest first."""
        where, params = ("WHERE guild_id = ?", (guild_id,)) if guild_id is not None else ("", ())
        rows = await self._fetchall(
            f"SELECT guild_id, game_id FROM archive {where} ORDER BY seq", params
        )
        return [(int(row["guild_id"]), int(row["game_id"])) for row in rows]

    async def player_stats(self, guild_id: int, player: str) -> PlayerStats | None:
        """A player's figures in a guild, with his games and wins by status."""
        row = await self._fetchone(
            "SELECT * FROM player_stats WHERE guild_id = ? AND player = ?", (guild_id, player)
        )
        if row is None:
            return None
        statuses = await self._fetchall(
            "SELECT status, games, wins FROM player_status_stats WHERE guild_id = ? AND player = ?",
            (guild_id, player),
        )
        return _player_stats(row, {s["status"]: (s["games"], s["wins"]) for s in statuses})

    async def leaderboard(
        self, guild_id: int, by: str, *, limit: int, min_games: int = 1
    ) -> list[PlayerStats]:
        """The guild's best players ``by`` ``wins`` (those with a win), ``win_rate`` (with at least
        ``min_games``) or ``rating``."""
        order = {
            "wins": "wins DESC, games ASC, player",
            "win_rate": "CAST(wins AS REAL) / games DESC, games DESC, player",
            "rating": "rating DESC, player",
        }[by]
        least_wins = 1 if by == "wins" else 0
        rows = await self._fetchall(
            f"SELECT * FROM player_stats WHERE guild_id = ? AND games >= ? AND wins >= ? ORDER BY {order} LIMIT ?",
            (guild_id, max(1, min_games), least_wins, limit),
        )
        return [_player_stats(row, {}) for row in rows]

    async def guild_results(self, guild_id: int) -> GuildResults:
        """How each status and each side fared in the guild's games played to the end (summed
        from the players' figures by status: a row per player and status, not per game)."""
        rows = await self._fetchall(
            "SELECT status, SUM(games) AS games, SUM(wins) AS wins FROM player_status_stats "
            "WHERE guild_id = ? GROUP BY status",
            (guild_id,),
        )
        by_status = {str(row["status"]): (int(row["games"]), int(row["wins"])) for row in rows}
        by_side: dict[str, tuple[int, int]] = {}
        for status, (games, wins) in by_status.items():
            side = SIDE_OF.get(status, "honest")
            seats, won = by_side.get(side, (0, 0))
            by_side[side] = (seats + games, won + wins)
        return GuildResults(by_status=by_status, by_side=by_side)


#: a rating never counted yet: openskill's Plackett-Luce defaults (``bot.archive.MODEL``)
FRESH = (25.0, 25.0 / 3)

#: a finished game's row in the archive
INSERT_ARCHIVE = (
    "INSERT INTO archive (game_id, guild_id, host_id, ended, created_at, ended_at, seed, "
    "setup, names, log, winners, last_phase, players, cities) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _archive_row(game: ArchivedGame) -> tuple[object, ...]:
    """The archive's row of ``game`` (:data:`INSERT_ARCHIVE`)."""
    return (
        game.game_id,
        game.guild_id,
        game.host_id,
        game.ended,
        game.created_at,
        game.ended_at,
        game.seed,
        _dumps(game.setup),
        _dumps(game.names),
        _dumps([[command, source] for command, source in game.log]),
        _dumps(game.winners),
        game.last_phase,
        len(game.players),
        _dumps(game.cities),
    )


def _archive_details(game: ArchivedGame) -> Statements:
    """The rows of ``game``'s deaths, votes, last words and players, each table's with its
    statement."""
    return [
        (
            "INSERT INTO archive_deaths (game_id, ordinal, player, city, status, cause, phase, by_city) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (game.game_id, index, d.player, d.city, d.status, d.cause, d.phase, d.by_city)
                for index, d in enumerate(game.deaths)
            ],
        ),
        (
            "INSERT INTO archive_votes (game_id, day, city, voter, candidate) VALUES (?, ?, ?, ?, ?)",
            [(game.game_id, v.day, v.city, v.voter, v.candidate) for v in game.votes],
        ),
        (
            "INSERT INTO archive_last_words (game_id, seq, player, phase, outbox_id, path, duration) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (game.game_id, w.seq, w.player, w.phase, w.outbox_id, w.path, w.duration)
                for w in game.last_words
            ],
        ),
        (
            "INSERT INTO archive_players (game_id, guild_id, player, name, city, status, side, won, "
            "survived, executed, votes, votes_mafia, checks, hits, replaced_by) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    game.game_id,
                    game.guild_id,
                    p.player,
                    p.name,
                    p.city,
                    p.status,
                    p.side,
                    *p.figures,
                    p.replaced_by,
                )
                for p in [*game.players, *game.replaced]
            ],
        ),
    ]
