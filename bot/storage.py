"""Storage: one SQLite file through aiosqlite (the default), or a PostgreSQL server through
asyncpg (:mod:`bot.postgres`, for several processes sharing one database); plain SQL in named
helpers, the same SQL for both (what PostgreSQL spells differently is translated mechanically
in :mod:`bot.postgres`).

Numbered migrations (``bot/migrations/V{n}__*.sql``) are applied at start, the same files for
both databases: a statement preceded by a ``-- sqlite only`` or ``-- postgresql only`` line runs
on that database alone (the few changes SQLite can only make by rebuilding a table).

Games belong to the process that serves their guild's shard (:meth:`Storage.set_shards`): a
process restores, and carries out the outbox of, only those. One player plays in one started
game at a time, whichever process serves it: the table ``active_players`` (one row per player of
a game being started or running, its key the user id) is written in the same transaction as
the game's state, so the database itself refuses a second one (:class:`PlayerBusy`).

SQLite:
Writes go through one lock, so a transaction is never interleaved with
another on the shared connection. WAL mode with ``synchronous=FULL`` (the
config's ``sqlite_synchronous``): COMMIT returns once the WAL is on the disk
(an fsync), so what a player was told survives a power loss, not only the
process being killed; group commit makes that one fsync per group, not per
command. (``normal``, the old setting, fsyncs only at checkpoints: the last
commits before a power cut may roll back.)

**The WAL stays bounded.** SQLite's automatic checkpoint (which runs inside
whichever COMMIT crosses the threshold) is off; a second connection
checkpoints every :data:`CHECKPOINT_SECONDS` instead, or as soon as the WAL file
is larger than :data:`WAL_LIMIT_BYTES`, ``PASSIVE`` (it copies what it can while
commits go on). Under sustained load that alone never
catches up: new frames arrive while it copies, the WAL is never wholly
copied, so it never starts again from its beginning and grows for as long as
the load lasts. So when the WAL holds more than :data:`RESTART_FRAMES`
frames, the checkpoint is run once more holding the writers' lock: what is
left is copied (a few milliseconds: the unlocked pass did the bulk), the next
commit starts the WAL over, and ``journal_size_limit`` cuts the file back to
:data:`WAL_LIMIT_BYTES`. Commits wait only for that short tail, never for
the bot to be idle.

**Reads on a connection of their own.** Every read outside a transaction
goes to a second, read-only connection (its own thread): in WAL mode it sees
exactly what was committed when the read began, never a transaction in
progress, so reads take no lock and never queue behind the writes.

**Group commit.** The hot writes (a command with its outbox and snapshot,
an outbox item's mark) are not each a transaction of their own: they are
queued, and one writer commits everything queued so far in one transaction,
one ``executemany`` per statement for the whole group, then answers each
caller. The group goes to the file on a connection of its own
(:class:`GroupWriter`), right on the event loop's thread, where aiosqlite
makes each statement and the commit a trip to its thread, each worth two
turns of the loop to the caller; a write that finds nothing else writing is
committed before its caller's next await. A caller returns only once the commit that holds its write returned,
so nothing is announced (or marked, or carried out) before it is stored; a
group that fails is rolled back and its writes are tried again one
transaction each, so each caller gets its own outcome (a repeated
interaction, a full disk). Under load the group grows by itself (what came
in while the last commit ran); alone, a write is committed at once. The
writes of one group touch different rows (one command per game at a time,
under the game's lock; one mark per item), so running each statement for the
whole group at once keeps every write's own order.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import aiosqlite

from bot.errors import UserError

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

MIGRATION_NAME = re.compile(r"^V(\d+)__[\w-]+\.sql$")


#: a game in one of these states is the guild's open game (one at a time)
OPEN_STATES = ("lobby", "starting", "running")

#: the outbox's lanes, each carried out in order on its own (see :mod:`bot.outbox`)
LANES = ("provision", "permissions", "messages")

#: the lane of each kind of item unless the item names one
KIND_LANES = {
    "create_role": "provision", "create_channel": "provision", "delete_role": "provision",
    "overwrite": "permissions", "member_role": "permissions",
}


class IntegrityError(sqlite3.IntegrityError):
    """A constraint of the database refused a write (raised by the PostgreSQL backend; a subclass
    of sqlite3's, so code that catches that one catches both)."""


class PlayerBusy(UserError):
    """A player is already in another game being started or running (the database refused him);
    a refusal the user reads like any other (``error.player_in_other_game``)."""

    def __init__(self, user_id: int, game_id: int | None = None) -> None:
        super().__init__("error.player_in_other_game", player=f"<@{user_id}>")
        self.user_id = user_id
        self.game_id = game_id

    def __str__(self) -> str:
        return f"user {self.user_id} already plays in game {self.game_id}"


#: the states whose players are in ``active_players``
ACTIVE_STATES = ("starting", "running")


def is_postgres(database: Path | str) -> bool:
    """Whether a ``database:`` value is a PostgreSQL URL (else it is a SQLite file path)."""
    return isinstance(database, str) and database.startswith(("postgresql://", "postgres://"))


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


class GameExists(Exception):
    """The guild already has an open game."""


class StorageError(Exception):
    """The database cannot be opened or used: damaged, not a database, unreadable."""


class CommitUnknown(StorageError):
    """The connection broke while COMMIT was on its way: the server may or may not have
    committed (PostgreSQL flushes the commit, then answers; a crash between the two loses only
    the answer)."""


def is_storage_failure(error: BaseException) -> bool:
    """Whether ``error`` is the database failing (down, unreachable, disk full or damaged), as
    opposed to a refusal (a repeated interaction, a busy player) or a bug."""
    if isinstance(error, (sqlite3.IntegrityError, UserError)):
        return False
    if isinstance(error, (sqlite3.Error, OSError, StorageError, TimeoutError)):
        return True
    try:
        import asyncpg
    except ImportError:
        return False
    return isinstance(error, (asyncpg.PostgresError, asyncpg.InterfaceError))


class DamagedLog(Exception):
    """A stored command row cannot be read (not JSON, not an object)."""

    def __init__(self, game_id: int, seq: int, detail: str) -> None:
        super().__init__(f"game {game_id}: command {seq} is unreadable: {detail}")
        self.game_id = game_id
        self.seq = seq


@dataclass
class GameRecord:
    """A game as stored: its lobby until dealt, then its setup, seed and channels."""

    id: int
    guild_id: int
    host_id: int
    state: str
    created_at: float
    lobby: dict[str, Any]
    setup: dict[str, Any] | None = None
    seed: int | None = None
    channels: dict[str, Any] = field(default_factory=dict)
    deadline: float | None = None
    deadline_stage: str | None = None
    reminders_sent: list[int] = field(default_factory=list)
    command_count: int = 0
    stage_since: float | None = None
    damaged: str | None = None
    """Why the stored row could not be read (its JSON fields are then empty), or None."""

    @property
    def open(self) -> bool:
        """A lobby, a game being started or a running game."""
        return self.state in OPEN_STATES


@dataclass(frozen=True)
class OutboxItem:
    """Something to do on Discord, stored before it is done."""

    kind: str
    target: dict[str, Any]
    payload: dict[str, Any]
    id: int = 0
    game_id: int = 0
    seq: int | None = None
    attempts: int = 0
    lane: str = ""
    """The lane it goes in; empty: the lane of its kind (:data:`KIND_LANES`, else messages)."""
    created_at: float = 0.0

    @property
    def queue(self) -> str:
        """The lane the item is carried out in."""
        return self.lane or KIND_LANES.get(self.kind, "messages")


@dataclass(frozen=True)
class StoredSnapshot:
    """A snapshot as stored: its text, checked against its checksum by :attr:`intact`."""

    seq: int
    text: str
    checksum: str | None
    rules_version: str | None

    @property
    def intact(self) -> bool:
        """Whether the text is what was written (a snapshot from before checksums never is)."""
        return self.checksum is not None and checksum(self.text) == self.checksum


@dataclass(frozen=True)
class CommandRow:
    """One entry of a game's command log."""

    seq: int
    command: dict[str, Any]
    interaction_id: int | None
    source: str


def _migrations() -> list[tuple[int, str, str]]:
    folder = resources.files("bot") / "migrations"
    found = []
    for entry in folder.iterdir():
        match = MIGRATION_NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


def checksum(text: str) -> str:
    """The checksum stored with a snapshot: SHA-256 of its text, in hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _game(row: aiosqlite.Row) -> GameRecord:
    try:
        return _parse_game(row)
    except (ValueError, TypeError) as error:
        # one damaged row must not keep the other games from loading: it is kept, marked
        log.error("game %s: its stored row is unreadable: %s", row["id"], error)
        return GameRecord(
            id=row["id"], guild_id=row["guild_id"], host_id=row["host_id"], state=row["state"],
            created_at=row["created_at"], lobby={"players": []}, damaged=str(error),
        )


def _parse_game(row: aiosqlite.Row) -> GameRecord:
    lobby = json.loads(row["lobby"])
    channels = json.loads(row["channels"])
    if not isinstance(lobby, dict) or not isinstance(channels, dict):
        raise ValueError("lobby or channels is not a JSON object")
    return GameRecord(
        id=row["id"],
        guild_id=row["guild_id"],
        host_id=row["host_id"],
        state=row["state"],
        created_at=row["created_at"],
        lobby=lobby,
        setup=json.loads(row["setup"]) if row["setup"] else None,
        seed=row["seed"],
        channels=channels,
        deadline=row["deadline"],
        deadline_stage=row["deadline_stage"],
        reminders_sent=json.loads(row["reminders_sent"]),
        command_count=row["command_count"],
        stage_since=row["stage_since"],
    )


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _dumps(value: Any) -> str:
    return _ENCODER.encode(value)


UPDATE_GAME = (
    "UPDATE games SET host_id = ?, state = ?, lobby = ?, setup = ?, seed = ?, channels = ?, "
    "deadline = ?, deadline_stage = ?, reminders_sent = ?, command_count = ?, stage_since = ? "
    "WHERE id = ?"
)
INSERT_OUTBOX = (
    "INSERT INTO outbox (game_id, seq, kind, lane, target, payload, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def _game_row(record: GameRecord) -> tuple[Any, ...]:
    """The parameters of :data:`UPDATE_GAME` for a record."""
    return (
        record.host_id, record.state, _dumps(record.lobby),
        _dumps(record.setup) if record.setup is not None else None, record.seed,
        _dumps(record.channels), record.deadline, record.deadline_stage,
        _dumps(record.reminders_sent), record.command_count, record.stage_since, record.id,
    )


def _outbox_rows(game_id: int, seq: int | None, items: Iterable[OutboxItem], now: float) -> list[tuple[Any, ...]]:
    """The parameters of :data:`INSERT_OUTBOX` for items (lane in the fourth place)."""
    return [(game_id, seq, item.kind, item.queue, _dumps(item.target), _dumps(item.payload), now)
            for item in items]


Statements = list[tuple[str, list[tuple[Any, ...]]]]
"""A write: its statements in order, each with its rows (one ``executemany`` each)."""


@dataclass
class _GroupedWrite:
    """A write waiting for a group commit: its statements in order, each with its rows."""

    statements: Statements
    lanes: list[tuple[int, set[str]]] = field(default_factory=list)
    """(game id, lanes) it stores outbox items in: told to the outbox once committed."""
    done: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
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


#: SQLite's result code for a lock held by another connection (the low byte of extended codes)
SQLITE_BUSY = 5


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
            for pragma in (f"synchronous={self.synchronous}", "foreign_keys=ON", "busy_timeout=0",
                           "wal_autocheckpoint=0", f"journal_size_limit={WAL_LIMIT_BYTES}"):
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
            log.info("a group commit of %d writes failed (%s); each is tried alone", len(writes), error)
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

    def submit(self, writes: list[Statements], loop: asyncio.AbstractEventLoop,
               finished: Callable[[list[BaseException | None], int], None]) -> None:
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


class Storage:
    """The bot's database. Open with :meth:`open`; close with :meth:`close`."""

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
        self._shard_sql = f"((guild_id >> 22) % {int(shard_count)}) IN ({', '.join(map(str, wanted))})"

    def _owned(self, prefix: str = "") -> str:
        """`` AND`` the shard condition (on ``prefix.guild_id``), or nothing."""
        if not self._shard_sql:
            return ""
        return " AND " + self._shard_sql.replace("guild_id", f"{prefix}guild_id")

    @classmethod
    async def open(cls, path: Path | str, *, synchronous: str = "FULL") -> Storage:
        """Open (creating if needed) the database, check it and apply pending migrations:
        a SQLite file, or a PostgreSQL server when ``path`` is a ``postgresql://`` URL.
        ``synchronous``: SQLite's, one of :data:`SYNCHRONOUS` (see the module docstring).

        Raises:
            StorageError: the file is not a usable database (damaged, truncated, zeroed,
                unreadable), or the server cannot be reached; nothing is left open.
        """
        if is_postgres(path):
            from bot.postgres import PostgresStorage

            return await PostgresStorage.connect(str(path))
        synchronous = synchronous.upper()
        if synchronous not in SYNCHRONOUS:
            raise StorageError(f"synchronous must be one of {', '.join(SYNCHRONOUS)}, not {synchronous!r}")
        # DEFERRED: sqlite3 opens the transaction with the first write itself
        # (no round trip of its own); transaction() commits or rolls back.
        try:
            connection = await aiosqlite.connect(str(path), isolation_level="DEFERRED")
        except (sqlite3.Error, OSError) as error:
            raise StorageError(f"{path}: cannot open the database: {error}") from error
        storage: Storage | None = None
        try:
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
            storage = cls(connection)
            await storage._migrate()
            if str(path) != ":memory:":  # a database in memory is the writer's alone
                storage._reader = await storage._open_reader(str(path))
                storage._group = GroupWriter(str(path), synchronous)
                storage._group.open()
        except BaseException as error:
            with contextlib.suppress(Exception):
                await connection.close()  # its thread would keep the process from exiting
            if storage is not None and storage._reader is not None:
                with contextlib.suppress(Exception):
                    await storage._reader.close()
            if storage is not None and storage._group is not None:
                storage._group.close()
            if isinstance(error, sqlite3.Error):
                raise StorageError(f"{path}: the database is damaged or not a database: {error}") from error
            raise
        assert storage is not None
        storage._checkpointer = asyncio.create_task(
            storage._checkpoint_every(str(path), CHECKPOINT_SECONDS), name="sqlite-checkpoint"
        )
        return storage

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
        async with connection.execute("PRAGMA wal_checkpoint(PASSIVE)") as cursor:
            _, frames, copied = await cursor.fetchone()
        if frames <= RESTART_FRAMES:
            return frames, copied
        # under the writers' lock: no commit of this process appends meanwhile
        async with self._lock, connection.execute("PRAGMA wal_checkpoint(PASSIVE)") as cursor:
            _, frames, copied = await cursor.fetchone()
        return frames, copied

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
                    group = self._settle_group(group, *self._group.write([w.statements for w in group]))
                    if not group:
                        continue
                    # another process writes: what it kept out waits for it on the thread
                statements = [write.statements for write in group]
                ended: asyncio.Future[None] = loop.create_future()

                def finished(outcomes: list[BaseException | None], commits: int,
                             group: list[_GroupedWrite] = group,
                             ended: asyncio.Future[None] = ended) -> None:
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

    def _settle_group(self, group: list[_GroupedWrite], outcomes: list[BaseException | None],
                      commits: int) -> list[_GroupedWrite]:
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
            raise aiosqlite.IntegrityError(f"foreign keys broken by a migration: {list(map(tuple, broken))}")

    async def _apply_migrations(self) -> None:
        async with self.transaction() as db:
            await db.execute(self.begin_migrations)
            await db.execute(self._ddl(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
            ))
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

    async def meta(self, key: str) -> str | None:
        """A stored fact about the process."""
        row = await self._fetchone("SELECT value FROM meta WHERE key = ?", (key,))
        return row["value"] if row else None

    async def set_meta(self, key: str, value: str) -> None:
        """Store a fact about the process."""
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    async def meta_keys(self, prefix: str) -> list[str]:
        """The stored facts' keys that begin with ``prefix``."""
        rows = await self._fetchall("SELECT key FROM meta WHERE substr(key, 1, ?) = ?", (len(prefix), prefix))
        return [str(row["key"]) for row in rows]

    async def delete_meta(self, key: str) -> None:
        """Forget a stored fact."""
        async with self.transaction() as db:
            await db.execute("DELETE FROM meta WHERE key = ?", (key,))

    # ------------------------------------------------------------------ guilds

    async def _guild(self, guild_id: int) -> tuple[str | None, int | None]:
        cached = self._guilds.get(guild_id)
        if cached is None:
            row = await self._fetchone(
                "SELECT language, host_role_id FROM guild_settings WHERE guild_id = ?", (guild_id,)
            )
            cached = (row["language"], row["host_role_id"]) if row else (None, None)
            self._guilds[guild_id] = cached
        return cached

    async def guild_language(self, guild_id: int) -> str | None:
        """The guild's language, or None when it was never set (kept in memory once read)."""
        return (await self._guild(guild_id))[0]

    async def guild_host_role(self, guild_id: int) -> int | None:
        """The id of the guild's host role, if set (kept in memory once read)."""
        return (await self._guild(guild_id))[1]

    async def set_guild_language(self, guild_id: int, language: str) -> None:
        """Store the guild's language, leaving its host role as it is."""
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO guild_settings (guild_id, language) VALUES (?, ?) "
                "ON CONFLICT (guild_id) DO UPDATE SET language = excluded.language",
                (guild_id, language),
            )
        self._guilds.pop(guild_id, None)  # read again: the other column may be newer than memory

    async def set_guild_host_role(self, guild_id: int, host_role_id: int | None, *, language: str) -> None:
        """Store the guild's host role, leaving its language as it is (``language`` only
        fills a guild never set)."""
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO guild_settings (guild_id, language, host_role_id) VALUES (?, ?, ?) "
                "ON CONFLICT (guild_id) DO UPDATE SET host_role_id = excluded.host_role_id",
                (guild_id, language, host_role_id),
            )
        self._guilds.pop(guild_id, None)

    async def set_guild_settings(
        self, guild_id: int, *, language: str, host_role_id: int | None
    ) -> None:
        """Store the guild's language and host role."""
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO guild_settings (guild_id, language, host_role_id) VALUES (?, ?, ?) "
                "ON CONFLICT (guild_id) DO UPDATE SET language = excluded.language, "
                "host_role_id = excluded.host_role_id",
                (guild_id, language, host_role_id),
            )
        self._guilds[guild_id] = (language, host_role_id)

    # ------------------------------------------------------------------ games

    async def create_game(
        self,
        guild_id: int,
        host_id: int,
        lobby: dict[str, Any],
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
                    "VALUES (?, ?, 'lobby', ?, ?) RETURNING id",
                    (guild_id, host_id, now, _dumps(lobby)),
                ) as cursor:
                    row = await cursor.fetchone()
                game_id = int(row[0]) if row else 0
                await self._record_interaction(db, interaction_id, game_id, now)
                if outbox is not None:
                    created = GameRecord(game_id, guild_id, host_id, "lobby", now, lobby)
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
            "SELECT * FROM games WHERE guild_id = ? AND state IN ('lobby', 'starting', 'running')",
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
            f"SELECT * FROM games WHERE state IN ('lobby', 'starting', 'running'){self._owned()} ORDER BY id"
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
            async with db.execute("SELECT user_id FROM active_players WHERE game_id = ?", (record.id,)) as cursor:
                stored = {int(row[0]) for row in await cursor.fetchall()}
        if stored == wanted:
            return wanted
        gone, new = stored - wanted, wanted - stored
        if gone:
            await db.executemany("DELETE FROM active_players WHERE user_id = ? AND game_id = ?",
                                 [(user, record.id) for user in sorted(gone)])
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
                    "ORDER BY user_id", refused,
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
        row = await self._fetchone("SELECT game_id FROM active_players WHERE user_id = ?", (user_id,))
        return int(row[0]) if row else None

    async def _update_game(self, db: aiosqlite.Connection, record: GameRecord) -> None:
        await db.execute(UPDATE_GAME, _game_row(record))

    async def close_damaged(self, record: GameRecord, *, interaction_id: int | None = None,
                            outbox: Iterable[OutboxItem] = (), now: float | None = None) -> None:
        """Store only the state of a game whose row is unreadable (its other fields are not
        known, so they are left as they are)."""
        now = time.time() if now is None else now
        async with self.transaction(record.id) as db:
            await db.execute("UPDATE games SET state = ?, deadline = NULL WHERE id = ?",
                             (record.state, record.id))
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
        write = _GroupedWrite([(
            "INSERT INTO commands (game_id, seq, command, interaction_id, source, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [(record.id, seq, _dumps(command), interaction_id, source, now)],
        )])
        if record_changed:
            write.statements.append((UPDATE_GAME, [_game_row(record)]))
        rows = _outbox_rows(record.id, seq, outbox, now)
        if rows:
            write.statements.append((INSERT_OUTBOX, rows))
            write.lanes.append((record.id, {row[3] for row in rows}))
        if snapshot is not None:
            text = _dumps(snapshot)
            write.statements.append((
                "INSERT INTO snapshots (game_id, seq, state, checksum, rules_version) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (game_id, seq) DO UPDATE SET "
                "state = excluded.state, checksum = excluded.checksum, "
                "rules_version = excluded.rules_version",
                [(record.id, seq, text, checksum(text), rules_version)],
            ))
        if self.dialect == "sqlite" and not (record_changed and record.state not in OPEN_STATES):
            await self._grouped(write)
            return seq
        # PostgreSQL runs different games' transactions at once (no group to wait for); a game
        # that ends frees its players in active_players, a read and write of its own
        active = None
        async with self.transaction(record.id) as db:
            await self._write_alone(db, write)
            if record_changed and record.state not in OPEN_STATES:
                active = await self._sync_active(db, record)
        self._remember_active(record, active)
        self._lanes_stored(write)
        return seq

    async def commands(self, game_id: int, after: int = 0, upto: int | None = None) -> list[CommandRow]:
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
                raise DamagedLog(game_id, row["seq"], f"not a JSON object: {str(row['command'])[:40]!r}")
            result.append(CommandRow(row["seq"], command, row["interaction_id"], row["source"]))
        return result

    async def command_times(self, game_id: int, seqs: Iterable[int]) -> dict[int, float]:
        """When each of these commands of a game was accepted (unix time), by seq."""
        wanted = sorted(set(seqs))
        found: dict[int, float] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
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
        return [StoredSnapshot(row["seq"], str(row["state"]), row["checksum"], row["rules_version"])
                for row in rows]

    # ------------------------------------------------------------------ interactions

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

    # ------------------------------------------------------------------ outbox

    async def _insert_outbox(
        self, db: aiosqlite.Connection, game_id: int, seq: int | None,
        items: Iterable[OutboxItem], now: float,
    ) -> None:
        rows = _outbox_rows(game_id, seq, items, now)
        if rows:
            await db.executemany(INSERT_OUTBOX, rows)
            self._new_lanes.setdefault(game_id, set()).update(row[3] for row in rows)

    def new_lanes(self, game_id: int) -> set[str]:
        """The lanes a game got items in since this was last asked (a hint for the outbox, so it
        wakes only those; a rolled-back transaction may leave a lane too many, never one too few)."""
        return self._new_lanes.pop(game_id, set())

    async def add_outbox(self, game_id: int, items: Iterable[OutboxItem]) -> None:
        """Store outbox items on their own (reminders, results of background work)."""
        async with self.transaction(game_id) as db:
            await self._insert_outbox(db, game_id, None, items, time.time())

    async def pending_outbox(
        self, game_id: int | None = None, limit: int = 100, *, lane: str | None = None
    ) -> list[OutboxItem]:
        """Pending items, oldest first; of one game (and one lane) if given."""
        where, params = ["state = 'pending'"], []
        if game_id is not None:
            where.append("game_id = ?")
            params.append(game_id)
        if lane is not None:
            where.append("lane = ?")
            params.append(lane)
        rows = await self._fetchall(
            f"SELECT * FROM outbox WHERE {' AND '.join(where)} ORDER BY id LIMIT ?", (*params, limit)
        )
        return [_item(row) for row in rows]

    async def games_with_pending_outbox(self) -> list[int]:
        """Ids of games (of this process's shards) that have pending outbox items."""
        if self._shard_sql:
            rows = await self._fetchall(
                "SELECT DISTINCT o.game_id FROM outbox o JOIN games g ON g.id = o.game_id "
                f"WHERE o.state = 'pending'{self._owned('g.')} ORDER BY o.game_id"
            )
        else:
            rows = await self._fetchall(
                "SELECT DISTINCT game_id FROM outbox WHERE state = 'pending' ORDER BY game_id"
            )
        return [row[0] for row in rows]

    async def games_in_state(self, state: str) -> list[int]:
        """Ids of the games in one state (``starting`` ones to resume, say)."""
        rows = await self._fetchall(
            f"SELECT id FROM games WHERE state = ?{self._owned()} ORDER BY id", (state,)
        )
        return [row[0] for row in rows]

    async def outbox_sent(
        self, item: OutboxItem, result_id: int | None, ref: tuple[str, int] | None = None
    ) -> None:
        """Mark one item carried out, with the id Discord returned (a message, role or channel),
        remembering a message for later edits under ``ref`` (name, channel id); returns once
        that is committed (in a group commit, see the module docstring)."""
        write = _GroupedWrite([(
            "UPDATE outbox SET state = 'sent', message_id = ?, sent_at = ?, "
            "attempts = attempts + 1 WHERE id = ?",
            [(result_id, time.time(), item.id)],
        )])
        if ref is not None and result_id is not None:
            write.statements.append((
                "INSERT INTO message_refs (game_id, ref, channel_id, message_id) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (game_id, ref) DO UPDATE SET "
                "channel_id = excluded.channel_id, message_id = excluded.message_id",
                [(item.game_id, ref[0], ref[1], result_id)],
            ))
        if self.dialect == "sqlite":
            await self._grouped(write)
            return
        async with self.transaction(item.game_id) as db:  # PostgreSQL: beside other games'
            await self._write_alone(db, write)

    async def outbox_superseded(self, items: list[OutboxItem]) -> None:
        """Mark edits that a later edit of the same message replaces as done (nothing was sent)."""
        if not items:
            return
        now = time.time()
        async with self.transaction(items[0].game_id) as db:
            await db.executemany(
                "UPDATE outbox SET state = 'sent', sent_at = ? WHERE id = ?",
                [(now, item.id) for item in items],
            )

    async def outbox_retry(self, item: OutboxItem, error: str) -> None:
        """Count a failed attempt that will be tried again."""
        async with self.transaction(item.game_id) as db:
            await db.execute(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ? WHERE id = ? AND state = 'pending'",
                (error[:500], item.id),
            )

    async def outbox_failed(self, item: OutboxItem, error: str) -> None:
        """Give up on an item Discord refuses for good (it stays in the table with its error)."""
        async with self.transaction(item.game_id) as db:
            await db.execute(
                "UPDATE outbox SET state = 'failed', attempts = attempts + 1, last_error = ? "
                "WHERE id = ?",
                (error[:500], item.id),
            )

    async def newer_edit_pending(self, item: OutboxItem) -> bool:
        """Whether a later pending edit of the same message exists (so ``item`` is stale)."""
        rows = await self._fetchall(
            "SELECT target FROM outbox WHERE game_id = ? AND state = 'pending' AND kind = 'edit' "
            "AND id > ?",
            (item.game_id, item.id),
        )
        return any(json.loads(row["target"]).get("ref") == item.target.get("ref") for row in rows)

    async def outbox_counts(self, game_id: int) -> dict[str, int]:
        """How many items of a game are in each state."""
        rows = await self._fetchall(
            "SELECT state, COUNT(*) FROM outbox WHERE game_id = ? GROUP BY state", (game_id,)
        )
        return {row[0]: row[1] for row in rows}

    async def outbox_items(self, game_id: int, lane: str | None = None) -> list[OutboxItem]:
        """Every item of a game (of one lane), in order, whatever its state."""
        if lane is None:
            rows = await self._fetchall("SELECT * FROM outbox WHERE game_id = ? ORDER BY id", (game_id,))
        else:
            rows = await self._fetchall(
                "SELECT * FROM outbox WHERE game_id = ? AND lane = ? ORDER BY id", (game_id, lane)
            )
        return [_item(row) for row in rows]

    async def provisioned(self, game_id: int) -> dict[str, int]:
        """What a game's provisioning made so far: each role's and channel's key → its id."""
        rows = await self._fetchall(
            "SELECT target, message_id FROM outbox WHERE game_id = ? AND lane = 'provision' "
            "AND state = 'sent' AND kind IN ('create_role', 'create_channel') ORDER BY id",
            (game_id,),
        )
        made: dict[str, int] = {}
        for row in rows:
            key = json.loads(row["target"]).get("key")
            if key and row["message_id"] is not None:
                made[str(key)] = int(row["message_id"])
        return made

    async def claimed(self, ids: Iterable[int]) -> set[int]:
        """Which of these Discord ids (messages, roles, channels) an item already carried out
        returned: those are some item's, never to be adopted by another."""
        wanted = list(ids)
        found: set[int] = set()
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            marks = ",".join("?" * len(chunk))
            rows = await self._fetchall(
                f"SELECT message_id FROM outbox WHERE state = 'sent' AND message_id IN ({marks}) "
                f"UNION SELECT message_id FROM message_refs WHERE message_id IN ({marks})",
                (*chunk, *chunk),
            )
            found.update(int(row[0]) for row in rows)
        return found

    async def message_ref(self, game_id: int, ref: str) -> tuple[int, int] | None:
        """(channel id, message id) of a message remembered under ``ref``."""
        row = await self._fetchone(
            "SELECT channel_id, message_id FROM message_refs WHERE game_id = ? AND ref = ?",
            (game_id, ref),
        )
        return (row["channel_id"], row["message_id"]) if row else None

    async def ref_of_message(self, game_id: int, message_id: int) -> str | None:
        """The name a message of the game is remembered under, if any."""
        row = await self._fetchone(
            "SELECT ref FROM message_refs WHERE game_id = ? AND message_id = ?", (game_id, message_id)
        )
        return str(row["ref"]) if row else None

    async def set_message_ref(self, game_id: int, ref: str, channel_id: int, message_id: int) -> None:
        """Remember a message (sent as an interaction answer, say) under ``ref``."""
        async with self.transaction(game_id) as db:
            await db.execute(
                "INSERT INTO message_refs (game_id, ref, channel_id, message_id) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (game_id, ref) DO UPDATE SET "
                "channel_id = excluded.channel_id, message_id = excluded.message_id",
                (game_id, ref, channel_id, message_id),
            )

    # ------------------------------------------------------------------ users

    async def quiet_users(self, user_ids: Iterable[int]) -> set[int]:
        """Which of these users turned pings off (everyone else wants them: the default)."""
        wanted = list(user_ids)
        quiet: set[int] = set()
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            rows = await self._fetchall(
                f"SELECT user_id FROM user_settings WHERE pings = 0 AND user_id IN "
                f"({','.join('?' * len(chunk))})",
                chunk,
            )
            quiet.update(int(row[0]) for row in rows)
        return quiet

    async def set_pings(self, user_id: int, wanted: bool) -> None:
        """Store whether a user wants the game's roles to ping him."""
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO user_settings (user_id, pings) VALUES (?, ?) "
                "ON CONFLICT (user_id) DO UPDATE SET pings = excluded.pings",
                (user_id, int(wanted)),
            )

    # ================================================================== season (issue 19)
    # Finished games' channels replaced by transcripts (migration V7, cogs/season.py).

    async def season_channel(self, guild_id: int) -> int | None:
        """The guild's archive channel, if the bot made one."""
        row = await self._fetchone("SELECT channel_id FROM season_channels WHERE guild_id = ?", (guild_id,))
        return int(row[0]) if row else None

    async def set_season_channel(self, guild_id: int, channel_id: int) -> None:
        """Store (or replace) the guild's archive channel."""
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO season_channels (guild_id, channel_id) VALUES (?, ?) "
                "ON CONFLICT (guild_id) DO UPDATE SET channel_id = excluded.channel_id",
                (guild_id, channel_id),
            )

    async def schedule_transcript(self, game_id: int, guild_id: int, due: float) -> None:
        """Archive a finished game's channels at ``due`` (nothing if it is scheduled already)."""
        async with self.transaction(game_id) as db:
            await db.execute(
                "INSERT INTO transcripts (game_id, guild_id, due) VALUES (?, ?, ?) ON CONFLICT (game_id) DO NOTHING",
                (game_id, guild_id, due),
            )

    async def unscheduled_finished(self) -> list[int]:
        """Finished games (of this process's shards) that made channels and have no transcript row:
        ended while no process scheduled them (a crash after the end, or before this version)."""
        rows = await self._fetchall(
            "SELECT g.id FROM games g LEFT JOIN transcripts s ON s.game_id = g.id "
            "WHERE g.state IN ('over', 'cancelled') AND g.channels LIKE '%\"roles\"%' "
            f"AND s.game_id IS NULL{self._owned('g.')} ORDER BY g.id"
        )
        return [int(row[0]) for row in rows]

    async def kept_finished(self, guild_id: int) -> list[int]:
        """A guild's finished games that made channels not (yet) replaced by a transcript: none
        posted or being posted (a game whose channels were deleted at its end is among them)."""
        rows = await self._fetchall(
            "SELECT g.id FROM games g LEFT JOIN transcripts s ON s.game_id = g.id "
            "WHERE g.guild_id = ? AND g.state IN ('over', 'cancelled') AND g.channels LIKE '%\"roles\"%' "
            "AND (s.state IS NULL OR s.state NOT IN ('posting', 'done')) ORDER BY g.id", (guild_id,)
        )
        return [int(row[0]) for row in rows]

    async def transcripts_due(self, state: str = "due") -> list[tuple[int, float]]:
        """(game id, when) of every transcript waiting for its time (or in another ``state``), of
        this process's shards."""
        rows = await self._fetchall(
            "SELECT s.game_id, s.due FROM transcripts s JOIN games g ON g.id = s.game_id "
            f"WHERE s.state = ?{self._owned('g.')} ORDER BY s.due", (state,)
        )
        return [(int(row[0]), float(row[1])) for row in rows]

    async def transcript(self, game_id: int) -> dict[str, Any] | None:
        """A game's transcript row: state, due, channel_id, message_id, failure (a dict)."""
        row = await self._fetchone("SELECT * FROM transcripts WHERE game_id = ?", (game_id,))
        if row is None:
            return None
        return {"state": row["state"], "due": row["due"], "guild_id": row["guild_id"],
                "channel_id": row["channel_id"], "message_id": row["message_id"],
                "failure": json.loads(row["failure"]) if row["failure"] else None}

    async def begin_transcript(self, game_id: int, items: Iterable[OutboxItem]) -> bool:
        """Due → posting, with the outbox items that post the transcript, in one transaction
        (False: it was not due any more)."""
        async with self.transaction(game_id) as db:
            async with db.execute(
                "UPDATE transcripts SET state = 'posting' WHERE game_id = ? AND state = 'due' RETURNING game_id",
                (game_id,),
            ) as cursor:
                if await cursor.fetchone() is None:
                    return False
            await self._insert_outbox(db, game_id, None, items, time.time())
        return True

    async def transcript_posted(self, game_id: int) -> tuple[str, int | None]:
        """The state of a game's latest transcript item (pending, sent, failed) and the id of the
        first message it posted."""
        row = await self._fetchone(
            "SELECT state, message_id FROM outbox WHERE game_id = ? AND kind = 'transcript' ORDER BY id DESC LIMIT 1",
            (game_id,),
        )
        return (str(row[0]), int(row[1]) if row[1] is not None else None) if row else ("pending", None)

    async def finish_transcript(self, game_id: int, channel_id: int, message_id: int,
                                items: Iterable[OutboxItem]) -> bool:
        """Posting → done: where the transcript is, with the items deleting the game's channels and
        roles, in one transaction (False: it was not posting)."""
        async with self.transaction(game_id) as db:
            async with db.execute(
                "UPDATE transcripts SET state = 'done', channel_id = ?, message_id = ? "
                "WHERE game_id = ? AND state = 'posting' RETURNING game_id",
                (channel_id, message_id, game_id),
            ) as cursor:
                if await cursor.fetchone() is None:
                    return False
            await self._insert_outbox(db, game_id, None, items, time.time())
        return True

    async def transcript_failed(self, game_id: int, failure: dict[str, Any], items: Iterable[OutboxItem]) -> None:
        """Posting → failed: Discord refused the transcript (the channels stay); ``items`` tell the
        host, in the same transaction."""
        async with self.transaction(game_id) as db:
            await db.execute("UPDATE transcripts SET state = 'failed', failure = ? WHERE game_id = ?",
                             (_dumps(failure), game_id))
            await self._insert_outbox(db, game_id, None, items, time.time())

    # ================================================================== archive (issue 12)
    # The archive of finished games and the per-player figures kept from it
    # (migration V4). The rules of what is archived and how figures are computed
    # are bot/archive.py's; these are its SQL.

    async def games_to_archive(self) -> list[tuple[int, bool]]:
        """Finished (dealt) games not archived yet, oldest first: (game id, finished before the
        archive existed)."""
        rows = await self._fetchall(
            "SELECT g.id, b.game_id IS NOT NULL AS backfill FROM games g "
            "LEFT JOIN archive a ON a.game_id = g.id "
            "LEFT JOIN archive_backfill b ON b.game_id = g.id "
            "WHERE g.state IN ('over', 'cancelled') AND g.setup IS NOT NULL AND g.seed IS NOT NULL "
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
            log=[LoggedCommand(row["seq"], json.loads(row["command"]), row["source"], row["created_at"])
                 for row in rows],
            voice=[(row["id"], row["seq"], json.loads(row["payload"])) for row in voice],
        )

    async def is_archived(self, game_id: int) -> bool:
        """Whether a game is in the archive."""
        return await self._fetchone("SELECT 1 FROM archive WHERE game_id = ?", (game_id,)) is not None

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
            async with db.execute("SELECT 1 FROM archive WHERE game_id = ?", (game.game_id,)) as cursor:
                if await cursor.fetchone() is not None:
                    await db.execute("DELETE FROM archive_backfill WHERE game_id = ?", (game.game_id,))
                    return False
            await db.execute(
                "INSERT INTO archive (game_id, guild_id, host_id, ended, created_at, ended_at, seed, "
                "setup, names, log, winners, last_phase, players, cities) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    game.game_id, game.guild_id, game.host_id, game.ended, game.created_at,
                    game.ended_at, game.seed, _dumps(game.setup), _dumps(game.names),
                    _dumps([[command, source] for command, source in game.log]),
                    _dumps(game.winners), game.last_phase, len(game.players), _dumps(game.cities),
                ),
            )
            await db.executemany(
                "INSERT INTO archive_deaths (game_id, ordinal, player, city, status, cause, phase, by_city) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(game.game_id, index, d.player, d.city, d.status, d.cause, d.phase, d.by_city)
                 for index, d in enumerate(game.deaths)],
            )
            await db.executemany(
                "INSERT INTO archive_votes (game_id, day, city, voter, candidate) VALUES (?, ?, ?, ?, ?)",
                [(game.game_id, v.day, v.city, v.voter, v.candidate) for v in game.votes],
            )
            await db.executemany(
                "INSERT INTO archive_last_words (game_id, seq, player, phase, outbox_id, path, duration) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(game.game_id, w.seq, w.player, w.phase, w.outbox_id, w.path, w.duration)
                 for w in game.last_words],
            )
            await db.executemany(
                "INSERT INTO archive_players (game_id, guild_id, player, name, city, status, side, won, "
                "survived, executed, votes, votes_mafia, checks, hits) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(game.game_id, game.guild_id, p.player, p.name, p.city, p.status, p.side, p.won,
                  p.survived, p.executed, p.votes, p.votes_mafia, p.checks, p.hits)
                 for p in game.players],
            )
            if game.ended == "over":
                await self._count_game(db, game.guild_id, game.players, rate)
            await self._insert_outbox(db, game.game_id, None, outbox, time.time())
            await db.execute("DELETE FROM archive_backfill WHERE game_id = ?", (game.game_id,))
        return True

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
        async with db.execute("SELECT side, mu, sigma FROM side_ratings WHERE guild_id = ?", (guild_id,)) as cursor:
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
            [(guild_id, p.player, p.name, p.won, p.survived, p.executed, p.votes, p.votes_mafia,
              p.checks, p.hits, new_ratings[p.player][0], new_ratings[p.player][1],
              new_ratings[p.player][0] - 3 * new_ratings[p.player][1])
             for p in players],
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
            archive_where = "WHERE ended = 'over'" + (" AND guild_id = ?" if guild_id is not None else "")
            async with db.execute(
                f"SELECT game_id, guild_id FROM archive {archive_where} ORDER BY seq", params
            ) as cursor:
                games = [(row[0], row[1]) for row in await cursor.fetchall()]
            for game_id, guild in games:
                async with db.execute(
                    "SELECT * FROM archive_players WHERE game_id = ? ORDER BY rowid", (game_id,)
                ) as cursor:
                    players = [_archived_player(row) for row in await cursor.fetchall()]
                await self._count_game(db, guild, players, rate)
                counted += 1
        return counted

    async def archived_games(self, guild_id: int, *, offset: int, limit: int) -> tuple[list[ArchivedSummary], int]:
        """A page of the guild's archive, newest first, and how many games it holds."""
        rows = await self._fetchall(
            "SELECT game_id, host_id, ended, ended_at, winners, last_phase, players, cities "
            "FROM archive WHERE guild_id = ? ORDER BY seq DESC LIMIT ? OFFSET ?",
            (guild_id, limit, offset),
        )
        total = await self._fetchone("SELECT COUNT(*) FROM archive WHERE guild_id = ?", (guild_id,))
        return [
            ArchivedSummary(row["game_id"], row["host_id"], row["ended"], row["ended_at"],
                            json.loads(row["winners"]), row["last_phase"], row["players"],
                            json.loads(row["cities"]))
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
            game_id=row["game_id"], guild_id=row["guild_id"], host_id=row["host_id"],
            ended=row["ended"], created_at=row["created_at"], ended_at=row["ended_at"],
            seed=row["seed"], setup=json.loads(row["setup"]), names=json.loads(row["names"]),
            log=[(command, source) for command, source in json.loads(row["log"])],
            winners=json.loads(row["winners"]), last_phase=row["last_phase"],
            cities=json.loads(row["cities"]),
            deaths=[ArchivedDeath(d["player"], d["city"], d["status"], d["cause"], d["phase"], d["by_city"])
                    for d in deaths],
            votes=[ArchivedVote(v["day"], v["city"], v["voter"], v["candidate"]) for v in votes],
            last_words=[
                ArchivedLastWord(
                    w["seq"], w["player"], w["phase"], w["outbox_id"], w["path"], w["duration"],
                    channel_id=(int(json.loads(w["target"])["channel_id"])
                                if w["posted"] == "sent" and w["target"] else None),
                    message_id=w["message_id"] if w["posted"] == "sent" else None,
                )
                for w in words
            ],
            players=[_archived_player(p) for p in players],
        )

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

    async def leaderboard(self, guild_id: int, by: str, *, limit: int, min_games: int = 1) -> list[PlayerStats]:
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


def _item(row: aiosqlite.Row) -> OutboxItem:
    return OutboxItem(
        kind=row["kind"], target=json.loads(row["target"]), payload=json.loads(row["payload"]),
        id=row["id"], game_id=row["game_id"], seq=row["seq"], attempts=row["attempts"],
        lane=row["lane"], created_at=row["created_at"],
    )


# ---------------------------------------------------------------------- archive records (issue 12)


@dataclass(frozen=True)
class LoggedCommand:
    """One command of a game's log, with who gave it (player, host, timer) and when."""

    seq: int
    command: dict[str, Any]
    source: str
    created_at: float


@dataclass(frozen=True)
class ArchiveSource:
    """What a game's archive is built from."""

    record: GameRecord
    log: list[LoggedCommand]
    voice: list[tuple[int, int | None, dict[str, Any]]]
    """The game's ``voice`` outbox items: (item id, seq of its command, payload)."""


@dataclass(frozen=True)
class ArchivedDeath:
    """One death of an archived game."""

    player: str
    city: str
    status: str
    cause: str
    phase: str
    by_city: str | None = None


@dataclass(frozen=True)
class ArchivedVote:
    """A vote counted at the end of a day: ``voter`` for ``candidate`` in ``city``."""

    day: int
    city: str
    voter: str
    candidate: str


@dataclass(frozen=True)
class ArchivedLastWord:
    """A last word: the command that gave it, and the recording's outbox item and message."""

    seq: int
    player: str
    phase: str
    outbox_id: int | None = None
    path: str | None = None
    duration: float | None = None
    channel_id: int | None = None
    message_id: int | None = None


@dataclass(frozen=True)
class ArchivedPlayer:
    """One player of an archived game and what he did in it."""

    player: str
    name: str
    city: str
    status: str
    side: str
    won: int
    survived: int
    executed: int
    votes: int
    votes_mafia: int
    checks: int
    hits: int


@dataclass(frozen=True)
class ArchivedGame:
    """A finished game as archived: everything needed to show it, replay it and export it."""

    game_id: int
    guild_id: int
    host_id: int
    ended: str
    created_at: float
    ended_at: float
    seed: int
    setup: dict[str, Any]
    names: dict[str, str]
    log: list[tuple[dict[str, Any], str]]
    winners: list[str]
    last_phase: str
    cities: list[str]
    deaths: list[ArchivedDeath]
    votes: list[ArchivedVote]
    last_words: list[ArchivedLastWord]
    players: list[ArchivedPlayer]

    @property
    def over(self) -> bool:
        """Played to the end (not ended by the host)."""
        return self.ended == "over"


@dataclass(frozen=True)
class ArchivedSummary:
    """One line of the guild's history."""

    game_id: int
    host_id: int
    ended: str
    ended_at: float
    winners: list[str]
    last_phase: str
    players: int
    cities: list[str]


@dataclass(frozen=True)
class PlayerStats:
    """A player's figures in a guild, over the games played to the end."""

    player: str
    name: str
    games: int
    wins: int
    survived: int
    executed: int
    votes: int
    votes_mafia: int
    checks: int
    hits: int
    mu: float
    sigma: float
    rating: float
    by_status: dict[str, tuple[int, int]] = field(default_factory=dict)
    """status -> (games, wins)."""


#: the side a status plays for (every other status is honest)
SIDE_OF = {"mafioso": "mafia", "maniac": "maniac"}


@dataclass(frozen=True)
class GuildResults:
    """How the statuses and the sides fared in a guild, over its games played to the end: each
    player's seat counts once (a game of three mafiosi counts three mafia seats)."""

    by_status: dict[str, tuple[int, int]]
    """status -> (seats, seats that won)."""
    by_side: dict[str, tuple[int, int]]
    """side (honest, mafia, maniac) -> (seats, seats that won)."""


RateGame = Callable[
    [list[ArchivedPlayer], dict[str, tuple[float, float]], dict[str, tuple[float, float]]],
    tuple[dict[str, tuple[float, float]], dict[str, tuple[float, float]]],
]
"""(players, their stored (mu, sigma), the sides' stored (mu, sigma)) -> the new ones of both."""


def _archived_player(row: aiosqlite.Row) -> ArchivedPlayer:
    return ArchivedPlayer(
        row["player"], row["name"], row["city"], row["status"], row["side"], row["won"],
        row["survived"], row["executed"], row["votes"], row["votes_mafia"], row["checks"], row["hits"],
    )


def _player_stats(row: aiosqlite.Row, by_status: dict[str, tuple[int, int]]) -> PlayerStats:
    return PlayerStats(
        row["player"], row["name"], row["games"], row["wins"], row["survived"], row["executed"],
        row["votes"], row["votes_mafia"], row["checks"], row["hits"], row["mu"], row["sigma"],
        row["rating"], by_status,
    )
