"""Games, their command log, snapshots and the interactions already applied."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from typing import Any

import aiosqlite

from bot.storage.base import (
    StorageBase,
    _GroupedWrite,
)
from bot.storage.records import (
    ACTIVE_STATES,
    INSERT_OUTBOX,
    OPEN_STATES,
    UPDATE_GAME,
    CommandRow,
    DamagedLog,
    GameExists,
    GameRecord,
    GameState,
    OutboxItem,
    PlayerBusy,
    StoredSnapshot,
    _dumps,
    _game,
    _game_row,
    _outbox_rows,
    checksum,
    sql_states,
)
from bot.storage.shapes import Lobby


class GameQueries(StorageBase):
    """The games' queries."""

    async def create_game(
        self,
        guild_id: int,
        host_id: int,
        lobby: Lobby,
        *,
        interaction_id: int | None = None,
        outbox: Callable[[GameRecord], Iterable[OutboxItem]] | None = None,
        now: float | None = None,
    ) -> GameRecord:
        """Open a lobby in a guild; ``outbox`` makes, from the new record (its id known),
        what to announce, committed in the same transaction as the game.

        Raises:
            GameExists: the guild already has an open game.
        """
        now = time.time() if now is None else now
        try:
            async with self.transaction() as db:
                async with db.execute(
                    "INSERT INTO games (guild_id, host_id, state, created_at, lobby) "
                    f"VALUES (?, ?, '{GameState.LOBBY.value}', ?, ?) RETURNING id",
                    (guild_id, host_id, now, _dumps(lobby)),
                ) as cursor:
                    row = await cursor.fetchone()
                game_id = int(row[0]) if row else 0
                await self._record_interaction(db, interaction_id, game_id, now)
                if outbox is not None:
                    created = GameRecord(game_id, guild_id, host_id, GameState.LOBBY, now, lobby)
                    await self._insert_outbox(db, game_id, None, outbox(created), now)
        except aiosqlite.IntegrityError as error:
            if "games" in str(error) or "UNIQUE" in str(error):
                raise GameExists(guild_id) from None
            raise
        record = await self.game(game_id)
        assert record is not None
        return record

    async def game(self, game_id: int) -> GameRecord | None:
        """One game by id."""
        row = await self._fetchone("SELECT * FROM games WHERE id = ?", (game_id,))
        return _game(row) if row else None

    async def open_game(self, guild_id: int) -> GameRecord | None:
        """The guild's open (lobby, starting or running) game, if any."""
        row = await self._fetchone(
            f"SELECT * FROM games WHERE guild_id = ? AND state IN ({sql_states(OPEN_STATES)})",
            (guild_id,),
        )
        return _game(row) if row else None

    async def latest_game(self, guild_id: int) -> GameRecord | None:
        """The guild's most recent game, open or not."""
        row = await self._fetchone(
            "SELECT * FROM games WHERE guild_id = ? ORDER BY id DESC LIMIT 1", (guild_id,)
        )
        return _game(row) if row else None

    async def open_games(self) -> list[GameRecord]:
        """Every lobby, game being started and running game (of this process's shards), oldest first."""
        rows = await self._fetchall(
            f"SELECT * FROM games WHERE state IN ({sql_states(OPEN_STATES)}){self._owned()} "
            "ORDER BY id"
        )
        return [_game(row) for row in rows]

    async def save_game(
        self,
        record: GameRecord,
        *,
        interaction_id: int | None = None,
        outbox: Iterable[OutboxItem] = (),
        cancel_lane: str | None = None,
        now: float | None = None,
    ) -> None:
        """Store a game's record fields (lobby, state, setup, channels, deadline) with its outbox.

        ``cancel_lane``: first give up the game's pending items of that lane (a provisioning
        rolled back), in the same transaction.

        Raises:
            PlayerBusy: the game is being started or runs, and one of its players already plays
                in another such game (nothing is stored).
        """
        now = time.time() if now is None else now
        async with self.transaction(record.id) as db:
            await self._update_game(db, record)
            active = await self._sync_active(db, record)
            await self._record_interaction(db, interaction_id, record.id, now)
            if cancel_lane is not None:
                await db.execute(
                    "UPDATE outbox SET state = 'failed', last_error = 'cancelled' "
                    "WHERE game_id = ? AND lane = ? AND state = 'pending'",
                    (record.id, cancel_lane),
                )
            await self._insert_outbox(db, record.id, None, outbox, now)
        self._remember_active(record, active)

    async def _sync_active(self, db: Any, record: GameRecord) -> set[int] | None:
        """Make ``active_players`` hold exactly the players of a game being started or running
        (and none of a game in another state), in the caller's transaction. Returns what the
        table then holds for the game, for :meth:`_remember_active` once the transaction is
        committed.

        Raises:
            PlayerBusy: a player's row belongs to another game (the key refuses him).
        """
        if record.state in ACTIVE_STATES and record.damaged is None:
            wanted = {int(p["id"]) for p in record.lobby.get("players", []) if "id" in p}
        else:
            wanted = set()
        stored = self._active.get(record.id)
        if stored is None:
            async with db.execute(
                "SELECT user_id FROM active_players WHERE game_id = ?", (record.id,)
            ) as cursor:
                stored = {int(row[0]) for row in await cursor.fetchall()}
        if stored == wanted:
            return wanted
        gone, new = stored - wanted, wanted - stored
        if gone:
            await db.executemany(
                "DELETE FROM active_players WHERE user_id = ? AND game_id = ?",
                [(user, record.id) for user in sorted(gone)],
            )
        if new:
            # the key decides: whoever another game (of any process) holds is not inserted; a
            # concurrent start of another game with him waits here until that one commits
            ordered = sorted(new)
            values = ", ".join("(?, ?)" for _ in ordered)
            async with db.execute(
                f"INSERT INTO active_players (user_id, game_id) VALUES {values} "
                "ON CONFLICT (user_id) DO NOTHING RETURNING user_id",
                [value for user in ordered for value in (user, record.id)],
            ) as cursor:
                inserted = {int(row[0]) for row in await cursor.fetchall()}
            refused = sorted(new - inserted)
            if refused:
                marks = ",".join("?" * len(refused))
                async with db.execute(
                    f"SELECT user_id, game_id FROM active_players WHERE user_id IN ({marks}) "
                    "ORDER BY user_id",
                    refused,
                ) as cursor:
                    holder = await cursor.fetchone()
                if holder is not None:
                    raise PlayerBusy(int(holder[0]), int(holder[1]))
                raise PlayerBusy(refused[0])  # his game ended meanwhile: he may try again
        return wanted

    def _remember_active(self, record: GameRecord, active: set[int] | None) -> None:
        """After the commit: what ``active_players`` holds for the game (nothing kept for a game
        that ended; None: nothing was looked at)."""
        if active is None:
            return
        if record.state in OPEN_STATES:
            self._active[record.id] = active
        else:
            self._active.pop(record.id, None)

    async def player_game(self, user_id: int) -> int | None:
        """The game (being started or running, in any process) a user plays in, if any."""
        row = await self._fetchone(
            "SELECT game_id FROM active_players WHERE user_id = ?", (user_id,)
        )
        return int(row[0]) if row else None

    async def _update_game(self, db: aiosqlite.Connection, record: GameRecord) -> None:
        await db.execute(UPDATE_GAME, _game_row(record))

    async def close_damaged(
        self,
        record: GameRecord,
        *,
        interaction_id: int | None = None,
        outbox: Iterable[OutboxItem] = (),
        now: float | None = None,
    ) -> None:
        """Store only the state of a game whose row is unreadable (its other fields are not
        known, so they are left as they are)."""
        now = time.time() if now is None else now
        async with self.transaction(record.id) as db:
            await db.execute(
                "UPDATE games SET state = ?, deadline = NULL WHERE id = ?",
                (record.state, record.id),
            )
            if record.state not in OPEN_STATES:
                await db.execute("DELETE FROM active_players WHERE game_id = ?", (record.id,))
            await self._record_interaction(db, interaction_id, record.id, now)
            await self._insert_outbox(db, record.id, None, outbox, now)
        if record.state not in OPEN_STATES:
            self._active.pop(record.id, None)

    async def append_command(
        self,
        record: GameRecord,
        command: dict[str, Any],
        *,
        source: str,
        interaction_id: int | None = None,
        outbox: Iterable[OutboxItem] = (),
        snapshot: dict[str, Any] | None = None,
        rules_version: str | None = None,
        record_changed: bool = True,
        now: float | None = None,
    ) -> int:
        """Commit one accepted command with its outbox (and the record, if ``record_changed``).

        ``record.command_count`` must already count the command; its ``seq``
        is that count. The game's row is written only when something of it
        other than the count changed (the count is the log's last seq). At
        most three round trips to the database thread: the command, the
        outbox, the commit.

        Raises:
            aiosqlite.IntegrityError: the interaction was already applied.
        """
        now = time.time() if now is None else now
        seq = record.command_count
        write = _GroupedWrite(
            [
                (
                    "INSERT INTO commands (game_id, seq, command, interaction_id, source, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [(record.id, seq, _dumps(command), interaction_id, source, now)],
                )
            ]
        )
        if record_changed:
            write.statements.append((UPDATE_GAME, [_game_row(record)]))
        rows = _outbox_rows(record.id, seq, outbox, now)
        if rows:
            write.statements.append((INSERT_OUTBOX, rows))
            write.lanes.append((record.id, {row[3] for row in rows}))
        if snapshot is not None:
            write.statements.append(_snapshot_statement(record.id, seq, snapshot, rules_version))
        if record_changed and record.state not in OPEN_STATES:
            await self._end_with(record, write)
        else:
            await self._commit(record.id, write)
        return seq

    async def _end_with(self, record: GameRecord, write: _GroupedWrite) -> None:
        """Commit the write that ends a game: it frees the game's players in
        ``active_players``, a read and write of its own, so not in a group."""
        async with self.transaction(record.id) as db:
            await self._write_alone(db, write)
            active = await self._sync_active(db, record)
        self._remember_active(record, active)
        self._lanes_stored(write)

    async def commands(
        self, game_id: int, after: int = 0, upto: int | None = None
    ) -> list[CommandRow]:
        """The command log of a game after seq ``after`` (up to ``upto``), in order.

        Raises:
            DamagedLog: a row is not a JSON object (the first such row is named).
        """
        rows = await self._fetchall(
            "SELECT seq, command, interaction_id, source FROM commands "
            "WHERE game_id = ? AND seq > ? AND seq <= ? ORDER BY seq",
            (game_id, after, upto if upto is not None else 2**62),
        )
        result = []
        for row in rows:
            try:
                command = json.loads(row["command"])
            except (ValueError, TypeError) as error:
                raise DamagedLog(game_id, row["seq"], str(error)) from None
            if not isinstance(command, dict):
                raise DamagedLog(
                    game_id, row["seq"], f"not a JSON object: {str(row['command'])[:40]!r}"
                )
            result.append(CommandRow(row["seq"], command, row["interaction_id"], row["source"]))
        return result

    async def command_times(self, game_id: int, seqs: Iterable[int]) -> dict[int, float]:
        """When each of these commands of a game was accepted (unix time), by seq."""
        wanted = sorted(set(seqs))
        found: dict[int, float] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = await self._fetchall(
                f"SELECT seq, created_at FROM commands WHERE game_id = ? AND seq IN "
                f"({','.join('?' * len(chunk))})",
                [game_id, *chunk],
            )
            found.update((int(row[0]), float(row[1])) for row in rows)
        return found

    async def latest_snapshot(self, game_id: int) -> tuple[int, dict[str, Any]] | None:
        """The newest snapshot of a game: (seq, state), unchecked (see :meth:`snapshots`).

        Raises:
            ValueError: its text is not JSON.
        """
        row = await self._fetchone(
            "SELECT seq, state FROM snapshots WHERE game_id = ? ORDER BY seq DESC LIMIT 1",
            (game_id,),
        )
        return (row["seq"], json.loads(row["state"])) if row else None

    async def snapshots(self, game_id: int, limit: int = 2) -> list[StoredSnapshot]:
        """The newest ``limit`` snapshots of a game as stored, newest first."""
        rows = await self._fetchall(
            "SELECT seq, state, checksum, rules_version FROM snapshots WHERE game_id = ? "
            "ORDER BY seq DESC LIMIT ?",
            (game_id, limit),
        )
        return [
            StoredSnapshot(row["seq"], str(row["state"]), row["checksum"], row["rules_version"])
            for row in rows
        ]

    async def _record_interaction(
        self, db: aiosqlite.Connection, interaction_id: int | None, game_id: int | None, now: float
    ) -> None:
        if interaction_id is not None:
            await db.execute(
                "INSERT INTO interactions (id, game_id, created_at) VALUES (?, ?, ?)",
                (interaction_id, game_id, now),
            )

    async def interaction_seen(self, interaction_id: int) -> bool:
        """Whether an interaction already changed something (a command, or a lobby change)."""
        row = await self._fetchone(
            "SELECT 1 FROM commands WHERE interaction_id = ? UNION ALL "
            "SELECT 1 FROM interactions WHERE id = ? LIMIT 1",
            (interaction_id, interaction_id),
        )
        return row is not None

    async def last_seq(self, game_id: int) -> int:
        """The seq of the game's last stored command (0 when none)."""
        row = await self._fetchone("SELECT MAX(seq) FROM commands WHERE game_id = ?", (game_id,))
        return int(row[0]) if row and row[0] is not None else 0


def _snapshot_statement(
    game_id: int, seq: int, snapshot: dict[str, Any], rules_version: str | None
) -> tuple[str, list[tuple[Any, ...]]]:
    """The statement storing a game's state after command ``seq`` (replacing one stored there)."""
    text = _dumps(snapshot)
    return (
        "INSERT INTO snapshots (game_id, seq, state, checksum, rules_version) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (game_id, seq) DO UPDATE SET "
        "state = excluded.state, checksum = excluded.checksum, "
        "rules_version = excluded.rules_version",
        [(game_id, seq, text, checksum(text), rules_version)],
    )
