"""SQLite's quick reads: the small reads a command makes on its way to the answer (a guild's
next scheduled game, a lane's pending outbox items), run right on the event loop's thread.

Why not aiosqlite: a read through it is a trip to its thread and back. The loop's thread wakes
the reader's, which must then take the GIL from the loop to run; the answer comes back through
the loop's self-pipe, and the caller resumes a turn later. Under load each of those steps waits
for the GIL or a turn: in the scale benchmark (1,000 games, 100 commands a second on 2 cores) a
read of one indexed row took 1.8 ms at the median and 20–29 ms at p99 that way, and the loop's
thread spent a fifth of its time on such hand-overs. Run on the loop's own thread the same read
takes a tenth of a millisecond and no turn of the loop (``benchmarks/scale_bench.py``; a loop
half busy: p50 0.10 ms and p99 0.18 ms on the loop's thread, against 0.74 ms and 4.6 ms on
aiosqlite's). aiosqlite offers no way to run a statement on the caller's thread, so this class
is written here.

Only reads that use an index and return a bounded number of rows go here (:meth:`StorageBase.
_fetch_quick`'s callers): they cost less than the hand-over did. Every other read stays on
aiosqlite's thread, where a large one does not hold up the loop.

In WAL mode a read takes no lock and does not wait for a writer, so it does not stop the loop on
a commit. The rare moments a reader must wait (the WAL being reset, another process holding the
file in exclusive mode) answer ``SQLITE_BUSY`` at once here (``busy_timeout=0``), and the read is
made on aiosqlite's thread instead, which waits for the lock as long as every other connection.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable
from typing import Any

#: SQLite's result code for a lock held by another connection (the low byte of extended codes)
SQLITE_BUSY = 5


class QuickReader:
    """A read-only connection used on the event loop's thread, that never waits for a lock."""

    def __init__(self, path: str) -> None:
        """Connect (autocommit: each read sees the last commit).

        Raises:
            sqlite3.Error: the file cannot be opened.
        """
        connection = sqlite3.connect(path, isolation_level=None)
        try:
            connection.row_factory = sqlite3.Row
            connection.execute("PRAGMA query_only=ON")
            connection.execute("PRAGMA busy_timeout=0")
        except BaseException:
            connection.close()
            raise
        self._connection: sqlite3.Connection | None = connection

    def read(self, sql: str, params: Iterable[Any]) -> list[sqlite3.Row] | None:
        """The rows of ``sql``, or None when the file is locked (read elsewhere then, waiting).

        Raises:
            sqlite3.Error: the read failed otherwise (a damaged file, say).
        """
        if self._connection is None:
            return None
        try:
            return self._connection.execute(sql, tuple(params)).fetchall()
        except sqlite3.OperationalError as error:
            if getattr(error, "sqlite_errorcode", 0) & 0xFF == SQLITE_BUSY:
                return None
            raise

    def close(self) -> None:
        """Close the connection (once)."""
        if self._connection is not None:
            with contextlib.suppress(sqlite3.Error):
                self._connection.close()
            self._connection = None
