"""A command the database cannot store is answered as not stored, in the player's language, and
changes nothing: not the game, its record, its log or the guild's channels. Once the database
takes writes again the same command is applied. Each test runs on SQLite and PostgreSQL; the
outage is the storage's commit raising what each driver raises then (SQLite's full disk,
asyncpg's cut connection)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bot.config import Config
from tests.cogs.scenes import accepted, assert_unchanged, refusal_text, run, snapshot
from tests.harness import NO_TIMERS, bot_table


def outage(database: Path | str) -> Exception:
    if isinstance(database, Path):
        return sqlite3.OperationalError("database or disk is full")
    import asyncpg

    return asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation")


def break_storage(
    monkeypatch: pytest.MonkeyPatch, storage: object, method: str, database: Path | str
) -> list[tuple[object, ...]]:
    """Make ``storage.method`` raise the outage of ``database``'s driver; the calls it met."""
    failures: list[tuple[object, ...]] = []

    async def failing(*args: object, **kwargs: object) -> None:
        failures.append(args)
        raise outage(database)

    monkeypatch.setattr(storage, method, failing)
    return failures


@pytest.mark.parametrize("locale", ["ru", "en"])
async def test_a_command_the_database_cannot_store_is_refused_and_changes_nothing(
    database: Path | str, monkeypatch: pytest.MonkeyPatch, locale: str
):
    config = Config(timers=NO_TIMERS, language=locale)
    async with bot_table(players=8, config=config, database=database, guild_locale=locale) as table:
        await table.new_game(cities="Верона", maniac=False)
        game = table.game
        nominator, nominee = [table.name(p) for p in game.alive()][:2]
        storage = table.bot.storage
        real = storage.append_command
        failures = break_storage(monkeypatch, storage, "append_command", database)
        before = await snapshot(table)
        refused = await run(
            table, nominator, "nominate", {"player": table.pid(nominee)}, locale=locale
        )
        assert refused.ephemeral and refused.content == refusal_text(locale, "error.not_stored")
        assert len(failures) == 1
        await assert_unchanged(table, before)

        monkeypatch.setattr(storage, "append_command", real)  # the database is back
        await accepted(table, nominator, "nominate", {"player": table.pid(nominee)})
        assert table.game.nominations[game.players[table.pid(nominee)].city]
