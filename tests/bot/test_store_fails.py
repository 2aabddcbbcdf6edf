"""A change counts only once it is stored: when the database fails in the middle of a game (a
full disk under SQLite; the PostgreSQL server stopped at once, ``pg_ctl -m immediate``), a
command, a change of the record and a deadline are each refused as not stored, memory stays
exactly what the database holds, and once the database is back the game goes on from its log,
which replays, and a restart restores it, not broken.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from bot.config import Config, Timers
from bot.service import GameService, LiveGame, NotStored, Unconfirmed
from bot.storage import OutboxItem, Storage
from bot.timers import PhaseTimers
from rules import (
    CastVote,
    EndDay,
    Game,
    Nominate,
    Setup,
    StartVoting,
    Unvote,
    command_from_dict,
    deal,
)
from tests.storage.plugin import WHY_NOT
from tests.storage.server import PostgresServer, running_server
from tests.waits import last_verb, stored_commands

CITIES = {"A": [f"a{i}" for i in range(6)], "B": [f"b{i}" for i in range(6)]}
TIMERS = Timers(600, 300, 600, ())


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def until(predicate: Callable[[], object], timeout: float, what: str) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        assert loop.time() < end, what
        await asyncio.sleep(0.02)


def announce(live, events) -> list[OutboxItem]:
    # long texts: under SQLite each command needs new pages, which a full disk refuses
    return [
        OutboxItem("send", {"channel_id": 1}, {"content": f"{e.kind} " + "·" * 600}) for e in events
    ]


async def stored_game(storage: Storage, game_id: int) -> Game:
    """The game as its stored log makes it (the database's truth)."""
    record = await storage.game(game_id)
    assert record is not None and record.setup is not None and record.seed is not None
    game = Game.create(Setup.from_dict(record.setup), record.seed)
    for row in await storage.commands(game_id):
        game.apply(command_from_dict(row.command))
    return game


Outage = Callable[[Storage], Awaitable[None]]


async def timed_game(
    database: Path | str, clock: Clock
) -> tuple[Storage, GameService, PhaseTimers, LiveGame]:
    """A service with its timers on ``database`` and a game dealt, its first nomination made."""
    storage = await Storage.open(database)
    service = GameService(
        storage, Config(database=database, timers=TIMERS, snapshot_every=3), clock=clock
    )
    service.render = announce
    runner = PhaseTimers(service, reminders=(), clock=clock)
    service.after_commit.append(runner.arm)
    live = await service.create(1, 9, {"players": []})
    await service.start(live.id, deal(CITIES, 3), 3)
    await service.apply(live.id, Nominate("a0", "a1"), source="player")
    return storage, service, runner, live


async def play_through_an_outage(
    database: Path | str, fail: Outage, heal: Outage, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    storage, service, runner, live = await timed_game(database, clock)
    try:
        await service.apply(live.id, Nominate("a2", "a3"), source="player")
        before, lobby, count = (
            live.game.to_dict(),
            dict(live.record.lobby),
            live.record.command_count,
        )

        await fail(storage)
        with caplog.at_level(logging.WARNING):
            with pytest.raises(NotStored):
                await service.apply(
                    live.id, Nominate("a4", "a5"), source="player", interaction_id=77
                )
            assert live.game.to_dict() == before and live.record.command_count == count
            with pytest.raises(NotStored):  # a second one, while the database is still down
                await service.apply(
                    live.id, Nominate("a1", "a2"), source="player", interaction_id=78
                )

            def pause(live):
                live.record.lobby["paused"] = {"remaining": 5}
                return []

            with pytest.raises(NotStored):
                await service.update(live.id, pause, interaction_id=79)
            assert live.record.lobby == lobby

            # the discussion's deadline passes while the database is down: tried, refused, tried again
            clock.now += 601
            runner.arm(live)
            await until(
                lambda: runner.failures >= 2,
                30.0,
                "the timer did not try twice",
            )
            # tried twice or more, logged once for the outage (and the outage itself once)
            messages = [r.getMessage() for r in caplog.records]
            assert sum("the timer could not act" in m for m in messages) == 1
            assert sum("the database fails" in m for m in messages) == 1
        async with service.lock(live.id):
            assert live.game.to_dict() == before and live.game.stage.value == "discussion"
            assert live.record.lobby == lobby and live.record.command_count == count
            assert not runner.fired

        await heal(storage)
        await until(
            lambda: runner.fired, 60.0, "the deadline did not fire once the database came back"
        )
        assert live.game.stage.value == "voting"
        applied = await service.apply(
            live.id, CastVote("a4", "a1"), source="player", interaction_id=80
        )
        assert applied.seq == count + 2
        rows = await storage.commands(live.id)
        assert [(r.command["verb"], r.source) for r in rows] == [
            ("nominate", "player"),
            ("nominate", "player"),
            ("voting", "timer"),
            ("vote", "player"),
        ]
        assert [r.interaction_id for r in rows][-1] == 80  # 77 and 78 were never stored
        assert (await stored_game(storage, live.id)).to_dict() == live.game.to_dict()
        memory = live.game.to_dict()
    finally:
        await runner.close()
        await storage.close()

    storage = await Storage.open(database)  # a restart: the game loads, whole
    try:
        restored = await GameService(storage, Config(database=database, timers=TIMERS)).restore()
        assert [(game.broken, game.game.to_dict()) for game in restored] == [(None, memory)]
    finally:
        await storage.close()


def small_pages(tmp_path: Path) -> Path:
    """A new SQLite file of small pages (every command needs new ones) with room to fill."""
    path = tmp_path / "db"
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA page_size = 512")
        raw.execute("CREATE TABLE filler (x BLOB)")
    return path


async def limit(storage: Storage, pages: int | None) -> None:
    """The file may not grow past ``pages`` (None: its size now), on each writing connection."""
    async with storage.transaction() as db:
        if pages is None:
            async with db.execute("PRAGMA page_count") as cursor:
                pages = int((await cursor.fetchone())[0])
        await db.execute(f"PRAGMA max_page_count = {pages}")
    assert storage._group is not None
    storage._group.execute(f"PRAGMA max_page_count = {pages}")


async def fill(storage: Storage) -> None:
    """A real SQLITE_FULL: the file may not grow and its free pages are used up."""
    await limit(storage, None)
    with pytest.raises(sqlite3.OperationalError, match="full"):
        while True:
            async with storage.transaction() as db:
                await db.execute("INSERT INTO filler VALUES (zeroblob(400))")


async def free(storage: Storage) -> None:
    await limit(storage, 1073741823)


async def test_a_full_sqlite_disk_refuses_commands_and_the_deadline_and_the_game_goes_on(
    tmp_path, caplog
):
    await play_through_an_outage(small_pages(tmp_path), fill, free, caplog)


async def test_a_day_end_that_waited_for_a_last_word_is_taken_over_by_the_timer_when_not_stored(
    tmp_path, caplog
):
    """The host ends the day while a last word is recorded: it waits for the recording. The disk
    is full when the recording ends: the day's end cannot be stored then, and the timer takes it
    over, trying again until the disk has room."""
    storage, service, runner, live = await timed_game(small_pages(tmp_path), Clock())
    try:
        await service.apply(live.id, StartVoting(), source="host")
        service.hold(live.id, "lastword")
        assert (await service.apply(live.id, EndDay(), source="host")).deferred
        await fill(storage)
        with caplog.at_level(logging.WARNING):
            await service.release(live.id, "lastword")  # not stored: nothing raised here
            assert live.game.stage.value == "voting" and live.record.command_count == 2
            await until(
                lambda: runner.failures >= 2,
                30.0,
                "the timer did not take the day's end over",
            )
        assert live.game.stage.value == "voting"
        await free(storage)
        await until(lambda: live.game.stage.value != "voting", 30.0, "the day never ended")
        rows = await stored_commands(storage, live.id, last_verb("night"))
        assert [(r.command["verb"], r.source) for r in rows][-1] == ("night", "timer")
        assert (await stored_game(storage, live.id)).to_dict() == live.game.to_dict()
    finally:
        await runner.close()
        await storage.close()


@pytest.fixture(scope="module")
def own_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this module's own (the suite's is shared: it is not stopped)."""
    if WHY_NOT is not None:
        pytest.skip(WHY_NOT)
    with running_server(durable=True) as server:
        yield server


async def test_a_postgresql_server_stopped_at_once_refuses_and_the_game_goes_on(own_server, caplog):
    """``pg_ctl stop -m immediate`` mid-game: every connection of the pool is cut; the server is
    started again (it recovers from its WAL) and the pool reconnects by itself."""
    url = own_server.new_url()

    async def crash(storage: Storage) -> None:
        await asyncio.to_thread(own_server.crash)

    async def resume(storage: Storage) -> None:
        await asyncio.to_thread(own_server.resume)

    await play_through_an_outage(url, crash, resume, caplog)


async def test_commands_in_flight_when_postgresql_stops_are_either_stored_or_refused(own_server):
    """Three games take commands without pause while the server is stopped at once under them:
    each command either came back applied (it must be in the log), or refused as not stored
    (it must not be), or unconfirmed (either); after the restart every game replays, none is
    broken, and each game's memory is its log."""
    url = own_server.new_url()
    storage = await Storage.open(url)
    service = GameService(
        storage, Config(database=url, timers=TIMERS, snapshot_every=3), clock=Clock()
    )
    service.render = announce
    outcomes: dict[int, str] = {}
    interactions = iter(range(1000, 100000))
    try:
        lives = []
        for guild in (1, 2, 3):
            live = await service.create(guild, 9, {"players": []})
            await service.start(live.id, deal(CITIES, guild), guild)
            await service.apply(live.id, Nominate("a0", "a1"), source="player")
            await service.apply(live.id, Nominate("b0", "b1"), source="player")
            await service.apply(live.id, StartVoting(), source="host")
            lives.append(live)
        stop = asyncio.Event()

        async def vote(live) -> None:
            voters = [(name, f"{name[0]}1") for name in CITIES["A"][2:] + CITIES["B"][2:]]
            while not stop.is_set():
                for voter, nominee in voters:
                    for command in (CastVote(voter, nominee), Unvote(voter)):
                        interaction = next(interactions)
                        try:
                            applied = await service.apply(
                                live.id, command, source="player", interaction_id=interaction
                            )
                        except NotStored:
                            outcomes[interaction] = "refused"
                            await asyncio.sleep(0.05)
                            break
                        except Unconfirmed:
                            outcomes[interaction] = "unconfirmed"
                            break
                        # a vote repeated as it stands (its unvote refused) changes nothing and is not stored
                        outcomes[interaction] = "repeated" if applied.repeated else "applied"

        voters = [asyncio.create_task(vote(live)) for live in lives]
        await until(lambda: len(outcomes) > 60, 30.0, "no votes went through")
        await asyncio.to_thread(own_server.crash)
        await until(
            lambda: sum(o in ("refused", "unconfirmed") for o in outcomes.values()) >= 6,
            30.0,
            "nothing was refused",
        )
        await asyncio.to_thread(own_server.resume)
        settled = len(outcomes)
        await until(lambda: len(outcomes) > settled + 60, 60.0, "the games did not go on")
        stop.set()
        await asyncio.gather(*voters)
        logged = {row.interaction_id for live in lives for row in await storage.commands(live.id)}
        for interaction, outcome in outcomes.items():
            if outcome == "applied":
                assert interaction in logged, f"{interaction} was applied, not stored"
            elif outcome == "refused":
                assert interaction not in logged, f"{interaction} was refused, yet stored"
        for live in lives:
            assert (await stored_game(storage, live.id)).to_dict() == live.game.to_dict()
        memory = {live.id: live.game.to_dict() for live in lives}
    finally:
        await storage.close()
    storage = await Storage.open(url)
    try:
        restored = await GameService(storage, Config(database=url, timers=TIMERS)).restore()
        assert {game.id: (game.broken, game.game.to_dict()) for game in restored} == {
            game_id: (None, state) for game_id, state in memory.items()
        }
    finally:
        await storage.close()


async def test_a_commit_whose_answer_was_lost_is_read_back_before_the_next_command(database):
    """COMMIT went through but its answer was lost (the connection broke just then, which
    PostgreSQL cannot rule out): the sender is told it is not known; memory is as before the
    command, behind the database, so the game is read again before its next command, which
    then follows it in the log."""
    from bot.storage import CommitUnknown

    storage = await Storage.open(database)
    service = GameService(
        storage, Config(database=database, timers=TIMERS, snapshot_every=3), clock=Clock()
    )
    service.render = announce
    try:
        live = await service.create(1, 9, {"players": []})
        await service.start(live.id, deal(CITIES, 3), 3)
        real = storage.append_command

        async def committed_unheard(*args, **kwargs):
            await real(*args, **kwargs)
            raise CommitUnknown("the connection broke during COMMIT")

        storage.append_command = committed_unheard  # type: ignore[method-assign]
        with pytest.raises(Unconfirmed):
            await service.apply(live.id, Nominate("a0", "a1"), source="player", interaction_id=41)
        storage.append_command = real  # type: ignore[method-assign]
        assert live.stale and live.record.command_count == 0 and not live.game.nominations["A"]
        applied = await service.apply(
            live.id, Nominate("a2", "a3"), source="player", interaction_id=42
        )
        assert applied.seq == 2 and not live.stale
        assert [r.interaction_id for r in await storage.commands(live.id)] == [41, 42]
        assert (await stored_game(storage, live.id)).to_dict() == live.game.to_dict()
    finally:
        await storage.close()
