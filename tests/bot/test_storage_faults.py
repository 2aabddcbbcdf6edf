"""Storage faults at load: a bad snapshot falls back to the log, a log that no longer replays
makes the game broken (loaded, refusing everything but being closed), other games load.

The database is damaged between two services on the same database, behind the bot's back
(plain sqlite3, or a second PostgreSQL connection), the way a failing disk or a careless hand
would. Each test runs on both backends.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import pytest

from bot.config import Config
from bot.service import GameService, LiveGame
from bot.storage import OutboxItem, Storage
from rules import CastVote, Game, Nominate, RuleError, Setup, StartVoting, command_from_dict, deal
from rules.events import Event
from tests.storage.plugin import raw, raw_sync

CITIES = {"A": [f"a{i}" for i in range(6)], "B": [f"b{i}" for i in range(6)]}


def announce(live: LiveGame, events: list[Event]) -> list[OutboxItem]:
    return [OutboxItem("send", {"channel_id": 1}, {"content": e.kind}) for e in events]


async def open_service(path: Path | str, **config: object) -> GameService:
    storage = await Storage.open(path)
    service = GameService(storage, Config(database=path, **config), clock=lambda: 1000.0)  # type: ignore[arg-type]
    service.render = announce
    return service


async def played(path: Path | str, guilds: int = 1) -> list[LiveGame]:
    """Games with a snapshot every 3 commands (at 3 and 6) and a tail of one command."""
    service = await open_service(path, snapshot_every=3)
    games = []
    for guild in range(1, guilds + 1):
        live = await service.create(guild, 99, {"players": [], "channel_id": 500 + guild})
        await service.start(live.id, deal(CITIES, 5), 5)
        for i in range(5):
            await service.apply(live.id, Nominate(f"a{i}", f"a{(i + 1) % 6}"), source="player")
        await service.apply(live.id, StartVoting(), source="host")
        await service.apply(live.id, CastVote("a0", "a1"), source="player")
        games.append(live)
    await service.storage.close()
    return games


def replayed(path: Path | str, game_id: int) -> Game:
    setup, seed = raw_sync(path, "SELECT setup, seed FROM games WHERE id = ?", (game_id,))[0]
    game = Game.create(Setup.from_dict(json.loads(setup)), seed)
    for (command,) in raw_sync(
        path, "SELECT command FROM commands WHERE game_id = ? ORDER BY seq", (game_id,)
    ):
        game.apply(command_from_dict(json.loads(command)))
    return game


async def rewrite_snapshot(
    path: Path | str, game_id: int, seq: int, text: str, *, keep_checksum: bool
) -> None:
    """Put ``text`` in a snapshot; its checksum made to match unless ``keep_checksum``."""
    await raw(
        path, "UPDATE snapshots SET state = ? WHERE game_id = ? AND seq = ?", (text, game_id, seq)
    )
    if not keep_checksum:
        await raw(
            path,
            "UPDATE snapshots SET checksum = ? WHERE game_id = ? AND seq = ?",
            (hashlib.sha256(text.encode()).hexdigest(), game_id, seq),
        )


async def snapshot_text(path: Path | str, game_id: int, seq: int) -> str:
    return str(
        (
            await raw(
                path, "SELECT state FROM snapshots WHERE game_id = ? AND seq = ?", (game_id, seq)
            )
        )[0][0]
    )


def with_a_dead_player(text: str) -> str:
    state = json.loads(text)
    state["alive"]["a3"] = False
    return json.dumps(state, ensure_ascii=False, separators=(",", ":"))


BAD_SNAPSHOTS = {
    "wrong-checksum": lambda text: (with_a_dead_player(text), True),
    "not-json": lambda text: (text[: len(text) // 2], False),
    "json-but-not-a-game": lambda text: (json.dumps({"bad": 1}), False),
    "disagrees-with-the-log": lambda text: (with_a_dead_player(text), False),
}


@pytest.mark.parametrize("damage", list(BAD_SNAPSHOTS))
async def test_a_bad_snapshot_falls_back_to_a_full_replay(
    database: Path | str, damage: str, caplog
):
    path = database
    (live,) = await played(path)
    text, keep = BAD_SNAPSHOTS[damage](await snapshot_text(path, live.id, 6))
    await rewrite_snapshot(path, live.id, 6, text, keep_checksum=keep)
    expected = replayed(path, live.id)
    service = await open_service(path)
    with caplog.at_level(logging.WARNING, logger="bot.service"):
        (restored,) = await service.restore()
    assert getattr(restored, "broken", None) is None
    assert restored.game == expected and restored.game.is_alive("a3")
    assert restored.record.command_count == 7
    assert any("snapshot 6" in record.getMessage() for record in caplog.records), caplog.text
    # and it plays on from the log's state
    await service.apply(live.id, CastVote("a2", "a1"), source="player")
    await service.storage.close()


async def test_a_command_row_that_is_not_json_makes_the_game_broken_and_others_load(
    database: Path | str,
):
    path = database
    first, second = await played(path, guilds=2)
    await raw(
        path,
        "UPDATE commands SET command = ? WHERE game_id = ? AND seq = 7",
        ('{"verb": "vo', first.id),
    )
    service = await open_service(path)
    restored = await service.restore()
    assert [g.id for g in restored] == [first.id, second.id]
    broken, fine = restored
    assert broken.broken is not None and broken.broken.params == {"seq": 7}
    assert fine.broken is None and fine.game == replayed(path, second.id)
    assert await service.open_game(1) is broken
    await service.storage.close()


async def test_a_logged_command_the_rules_now_refuse_makes_the_game_broken(database: Path | str):
    """Written by other rules: the snapshot is not trusted, the whole log is replayed, and its
    first command is one these rules refuse."""
    path = database
    (live,) = await played(path)
    # voting during the discussion: what other rules might have taken
    await raw(
        path,
        "UPDATE commands SET command = ? WHERE game_id = ? AND seq = 1",
        (json.dumps({"verb": "vote", "actor": "a0", "target": "a1"}), live.id),
    )
    await raw(path, "UPDATE snapshots SET rules_version = 'older rules'")
    with pytest.raises(RuleError):
        replayed(path, live.id)
    service = await open_service(path)
    (restored,) = await service.restore()
    assert restored.broken is not None and restored.broken.params == {
        "seq": 1,
        "code": "wrong_phase",
    }
    assert restored.game is None
    await service.storage.close()


async def test_a_log_without_snapshot_that_no_longer_replays_makes_the_game_broken(
    database: Path | str,
):
    path = database
    service = await open_service(path)
    live = await service.create(1, 99, {"players": []})
    await service.start(live.id, deal(CITIES, 5), 5)
    await service.apply(live.id, Nominate("a0", "a1"), source="player")
    await service.apply(live.id, Nominate("a2", "a3"), source="player")
    await service.storage.close()
    await raw(
        path,
        "UPDATE commands SET command = ? WHERE game_id = ? AND seq = 2",
        (json.dumps({"verb": "nominate", "actor": "a0", "target": "a4"}), live.id),
    )
    service = await open_service(path)
    (restored,) = await service.restore()
    assert restored.broken is not None and restored.broken.params == {
        "seq": 2,
        "code": "already_nominated_today",
    }
    await service.storage.close()


async def test_a_game_row_that_is_not_json_is_loaded_broken_and_others_load(database: Path | str):
    path = database
    first, second = await played(path, guilds=2)
    # zeroed bytes on SQLite; PostgreSQL's text cannot hold a NUL, so other bytes that are no JSON
    garbage = "\x00\x00\x00" if isinstance(path, Path) else "\x01\x02\x03"
    await raw(path, "UPDATE games SET lobby = ? WHERE id = ?", (garbage, first.id))
    service = await open_service(path)
    restored = await service.restore()
    assert [g.id for g in restored] == [first.id, second.id]
    assert restored[0].broken is not None and restored[1].broken is None
    await service.storage.close()


async def test_a_sound_snapshot_is_checked_against_the_log_since_the_snapshot_before_it(
    database: Path | str,
):
    """The cost at load: the commands since the previous snapshot, not the whole log."""
    path = database
    (live,) = await played(path)
    service = await open_service(path)
    read: list[tuple[int, int | None]] = []
    commands = service.storage.commands

    async def spy(game_id: int, after: int = 0, upto: int | None = None):  # type: ignore[no-untyped-def]
        read.append((after, upto))
        return await commands(game_id, after, upto)

    service.storage.commands = spy  # type: ignore[method-assign]
    (restored,) = await service.restore()
    assert restored.game == replayed(path, live.id)
    assert read == [(3, 6), (6, None)]
    await service.storage.close()
