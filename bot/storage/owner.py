"""One process owns its database: a second ``mafia-bot run`` on it stops at once and names the
one that holds it, instead of serving stale games beside it.

- **SQLite**: an OS lock (``flock``) on the file ``<database>.lock`` beside it, held for the
  process's life (the kernel lets it go when the process ends, however it ends). The lock file
  holds who took it: host, pid and since when, for the next one to name.
- **PostgreSQL**: advisory locks on a connection of their own, held as long as it lives (the
  server lets them go when the connection ends): one per shard the process serves
  (:data:`SHARD_KEY`, the shard), and one on the whole database (:data:`WHOLE_KEY`), shared by
  processes that serve some shards and exclusive for one that serves them all. Processes on
  different shards of one bot share the database; two on the same shard do not. The keys are
  the schema's own (its name in them), so bots in different schemas of one database do not
  meet. The holder is
  named from ``pg_stat_activity``: the connection's ``application_name`` says its host and pid,
  its start since when. Should that connection break (the server restarted), it is made again
  and the locks taken again.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import fcntl
import json
import logging
import os
import re
import socket
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.storage.records import StorageError

log = logging.getLogger(__name__)

#: the advisory lock of one shard is (key of "<schema>:shard", shard)
SHARD_KEY = "shard"
#: the advisory lock of the whole database is (key of "<schema>:whole", 0)
WHOLE_KEY = "whole"
#: how often the PostgreSQL connection that holds the locks is looked at (seconds)
KEEP_SECONDS = 5.0
#: how long a PostgreSQL lock held by another is tried again before giving up (seconds): the
#: server lets a killed process's locks go once it sees the connection end, a moment later
HELD_GRACE = 3.0


class Held(StorageError):
    """Another process owns the database (or the shard); the message names it, in one line."""


@dataclass(frozen=True)
class Holder:
    """Who holds a database: what is known of it."""

    host: str | None = None
    pid: int | None = None
    since: float | None = None

    def __str__(self) -> str:
        parts = []
        if self.pid is not None:
            parts.append(f"pid {self.pid}")
        if self.host:
            parts.append(f"on {self.host}")
        if self.since is not None:
            moment = datetime.datetime.fromtimestamp(self.since, datetime.UTC)
            parts.append(f"since {moment:%Y-%m-%d %H:%M:%S} UTC")
        return " ".join(parts) or "a process that left no details"


def this_process() -> Holder:
    """This process, as a holder."""
    return Holder(socket.gethostname(), os.getpid(), time.time())


def lock_path(database: Path) -> Path:
    """The lock file of a SQLite database: ``<database>.lock``, beside it (absolute)."""
    return Path(f"{database.absolute()}.lock")


def refusal(where: str, holder: Holder) -> str:
    """The one line a second process stops with."""
    return (
        f"{where} is in use by another bot process ({holder}); one process per database: "
        "stop that one first, or give this one a database of its own"
    )


class FileOwnership:
    """A SQLite database's lock file, locked for as long as this object is not released."""

    def __init__(self, path: Path, descriptor: int) -> None:
        self.path = path
        self._descriptor: int | None = descriptor

    @classmethod
    def take(cls, database: Path, *, holder: Holder | None = None) -> FileOwnership:
        """Lock ``<database>.lock`` (made if missing) and write ``holder`` (this process) in it.

        Raises:
            Held: another process (or another open of it in this one) holds it; it is named.
            StorageError: the lock file cannot be made or opened.
        """
        path = lock_path(database)
        try:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as error:
            raise StorageError(f"{path}: cannot open the lock file: {error.strerror}") from error
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            found = _read_holder(descriptor)
            os.close(descriptor)
            raise Held(refusal(str(database.absolute()), found)) from None
        except OSError as error:
            os.close(descriptor)
            raise StorageError(f"{path}: cannot lock it: {error.strerror}") from error
        me = holder or this_process()
        record = {"host": me.host, "pid": me.pid, "since": me.since}
        with contextlib.suppress(OSError):  # the lock holds without its note
            os.ftruncate(descriptor, 0)
            os.pwrite(descriptor, (json.dumps(record) + "\n").encode(), 0)
        return cls(path, descriptor)

    @property
    def held(self) -> bool:
        """Whether the lock is still held."""
        return self._descriptor is not None

    async def release(self) -> None:
        """Let the lock go (the file stays: removing it could let two processes lock two files)."""
        if self._descriptor is None:
            return
        descriptor, self._descriptor = self._descriptor, None
        with contextlib.suppress(OSError):
            os.ftruncate(descriptor, 0)
        os.close(descriptor)  # closing it unlocks


def _read_holder(descriptor: int) -> Holder:
    try:
        data = json.loads(os.pread(descriptor, 4096, 0).decode("utf-8", "replace"))
        return Holder(
            str(data["host"]) if data.get("host") else None,
            int(data["pid"]) if data.get("pid") is not None else None,
            float(data["since"]) if data.get("since") is not None else None,
        )
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return Holder()  # being written, or written by hand: the holder goes unnamed


def lock_key(schema: str, what: str) -> int:
    """The first key of an advisory lock: ``<schema>:<what>`` as a signed 32-bit number."""
    value = zlib.crc32(f"prokurator:{schema}:{what}".encode())
    return value - (1 << 32) if value >= 1 << 31 else value


def application_name(me: Holder) -> str:
    """The lock connection's ``application_name`` (PostgreSQL keeps 63 bytes of it)."""
    return f"mafia-bot pid={me.pid} host={me.host}"[:63]


class ServerOwnership:
    """A PostgreSQL database's advisory locks, held on a connection of their own."""

    def __init__(self, url: str, shown: str, shards: list[int] | None, me: Holder) -> None:
        self.url, self.shown, self.shards, self.me = url, shown, shards, me
        self._connection: Any = None
        self._keeper: asyncio.Task[None] | None = None

    @classmethod
    async def take(
        cls, url: str, shown: str, shards: Iterable[int] | None, *, holder: Holder | None = None
    ) -> ServerOwnership:
        """Connect and take the locks: each shard's, the whole database's (shared with processes
        on other shards; exclusive when ``shards`` is None: every shard).

        Raises:
            Held: another process holds the database or one of the shards; it is named.
            StorageError: the server cannot be reached.
        """
        owner = cls(
            url,
            shown,
            sorted(set(shards)) if shards is not None else None,
            holder or this_process(),
        )
        await owner._lock()
        owner._keeper = asyncio.get_running_loop().create_task(owner._keep(), name="db-owner")
        return owner

    @property
    def held(self) -> bool:
        """Whether the connection that holds the locks is open."""
        return self._connection is not None and not self._connection.is_closed()

    async def _lock(self) -> None:
        try:
            import asyncpg
        except ImportError:
            raise StorageError(
                'database: a postgresql:// URL needs asyncpg: pip install -e ".[postgres]"'
            ) from None

        try:
            connection = await asyncpg.connect(
                self.url, server_settings={"application_name": application_name(self.me)}
            )
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, ValueError) as error:
            raise StorageError(f"{self.shown}: cannot connect to PostgreSQL: {error}") from error
        try:
            await self._take_all_within(connection, HELD_GRACE)
        except BaseException:
            with contextlib.suppress(Exception):
                await connection.close()
            raise
        self._connection = connection

    async def _take_all_within(self, connection: Any, grace: float) -> None:
        """:meth:`_take_all`, tried again for ``grace`` seconds while another holds a lock: a
        process killed a moment ago holds its locks until the server sees its connection end."""
        end = time.monotonic() + grace
        while True:
            try:
                await self._take_all(connection)
                return
            except Held:
                await connection.execute("SELECT pg_advisory_unlock_all()")
                if time.monotonic() >= end:
                    raise
                await asyncio.sleep(0.1)

    async def _take_all(self, connection: Any) -> None:
        schema = str(await connection.fetchval("SELECT current_schema()"))
        whole, shard_key = lock_key(schema, WHOLE_KEY), lock_key(schema, SHARD_KEY)
        take = "pg_try_advisory_lock" if self.shards is None else "pg_try_advisory_lock_shared"
        if not await connection.fetchval(f"SELECT {take}($1, 0)", whole):
            raise Held(refusal(self.shown, await _holder(connection, whole, 0)))
        for shard in self.shards or []:
            if not await connection.fetchval(
                "SELECT pg_try_advisory_lock($1, $2)", shard_key, shard
            ):
                holder = await _holder(connection, shard_key, shard)
                raise Held(refusal(f"{self.shown} (shard {shard})", holder))

    async def _keep(self) -> None:
        """Take the locks again if their connection broke (the server restarted)."""
        warned = False
        while True:
            await asyncio.sleep(KEEP_SECONDS)
            if self.held:
                continue
            try:
                await self._lock()
            except StorageError as error:
                if not warned:
                    log.warning("the database's ownership is lost until: %s", error)
                    warned = True
                continue
            log.info("%s: the ownership locks are taken again", self.shown)
            warned = False

    async def release(self) -> None:
        """Let the locks go (close their connection)."""
        if self._keeper is not None:
            self._keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeper
            self._keeper = None
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(connection.close(), 5)


async def _holder(connection: Any, key: int, sub: int) -> Holder:
    """Who holds the advisory lock (``key``, ``sub``), from ``pg_stat_activity``."""
    row = await connection.fetchrow(
        "SELECT a.application_name, EXTRACT(EPOCH FROM a.backend_start)::float8 AS since, "
        "host(a.client_addr) AS address FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 "
        "AND l.classid = $1::bigint::oid AND l.objid = $2::bigint::oid LIMIT 1",
        key & 0xFFFFFFFF,  # the key as pg_locks shows it (an oid: unsigned)
        sub,
    )
    if row is None:
        return Holder()
    match = re.fullmatch(r"mafia-bot pid=(\d+) host=(.*)", row["application_name"] or "")
    host = match.group(2) if match else row["address"]
    return Holder(host or None, int(match.group(1)) if match else None, row["since"])


Ownership = FileOwnership | ServerOwnership


async def take(
    database: Path | str, shown: str, shards: Iterable[int] | None, shard_count: int | None
) -> Ownership | None:
    """Own ``database`` for this process (see the module docstring); None for a database in
    memory. ``shards`` of ``shard_count``: the shards it serves (None: all).

    Raises:
        Held: another process owns it; the message names that one, in one line.
        StorageError: the lock cannot be taken for another reason.
    """
    from bot.storage.records import is_postgres

    if is_postgres(database):
        wanted = None
        if shards is not None and shard_count and shard_count > 1:
            wanted = sorted(set(shards))
            if set(wanted) >= set(range(shard_count)):
                wanted = None  # every shard: the whole database
        return await ServerOwnership.take(str(database), shown, wanted)
    if str(database) == ":memory:":
        return None
    return FileOwnership.take(Path(database))


def empty_file(database: Path | str) -> str | None:
    """Why an existing SQLite file must not be taken for a new database (it is empty: a wrong
    restore, or a relative path read from another working directory), or None."""
    from bot.storage.records import is_postgres

    if is_postgres(database) or str(database) == ":memory:":
        return None
    path = Path(database)
    try:
        size = path.stat().st_size
    except OSError:
        return None  # none there: a new database, announced as new
    if size:
        return None
    return (
        f"{path.absolute()} is an empty file, not the bot's database (a restore gone wrong, "
        "or started from another working directory?): put the database back, or start a new "
        "one in it with --accept-empty-database"
    )


def named(database: Path | str, shown: str) -> str:
    """Which database this is, for the startup line: the SQLite file's absolute path, or the
    PostgreSQL server's host and the database's name."""
    from urllib.parse import urlsplit

    from bot.storage.records import is_postgres

    if not is_postgres(database):
        return str(Path(database).absolute())
    parts = urlsplit(str(database))
    name = parts.path.lstrip("/")
    if not parts.hostname or not name:
        return f"PostgreSQL {shown}"
    return f"PostgreSQL database {name} on {parts.hostname}:{parts.port or 5432}"


async def startup_line(database: Path | str, shown: str, storage: Any) -> str:
    """The line the bot starts with: which database, whether it is new, how many games it holds."""
    where = named(database, shown)
    version = await storage.schema_version()
    if storage.created:
        return f"database {where}: a new database, created now (schema version {version})"
    games, open_games = await storage.holdings()
    return (
        f"database {where}: {games} game(s), {open_games} of them open (schema version {version})"
    )
