"""Recover at once, never spin (issue 29).

When the database comes back after an outage (a full SQLite disk; the PostgreSQL server stopped
at once and started again), what fell due meanwhile runs as soon as a write succeeds again, not
after the back-off's wait: here the back-offs are an hour, so only the wake can do it in time.
Every loop that waits for something to fall due sleeps in ``Health.sleep``, which the database's
return ends: a loop that slept on its own would be missed, and the source is read for one.
A timer whose command the database refuses because another process wrote the game backs off
(it used to take the refusal for a repeated interaction and fire again at once, thousands of
times a second) and, read again, goes on from what the database holds.
"""

from __future__ import annotations

import ast
import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest

import bot.outbox
import bot.timers
import cogs.season
from bot.config import Config, Timers
from bot.service import GameService
from bot.storage import OutboxItem, Storage
from bot.storage import owner as ownership
from bot.storage.health import Health
from rules import Nominate, Status
from tests.bot.test_store_fails import TIMERS, Clock, fill, free, small_pages, timed_game, until
from tests.cogs.scenes import run
from tests.cogs.test_transcripts import play_and_end, quick_edits, transcript_state
from tests.harness import bot_table
from tests.storage.plugin import WHY_NOT
from tests.storage.server import PostgresServer, running_server

HOUR = 3600.0

Outage = Callable[[Storage], Awaitable[None]]


@pytest.fixture(scope="module")
def own_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this module's own, to stop and start again."""
    if WHY_NOT is not None:
        pytest.skip(WHY_NOT)
    with running_server(durable=True) as server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def outage(request, tmp_path) -> tuple[Path | str, Outage, Outage]:
    """A database and how it fails and comes back: a full disk, or a server stopped at once."""
    if request.param == "sqlite":
        return small_pages(tmp_path), fill, free
    server: PostgresServer = request.getfixturevalue("own_server")

    async def crash(storage: Storage) -> None:
        await asyncio.to_thread(server.crash)

    async def resume(storage: Storage) -> None:
        await asyncio.to_thread(server.resume)

    return server.new_url(), crash, resume


@pytest.fixture
def hour_long_backoffs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every back-off an hour: what runs within the test's seconds was woken."""
    for module in (bot.timers, bot.outbox):
        monkeypatch.setattr(module, "BACKOFF_START", HOUR)
        monkeypatch.setattr(module, "BACKOFF_MAX", HOUR)


async def test_a_deadline_missed_in_an_outage_fires_as_soon_as_the_database_is_back(
    outage, hour_long_backoffs, caplog
):
    database, fail, heal = outage
    clock = Clock()
    storage, service, runner, live = await timed_game(database, clock)
    storage.health.probe_every = 0.05
    try:
        await fail(storage)
        with caplog.at_level(logging.WARNING):
            clock.now += 601  # the discussion's deadline passes while the database is down
            runner.arm(live)
            await until(lambda: runner.failures >= 1, 60.0, "the timer never tried")
            assert storage.health.down and not runner.fired
            await heal(storage)
            # the timer sleeps for an hour: only the database's return wakes it
            await until(lambda: runner.fired, 60.0, "the deadline waited for its back-off")
        assert live.game.stage.value == "voting" and not storage.health.down
        if isinstance(database, Path):  # (a pool's other connections may fail once more)
            assert runner.failures == 1  # tried once, woken once: no retry in between
            messages = [r.getMessage() for r in caplog.records]
            assert sum("the database fails" in m for m in messages) == 1
            assert sum("the database is back after" in m for m in messages) == 1
        rows = await storage.commands(live.id)
        assert [(r.command["verb"], r.source) for r in rows][-1] == ("voting", "timer")
    finally:
        await runner.close()
        await storage.close()


async def test_outbox_items_waiting_out_an_outage_go_as_soon_as_the_database_is_back(
    outage, hour_long_backoffs
):
    """A lane that could not read its items (the server down) or mark one sent (a full disk)
    backs off for an hour; the database's return wakes it, and every item is sent and marked."""
    database, fail, heal = outage
    storage, service, runner, live = await timed_game(database, Clock())
    storage.health.probe_every = 0.05
    sent: list[str] = []

    class Http:
        async def request(self, route, **kwargs):
            sent.append(kwargs["json"]["content"])
            return {"id": str(1000 + len(sent))}

    outbox = bot.outbox.Outbox(storage, Http(), self_id=1)  # type: ignore[arg-type]
    outbox._started = 0.0  # the items are this process's own: nothing to adopt
    failures = 0
    told = storage.health.failed

    def failed(error: BaseException) -> None:
        nonlocal failures
        failures += 1
        told(error)

    try:
        await storage.save_game(
            live.record, outbox=[OutboxItem("send", {"channel_id": 5}, {"content": "due"})]
        )
        pending = len(await storage.pending_outbox(live.id, lane="messages"))
        await fail(storage)
        storage.health.failed = failed  # type: ignore[method-assign]
        outbox.kick(live.id, ("messages",))
        await until(lambda: failures >= 1, 60.0, "the lane never met the outage")
        assert storage.health.down
        await heal(storage)
        await until(outbox.idle, 60.0, "the lane waited for its back-off")
        assert await storage.pending_outbox(live.id, lane="messages") == []
        assert "due" in sent and len(sent) == pending  # each once
    finally:
        await outbox.close()
        await runner.close()
        await storage.close()


async def test_a_timer_refused_because_another_process_wrote_the_game_backs_off(
    database, hour_long_backoffs, caplog
):
    """Two services on one database (what the ownership lock now prevents between processes):
    the second moves the game on behind the first's back; the first's deadline falls due. Its
    command is refused (the log has that number already): it backs off instead of firing again
    at once, and once woken, reads the game again and fires on what the database holds."""
    clock = Clock()
    storage, service, runner, live = await timed_game(database, clock)
    other = await Storage.open(database)
    fires = 0
    apply = service.apply

    async def counted(*args, **kwargs):
        nonlocal fires
        if kwargs.get("source") == "timer":
            fires += 1
        return await apply(*args, **kwargs)

    service.apply = counted  # type: ignore[method-assign]
    try:
        elsewhere = GameService(other, Config(database=database, timers=TIMERS), clock=clock)
        (theirs,) = await elsewhere.restore()
        await elsewhere.apply(theirs.id, Nominate("a2", "a3"), source="player")
        with caplog.at_level(logging.INFO):
            clock.now += 601
            runner.arm(live)
            await until(lambda: runner.failures >= 1 or fires >= 50, 30.0, "the timer never fired")
            assert (fires, runner.failures, runner.fired) == (1, 1, [])  # no spin: one try
            assert sum("time is up" in r.getMessage() for r in caplog.records) == 1
            assert any(
                "another process on the same database" in r.getMessage() for r in caplog.records
            )
            runner.wake_all()  # what the database's return, or a change of the game, does
            await until(lambda: runner.fired, 30.0, "the timer never fired again")
        rows = await storage.commands(live.id)
        assert [(r.command["verb"], r.source) for r in rows][-2:] == [
            ("nominate", "player"),
            ("voting", "timer"),
        ]
        assert live.record.command_count == len(rows)
    finally:
        await runner.close()
        await other.close()
        await storage.close()


async def test_a_database_that_takes_the_probe_and_refuses_the_rest_is_probed_ever_less_often():
    """A flapping database (each recovery followed at once by a failure) makes the probe wait
    twice as long each time: the loops are woken ever less often, never in a spin."""
    health = Health(probe_every=1.0)
    health.watching = True
    woken = []
    health.on_back(lambda: woken.append(health.interval))
    error = OSError("disk full")
    for _ in range(8):
        health.failed(error)
        health.ok()
    health.close()
    assert woken == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]
    assert health.outages == 8


async def test_a_transcript_due_in_an_outage_is_begun_as_soon_as_the_database_is_back(
    database, monkeypatch
):
    """A game's transcript falls due while the database refuses to begin it: the keeper, which
    would sleep an hour (it used to sleep until its next look, up to an hour), begins it once
    the database is back."""
    monkeypatch.setattr(cogs.season, "RETRY", HOUR)
    monkeypatch.setattr(cogs.season, "LOOK_AGAIN", HOUR)
    async with bot_table(players=8, database=database) as table:
        quick_edits(table)
        storage = table.bot.storage
        storage.health.probe = None  # the test says when the database is back
        begin = storage.begin_transcript
        refused = asyncio.Event()
        full = True

        async def refusing(*args, **kwargs):
            if full:
                error = sqlite3.OperationalError("database or disk is full")
                storage.health.failed(error)  # what the storage tells of a failed write
                refused.set()
                raise error
            return await begin(*args, **kwargs)

        monkeypatch.setattr(storage, "begin_transcript", refusing)
        game_id, _ = await play_and_end(table)
        await asyncio.wait_for(refused.wait(), 60.0)
        assert (await storage.transcript(game_id) or {}).get("state") == "due"
        full = False
        storage.health.ok()  # a write succeeded: what waits is woken
        await transcript_state(table, game_id, "done", timeout=60.0)


async def test_a_postgresql_ownership_is_taken_again_when_the_server_comes_back(
    own_server, monkeypatch
):
    """The server restarts: the connection holding the advisory lock is gone, and with it the
    lock; it is made again and the lock taken again, so a second process is still refused."""
    monkeypatch.setattr(ownership, "KEEP_SECONDS", 0.05)
    monkeypatch.setattr(ownership, "HELD_GRACE", 0.0)
    url = own_server.new_url()
    owned = await ownership.take(url, "db", None, None)
    assert isinstance(owned, ownership.ServerOwnership)
    first = owned._connection
    try:
        await asyncio.to_thread(own_server.crash)
        await asyncio.to_thread(own_server.resume)
        await until(
            lambda: owned.held and owned._connection is not first, 60.0, "never taken again"
        )
        with pytest.raises(ownership.Held, match="in use by another bot process"):
            await ownership.take(url, "db", None, None)
    finally:
        await owned.release()


class Refusing:
    """One of the storage's methods refused as a full disk refuses a write, until :meth:`end`
    (the test says when the database is back: no probe)."""

    def __init__(self, storage: Storage, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
        self.storage = storage
        self.refused = asyncio.Event()
        self.refusals = 0
        self.full = True
        storage.health.probe = None
        write = getattr(storage, name)

        async def refusing(*args, **kwargs):
            if not self.full:
                return await write(*args, **kwargs)
            self.refusals += 1
            error = sqlite3.OperationalError("database or disk is full")
            storage.health.failed(error)  # what the storage tells of a failed write
            self.refused.set()
            raise error

        monkeypatch.setattr(storage, name, refusing)

    def end(self) -> None:
        """The database takes writes again: a write succeeded."""
        self.full = False
        self.storage.health.ok()


NOW = 1_800_000_000.0
QUIET = Timers(discussion=0, voting=0, night=0, execution=0, reminders=())


async def test_a_leave_strike_due_in_an_outage_strikes_as_soon_as_the_database_is_back(
    database, hour_long_backoffs, monkeypatch
):
    now = [NOW]
    config = Config(timers=QUIET)
    async with bot_table(
        players=8, config=config, clock=lambda: now[0], database=database
    ) as table:
        quick_edits(table)
        await table.open_lobby()
        await run(table, "host", "host setup", {"cities": "Верона", "leave_strike": "10м"})
        started = await table.slash("host", "host start")
        await started.wait_original(60.0)
        await table.drain()
        leaver = next(p for p in table.game.players if table.game.status_of(p) is Status.CITIZEN)
        await run(table, int(leaver), "mafia leave")
        await table.drain()
        outage = Refusing(table.bot.storage, monkeypatch, "append_command")
        now[0] += 601  # the strike falls due while the database refuses it
        table.bot.get_cog("HostCog").strikes.arm(table.live())
        await asyncio.wait_for(outage.refused.wait(), 60.0)
        assert table.game.is_alive(leaver) and table.bot.storage.health.down
        outage.end()
        # the strike's loop sleeps for an hour: only the database's return wakes it
        await until(lambda: not table.game.is_alive(leaver), 60.0, "the strike waited")
        assert outage.refusals == 1  # tried once, woken once: no retry in between
        assert table.game.deaths[-1].cause.value == "procurator"
        commands = await table.bot.storage.commands(table.live().id)
        assert commands[-1].command == {"by": "host", "verb": "kill", "target": leaver}


async def test_a_scheduled_game_due_in_an_outage_opens_as_soon_as_the_database_is_back(
    database, hour_long_backoffs, monkeypatch
):
    now = [NOW]
    async with bot_table(players=8, clock=lambda: now[0], database=database) as table:
        quick_edits(table)
        await run(table, "host", "mafia schedule", {"in": "1ч", "title": "Пятничная"})
        await table.drain()
        outage = Refusing(table.bot.storage, monkeypatch, "create_game")
        cog = table.bot.get_cog("ScheduleCog")
        now[0] += 3601  # its time comes while the database refuses the lobby
        cog.wake()
        await asyncio.wait_for(outage.refused.wait(), 60.0)
        assert table.bot.service.games() == [] and cog.handled == 0
        outage.end()
        await until(lambda: cog.handled == 1, 60.0, "the scheduled game waited")
        assert outage.refusals == 1
        (live,) = table.bot.service.games()
        assert live.record.host_id == table.host.user.id and live.record.lobby["scheduled"]
        assert await table.bot.storage.schedules("scheduled") == []


#: where an event is waited for with a timeout, yet nothing falls due: the voice recorder's poll
#: of its packets, and the breaker's hold of a guild, which Discord's answers end, not the database
NOT_DUE = {"bot/voice/recorder.py", "bot/outbox/breaker.py", "bot/storage/health.py"}


def test_every_loop_waiting_for_something_due_sleeps_where_the_database_wakes_it():
    """A loop that sleeps with ``asyncio.wait_for(event.wait(), timeout)`` of its own is not woken
    when the database comes back: what fell due meanwhile waits out its timeout. Every such
    sleep goes through ``Health.sleep`` (or ``GameTasks._sleep``)."""
    root = Path(__file__).resolve().parents[2]
    own: list[str] = []
    for folder in ("bot", "cogs"):
        for path in sorted((root / folder).rglob("*.py")):
            name = path.relative_to(root).as_posix()
            if name in NOT_DUE:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "wait_for"
                    and node.args
                    and isinstance(node.args[0], ast.Call)
                    and isinstance(node.args[0].func, ast.Attribute)
                    and node.args[0].func.attr == "wait"
                ):
                    own.append(f"{name}:{node.lineno}")
    assert own == [], f"sleeps the database's return does not end: {own}"
