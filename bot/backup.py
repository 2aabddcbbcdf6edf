"""``mafia-bot backup``: a consistent copy of a SQLite database while the bot runs.

SQLite's online backup API (:meth:`sqlite3.Connection.backup`) copies the database as one read
transaction sees it: in WAL mode that read never blocks the bot's commits, and what it copies
is exactly some moment's committed state (a command, its outbox and its snapshot, all or none).
It is copied in one step: copied page by page with pauses, SQLite would start over whenever
the bot commits meanwhile, which under load is always. The copy is written next to the target
(``.part``), checked (``PRAGMA quick_check``), flushed to the disk and only then renamed to
the target, so a backup cut short leaves no file that looks like a backup. An existing target
is never overwritten.

PostgreSQL has its own tool: ``pg_dump --format=custom --file=FILE URL`` (restored with
``pg_restore --clean --dbname=URL FILE``).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from bot.storage.records import OPEN_STATES, sql_states

#: how long the backup waits for a lock the bot holds (it needs none but a read in WAL mode)
BUSY_MS = 5000


class BackupError(Exception):
    """The backup cannot be made; the message says why and what to do."""


@dataclass(frozen=True)
class Backup:
    """A finished backup: where, how big, what it holds."""

    path: Path
    size: int
    games: int
    open_games: int


def backup(database: Path, out: Path) -> Backup:
    """Copy the SQLite database ``database`` (running or not) to ``out``.

    Raises:
        BackupError: no such database, not a database, ``out`` exists, or the copy failed
            (nothing is left at ``out`` then).
    """
    if not database.is_file():
        raise BackupError(f"{database}: no such database file")
    if out.exists():
        raise BackupError(f"{out} exists already: name a new file (a backup never overwrites one)")
    partial = out.with_name(out.name + ".part")
    try:
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as source:
            source.execute(f"PRAGMA busy_timeout={BUSY_MS}")
            partial.unlink(missing_ok=True)
            with contextlib.closing(sqlite3.connect(partial)) as copy:
                source.backup(copy)  # every page in one step: one read transaction's view
                verdict = [row[0] for row in copy.execute("PRAGMA quick_check")]
                if verdict != ["ok"]:
                    raise BackupError(f"the copy does not check out: {'; '.join(verdict[:3])}")
                games, open_games = copy.execute(
                    "SELECT COUNT(*), COUNT(*) FILTER "
                    f"(WHERE state IN ({sql_states(OPEN_STATES)})) "
                    "FROM games"
                ).fetchone()
        _flush(partial)
        os.replace(partial, out)
        _flush(out.parent)
    except sqlite3.Error as error:
        partial.unlink(missing_ok=True)
        raise BackupError(f"{database}: cannot be backed up: {error}") from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return Backup(out, out.stat().st_size, int(games), int(open_games))


def _flush(path: Path) -> None:
    """fsync a file or a folder (a rename is durable once its folder is)."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def restore_steps(database: Path, out: Path) -> str:
    """How to put a backup back, as the command prints it."""
    return (
        f"To restore it: stop the bot; move {database} away with its {database.name}-wal and "
        f"{database.name}-shm files if they are there; copy {out} to {database}; start the bot "
        f"(its open games load from the backup and go on from there)."
    )
