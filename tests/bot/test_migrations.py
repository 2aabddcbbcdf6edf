"""A database made before game roles and lanes (schema 1) opens on the new schema with its games,
log and outbox intact: the games table is rebuilt for the state 'starting', foreign keys hold."""

from __future__ import annotations

import sqlite3
from importlib import resources

from bot.storage import OutboxItem, Storage


def _version_one(path: str) -> None:
    sql = (resources.files("bot") / "migrations" / "V1__init.sql").read_text(encoding="utf-8")
    with sqlite3.connect(path) as db:
        db.executescript(sql)
        db.execute(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
            "applied_at REAL NOT NULL)"
        )
        db.execute("INSERT INTO schema_migrations VALUES (1, 'V1__init.sql', 0)")
        db.execute(
            "INSERT INTO games (guild_id, host_id, state, created_at, lobby, channels) "
            "VALUES (5, 6, 'running', 1.0, '{\"players\": []}', '{\"log\": 9}')"
        )
        db.execute("INSERT INTO commands VALUES (1, 1, '{}', NULL, 'host', 1.0)")
        db.execute(
            "INSERT INTO outbox (game_id, kind, target, payload, created_at) "
            "VALUES (1, 'overwrite', '{}', '{}', 1.0), (1, 'send', '{}', '{}', 1.0)"
        )


async def test_a_schema_one_database_is_migrated_with_everything_in_it(tmp_path):
    path = str(tmp_path / "old.sqlite3")
    _version_one(path)
    storage = await Storage.open(path)
    try:
        assert await storage.schema_version() >= 2
        record = await storage.game(1)
        assert record is not None and record.state == "running" and record.channels == {"log": 9}
        assert len(await storage.commands(1)) == 1
        lanes = [item.queue for item in await storage.pending_outbox(1)]
        assert lanes == ["permissions", "messages"]
        record.state = "starting"
        await storage.save_game(
            record, outbox=[OutboxItem("create_role", {"key": "1:dead_role"}, {})]
        )
        assert (await storage.open_game(5)).state == "starting"
        assert [item.queue for item in await storage.pending_outbox(1, lane="provision")] == [
            "provision"
        ]
    finally:
        await storage.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
