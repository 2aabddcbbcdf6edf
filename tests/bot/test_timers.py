"""Phase timers: the deadline applies the host's command; reminders come once; restarts re-arm."""

import asyncio

from bot.config import Config, Timers
from bot.service import GameService
from bot.storage import OutboxItem, Storage
from bot.timers import PhaseTimers
from rules import deal

CITIES = {"A": [f"a{i}" for i in range(6)], "B": [f"b{i}" for i in range(6)]}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def setup(path, clock, timers):
    storage = await Storage.open(path)
    service = GameService(storage, Config(database=path, timers=timers), clock=clock)
    reminders: list[tuple[int, int]] = []

    def remind(live, offset):
        reminders.append((live.id, offset))
        return [OutboxItem("send", {"channel_id": 1}, {"content": f"{offset} left"})]

    runner = PhaseTimers(service, reminders=timers.reminders, render_reminder=remind, clock=clock)
    service.after_commit.append(runner.arm)
    return service, runner, reminders


async def until(predicate, timeout=2.0):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        assert loop.time() < end, "condition not reached"
        await asyncio.sleep(0.01)


async def test_the_deadline_moves_the_game_on_like_the_host(tmp_path):
    clock = Clock()
    service, runner, reminders = await setup(tmp_path / "db", clock, Timers(600, 300, 600, (300, 60)))
    live = await service.create(1, 9, {"players": []})
    await service.start(live.id, deal(CITIES, 3), 3)
    runner.arm(live)
    clock.now += 300
    runner.arm(live)
    await until(lambda: reminders == [(live.id, 300)])
    clock.now += 240
    runner.arm(live)
    await until(lambda: len(reminders) == 2)
    assert reminders[-1] == (live.id, 60)
    clock.now += 60
    runner.arm(live)
    await until(lambda: live.game.stage.value == "voting")
    rows = await service.storage.commands(live.id)
    assert [(r.command["verb"], r.source) for r in rows] == [("voting", "timer")]
    assert live.record.deadline == clock.now + 300
    await runner.close()
    await service.storage.close()


async def test_a_deadline_passed_while_down_fires_on_restart_and_reminders_are_not_repeated(tmp_path):
    clock = Clock()
    timers = Timers(600, 300, 600, (300,))
    path = tmp_path / "db"
    service, runner, reminders = await setup(path, clock, timers)
    live = await service.create(1, 9, {"players": []})
    await service.start(live.id, deal(CITIES, 3), 3)
    clock.now += 310
    runner.arm(live)
    await until(lambda: len(reminders) == 1)
    await runner.close()
    await service.storage.close()

    service, runner, reminders = await setup(path, clock, timers)
    (restored,) = await service.restore()
    assert restored.record.reminders_sent == [300]
    runner.arm_all()
    await asyncio.sleep(0.05)
    assert reminders == []  # already announced before the restart
    clock.now += 400  # the bot was down past the deadline
    runner.arm_all()
    await until(lambda: restored.game.stage.value == "voting")
    await runner.close()
    await service.storage.close()


async def test_a_stage_without_timer_has_no_deadline(tmp_path):
    clock = Clock()
    service, runner, _ = await setup(tmp_path / "db", clock, Timers(0, 0, 0, ()))
    live = await service.create(1, 9, {"players": []})
    await service.start(live.id, deal(CITIES, 3), 3)
    assert live.record.deadline is None
    clock.now += 10_000
    runner.arm(live)
    await asyncio.sleep(0.05)
    assert live.game.stage.value == "discussion"
    await runner.close()
    await service.storage.close()
