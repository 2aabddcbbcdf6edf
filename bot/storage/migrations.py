"""The numbered migrations (``bot/migrations/V{n}__*.sql``), applied at start, the same files for
both databases: a statement preceded by a ``-- sqlite only`` or ``-- postgresql only`` line runs
on that database alone (the few changes SQLite can only make by rebuilding a table)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from importlib import resources
from typing import Any

MIGRATION_NAME = re.compile(r"^V(\d+)__[\w-]+\.sql$")

#: the table that lists the migrations applied, as SQLite spells it
SCHEMA_MIGRATIONS = (
    "CREATE TABLE IF NOT EXISTS schema_migrations "
    "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
)


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


async def apply_migrations(db: Any, dialect: str, begin: str, ddl: Callable[[str], str]) -> None:
    """Apply, in the caller's transaction ``db``, the migrations not applied yet: ``begin`` is
    the transaction's first statement (it keeps other processes out), ``ddl`` spells a
    statement as the database runs it."""
    await db.execute(begin)
    await db.execute(ddl(SCHEMA_MIGRATIONS))
    async with db.execute("SELECT version FROM schema_migrations") as cursor:
        done = {row[0] for row in await cursor.fetchall()}
    for version, name, sql in migration_files():
        if version in done:
            continue
        for statement in migration_statements(sql, dialect):
            await db.execute(ddl(statement))
        await db.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
            (version, name, time.time()),
        )
