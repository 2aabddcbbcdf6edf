"""The command line's tools beside a running bot (issue 29): what only reads the database
(``backup``, ``export``, ``export-site``) runs while a bot owns it, through a read-only
connection that takes no lock and writes nothing; what writes to it (``rebuild-stats``) owns it
as ``run`` does, and is refused with status 2 and one line naming the bot that holds it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from bot.cli import main
from bot.config import shown_database
from bot.simulate import simulate
from bot.storage import Storage, is_postgres
from bot.storage.owner import FileOwnership, Holder, ServerOwnership
from tests.bot.test_archive import open_archive, play_game

HOLDER = Holder("the-bots-host", 4242, 1_800_000_000.0)


async def own(database: Path | str) -> FileOwnership | ServerOwnership:
    """What a running bot holds: the database's ownership."""
    if is_postgres(database):
        return await ServerOwnership.take(str(database), shown_database(database), None)
    return FileOwnership.take(Path(database), holder=HOLDER)


async def two_finished_games(database: Path | str) -> tuple[Storage, int, int]:
    """A database open as a running bot has it: one finished game archived, one finished game
    not archived yet (the bot archives it in a moment)."""
    service, archiver = await open_archive(database)
    archived = await play_game(service, seed=41)
    await archiver.settle()
    service.after_commit.remove(archiver.game_ended)
    unarchived = await play_game(service, seed=42)
    return service.storage, archived.id, unarchived.id


def cli(*argv: str) -> int:
    return main(list(argv))


async def test_backup_export_and_export_site_read_beside_a_running_bot(database, tmp_path, capsys):
    storage, archived, unarchived = await two_finished_games(database)
    owned = await own(database)
    try:
        for game in (archived, unarchived):
            out = tmp_path / f"game-{game}.yaml"
            assert (
                await asyncio.to_thread(
                    cli,
                    "export",
                    "--database",
                    str(database),
                    "--game",
                    str(game),
                    "--out",
                    str(out),
                )
                == 0
            ), capsys.readouterr().err
            assert json.loads(simulate(out, as_json=True))["over"] is True
        site = tmp_path / "site"
        assert (
            await asyncio.to_thread(cli, "export-site", str(site), "--database", str(database)) == 0
        ), capsys.readouterr().err
        assert (site / f"game-{archived}.html").is_file() and (site / "index.html").is_file()
        if not is_postgres(database):
            copy = tmp_path / "copy.sqlite3"
            assert (
                await asyncio.to_thread(
                    cli, "backup", "--database", str(database), "--out", str(copy)
                )
                == 0
            ), capsys.readouterr().err
            assert copy.is_file()
        # nothing was written: the game the bot had not archived yet is still not archived
        assert await storage.is_archived(archived) and not await storage.is_archived(unarchived)
        assert owned.held
        # the bot goes on writing to it
        await storage.archive_source(unarchived)
    finally:
        await owned.release()
        await storage.close()


async def test_a_read_only_tool_refuses_a_schema_it_would_have_to_migrate(tmp_path, capsys):
    path = tmp_path / "old.sqlite3"
    storage = await Storage.open(path)
    async with storage.transaction() as db:
        await db.execute("DELETE FROM schema_migrations WHERE version = 12")
    await storage.close()
    code = await asyncio.to_thread(cli, "export", "--database", str(path), "--game", "1")
    err = capsys.readouterr().err
    assert code == 2 and "older than this version" in err and "lacks migration 12" in err
    assert code == 2 and len(err.splitlines()) == 1
    assert (
        await asyncio.to_thread(cli, "export", "--database", str(tmp_path / "none"), "--game", "1")
        == 2
    )
    assert "no such database" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


async def test_rebuild_stats_is_refused_while_a_bot_owns_the_database(database, capsys):
    storage, _, unarchived = await two_finished_games(database)
    owned = await own(database)
    try:
        code = await asyncio.to_thread(cli, "rebuild-stats", "--database", str(database))
        lines = capsys.readouterr().err.splitlines()
        assert code == 2 and len(lines) == 1, lines
        assert lines[0].startswith("mafia-bot rebuild-stats: ")
        assert "in use by another bot process" in lines[0]
        if not is_postgres(database):
            assert "pid 4242 on the-bots-host since 2027-01-15 08:00:00 UTC" in lines[0]
        assert not await storage.is_archived(unarchived)  # it wrote nothing
    finally:
        await owned.release()
    await storage.close()  # the bot stops: now it may
    assert await asyncio.to_thread(cli, "rebuild-stats", "--database", str(database)) == 0
    assert "1 game(s) archived now" in capsys.readouterr().out
    reopened = await Storage.open(database)
    try:
        assert await reopened.is_archived(unarchived)
    finally:
        await reopened.close()
