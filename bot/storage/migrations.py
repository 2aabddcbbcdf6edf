"""The numbered migrations (``bot/migrations/V{n}__*.sql``), applied at start, the same files for
both databases: a statement preceded by a ``-- sqlite only`` or ``-- postgresql only`` line runs
on that database alone (the few changes SQLite can only make by rebuilding a table)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from importlib import resources
from typing import Any

from bot.storage.records import StorageError

MIGRATION_NAME = re.compile(r"^V(\d+)__[\w-]+\.sql$")

#: the table that lists the migrations applied, as SQLite spells it
SCHEMA_MIGRATIONS = (
    "CREATE TABLE IF NOT EXISTS schema_migrations "
    "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
)

#: a row when the table of migrations exists (nothing is written to find out)
SCHEMA_TABLE_EXISTS = {
    "sqlite": "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
    "postgresql": "SELECT 1 FROM information_schema.tables "
    "WHERE table_name = 'schema_migrations' AND table_schema = current_schema()",
}


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


def migration_files() -> list[tuple[int, str, str]]:
    """The migrations the bot ships: (version, file name, SQL), in order."""
    folder = resources.files("bot") / "migrations"
    found = []
    for entry in folder.iterdir():
        match = MIGRATION_NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


class SchemaTooNew(StorageError):
    """The database was written by a newer version of the bot: its schema has migrations this
    version does not know, so this version must not write to it (nothing was written)."""

    def __init__(self, found: int, known: int) -> None:
        super().__init__(
            f"the database's schema is version {found}, newer than this version of the bot "
            f"knows (up to {known}): it was written by a newer version; run that one (or a "
            "newer), or restore a backup made with this one"
        )
        self.found, self.known = found, known


class SchemaNotCurrent(StorageError):
    """A database opened to read only (:meth:`bot.storage.Storage.open_reading`) lacks
    migrations this version has: it is not migrated then (that would be a write)."""

    def __init__(self, missing: list[int]) -> None:
        super().__init__(
            "the database's schema is older than this version of the bot (it lacks migration "
            f"{', '.join(map(str, missing))}); run this version of the bot on it once "
            "(mafia-bot run) to bring it up to date"
        )
        self.missing = missing


def check_current(done: set[int]) -> int:
    """The schema version of a database that has the migrations ``done``, if it is exactly
    this version's.

    Raises:
        SchemaTooNew: it has a migration this version does not ship.
        SchemaNotCurrent: it lacks one this version ships.
        StorageError: it has none (not the bot's database, or a new one).
    """
    files = {version for version, _, _ in migration_files()}
    known = max(files, default=0)
    if not done:
        raise StorageError("it holds no database of the bot (no schema)")
    if max(done) > known:
        raise SchemaTooNew(max(done), known)
    if files - done:
        raise SchemaNotCurrent(sorted(files - done))
    return max(done)


async def apply_migrations(
    db: Any, dialect: str, begin: str, ddl: Callable[[str], str]
) -> set[int]:
    """Apply, in the caller's transaction ``db``, the migrations not applied yet: ``begin`` is
    the transaction's first statement (it keeps other processes out), ``ddl`` spells a
    statement as the database runs it. Returns the versions the database had before.

    Raises:
        SchemaTooNew: the database has a migration newer than any this version ships; it is
            refused before anything is written.
    """
    await db.execute(begin)
    async with db.execute(SCHEMA_TABLE_EXISTS[dialect]) as cursor:
        exists = (await cursor.fetchone()) is not None
    done: set[int] = set()
    if exists:
        async with db.execute("SELECT version FROM schema_migrations") as cursor:
            done = {int(row[0]) for row in await cursor.fetchall()}
    files = migration_files()
    known = max((version for version, _, _ in files), default=0)
    if done and max(done) > known:
        raise SchemaTooNew(max(done), known)
    await db.execute(ddl(SCHEMA_MIGRATIONS))
    for version, name, sql in files:
        if version in done:
            continue
        for statement in migration_statements(sql, dialect):
            await db.execute(ddl(statement))
        await db.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
            (version, name, time.time()),
        )
    return done
