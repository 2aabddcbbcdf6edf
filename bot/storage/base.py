"""What every query stands on, for both databases: the interface of a connection (its
transactions and reads, one write committed), the shards a process serves, the outbox's new
lanes, and the migrations applied through :mod:`bot.storage.migrations`. SQLite's side of it is
:mod:`bot.storage.sqlite`, PostgreSQL's :mod:`bot.postgres`."""

from __future__ import annotations

import asyncio
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

import aiosqlite

from bot.storage.health import Health
from bot.storage.migrations import SCHEMA_TABLE_EXISTS, apply_migrations, check_current
from bot.storage.records import (
    INSERT_OUTBOX,
    OPEN_STATES,
    OutboxItem,
    Statements,
    _outbox_rows,
)

log = logging.getLogger(__name__)

#: the size of :meth:`StorageBase.probe`'s write (bytes): a command's with its outbox, or more
PROBE_BYTES = 8192


@dataclass
class _GroupedWrite:
    """A write waiting for a group commit: its statements in order, each with its rows."""

    statements: Statements
    lanes: list[tuple[int, set[str]]] = field(default_factory=list)
    """(game id, lanes) it stores outbox items in: told to the outbox once committed."""
    done: asyncio.Future[None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    """What its caller awaits (cancelled with the caller)."""
    over: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once its transaction ended, whatever became of the caller."""


class StorageBase(ABC):
    """The connection and what every query stands on (:class:`bot.storage.Storage` joins the
    queries and a database's side of it)."""

    #: the database's name in the migration files' ``-- <dialect> only`` marks
    dialect: str
    #: the first statement of the migrations' transaction: it keeps other processes out
    begin_migrations: str

    def __init__(self, connection: Any) -> None:
        self._db = connection
        self._lock = asyncio.Lock()
        self._closed = False
        self._guilds: dict[int, tuple[str | None, int | None]] = {}
        self._new_lanes: dict[int, set[str]] = {}
        self._active: dict[int, set[int]] = {}
        """game id -> the players this process stored in ``active_players`` for it."""
        self._shard_sql = ""
        """A condition on ``guild_id`` choosing the games of this process's shards ('' : all)."""
        self.found_version = 0
        """The schema version the database had when it was opened (0: a new database)."""
        self.read_only = False
        """Opened to read only (``Storage.open_reading``): nothing is written, not even at close."""
        self.health = Health()
        """Whether the database takes writes; wakes what waits for it when it is back."""
        self.health.probe = self.probe

    def set_shards(self, shard_ids: Iterable[int] | None, shard_count: int | None) -> None:
        """Serve only the guilds of these shards (Discord: shard = (guild_id >> 22) % count):
        restore their games, carry out their outbox. None: every guild."""
        if shard_ids is None or not shard_count or shard_count <= 1:
            self._shard_sql = ""
            return
        wanted = sorted({int(shard) for shard in shard_ids})
        if set(wanted) >= set(range(shard_count)):
            self._shard_sql = ""
            return
        self._shard_sql = (
            f"((guild_id >> 22) % {int(shard_count)}) IN ({', '.join(map(str, wanted))})"
        )

    def _owned(self, prefix: str = "") -> str:
        """`` AND`` the shard condition (on ``prefix.guild_id``), or nothing."""
        if not self._shard_sql:
            return ""
        return " AND " + self._shard_sql.replace("guild_id", f"{prefix}guild_id")

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    @abstractmethod
    async def close(self) -> None:
        """Close the database's connections (once)."""

    @abstractmethod
    def transaction(
        self, game_id: int | None = None
    ) -> AbstractAsyncContextManager[aiosqlite.Connection]:
        """One write transaction, committed when the block ends, rolled back if it raises; it
        yields aiosqlite's connection or one that is used the same way.

        ``game_id``: the game it writes (PostgreSQL runs transactions of different games at
        once, and one game's one at a time; SQLite runs every one in turn)."""

    @abstractmethod
    async def _commit(self, game_id: int, write: _GroupedWrite) -> None:
        """Commit one write of a game (and tell the outbox the lanes it stored items in).

        Raises:
            sqlite3.Error: nothing of it is stored (the refusal of a constraint included).
        """

    @abstractmethod
    async def _fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        """The rows a read returns (it sees what was committed)."""

    async def _fetchone(self, sql: str, params: Iterable[Any] = ()) -> Any:
        """The first row a read returns, or None."""
        rows = await self._fetchall(sql, params)
        return rows[0] if rows else None

    async def _fetch_quick(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        """:meth:`_fetchall` for a read on a command's way to its answer that uses an index and
        returns a bounded number of rows: SQLite runs it on the loop's own thread
        (:mod:`bot.storage.quick`); PostgreSQL as any read."""
        return await self._fetchall(sql, params)

    @staticmethod
    async def _write_alone(db: Any, write: _GroupedWrite) -> None:
        """A write's statements in the caller's transaction (not in a group)."""
        for sql, rows in write.statements:
            await db.executemany(sql, rows)

    def _lanes_stored(self, write: _GroupedWrite) -> None:
        """After the commit of a write: tell the outbox which of its lanes got new items."""
        for game_id, lanes in write.lanes:
            self._new_lanes.setdefault(game_id, set()).update(lanes)

    async def _apply_migrations(self) -> None:
        async with self.transaction() as db:
            found = await apply_migrations(db, self.dialect, self.begin_migrations, self._ddl)
        self.found_version = max(found, default=0)

    async def _check_schema(self) -> None:
        """Opened to read only: the schema must be this version's as it is (nothing is migrated).

        Raises:
            StorageError: it is not (:func:`bot.storage.migrations.check_current`).
        """
        done: set[int] = set()
        if await self._fetchall(SCHEMA_TABLE_EXISTS[self.dialect]):
            rows = await self._fetchall("SELECT version FROM schema_migrations")
            done = {int(row[0]) for row in rows}
        self.found_version = check_current(done)

    @property
    def created(self) -> bool:
        """Whether the database was new when it was opened (no migration applied before)."""
        return self.found_version == 0

    async def holdings(self) -> tuple[int, int]:
        """How many games the database holds (every shard's), and how many of them are open."""
        row = await self._fetchone(
            "SELECT COUNT(*), COALESCE(SUM(CASE WHEN state IN (?, ?, ?) THEN 1 ELSE 0 END), 0) "
            "FROM games",
            tuple(state.value for state in OPEN_STATES),
        )
        return (int(row[0]), int(row[1])) if row else (0, 0)

    async def probe(self) -> None:
        """A write of a command's size, undone in the same transaction, to learn whether the
        database takes writes again (a full disk, a server down); :attr:`health` hears of it
        like any write. It needs new room as a command does: a write that fits in a page
        already there could pass on a disk that still refuses the commands."""
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                ("health_probe", f"{time.time():.3f}".ljust(PROBE_BYTES, ".")),
            )
            await db.execute("DELETE FROM meta WHERE key = ?", ("health_probe",))

    def _ddl(self, statement: str) -> str:
        """A migration statement as this database spells it (SQLite: as written)."""
        return statement

    async def schema_version(self) -> int:
        """The highest migration applied."""
        row = await self._fetchone("SELECT MAX(version) FROM schema_migrations")
        return int(row[0]) if row and row[0] is not None else 0

    async def _insert_outbox(
        self,
        db: aiosqlite.Connection,
        game_id: int,
        seq: int | None,
        items: Iterable[OutboxItem],
        now: float,
    ) -> None:
        rows = _outbox_rows(game_id, seq, items, now)
        if rows:
            await db.executemany(INSERT_OUTBOX, rows)
            self._new_lanes.setdefault(game_id, set()).update(row[3] for row in rows)

    def new_lanes(self, game_id: int) -> set[str]:
        """The lanes a game got items in since this was last asked (a hint for the outbox, so it
        wakes only those; a rolled-back transaction may leave a lane too many, never one too few)."""
        return self._new_lanes.pop(game_id, set())
