"""``mafia-bot backup``: a copy of a running SQLite database, taken while commands keep being
committed, is consistent (its log replays to its snapshots), and once put back in place of
the database the game loads and goes on. The command refuses what it must not do."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from bot.cli import main
from bot.config import Config
from bot.service import GameService, LiveGame
from bot.storage import OutboxItem, Storage
from rules import CastVote, Event, Nominate, StartVoting, Unvote, deal

CITIES = {"A": [f"a{i}" for i in range(6)], "B": [f"b{i}" for i in range(6)]}


def announce(live: LiveGame, events: list[Event]) -> list[OutboxItem]:
    return [
        OutboxItem("send", {"channel_id": 1}, {"content": f"{e.kind} " + "·" * 300}) for e in events
    ]


async def open_service(path: Path) -> GameService:
    service = GameService(await Storage.open(path), Config(database=path, snapshot_every=5))
    service.render = announce
    return service


async def test_a_backup_taken_mid_game_restores_and_the_game_goes_on(tmp_path: Path, capsys):
    path, out = tmp_path / "bot.sqlite3", tmp_path / "backup.sqlite3"
    service = await open_service(path)
    live = await service.create(1, 9, {"players": []})
    await service.start(live.id, deal(CITIES, 5), 5)
    for command in (Nominate("a0", "a1"), Nominate("b0", "b1"), StartVoting()):
        await service.apply(live.id, command, source="player")
    voting = asyncio.Event()
    counts: list[int] = []

    async def keep_voting() -> None:  # the bot goes on committing while the backup is taken
        while not voting.is_set():
            for voter in ("a2", "a3", "b2", "b3"):
                await service.apply(live.id, CastVote(voter, f"{voter[0]}1"), source="player")
                await service.apply(live.id, Unvote(voter), source="player")
                counts.append(live.record.command_count)

    player = asyncio.create_task(keep_voting())
    while len(counts) < 5:
        await asyncio.sleep(0.01)
    code = await asyncio.to_thread(main, ["backup", "--database", str(path), "--out", str(out)])
    taken = counts[-1]
    while counts[-1] < taken + 8:  # and after it
        await asyncio.sleep(0.01)
    voting.set()
    await player
    await service.storage.close()
    printed = capsys.readouterr().out
    assert code == 0
    assert f"backed up to {out}" in printed and "1 game(s), 1 open" in printed
    assert f"copy {out} to {path}" in printed

    # the database is lost; the backup is put back as the command said
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(out, path)
    service = await open_service(path)
    try:
        (restored,) = await service.restore()
        assert restored.broken is None and restored.game is not None
        stored = restored.record.command_count
        assert 3 < stored <= taken + 2  # some moment while the votes went on, not after
        assert restored.game.stage.value == "voting"
        applied = await service.apply(
            restored.id, CastVote("a4", "a1"), source="player", interaction_id=5
        )
        assert applied.seq == stored + 1 and [e.kind for e in applied.events] == ["vote_cast"]
    finally:
        await service.storage.close()


def test_a_backup_never_overwrites_and_names_pg_dump_for_postgresql(tmp_path: Path, capsys):
    path, out = tmp_path / "bot.sqlite3", tmp_path / "taken.sqlite3"
    out.write_bytes(b"an older backup")
    assert (
        main(["backup", "--database", str(tmp_path / "none.sqlite3"), "--out", str(tmp_path / "x")])
        == 2
    )
    assert "no such database file" in capsys.readouterr().err
    path.write_bytes(b"")
    assert main(["backup", "--database", str(path), "--out", str(out)]) == 2
    assert "exists already" in capsys.readouterr().err
    assert out.read_bytes() == b"an older backup"
    path.write_bytes(b"not a database at all, just some text" * 100)
    assert main(["backup", "--database", str(path), "--out", str(tmp_path / "new.sqlite3")]) == 2
    assert "cannot be backed up" in capsys.readouterr().err
    assert not (tmp_path / "new.sqlite3").exists() and not (tmp_path / "new.sqlite3.part").exists()
    assert (
        main(["backup", "--database", "postgresql://u@host/db", "--out", str(tmp_path / "y")]) == 2
    )
    assert "pg_dump" in capsys.readouterr().err


@pytest.mark.parametrize("running", [True, False])
async def test_a_backup_of_a_stopped_or_running_database_opens(
    tmp_path: Path, running: bool, capsys
):
    path, out = tmp_path / "bot.sqlite3", tmp_path / "copy.sqlite3"
    service = await open_service(path)
    await service.create(1, 9, {"players": []})
    if not running:
        await service.storage.close()
    assert (
        await asyncio.to_thread(main, ["backup", "--database", str(path), "--out", str(out)]) == 0
    )
    if running:
        await service.storage.close()
    copy = await Storage.open(out)
    try:
        assert [game.id for game in await copy.open_games()] == [1]
    finally:
        await copy.close()
