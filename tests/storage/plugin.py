"""The storage backends as a pytest parameter: a test (or fixture) taking ``database`` runs once
on SQLite (a file in its temporary folder) and once on PostgreSQL (a schema of its own on a
server this session starts, see :mod:`tests.storage.server`). A test taking ``postgres_url``
runs on PostgreSQL only. Where no server can run, the PostgreSQL half is left out and the
session says so in one line.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.storage.server import PostgresServer, find_binaries, run_to_completion, running_server


def _why_not() -> str | None:
    if importlib.util.find_spec("asyncpg") is None:
        return 'asyncpg is not installed (pip install -e ".[postgres]")'
    if find_binaries() is None:
        return "no PostgreSQL server binaries (initdb) on PATH or in /usr/lib/postgresql/*/bin"
    return None


WHY_NOT = _why_not()
BACKENDS = ["sqlite"] if WHY_NOT else ["sqlite", "postgresql"]
_left_out: list[str] = []


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every test taking ``database`` on each backend."""
    if "database" in metafunc.fixturenames:
        metafunc.parametrize("database", BACKENDS, indirect=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without a server, leave out the tests that need one (and say so once, at the end)."""
    if WHY_NOT is None:
        return
    kept, dropped = [], []
    for item in items:
        (dropped if "postgres_url" in getattr(item, "fixturenames", ()) else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
        _left_out.extend(item.nodeid for item in dropped)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The one line about the PostgreSQL half (nothing when it ran)."""
    if WHY_NOT is not None:
        terminalreporter.write_line(
            f"postgresql: skipped the PostgreSQL half of the storage tests: {WHY_NOT}"
        )


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole session (started on first use)."""
    if WHY_NOT is not None:
        pytest.skip(WHY_NOT)
    with running_server() as server:
        yield server


@pytest.fixture
def database(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path | str:
    """A new, empty database: a SQLite file path, or a PostgreSQL URL (its own schema). With
    PostgreSQL the bot keeps its files in the working directory: the test's folder, then."""
    if request.param == "sqlite":
        return tmp_path / "db.sqlite3"
    server: PostgresServer = request.getfixturevalue("postgres_server")
    monkeypatch.chdir(tmp_path)
    return server.new_url()


@pytest.fixture
def postgres_url(
    postgres_server: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> str:
    """A new, empty PostgreSQL schema's URL (for what needs a server: several processes); the
    working directory is the test's folder."""
    monkeypatch.chdir(tmp_path)
    return postgres_server.new_url()


async def raw(
    database: Path | str, sql: str, params: tuple[Any, ...] = ()
) -> list[tuple[Any, ...]]:
    """Run one statement on the database behind the bot's back (``?`` parameters) and return
    its rows: what a test reads or damages directly."""
    if isinstance(database, Path):
        import sqlite3

        with contextlib.closing(sqlite3.connect(database)) as connection, connection:
            return [tuple(row) for row in connection.execute(sql, params).fetchall()]
    import asyncpg

    from bot.postgres import numbered_parameters

    connection = await asyncpg.connect(database)
    try:
        return [tuple(row) for row in await connection.fetch(numbered_parameters(sql), *params)]
    finally:
        await connection.close()


def raw_sync(database: Path | str, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """:func:`raw` for code that cannot await (a condition polled by ``fake.wait_until``); rows
    read by column name or position. PostgreSQL's is asked on a thread with a loop of its own."""
    if isinstance(database, Path):
        import sqlite3

        with contextlib.closing(sqlite3.connect(database)) as connection, connection:
            connection.row_factory = sqlite3.Row
            return list(connection.execute(sql, params).fetchall())
    import asyncpg

    from bot.postgres import numbered_parameters

    result: list[Any] = []

    async def ask() -> None:
        connection = await asyncpg.connect(database)
        try:
            result.extend(await connection.fetch(numbered_parameters(sql), *params))
        finally:
            await connection.close()

    run_to_completion(ask)
    return result
