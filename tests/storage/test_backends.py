"""The storage interface on both backends: one started game per player held by the database
across processes (two storages on one database stand for two processes), each process's
shards, the V5 migration's backfill, the answers kept for a member's next command, and the
PostgreSQL translation itself."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.config import ConfigError, config_from_dict
from bot.notices import KEEP, Notices
from bot.postgres import numbered_parameters, postgres_ddl
from bot.storage import IntegrityError, OutboxItem, PlayerBusy, Storage, is_postgres
from bot.storage.base import _GroupedWrite
from tests.storage.plugin import raw


def lobby(*players: int) -> dict:
    return {"players": [{"id": player, "name": f"u{player}"} for player in players]}


async def started(storage: Storage, guild: int, *players: int, state: str = "starting"):
    record = await storage.create_game(guild, 99, lobby(*players))
    record.state = state
    await storage.save_game(record)
    return record


async def test_a_player_in_a_started_game_cannot_be_in_a_second_one_whatever_the_process(database):
    first, second = await Storage.open(database), await Storage.open(database)
    try:
        one = await started(first, 1 << 22, 7, 8)
        other = await second.create_game(2 << 22, 98, lobby(7, 9))
        other.state = "starting"
        with pytest.raises(PlayerBusy) as refused:
            await second.save_game(
                other, outbox=[OutboxItem("send", {"channel_id": 1}, {"content": "x"})]
            )
        assert (refused.value.user_id, refused.value.game_id) == (7, one.id)
        stored = await second.game(other.id)
        assert (
            stored is not None and stored.state == "lobby"
        )  # nothing of the refused start was kept
        assert await second.pending_outbox(other.id) == []
        assert await second.player_game(9) is None and await second.player_game(7) == one.id
        # the first game ends: its players are free, and the second starts
        one.state = "over"
        await first.save_game(one)
        assert await second.player_game(7) is None
        other.state = "starting"
        await second.save_game(other)
        assert sorted(
            row[0] for row in await raw(database, "SELECT user_id FROM active_players")
        ) == [7, 9]
        # a game played to its end by a command frees its players too
        other.state, other.command_count = "over", 1
        await second.append_command(other, {"verb": "end"}, source="host")
        assert await raw(database, "SELECT user_id FROM active_players") == []
    finally:
        await first.close()
        await second.close()


async def test_two_starts_at_once_with_one_player_in_both_let_one_through(database):
    first, second = await Storage.open(database), await Storage.open(database)
    try:
        a = await first.create_game(1 << 22, 99, lobby(5, 6))
        b = await second.create_game(2 << 22, 98, lobby(5, 7))
        a.state = b.state = "starting"
        results = await asyncio.gather(
            first.save_game(a), second.save_game(b), return_exceptions=True
        )
        refused = [r for r in results if isinstance(r, PlayerBusy)]
        assert len(refused) == 1 and results.count(None) == 1, results
        rows = await raw(database, "SELECT user_id, game_id FROM active_players ORDER BY user_id")
        winner = a.id if results[0] is None else b.id
        assert rows[0] == (5, winner) and len(rows) == 2
    finally:
        await first.close()
        await second.close()


async def test_a_process_restores_only_its_shards_games_and_outbox(database):
    storage = await Storage.open(database)
    try:
        ids = {}
        for guild in (4 << 22, 5 << 22, 6 << 22, 7 << 22):  # shards 0, 1, 0, 1 of 2
            record = await storage.create_game(guild, 99, lobby())
            await storage.add_outbox(
                record.id, [OutboxItem("send", {"channel_id": 1}, {"content": "x"})]
            )
            ids[guild] = record.id
        storage.set_shards([1], 2)
        assert [g.guild_id for g in await storage.open_games()] == [5 << 22, 7 << 22]
        assert await storage.games_with_pending_outbox() == [ids[5 << 22], ids[7 << 22]]
        assert await storage.games_in_state("lobby") == [ids[5 << 22], ids[7 << 22]]
        storage.set_shards([0, 1], 2)  # every shard: every game
        assert len(await storage.open_games()) == 4
        storage.set_shards(None, None)
        assert len(await storage.games_with_pending_outbox()) == 4
    finally:
        await storage.close()


async def test_the_v5_migration_fills_active_players_from_the_games_already_started(database):
    storage = await Storage.open(database)
    running = await started(storage, 1 << 22, 11, 12, state="running")
    await storage.create_game(2 << 22, 98, lobby(13))  # a lobby: no rows
    await storage.close()
    # the database as it was before V5
    await raw(database, "DROP TABLE active_players")
    await raw(database, "DELETE FROM schema_migrations WHERE version = 5")
    storage = await Storage.open(database)
    try:
        assert await storage.schema_version() >= 5
        assert (
            await storage.player_game(11) == running.id
            and await storage.player_game(12) == running.id
        )
        assert await storage.player_game(13) is None
    finally:
        await storage.close()


def test_the_postgresql_translation_is_mechanical():
    assert (
        numbered_parameters("SELECT a FROM t WHERE b = ? AND c IN (?, ?)")
        == "SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)"
    )
    ddl = postgres_ddl(
        "CREATE TABLE games (\n    id INTEGER PRIMARY KEY AUTOINCREMENT,\n"
        "    at REAL NOT NULL,\n    n INTEGER)"
    )
    assert ddl == (
        "CREATE TABLE games ( rowid BIGINT GENERATED ALWAYS AS IDENTITY,\n"
        "    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,\n"
        "    at DOUBLE PRECISION NOT NULL,\n    n BIGINT)"
    )
    assert (
        postgres_ddl("ALTER TABLE games ADD COLUMN stage_since REAL")
        == "ALTER TABLE games ADD COLUMN stage_since DOUBLE PRECISION"
    )


def test_database_takes_a_path_or_a_postgresql_url():
    assert config_from_dict({"database": "games.sqlite3"}).database == Path("games.sqlite3")
    url = "postgresql://bot:secret@db.example/prokurator"
    assert config_from_dict({"database": url}).database == url and is_postgres(url)
    with pytest.raises(ConfigError, match="mysql:// is not supported"):
        config_from_dict({"database": "mysql://db/x"})
    with pytest.raises(ConfigError, match="names no database"):
        config_from_dict({"database": "postgresql://db.example"})


async def test_an_unreachable_server_is_one_clear_error_without_the_password(tmp_path: Path):
    pytest.importorskip("asyncpg")
    from bot.storage import StorageError

    url = f"postgresql://bot:hunter2@/prokurator?host={tmp_path}&port=1"
    with pytest.raises(StorageError) as failed:
        await Storage.open(url)
    assert "cannot connect to PostgreSQL" in str(failed.value) and "hunter2" not in str(
        failed.value
    )


def test_check_config_shows_the_database_without_its_password(tmp_path: Path, capsys):
    from bot.cli import main

    config = tmp_path / "c.yaml"
    config.write_text(
        "database: postgresql://bot:p@ss@db.example/prokurator\nshards: 0-1\nshard_count: 4\n"
    )
    assert main(["check-config", str(config)]) == 0
    out = capsys.readouterr().out
    assert (
        "postgresql://bot:***@db.example/prokurator, shards 0,1 of 4" in out and "p@ss" not in out
    )


async def test_answers_discord_did_not_deliver_are_kept_until_handed_out(database):
    storage = await Storage.open(database)
    try:
        notices = Notices(storage)
        assert await notices.load() == 0
        for index in range(KEEP + 2):
            await notices.keep(1, 7, f"ответ {index}")
        await notices.keep(1, 8, "другому")
        await notices.keep(2, 7, "в другой гильдии")
        await storage.set_meta("undelivered", "a key that only begins alike")
        again = Notices(storage)  # the next process
        assert await again.load() == 3
        assert await again.take(1, 7) == [f"ответ {index}" for index in range(2, KEEP + 2)]
        assert await again.take(1, 7) == []
        assert sorted(await storage.meta_keys("undelivered:")) == [
            "undelivered:1:8",
            "undelivered:2:7",
        ]
        assert await storage.meta("undelivered") == "a key that only begins alike"
    finally:
        await storage.close()


async def test_a_write_of_one_statement_is_one_round_trip_on_postgresql_and_still_atomic(
    postgres_url, monkeypatch
):
    """An outbox item marked sent is one statement: PostgreSQL takes it without BEGIN and
    COMMIT (asyncpg's executemany is atomic), and a statement refused stores none of its rows."""
    from asyncpg.transaction import Transaction

    storage = await Storage.open(postgres_url)
    try:
        record = await started(storage, 1 << 22, 7, 8)
        await storage.add_outbox(record.id, [OutboxItem("send", {"channel_id": 1}, {"c": "x"})])
        (item,) = await storage.pending_outbox(record.id)
        begun = []
        real_start = Transaction.start

        async def start(self):
            begun.append(self)
            return await real_start(self)

        monkeypatch.setattr(Transaction, "start", start)
        await storage.outbox_sent(item, 555)
        assert begun == []  # no BEGIN, no COMMIT: one round trip
        assert await storage.pending_outbox(record.id) == []
        (row,) = await raw(postgres_url, "SELECT state, message_id FROM outbox")
        assert tuple(row) == ("sent", 555)
        await storage.outbox_sent(item, 556, ref=("tally", 1))  # two statements: a transaction
        assert len(begun) == 1
        twice = "INSERT INTO guild_settings (guild_id, language) VALUES (?, ?)"
        with pytest.raises(IntegrityError):  # the second row breaks the key: neither is stored
            await storage._commit(record.id, _GroupedWrite([(twice, [(5, "ru"), (5, "en")])]))
        assert await raw(postgres_url, "SELECT * FROM guild_settings WHERE guild_id = 5") == []
    finally:
        await storage.close()


async def test_a_guilds_next_scheduled_game_is_its_own_earliest_still_to_open(database):
    storage = await Storage.open(database)
    try:
        here, there = 1 << 22, 2 << 22

        async def scheduled(guild: int, title: str, at: float, state: str = "scheduled") -> int:
            made = await storage.add_schedule(guild, 9, 1, title, at, now=0.0, most=10)
            assert made is not None
            await storage.set_schedule(made, state, event_id=made)
            return made

        assert await storage.next_schedule(here) is None
        await scheduled(there, "elsewhere, sooner", 50.0)
        await scheduled(here, "cancelled, sooner", 60.0, "cancelled")
        await scheduled(here, "later", 300.0)
        await scheduled(here, "next", 200.0)
        found = await storage.next_schedule(here)
        assert found is not None and (found["title"], found["guild_id"]) == ("next", here)
    finally:
        await storage.close()
