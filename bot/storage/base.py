"""The connection, its transactions and group commits, the migrations: what every query stands
on, for both databases."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any

import aiosqlite

from bot.storage.records import (
    INSERT_OUTBOX,
    OutboxItem,
    Statements,
    _outbox_rows,
)

if TYPE_CHECKING:
    from bot.storage.sqlite import GroupWriter


log = logging.getLogger(__name__)

MIGRATION_NAME = re.compile(r"^V(\d+)__[\w-]+\.sql$")


def migration_statements(sql: str, dialect: str) -> list[str]:
    """The statements of a migration file that ``dialect`` (sqlite, postgresql) runs."""
    chosen = []
    for statement in sql.split(";"):
        if not statement.strip():
            continue
        marked = re.findall(r"^\s*--\s*(sqlite|postgresql) only\s*$", statement, re.MULTILINE)
        if marked and dialect not in marked:
            continue
        chosen.append(statement)
    return chosen


def _migrations() -> list[tuple[int, str, str]]:
    folder = resources.files("bot") / "migrations"
    found = []
    for entry in folder.iterdir():
        match = MIGRATION_NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


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


def _settle(write: _GroupedWrite, error: BaseException | None) -> None:
    write.over.set()
    if write.done.done():
        return
    if error is None:
        write.done.set_result(None)
    else:
        write.done.set_exception(error)


class Busy(Exception):
    """Another connection (another process) holds the database's write lock."""


class StorageBase:
    """The connection and what every query stands on (:class:`bot.storage.Storage` joins the queries)."""

    dialect = "sqlite"
    #: the first statement of the migrations' transaction: it keeps other processes out
    begin_migrations = "BEGIN IMMEDIATE"

    def __init__(self, connection: Any) -> None:
        self._db = connection
        self._reader: aiosqlite.Connection | None = None
        """The read-only connection (None: reads share the writer's, under the lock)."""
        self._lock = asyncio.Lock()
        self._checkpointer: asyncio.Task[None] | None = None
        self._closed = False
        self._guilds: dict[int, tuple[str | None, int | None]] = {}
        self._new_lanes: dict[int, set[str]] = {}
        self._active: dict[int, set[int]] = {}
        """game id -> the players this process stored in ``active_players`` for it."""
        self._shard_sql = ""
        """A condition on ``guild_id`` choosing the games of this process's shards ('' : all)."""
        self._queued: list[_GroupedWrite] = []
        self._writer: asyncio.Task[None] | None = None
        self._group: GroupWriter | None = None
        """The group commit's connection (None: a database in memory, one write at a time)."""
        self.group_commits = 0
        """How many group commits were made (each holds one or more queued writes)."""

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

    async def close(self) -> None:
        """Stop the checkpoints, write the WAL back, close the connection (once)."""
        if self._closed:
            return
        self._closed = True
        if self._writer is not None and not self._writer.done():
            await asyncio.wait([self._writer])  # what callers wait for is committed first
        if self._checkpointer is not None:
            self._checkpointer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._checkpointer
        if self._reader is not None:
            with contextlib.suppress(aiosqlite.Error):
                await self._reader.close()
        if self._group is not None:
            self._group.close()
        with contextlib.suppress(aiosqlite.Error):
            await self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        await self._db.close()

    @asynccontextmanager
    async def transaction(self, game_id: int | None = None) -> AsyncIterator[aiosqlite.Connection]:
        """One write transaction (begun by its first write); rolled back if the block raises.

        ``game_id``: the game it writes (PostgreSQL runs transactions of different games at
        once, and one game's one at a time; SQLite runs every one in turn)."""
        async with self._lock:
            try:
                yield self._db
            except BaseException:
                await self._db.rollback()
                raise
            await self._db.commit()

    async def _commit(self, game_id: int, write: _GroupedWrite) -> None:
        """Commit one write of a game (SQLite: in the next group commit, every game's writes
        sharing the one writer)."""
        await self._grouped(write)

    async def _grouped(self, write: _GroupedWrite) -> None:
        """Commit a write in the next group commit and return once it is committed: at once
        when nothing else writes, else with what queued meanwhile.

        Raises:
            sqlite3.Error: its own transaction failed (it was tried alone: see the module
                docstring); nothing of it is stored.
        """
        if self._group is None:  # a database in memory: no second connection to group on
            async with self.transaction() as db:
                await self._write_alone(db, write)
            self._lanes_stored(write)
            return
        if self._group.inline and not self._lock.locked() and not self._queued:
            # nothing else writes: commit here, without a turn of the loop (see GroupWriter)
            left = self._settle_group([write], *self._group.write([write.statements]))
            if not left:
                return write.done.result()
            # another process writes: wait in the queue, on the thread
        self._queued.append(write)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_groups(), name="sqlite-group-commit")
        try:
            # not shielded: a shield would cost the caller one more turn of the loop
            await write.done
        except asyncio.CancelledError:
            # the commit goes on without the caller: let it end first, so whoever reloads the
            # game after this cancellation reads the log as it stays
            await write.over.wait()
            raise

    async def _write_groups(self) -> None:
        """Commit what is queued, group by group, until nothing is."""
        assert self._group is not None
        loop = asyncio.get_running_loop()
        while self._queued:
            async with self._lock:
                group, self._queued = self._queued, []
                if self._group.inline:
                    group = self._settle_group(
                        group, *self._group.write([w.statements for w in group])
                    )
                    if not group:
                        continue
                    # another process writes: what it kept out waits for it on the thread
                statements = [write.statements for write in group]
                ended: asyncio.Future[None] = loop.create_future()

                def finished(
                    outcomes: list[BaseException | None],
                    commits: int,
                    group: list[_GroupedWrite] = group,
                    ended: asyncio.Future[None] = ended,
                ) -> None:
                    self._settle_group(group, outcomes, commits)
                    if not ended.done():
                        ended.set_result(None)

                self._group.submit(statements, loop, finished)
                # the lock is held until the thread is done, even if this task is cancelled
                cancelled = False
                while not ended.done():
                    try:
                        await asyncio.wait([ended])
                    except asyncio.CancelledError:
                        cancelled = True
                if cancelled:
                    raise asyncio.CancelledError

    def _settle_group(
        self, group: list[_GroupedWrite], outcomes: list[BaseException | None], commits: int
    ) -> list[_GroupedWrite]:
        """Tell each write of a group its outcome (and the outbox the lanes committed to); the
        writes not tried (:class:`Busy`), to be tried again."""
        self.group_commits += commits
        left = []
        for write, outcome in zip(group, outcomes, strict=True):
            if isinstance(outcome, Busy):
                left.append(write)
                continue
            if outcome is None:
                self._lanes_stored(write)
            _settle(write, outcome)
        return left

    @staticmethod
    async def _write_alone(db: Any, write: _GroupedWrite) -> None:
        """A write's statements in the caller's transaction (not in a group)."""
        for sql, rows in write.statements:
            await db.executemany(sql, rows)

    def _lanes_stored(self, write: _GroupedWrite) -> None:
        """After the commit of a write: tell the outbox which of its lanes got new items."""
        for game_id, lanes in write.lanes:
            self._new_lanes.setdefault(game_id, set()).update(lanes)

    async def _fetchone(self, sql: str, params: Iterable[Any] = ()) -> aiosqlite.Row | None:
        rows = await self._fetchall(sql, params)
        return rows[0] if rows else None

    async def _fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[aiosqlite.Row]:
        # one trip to the reader's thread (a cursor's execute, fetch and close are three, each
        # waiting for a turn of a busy event loop)
        if self._reader is not None:
            return list(await self._reader.execute_fetchall(sql, tuple(params)))
        async with self._lock:
            return list(await self._db.execute_fetchall(sql, tuple(params)))

    async def _migrate(self) -> None:
        # A migration may rebuild a table others refer to (SQLite's way to change a constraint):
        # foreign keys are off meanwhile (a pragma that cannot change inside a transaction) and
        # checked once it is done.
        await self._db.execute("PRAGMA foreign_keys=OFF")
        try:
            await self._apply_migrations()
        finally:
            await self._db.execute("PRAGMA foreign_keys=ON")
        async with self._db.execute("PRAGMA foreign_key_check") as cursor:
            broken = await cursor.fetchall()
        if broken:
            raise aiosqlite.IntegrityError(
                f"foreign keys broken by a migration: {list(map(tuple, broken))}"
            )

    async def _apply_migrations(self) -> None:
        async with self.transaction() as db:
            await db.execute(self.begin_migrations)
            await db.execute(
                self._ddl(
                    "CREATE TABLE IF NOT EXISTS schema_migrations "
                    "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
                )
            )
            async with db.execute("SELECT version FROM schema_migrations") as cursor:
                done = {row[0] for row in await cursor.fetchall()}
            for version, name, sql in _migrations():
                if version in done:
                    continue
                for statement in migration_statements(sql, self.dialect):
                    await db.execute(self._ddl(statement))
                await db.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    (version, name, time.time()),
                )

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
