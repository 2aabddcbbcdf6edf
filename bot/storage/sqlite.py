"""SQLite: the group commit's connection (:class:`GroupWriter`), the WAL's bounds, and the file
(:class:`SqliteFile`): its opening, transactions, group commits, reads, migrations (foreign keys
off meanwhile) and checkpoints. The module docstring of :mod:`bot.storage` says why writes are
grouped and the WAL checkpointed as they are."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote

import aiosqlite

from bot.storage.base import StorageBase, _GroupedWrite
from bot.storage.migrations import SchemaTooNew
from bot.storage.quick import QuickReader
from bot.storage.records import Statements, StorageError

if TYPE_CHECKING:
    from bot.storage import Storage

log = logging.getLogger(__name__)


#: how often the WAL is checkpointed in the background (sooner when it outgrows its limit)
CHECKPOINT_SECONDS = 1.0

#: how often the WAL file's size is looked at (a stat) between two checkpoints
WAL_LOOK_SECONDS = 0.05

#: a WAL holding more frames than this after a background checkpoint is copied to its end under
#: the writers' lock, so that the next commit starts it over (a frame is a page: 4 KiB)
RESTART_FRAMES = 512

#: what is left of the WAL file when it starts over (``PRAGMA journal_size_limit``)
WAL_LIMIT_BYTES = 4 * 1024 * 1024

#: ``sqlite_synchronous`` values, as SQLite's pragma spells them
SYNCHRONOUS = ("FULL", "NORMAL")

#: SQLite's result code for a lock held by another connection (the low byte of extended codes)
SQLITE_BUSY = 5


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


class GroupWriter:
    """The group commit's own connection to the SQLite file.

    A group (its statements and its COMMIT) runs right on the event loop's thread: in WAL mode
    with ``synchronous=NORMAL`` a commit appends to the WAL and waits for no disk, a fraction
    of a millisecond, while a trip to a thread (aiosqlite's, one per statement and one for the
    commit) costs the waiting caller two turns of the loop each, and the thread then waits for
    the GIL besides. Under load a turn takes tens of milliseconds. Only when another connection
    holds the write lock (another process: this one's writes all go through
    :class:`Storage`'s lock) does the group wait, on a thread of its own, for as long as the
    other connections' ``busy_timeout``. aiosqlite has no way to run several statements and a
    commit in one call, so this class is written here.

    The cost is the loop's while the group runs: in the 200-game bench a group took 0.2 ms
    (p50) to 1 ms (p99), 8 ms at most, beside a checkpoint's flush. On the thread instead
    (``inline = False``) the same bench gave p99 75 ms: the thread waited for the GIL at each
    statement. A disk that stops taking writes stops the loop as long.

    The connection is the writer's twin: the same pragmas, and no automatic checkpoint (the
    background checkpointer does it). It is used only while nothing else writes through
    :class:`Storage` (its lock is free or held for it).
    """

    #: how long a group waits for another process's write lock (the other connections' value)
    BUSY_WAIT_MS = 5000

    inline = True
    """Whether a group is committed on the loop's thread (else always on this class's thread).
    Not with ``synchronous=FULL``: its COMMIT waits for an fsync (milliseconds), which must not
    stop the loop; on the thread, the writes that come in meanwhile make the next group, one
    fsync for all of them."""

    def __init__(self, path: str, synchronous: str = "FULL") -> None:
        self.path = path
        self.synchronous = synchronous
        if synchronous == "FULL":
            self.inline = False
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-group")
        self._connection: sqlite3.Connection | None = None

    def open(self) -> None:
        """Connect.

        Raises:
            sqlite3.Error: the file cannot be opened.
        """
        connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            for pragma in (
                f"synchronous={self.synchronous}",
                "foreign_keys=ON",
                "busy_timeout=0",
                "wal_autocheckpoint=0",
                f"journal_size_limit={WAL_LIMIT_BYTES}",
            ):
                connection.execute(f"PRAGMA {pragma}")
        except BaseException:
            connection.close()
            raise
        self._connection = connection

    def write(self, writes: list[Statements]) -> tuple[list[BaseException | None], int]:
        """All ``writes`` in one transaction; if that fails, each in its own. Each write's
        outcome (None: committed; an error; :class:`Busy`: not tried, another connection
        holds the write lock), and how many transactions committed."""
        merged: dict[str, list[tuple[Any, ...]]] = {}
        for statements in writes:
            for sql, rows in statements:
                merged.setdefault(sql, []).extend(rows)
        try:
            self._transaction(list(merged.items()))
        except Busy as busy:
            return [busy] * len(writes), 0
        except Exception as error:
            if len(writes) == 1:
                return [error], 0
            log.info(
                "a group commit of %d writes failed (%s); each is tried alone", len(writes), error
            )
        else:
            return [None] * len(writes), 1
        outcomes: list[BaseException | None] = []
        for statements in writes:
            try:
                self._transaction(statements)
            except Exception as alone:  # Busy too: the rest is tried again, the committed not
                outcomes.append(alone)
            else:
                outcomes.append(None)
        return outcomes, outcomes.count(None)

    def submit(
        self,
        writes: list[Statements],
        loop: asyncio.AbstractEventLoop,
        finished: Callable[[list[BaseException | None], int], None],
    ) -> None:
        """:meth:`write` on the thread, waiting up to :data:`BUSY_WAIT_MS` for the write lock
        (a lock still held then is each write's error); then ``finished(outcomes, commits)``
        on the loop, handed over by the thread itself (one turn of the loop, where an
        executor's future takes two)."""

        def job() -> None:
            outcomes: list[BaseException | None]
            try:
                self.execute(f"PRAGMA busy_timeout={self.BUSY_WAIT_MS}")
                try:
                    outcomes, commits = self.write(writes)
                finally:
                    self.execute("PRAGMA busy_timeout=0")
            except BaseException as error:  # every caller gets its outcome
                outcomes, commits = [error] * len(writes), 0
            # still locked after the wait: the write failed
            outcomes = [(o.__cause__ or o) if isinstance(o, Busy) else o for o in outcomes]
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
                loop.call_soon_threadsafe(finished, outcomes, commits)

        self._thread.submit(job)

    def _transaction(self, statements: Statements) -> None:
        connection = self._connection
        if connection is None:
            raise sqlite3.ProgrammingError("the group writer is closed")
        try:
            connection.execute("BEGIN IMMEDIATE")  # the write lock now, or Busy before any write
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode & 0xFF == SQLITE_BUSY:
                raise Busy() from error
            raise
        try:
            for sql, rows in statements:
                connection.executemany(sql, rows)
            self.commit()
        except BaseException:
            if connection.in_transaction:
                connection.rollback()
            raise

    def commit(self) -> None:
        """COMMIT the open transaction."""
        assert self._connection is not None
        self._connection.commit()

    def execute(self, sql: str) -> None:
        """Run one statement outside a transaction (a pragma, say)."""
        assert self._connection is not None
        self._connection.execute(sql)

    def close(self) -> None:
        """Close the connection and let the thread go."""
        if self._connection is not None:
            with contextlib.suppress(sqlite3.Error):
                self._connection.close()
            self._connection = None
        self._thread.shutdown(wait=False)


class SqliteFile(StorageBase):
    """The SQLite file: opened, written (one transaction at a time, hot writes in group
    commits), read on a connection of its own, and checkpointed."""

    dialect = "sqlite"
    begin_migrations = "BEGIN IMMEDIATE"

    def __init__(self, connection: Any) -> None:
        super().__init__(connection)
        self._reader: aiosqlite.Connection | None = None
        """The read-only connection (None: reads share the writer's, under the lock)."""
        self._quick: QuickReader | None = None
        """The quick reads' connection, on the loop's thread (None: they go to the reader)."""
        self._checkpointer: asyncio.Task[None] | None = None
        self._queued: list[_GroupedWrite] = []
        self._writer: asyncio.Task[None] | None = None
        self._group: GroupWriter | None = None
        """The group commit's connection (None: a database in memory, one write at a time)."""
        self.group_commits = 0
        """How many group commits were made (each holds one or more queued writes)."""

    @classmethod
    async def open_file(cls, path: Path | str, *, synchronous: str = "FULL") -> Storage:
        """Open (creating if needed) a SQLite file, check it and apply pending migrations.
        ``synchronous``: SQLite's, one of :data:`SYNCHRONOUS` (see the module docstring).

        Raises:
            StorageError: the file is not a usable database (damaged, truncated, zeroed,
                unreadable); nothing is left open.
        """
        synchronous = synchronous.upper()
        if synchronous not in SYNCHRONOUS:
            raise StorageError(
                f"synchronous must be one of {', '.join(SYNCHRONOUS)}, not {synchronous!r}"
            )
        # DEFERRED: sqlite3 opens the transaction with the first write itself
        # (no round trip of its own); transaction() commits or rolls back.
        try:
            connection = await aiosqlite.connect(str(path), isolation_level="DEFERRED")
        except (sqlite3.Error, OSError) as error:
            raise StorageError(f"{path}: cannot open the database: {error}") from error
        storage = cast("Storage", cls(connection))  # cls is Storage, or a subclass of it
        try:
            await _configure(connection, str(path), synchronous)
            await storage._migrate()
            if str(path) != ":memory:":  # a database in memory is the writer's alone
                storage._reader = await storage._open_reader(str(path))
                storage._quick = QuickReader(str(path))
                storage._group = GroupWriter(str(path), synchronous)
                storage._group.open()
        except BaseException as error:
            await storage._abandon()
            if isinstance(error, sqlite3.Error):
                raise StorageError(
                    f"{path}: the database is damaged or not a database: {error}"
                ) from error
            if isinstance(error, SchemaTooNew):
                raise StorageError(f"{Path(path).absolute()}: {error}") from error
            raise
        storage.health.watching = True
        storage._checkpointer = asyncio.create_task(
            storage._checkpoint_every(str(path), CHECKPOINT_SECONDS), name="sqlite-checkpoint"
        )
        return storage

    @classmethod
    async def open_file_reading(cls, path: Path | str) -> Storage:
        """Open a SQLite file to read it only, beside a bot that may be running on it: no lock of
        ownership (reads take none in WAL mode, and never block the bot's commits), nothing
        written (no migration, no checkpoint), each read seeing the last commit.

        Raises:
            StorageError: no such file, not a usable database, or its schema is not exactly
                this version's; nothing is left open.
        """
        location = Path(path).absolute()
        if not location.is_file():
            raise StorageError(f"{path}: no such database")
        try:
            connection = await aiosqlite.connect(
                f"file:{quote(location.as_posix())}?mode=ro", uri=True, isolation_level=None
            )
        except (sqlite3.Error, OSError) as error:
            raise StorageError(f"{path}: cannot open the database: {error}") from error
        storage = cast("Storage", cls(connection))
        storage.read_only = True
        try:
            connection.row_factory = aiosqlite.Row
            await connection.execute("PRAGMA query_only=ON")
            await connection.execute("PRAGMA busy_timeout=5000")
            await storage._check_schema()
        except BaseException as error:
            await storage._abandon()
            if isinstance(error, sqlite3.Error):
                raise StorageError(f"{path}: cannot be read: {error}") from error
            if isinstance(error, StorageError):
                raise StorageError(f"{location}: {error}") from error
            raise
        return storage

    async def _abandon(self) -> None:
        """Close what an open that failed had opened, quietly (the first error is the one told)."""
        with contextlib.suppress(Exception):
            await self._db.close()  # its thread would keep the process from exiting
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await self._reader.close()
        if self._quick is not None:
            self._quick.close()
        if self._group is not None:
            self._group.close()

    @staticmethod
    async def _open_reader(path: str) -> aiosqlite.Connection:
        """The connection reads go to: autocommit (each read sees the last commit), read-only."""
        reader = await aiosqlite.connect(path, isolation_level=None)
        try:
            reader.row_factory = aiosqlite.Row
            await reader.execute("PRAGMA query_only=ON")
            await reader.execute("PRAGMA busy_timeout=5000")
        except BaseException:
            with contextlib.suppress(Exception):
                await reader.close()
            raise
        return reader

    async def close(self) -> None:
        """Stop the checkpoints, write the WAL back, close the connection (once)."""
        if self._closed:
            return
        self._closed = True
        self.health.close()
        if self._writer is not None and not self._writer.done():
            await asyncio.wait([self._writer])  # what callers wait for is committed first
        if self._checkpointer is not None:
            self._checkpointer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._checkpointer
        if self._reader is not None:
            with contextlib.suppress(aiosqlite.Error):
                await self._reader.close()
        if self._quick is not None:
            self._quick.close()
        if self._group is not None:
            self._group.close()
        if not self.read_only:
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
            except BaseException as error:
                self.health.failed(error)
                await self._db.rollback()
                raise
            try:
                await self._db.commit()
            except BaseException as error:
                self.health.failed(error)
                raise
        self.health.ok()

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
                self.health.ok()
            else:
                self.health.failed(outcome)
            _settle(write, outcome)
        return left

    async def _fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[aiosqlite.Row]:
        # one trip to the reader's thread (a cursor's execute, fetch and close are three, each
        # waiting for a turn of a busy event loop)
        try:
            if self._reader is not None:
                return list(await self._reader.execute_fetchall(sql, tuple(params)))
            async with self._lock:
                return list(await self._db.execute_fetchall(sql, tuple(params)))
        except BaseException as error:
            self.health.failed(error)
            raise

    async def _fetch_quick(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        if self._quick is not None:
            try:
                rows = self._quick.read(sql, params)
            except BaseException as error:
                self.health.failed(error)
                raise
            if rows is not None:
                return rows
        return await self._fetchall(sql, params)  # locked: wait for it on the reader's thread

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

    async def _checkpoint_every(self, path: str, seconds: float) -> None:
        """Move the WAL into the database now and then, on a connection of its own, and keep
        it bounded under load (see the module docstring)."""
        checkpoints = await aiosqlite.connect(path, isolation_level=None)
        try:
            await checkpoints.execute("PRAGMA busy_timeout=5000")
            await checkpoints.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
            wal = Path(f"{path}-wal")
            while True:
                waited = 0.0
                while waited < seconds and self._wal_size(wal) <= WAL_LIMIT_BYTES:
                    await asyncio.sleep(WAL_LOOK_SECONDS)
                    waited += WAL_LOOK_SECONDS
                try:
                    await self.checkpoint(checkpoints)
                except aiosqlite.Error as error:
                    log.warning("WAL checkpoint failed: %s", error)
        finally:
            await checkpoints.close()

    @staticmethod
    def _wal_size(wal: Path) -> int:
        try:
            return wal.stat().st_size
        except OSError:
            return 0

    async def checkpoint(self, connection: aiosqlite.Connection) -> tuple[int, int]:
        """One background checkpoint on ``connection``: ``PASSIVE``, then, if the WAL still
        holds more than :data:`RESTART_FRAMES` frames, once more under the writers' lock, so
        that it is copied to its end. Returns the frames in the WAL and those copied, as the
        last pass left them."""
        frames, copied = await _checkpoint_pass(connection)
        if frames <= RESTART_FRAMES:
            return frames, copied
        # under the writers' lock: no commit of this process appends meanwhile
        async with self._lock:
            return await _checkpoint_pass(connection)


async def _configure(connection: aiosqlite.Connection, path: str, synchronous: str) -> None:
    """The writer's pragmas (WAL, ``synchronous``, no automatic checkpoint), then a quick check.

    Raises:
        StorageError: the check finds the file damaged.
    """
    connection.row_factory = aiosqlite.Row
    await connection.execute("PRAGMA journal_mode=WAL")
    await connection.execute(f"PRAGMA synchronous={synchronous}")
    await connection.execute("PRAGMA foreign_keys=ON")
    await connection.execute("PRAGMA busy_timeout=5000")
    await connection.execute("PRAGMA wal_autocheckpoint=0")
    await connection.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
    async with connection.execute("PRAGMA quick_check") as cursor:
        verdict = [row[0] for row in await cursor.fetchall()]
    if verdict != ["ok"]:
        raise StorageError(f"{path}: the database is damaged: {'; '.join(verdict[:3])}")


async def _checkpoint_pass(connection: aiosqlite.Connection) -> tuple[int, int]:
    """One ``PASSIVE`` checkpoint: the frames in the WAL and those copied."""
    async with connection.execute("PRAGMA wal_checkpoint(PASSIVE)") as cursor:
        row = await cursor.fetchone()
    if row is None:  # the pragma answers one row whatever the journal mode
        raise StorageError("PRAGMA wal_checkpoint returned no row")
    _, frames, copied = row
    return int(frames), int(copied)
