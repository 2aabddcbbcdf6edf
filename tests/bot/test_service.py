"""Storage and the game service, without Discord: commit, order, de-duplication, restore."""

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from bot.config import Config
from bot.service import GameService, JustBegan, LiveGame, Seen
from bot.storage import GameExists, OutboxItem, Storage
from rules import CastVote, EndDay, EndNight, Game, Nominate, RuleError, Setup, StartVoting, deal
from rules.events import Event
from tests.storage.plugin import raw

CITIES = {"A": [f"a{i}" for i in range(6)], "B": [f"b{i}" for i in range(6)]}


def announce(live: LiveGame, events: list[Event]) -> list[OutboxItem]:
    return [OutboxItem("send", {"channel_id": 1}, {"content": e.kind}) for e in events]


async def open_service(path, **config) -> GameService:
    """A service on ``path`` (a SQLite file or a PostgreSQL URL: the ``database`` fixture)."""
    storage = await Storage.open(path)
    service = GameService(storage, Config(database=path, **config), clock=lambda: 1000.0)
    service.render = announce
    return service


async def started(service: GameService, guild: int = 1, seed: int = 5) -> LiveGame:
    live = await service.create(guild, 99, {"players": []})
    await service.start(live.id, deal(CITIES, seed), seed)
    return live


async def test_migrations_are_applied_once_and_wal_is_on(tmp_path):
    path = tmp_path / "db.sqlite3"
    storage = await Storage.open(path)
    version = await storage.schema_version()
    await storage.close()
    storage = await Storage.open(path)
    assert await storage.schema_version() == version >= 1
    await storage.close()
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        # one row per migration file (numbers may have gaps while branches are merged)
        files = list((Path(__file__).resolve().parents[2] / "bot" / "migrations").glob("V*__*.sql"))
        assert raw.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0] == len(files)


async def test_one_open_game_per_guild(database):
    service = await open_service(database)
    await service.create(1, 99, {"players": []})
    with pytest.raises(GameExists):
        await service.create(1, 98, {"players": []})
    await service.create(2, 98, {"players": []})
    await service.storage.close()


async def test_a_command_is_committed_with_its_outbox_before_it_returns(database):
    service = await open_service(database)
    live = await started(service)
    applied = await service.apply(
        live.id, Nominate("a0", "a1"), source="player", interaction_id=555
    )
    assert [e.kind for e in applied.events] == ["nominated"]
    rows = await service.storage.commands(live.id)
    assert [(r.seq, r.command["verb"], r.interaction_id) for r in rows] == [(1, "nominate", 555)]
    pending = await service.storage.pending_outbox(live.id)
    assert [item.payload["content"] for item in pending][-1] == "nominated"
    assert [item.seq for item in pending][-1] == 1
    await service.storage.close()


async def test_a_refused_command_stores_nothing(database):
    service = await open_service(database)
    live = await started(service)
    before = live.game.to_dict()
    outbox = len(await service.storage.pending_outbox(live.id))
    with pytest.raises(RuleError):
        await service.apply(live.id, CastVote("a0", "a1"), source="player", interaction_id=1)
    assert live.game.to_dict() == before
    assert await service.storage.commands(live.id) == []
    assert len(await service.storage.pending_outbox(live.id)) == outbox
    assert not await service.storage.interaction_seen(1)
    await service.storage.close()


async def test_an_interaction_delivered_twice_is_applied_once(database):
    service = await open_service(database)
    live = await started(service)
    first = await service.apply(live.id, Nominate("a0", "a1"), source="player", interaction_id=7)
    again = await service.apply(live.id, Nominate("a0", "a1"), source="player", interaction_id=7)
    assert not first.duplicate and again.duplicate and again.events == []
    assert len(await service.storage.commands(live.id)) == 1
    await service.storage.close()


async def test_concurrent_commands_are_applied_in_order_one_at_a_time(database):
    service = await open_service(database)
    live = await started(service)
    nominations = [Nominate(f"a{i}", f"a{(i + 1) % 6}") for i in range(6)]
    results = await asyncio.gather(
        *(
            service.apply(live.id, c, source="player", interaction_id=100 + i)
            for i, c in enumerate(nominations)
        ),
        return_exceptions=True,
    )
    accepted = [r for r in results if not isinstance(r, Exception)]
    assert len(accepted) == 6
    rows = await service.storage.commands(live.id)
    assert [r.seq for r in rows] == list(range(1, 7))
    replay = Game.create(Setup.from_dict(live.record.setup), live.record.seed)
    from rules import command_from_dict

    for row in rows:
        replay.apply(command_from_dict(row.command))
    assert replay == live.game
    await service.storage.close()


async def test_restore_is_snapshot_plus_replay_and_equals_the_game(database):
    path = database
    service = await open_service(path, snapshot_every=3)
    live = await started(service)
    for i in range(5):
        await service.apply(live.id, Nominate(f"a{i}", f"a{(i + 1) % 6}"), source="player")
    await service.apply(live.id, StartVoting(), source="host")
    await service.apply(live.id, CastVote("a0", "a1"), source="player")
    expected = live.game.to_dict()
    snapshots = await raw(path, "SELECT seq FROM snapshots")
    assert sorted(s for (s,) in snapshots) == [3, 6]
    await service.storage.close()

    again = await open_service(path)
    restored = await again.restore()
    assert [g.id for g in restored] == [live.id]
    assert restored[0].game.to_dict() == expected
    await again.apply(live.id, EndDay(), source="timer")
    await again.storage.close()


async def test_a_corrupt_snapshot_falls_back_to_the_log_and_other_games_load(database):
    path = database
    service = await open_service(path, snapshot_every=1)
    first = await started(service, guild=1)
    second = await started(service, guild=2)
    await service.apply(first.id, Nominate("a0", "a1"), source="player")
    await service.apply(second.id, Nominate("a0", "a1"), source="player")
    expected = first.game.to_dict()
    await service.storage.close()
    await raw(
        path, "UPDATE snapshots SET state = ? WHERE game_id = ?", (json.dumps({"bad": 1}), first.id)
    )
    again = await open_service(path)
    restored = await again.restore()
    assert [g.id for g in restored] == [first.id, second.id]
    assert restored[0].broken is None and restored[0].game.to_dict() == expected
    await again.storage.close()


async def test_a_held_day_end_waits_and_then_applies(database):
    service = await open_service(database)
    live = await started(service)
    await service.apply(live.id, StartVoting(), source="host")
    service.hold(live.id, "lastword")
    waiting = await service.apply(live.id, EndDay(), source="timer")
    assert waiting.deferred and live.game.stage.value == "voting"
    await service.release(live.id, "lastword")
    assert live.game.phase.kind.value == "night"
    assert [r.source for r in await service.storage.commands(live.id)][-1] == "timer"
    # the timer began the night: a host's "next" sent a moment after it is refused, naming it
    began = live.record.stage_since
    assert live.record.lobby["timer_began"] == began
    with pytest.raises(JustBegan) as refused:
        await service.apply(
            live.id, EndNight(), source="host", seen=Seen(at=began + 0.3, settle=2.0)
        )
    assert refused.value.stage == "night 1 night" and abs(refused.value.late - 0.3) <= 0.002
    assert live.game.stage.value == "night"
    await service.apply(live.id, EndNight(), source="host", seen=Seen(at=began + 2.5, settle=2.0))
    assert live.game.phase.kind.value == "day"
    await service.storage.close()


async def test_deadlines_are_set_per_stage_from_the_timers(database):
    from bot.config import Timers

    service = await open_service(database, timers=Timers(discussion=60, voting=0, night=30))
    live = await started(service)
    assert live.record.deadline == 1060.0 and live.record.deadline_stage == "day 1 discussion"
    await service.apply(live.id, StartVoting(), source="host")
    assert live.record.deadline is None
    await service.apply(live.id, EndDay(), source="host")
    assert live.record.deadline == 1030.0 and live.record.deadline_stage == "night 1 night"
    stored = await service.storage.game(live.id)
    assert stored.deadline == 1030.0
    await service.storage.close()
