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
progress, so reads take no lock and never queue behind the writes. The small
indexed reads on a command's way to its answer (``_fetch_quick``) go to a
third read-only connection on the loop's own thread instead, where they cost
less than the trip to a thread did (:mod:`bot.storage.quick`).

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

from pathlib import Path

from bot.storage.archive import (
    ArchiveQueries,
)
from bot.storage.base import (
    StorageBase,
)
from bot.storage.games import (
    GameQueries,
)
from bot.storage.guilds import (
    GuildQueries,
)
from bot.storage.migrations import (
    MIGRATION_NAME,
    migration_statements,
)
from bot.storage.outbox import (
    OutboxQueries,
)
from bot.storage.records import (
    ACTIVE_STATES,
    FINISHED,
    INSERT_OUTBOX,
    KIND_LANES,
    LANES,
    OPEN_STATES,
    SIDE_OF,
    UPDATE_GAME,
    ArchivedDeath,
    ArchivedGame,
    ArchivedLastWord,
    ArchivedPlayer,
    ArchivedSummary,
    ArchivedVote,
    ArchiveSource,
    CommandRow,
    CommitUnknown,
    DamagedLog,
    GameExists,
    GameRecord,
    GameState,
    GuildResults,
    IntegrityError,
    LoggedCommand,
    OutboxItem,
    PlayerBusy,
    PlayerStats,
    RateGame,
    Statements,
    StorageError,
    StoredSnapshot,
    checksum,
    is_postgres,
    is_storage_failure,
)
from bot.storage.sqlite import (
    CHECKPOINT_SECONDS,
    RESTART_FRAMES,
    SQLITE_BUSY,
    SYNCHRONOUS,
    WAL_LIMIT_BYTES,
    WAL_LOOK_SECONDS,
    Busy,
    GroupWriter,
    SqliteFile,
)


class Storage(ArchiveQueries, GuildQueries, OutboxQueries, SqliteFile):
    """The bot's database: the queries, on a SQLite file (:class:`SqliteFile`) or a PostgreSQL
    server (:class:`bot.postgres.PostgresStorage`). Open with :meth:`open`; close with
    :meth:`close`."""

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
        return await cls.open_file(path, synchronous=synchronous)

    @classmethod
    async def open_reading(cls, path: Path | str) -> Storage:
        """Open the database to read it only, safe beside a bot running on it: it takes no
        ownership and writes nothing (no migration: the schema must be this version's). On
        SQLite a read-only connection (WAL: it never blocks the bot's commits); on PostgreSQL
        read-only transactions.

        Raises:
            StorageError: no such database, not a usable one, its schema not this version's, or
                the server cannot be reached; nothing is left open.
        """
        if is_postgres(path):
            from bot.postgres import PostgresStorage

            return await PostgresStorage.connect(str(path), read_only=True)
        return await cls.open_file_reading(path)


__all__ = [
    "ACTIVE_STATES",
    "FINISHED",
    "ArchiveQueries",
    "ArchiveSource",
    "ArchivedDeath",
    "ArchivedGame",
    "ArchivedLastWord",
    "ArchivedPlayer",
    "ArchivedSummary",
    "ArchivedVote",
    "Busy",
    "CHECKPOINT_SECONDS",
    "CommandRow",
    "CommitUnknown",
    "DamagedLog",
    "GameExists",
    "GameQueries",
    "GameRecord",
    "GroupWriter",
    "GuildQueries",
    "GuildResults",
    "INSERT_OUTBOX",
    "IntegrityError",
    "KIND_LANES",
    "LANES",
    "LoggedCommand",
    "MIGRATION_NAME",
    "OPEN_STATES",
    "GameState",
    "OutboxItem",
    "OutboxQueries",
    "PlayerBusy",
    "PlayerStats",
    "RESTART_FRAMES",
    "RateGame",
    "SIDE_OF",
    "SQLITE_BUSY",
    "SYNCHRONOUS",
    "SqliteFile",
    "Statements",
    "Storage",
    "StorageBase",
    "StorageError",
    "StoredSnapshot",
    "UPDATE_GAME",
    "WAL_LIMIT_BYTES",
    "WAL_LOOK_SECONDS",
    "checksum",
    "is_postgres",
    "is_storage_failure",
    "migration_statements",
]
