"""``mafia-bot run`` opens the database with the config's settings."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bot import cli
from bot.storage import Storage, StorageError


@pytest.mark.parametrize("setting", ["normal", "full"])
def test_run_opens_sqlite_with_the_configs_synchronous(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    setting: str,
) -> None:
    """The config's ``sqlite_synchronous`` reaches the connections ``run`` opens (it used to be
    dropped there: every bot ran with ``full`` whatever the config said)."""
    database = tmp_path / "bot.sqlite3"
    config = tmp_path / "config.yaml"
    config.write_text(f"database: {database}\nsqlite_synchronous: {setting}\n")
    monkeypatch.setenv("DISCORD_TOKEN", "a-token")
    opened: list[int] = []
    real_open = Storage.open.__func__  # type: ignore[attr-defined]

    async def open_and_look(cls: type[Storage], path: Any, **options: Any) -> Storage:
        storage = await real_open(cls, path, **options)
        assert storage._group is not None and storage._group._connection is not None
        opened.append(storage._group._connection.execute("PRAGMA synchronous").fetchone()[0])
        await storage.close()
        raise StorageError("stopped here: only the opening is under test")

    monkeypatch.setattr(Storage, "open", classmethod(open_and_look))
    assert cli.main(["run", "--config", str(config)]) != 0
    assert "stopped here" in capsys.readouterr().err
    # SQLite's PRAGMA synchronous reads 1 for NORMAL, 2 for FULL
    assert opened == [{"normal": 1, "full": 2}[setting]]
    with sqlite3.connect(database) as look:  # the file was made, migrated, and closed
        assert look.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
