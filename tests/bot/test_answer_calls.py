"""An interaction's answer costs one call where Discord's 3 s still allow it: a command that
waits a moment for its game's lock, or that reaches the bot late but with time left, is
committed and answered once, not acknowledged first and edited after; one still waiting when
too little of the 3 s is left (:mod:`bot.service.answering`) is acknowledged then, and applied
once the lock is free. The service's clock for Discord's time is fixed here (``wall``); the
tests wait on events, never on time."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.config import Config
from bot.service import Expired, GameService, LiveGame
from bot.service.answering import ANSWER_MARGIN, ANSWER_WITHIN, AnswerTime
from bot.storage import OutboxItem, Storage
from rules import Nominate, deal
from rules.events import Event

CITIES = {"A": [f"a{i}" for i in range(6)], "B": [f"b{i}" for i in range(6)]}
NOW = 1_800_000_000.0


def announce(live: LiveGame, events: list[Event]) -> list[OutboxItem]:
    return [OutboxItem("send", {"channel_id": 1}, {"content": e.kind}) for e in events]


class Interaction:
    """An interaction as the service sees it, counting its acknowledgements."""

    def __init__(self, age: float, accepts: bool = True) -> None:
        self.sent_at = NOW - age
        self.accepts = accepts
        self.defers = 0
        self.acknowledged = asyncio.Event()

    @property
    def deferred(self) -> bool:
        return self.defers > 0

    async def defer(self) -> bool:
        self.defers += 1
        self.acknowledged.set()
        return self.accepts


async def service_with_game(database: Any) -> tuple[GameService, LiveGame]:
    storage = await Storage.open(database)
    service = GameService(storage, Config(database=database), clock=lambda: 1000.0)
    service.render = announce
    service.wall = lambda: NOW
    live = await service.create(1, 99, {"players": []})
    await service.start(live.id, deal(CITIES, 5), 5)
    return service, live


async def blocked_until_waiting(service: GameService, game_id: int) -> None:
    """Yield until a command is queued on the game's lock."""
    lock = service.lock(game_id)
    for _ in range(1000):
        if getattr(lock, "_waiters", None):
            return
        await asyncio.sleep(0)
    raise AssertionError("no command waited for the lock")


async def test_a_command_that_waits_a_moment_for_the_lock_is_answered_with_one_call(database):
    service, live = await service_with_game(database)
    try:
        interaction = Interaction(age=0.2)
        async with service.lock(live.id):  # another command of the game is being committed
            waiting = asyncio.create_task(
                service.apply(live.id, Nominate("a0", "a1"), source="player", answer=interaction)
            )
            await blocked_until_waiting(service, live.id)
        applied = await waiting
        assert [e.kind for e in applied.events] == ["nominated"]
        assert interaction.defers == 0  # answered after the commit: the cog's one call
    finally:
        await service.storage.close()


async def test_one_still_waiting_as_it_turns_old_is_acknowledged_then_and_applied_after(
    database,
):
    service, live = await service_with_game(database)
    try:
        service.answer_time.cost = 0.0  # (what the commands before took is not this test's)
        left = ANSWER_WITHIN - ANSWER_MARGIN
        interaction = Interaction(age=left - 0.05)  # 50 ms left before it must be
        async with service.lock(live.id):
            waiting = asyncio.create_task(
                service.apply(live.id, Nominate("a0", "a1"), source="player", answer=interaction)
            )
            await asyncio.wait_for(interaction.acknowledged.wait(), 30)
            assert not waiting.done() and not live.game.nominations["A"]
        applied = await waiting
        assert [e.kind for e in applied.events] == ["nominated"] and interaction.defers == 1
    finally:
        await service.storage.close()


async def test_one_already_old_is_acknowledged_before_its_commit_or_not_applied(database):
    service, live = await service_with_game(database)
    try:
        old = Interaction(age=ANSWER_WITHIN - ANSWER_MARGIN + 0.1)
        await service.apply(live.id, Nominate("a0", "a1"), source="player", answer=old)
        assert old.defers == 1
        refused = Interaction(age=ANSWER_WITHIN - ANSWER_MARGIN + 0.1, accepts=False)
        with pytest.raises(Expired):
            await service.apply(live.id, Nominate("a2", "a3"), source="player", answer=refused)
        assert list(live.game.nominations["A"]) == ["a1"]
        assert len(await service.storage.commands(live.id)) == 1
    finally:
        await service.storage.close()


@pytest.mark.parametrize("age", [0.0, 1.0, 1.6, 2.0, 2.3])
async def test_a_late_interaction_with_time_left_is_committed_and_answered_with_one_call(
    database, age
):
    """It used to be acknowledged first from 1.5 s on; now only when the answer would not be
    in time."""
    service, live = await service_with_game(database)
    try:
        service.answer_time.cost = 0.01  # a command takes 10 ms now
        interaction = Interaction(age=age)
        applied = await service.apply(
            live.id, Nominate("a0", "a1"), source="player", answer=interaction
        )
        assert [e.kind for e in applied.events] == ["nominated"] and interaction.defers == 0
    finally:
        await service.storage.close()


@pytest.mark.parametrize(("age", "cost"), [(2.6, 0.0), (2.0, 0.6), (1.0, 2.0)])
async def test_one_the_work_would_make_late_is_acknowledged_first(database, age, cost):
    """Too old for the margin, or the commands take so long now that the answer would come
    after Discord's 3 s: acknowledged before the commit."""
    service, live = await service_with_game(database)
    try:
        service.answer_time.cost = cost
        interaction = Interaction(age=age)
        await service.apply(live.id, Nominate("a0", "a1"), source="player", answer=interaction)
        assert interaction.defers == 1 and list(live.game.nominations["A"]) == ["a1"]
    finally:
        await service.storage.close()


def test_a_clock_behind_discords_makes_interactions_older_not_younger():
    clock = AnswerTime()
    clock.heard(NOW, NOW)
    assert clock.age(NOW - 2.0, NOW) == 2.0
    clock.heard(NOW + 0.4, NOW)  # it arrived 0.4 s before Discord made it: the clock is behind
    assert clock.age(NOW - 2.0, NOW) == pytest.approx(2.4)
    assert clock.left(NOW - 2.0, NOW) < 0.5 - ANSWER_MARGIN + 0.1
    clock.heard(NOW + 86_400, NOW)  # a snowflake a day ahead: no clock is that far off
    assert clock.age(NOW - 2.0, NOW) == pytest.approx(2.4)


def test_what_a_command_takes_is_remembered_and_fades():
    clock = AnswerTime()
    clock.took(0.8)
    clock.took(0.01)
    assert clock.cost == pytest.approx(0.72)
    for _ in range(60):
        clock.took(0.01)
    assert clock.cost < 0.02
