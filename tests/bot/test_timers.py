"""Phase timers: the deadline applies the host's command; reminders come once; restarts re-arm."""

import asyncio

import pytest

from bot.config import Config, Timers
from bot.service import GameService, Held
from bot.storage import OutboxItem, Storage
from bot.timers import PhaseTimers
from rules import deal
from tests.waits import last_verb, stored_commands

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


async def until(predicate, timeout=60.0):
    """Wait for ``predicate`` (a bound on a broken run, not a timing: a loaded machine is slow)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        assert loop.time() < end, "condition not reached"
        await asyncio.sleep(0.01)


async def test_the_deadline_moves_the_game_on_like_the_host(tmp_path):
    clock = Clock()
    service, runner, reminders = await setup(
        tmp_path / "db", clock, Timers(600, 300, 600, (300, 60))
    )
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
    rows = await stored_commands(service.storage, live.id, last_verb("voting"))
    assert [(r.command["verb"], r.source) for r in rows] == [("voting", "timer")]
    assert live.record.deadline == clock.now + 300
    await runner.close()
    await service.storage.close()


async def test_a_deadline_passed_while_down_fires_on_restart_and_reminders_are_not_repeated(
    tmp_path,
):
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


async def test_a_deadline_passed_while_the_disk_is_full_fires_once_there_is_room(tmp_path, caplog):
    """A real SQLITE_FULL: the database may not grow past its size (``max_page_count``) and its
    free pages are used up. The timer logs, backs off and tries again: once room is freed the
    passed deadline fires, once, with nothing else to wake it."""
    import logging
    import sqlite3

    path = tmp_path / "db"
    with sqlite3.connect(path) as raw:  # small pages: an announcement needs new ones
        raw.execute("PRAGMA page_size = 512")
        raw.execute("CREATE TABLE filler (x BLOB)")
    clock = Clock()
    service, runner, _ = await setup(path, clock, Timers(600, 300, 600, ()))
    service.render = lambda live, events: [
        OutboxItem("send", {"channel_id": 1}, {"content": f"{e.kind} " + "·" * 600}) for e in events
    ]
    live = await service.create(1, 9, {"players": []})
    await service.start(live.id, deal(CITIES, 3), 3)
    storage = service.storage

    async def scalar(sql: str) -> int:
        async with storage.transaction() as db, db.execute(sql) as cursor:
            return int((await cursor.fetchone())[0])

    async def limit(pages: int) -> None:  # a limit of each connection: the writer's and the group's
        await scalar(f"PRAGMA max_page_count = {pages}")
        assert storage._group is not None
        storage._group.execute(f"PRAGMA max_page_count = {pages}")

    await limit(await scalar("PRAGMA page_count"))
    with pytest.raises(sqlite3.OperationalError, match="full"):
        while True:  # use up the free pages
            async with storage.transaction() as db:
                await db.execute("INSERT INTO filler VALUES (zeroblob(400))")

    with caplog.at_level(logging.WARNING):
        clock.now += 601  # the discussion's deadline passes while the disk is full
        runner.arm(live)
        await until(
            lambda: sum("could not be stored" in r.getMessage() for r in caplog.records) >= 2
        )
    async with service.lock(live.id):  # between two tries: the game as stored
        assert live.game.stage.value == "discussion" and await storage.commands(live.id) == []

    # room is freed on the disk (the file may grow again); nothing else happens in the game
    await limit(1073741823)
    await until(lambda: runner.fired)
    assert live.game.stage.value == "voting"
    rows = await storage.commands(live.id)
    assert [(r.command["verb"], r.source) for r in rows] == [("voting", "timer")]
    assert service.live(live.id).record.deadline == clock.now + 300
    await runner.close()
    await storage.close()


async def test_a_reminder_that_waited_for_the_lock_while_the_stage_moved_on_is_not_posted(tmp_path):
    """The discussion's "1 minute left" came due as the host moved to voting: it waited for the
    game's lock behind his command, and must not be posted in (or counted for) the voting."""
    from rules import StartVoting

    clock = Clock()
    service, runner, reminders = await setup(tmp_path / "db", clock, Timers(600, 300, 600, (60,)))
    live = await service.create(1, 9, {"players": []})
    await service.start(live.id, deal(CITIES, 3), 3)
    lock = service.lock(live.id)
    async with lock:
        host = asyncio.create_task(service.apply(live.id, StartVoting(), source="host"))
        await until(lambda: len(lock._waiters or ()) == 1)
        clock.now += 541  # the reminder is due
        runner.arm(live)
        await until(lambda: reminders == [(live.id, 60)] and len(lock._waiters or ()) == 2)
    await host
    await until(lambda: not lock.locked() and not lock._waiters)
    await asyncio.sleep(0.05)  # the timer goes back to sleep until the voting's reminder
    record = service.live(live.id).record
    assert record.deadline_stage == "day 1 voting" and record.reminders_sent == []
    pending = [item.payload["content"] for item in await service.storage.pending_outbox(live.id)]
    assert "60 left" not in pending
    await runner.close()
    await service.storage.close()


async def test_a_deadline_refused_as_the_game_stands_still_waits_and_fires_once_let_go(tmp_path):
    """The bot lost a power just as the deadline fired (the service's rule under the game's lock
    says so before the timer's own hold did): the stage waits, with no failure counted and its
    deadline kept, and the timer fires once it is armed after the game is let go."""
    clock = Clock()
    service, runner, _ = await setup(tmp_path / "db", clock, Timers(600, 300, 600, ()))
    live = await service.create(1, 9, {"players": []})
    await service.start(live.id, deal(CITIES, 3), 3)
    still = [True]
    asked: list[object] = []

    def standstill(live, command):
        asked.append(command)
        return Held("error.powers_lacking") if still[0] else None

    service.standstill = standstill
    deadline = live.record.deadline
    clock.now += 601
    runner.arm(live)
    await until(lambda: asked)
    assert live.game.stage.value == "discussion" and live.record.deadline == deadline
    still[0] = False
    runner.arm(live)
    await until(lambda: runner.fired)
    assert runner.fired == [(live.id, "day 1 discussion")] and runner.failures == 0
    assert live.game.stage.value == "voting"
    await runner.close()
    await service.storage.close()
