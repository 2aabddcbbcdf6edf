"""Phase timers: when a stage's deadline passes, do what the host would; remind before it.

The deadline is stored with the game, so a restart re-arms it (a deadline
that passed while the bot was down fires at once). Each game has one task
that sleeps until its next reminder or deadline and is woken whenever the
game's record changes.

The timer's command names the stage its deadline belongs to, and the service
checks it under the game's lock: a host who moved the game on a moment
earlier is not followed by a second move; and the stage a timer begins is
marked in the game's lobby (``timer_began``), so that a host's "next" sent
moments after it, before he could see that stage, is refused rather than
skipping it (``fairness.stage_settle``, :class:`bot.service.JustBegan`). A step that fails (a full disk, a
database error) is logged once per outage and tried again after a back-off (0.5 s doubling to
a minute, or sooner when the game's record changes, and at once when the database is back:
:class:`bot.storage.health.Health`): the task never dies, so a deadline passed while the disk
was full fires within seconds of there being room. A step that acted but changed nothing (its
command taken for a repeated one) backs off the same way: the task never spins.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable

from bot.errors import UserError
from bot.service import (
    Clock,
    GameBroken,
    GameService,
    LiveGame,
    MovedOn,
    NoGame,
    Seen,
    command_for_deadline,
    timer_mark,
)
from bot.storage import OutboxItem
from bot.storage.health import Health
from bot.storage.records import is_storage_failure
from rules import RuleError

log = logging.getLogger(__name__)

#: after a failed step, the first wait and the longest one (seconds)
BACKOFF_START = 0.5
BACKOFF_MAX = 60.0
#: how long a held game's timer sleeps before it looks again unasked (seconds)
HELD = 600.0

ReminderRenderer = Callable[[LiveGame, int], list[OutboxItem]]


class Backoff:
    """A due-loop's wait after a step that failed: :data:`BACKOFF_START` doubling up to
    :data:`BACKOFF_MAX`, none after a step that succeeds. The failure is logged once until a step
    succeeds, however many tries an outage takes (its traceback unless the database failed: the
    database's own line says that). The loop sleeps the wait in :meth:`Health.sleep`, so the
    database's return ends it at once."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.delay = 0.0
        self.failures = 0
        self._logged = False

    def failed(self, error: BaseException) -> float:
        """A step failed: how long to wait before the next (logged the first time only)."""
        self.failures += 1
        self.delay = min(self.delay * 2, BACKOFF_MAX) if self.delay else BACKOFF_START
        if self._logged:
            log.debug("%s could not act (%r) again", self.what, error)
            return self.delay
        self._logged = True
        log.warning(
            "%s could not act (%r); trying again in %.1f s, at once when the database is back "
            "(logged once until it acts)",
            self.what,
            error,
            self.delay,
            exc_info=None if is_storage_failure(error) or isinstance(error, UserError) else error,
        )
        return self.delay

    def succeeded(self) -> None:
        """A step succeeded: the next failure waits the shortest and is logged again."""
        if self._logged:
            log.info("%s acts again", self.what)
        self.delay, self._logged = 0.0, False


class GameTasks(ABC):
    """One sleeping task per game, woken by every change of its record and by the database's
    return (it sleeps in :meth:`Health.sleep`), all stopped by :meth:`close` (the phase timers;
    the host's strikes, ``cogs.host.LeaveStrikes``; the hostless lobbies). The subclass's
    constructor makes ``_tasks``, ``_wake`` and ``_closed``; its ``_run`` is the game's task,
    and ``health`` the database's."""

    _tasks: dict[int, asyncio.Task[None]]
    _wake: dict[int, asyncio.Event]
    _closed: bool

    @property
    @abstractmethod
    def health(self) -> Health:
        """The database's health, whose return wakes every sleeping task."""

    async def _sleep(self, wake: asyncio.Event, delay: float) -> None:
        """Sleep ``delay`` seconds, less if the game changes or the database comes back."""
        await self.health.sleep(wake, delay)

    def _wake_game(self, game_id: int, *, start: bool, name: str) -> None:
        """Wake the game's task; with ``start``, start one (named ``name``) if none runs."""
        self._wake.setdefault(game_id, asyncio.Event()).set()
        task = self._tasks.get(game_id)
        if start and (task is None or task.done()):
            self._tasks[game_id] = asyncio.create_task(self._run(game_id), name=name)

    @abstractmethod
    async def _run(self, game_id: int) -> None:
        """The game's task: sleep until its next moment or a wake-up, act, until nothing is left."""

    async def close(self) -> None:
        """Stop every task (what they wait for stays stored: deadlines, strikes)."""
        self._closed = True
        for task in self._tasks.values():
            task.cancel()
        for task in self._tasks.values():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


class NoProgress(Exception):
    """A timer's step acted, yet its game's deadline, reminders and commands are as before (the
    command was taken for a repeated one, say): it backs off rather than spin."""


def _progress(live: LiveGame | None) -> tuple[object, ...]:
    """What a timer's step changes in a game when it acts."""
    if live is None:
        return ()
    record = live.record
    return (
        record.deadline,
        record.deadline_stage,
        record.command_count,
        tuple(record.reminders_sent),
        record.state,
    )


class PhaseTimers(GameTasks):
    """One sleeping task per game with a deadline."""

    def __init__(
        self,
        service: GameService,
        *,
        reminders: tuple[int, ...],
        render_reminder: ReminderRenderer | None = None,
        clock: Clock = time.time,
    ) -> None:
        self.service = service
        self.reminders = reminders
        self.render_reminder: ReminderRenderer = render_reminder or (lambda live, offset: [])
        self.clock = clock
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._wake: dict[int, asyncio.Event] = {}
        self._closed = False
        self.fired: list[tuple[int, str]] = []
        self.failures = 0
        """Steps that failed (each followed by a back-off)."""
        self._failing: dict[int, int] = {}
        """Games whose last step failed → the database's outage count then (logged once)."""
        self.holds: list[Callable[[LiveGame], bool]] = []
        """Each says whether a game stands still (the bot lacks a power: :mod:`bot.powers`): its
        deadline waits, and fires once nothing holds it and the game is armed again."""

    @property
    def health(self) -> Health:
        return self.service.storage.health

    def arm(self, live: LiveGame) -> None:
        """(Re)consider a game's deadline; called after every commit."""
        if self._closed:
            return
        start = live.record.deadline is not None
        self._wake_game(live.id, start=start, name=f"timer-{live.id}")

    def arm_all(self) -> int:
        """Arm every loaded game (after a restart); returns how many have a deadline."""
        for live in self.service.games():
            self.arm(live)
        return sum(1 for task in self._tasks.values() if not task.done())

    def _due_reminders(self, live: LiveGame) -> list[int]:
        record = live.record
        if record.deadline is None:
            return []
        duration = self.service.stage_duration(live)
        return [
            offset
            for offset in self.reminders
            if offset not in record.reminders_sent and offset < duration
        ]

    def wake_all(self) -> None:
        """Wake every game's task (what fell due is tried at once)."""
        for wake in self._wake.values():
            wake.set()

    async def _run(self, game_id: int) -> None:
        wake = self._wake.setdefault(game_id, asyncio.Event())
        backoff = 0.0
        while not self._closed:
            wake.clear()
            try:
                live = self.service.live(game_id)
            except NoGame:
                return
            if live.broken is not None or live.record.deadline is None:
                return
            delay: float | None
            before = _progress(live)
            try:
                delay = await self._step(live)
                if delay is None and _progress(self.service.find(game_id)) == before:
                    raise NoProgress()  # acted, yet nothing changed: never again at once
            except Exception as error:
                backoff = min(backoff * 2, BACKOFF_MAX) if backoff else BACKOFF_START
                self._failed(game_id, error, backoff)
                delay = backoff
            else:
                backoff = 0.0
                if self._failing.pop(game_id, None) is not None:
                    log.info("game %s: the timer acts again", game_id)
            if delay is None:
                continue  # it acted: look at the game again at once
            await self._sleep(wake, delay)

    def _failed(self, game_id: int, error: BaseException, backoff: float) -> None:
        """Count a failed step; log it once per outage (of the database, or of this game)."""
        self.failures += 1
        outage = self.service.storage.health.outages
        if self._failing.get(game_id) == outage:
            log.debug("game %s: the timer could not act (%r) again", game_id, error)
            return
        self._failing[game_id] = outage
        log.warning(
            "game %s: the timer could not act (%r); trying again in %.1f s, at once when the "
            "database is back (logged once until it acts)",
            game_id,
            error,
            backoff,
        )

    async def _step(self, live: LiveGame) -> float | None:
        """Fire the deadline or a due reminder (None: done, look again), else how long to sleep."""
        record = live.record
        deadline, stage = record.deadline, record.deadline_stage
        assert deadline is not None
        now = self.clock()
        if any(hold(live) for hold in self.holds):
            return HELD  # armed again when it is let go
        if now >= deadline:
            await self._fire(live, deadline, stage)
            return None
        reminders = self._due_reminders(live)
        due = [offset for offset in reminders if deadline - offset <= now]
        if due:
            offset = min(due)
            items = self.render_reminder(live, offset)
            # an older reminder that came due at the same time is not worth a message
            for stale in due:
                if await self.service.mark_reminder(
                    live.id, stale, items if stale == offset else [], stage=stage, deadline=deadline
                ):
                    log.info("game %s: reminder %s s before %s", live.id, stale, stage)
            return None
        upcoming = [deadline - offset for offset in reminders] + [deadline]
        return max(0.0, min(upcoming) - now)

    def _forget(self, game_id: int, deadline: float, stage: str | None) -> None:
        """Drop a deadline the timer is done with, unless the game has a newer one by now."""
        live = self.service.find(game_id)
        if live is not None and (live.record.deadline, live.record.deadline_stage) == (
            deadline,
            stage,
        ):
            live.record.deadline = None

    async def _fire(self, live: LiveGame, deadline: float, stage: str | None) -> None:
        game = live.game
        command = command_for_deadline(game.stage) if game is not None else None
        if command is None or stage is None:
            self._forget(live.id, deadline, stage)
            return
        log.info("game %s: time is up for %s: %s", live.id, stage, command)
        try:
            applied = await self.service.apply(
                live.id,
                command,
                source="timer",
                seen=Seen(stage=stage),
                after=timer_mark(live.record.stage_since),
            )
        except MovedOn:
            log.info("game %s: %s was over before its deadline fired", live.id, stage)
            self._forget(live.id, deadline, stage)  # the stage that followed has its own deadline
            return
        except (RuleError, NoGame, GameBroken) as error:
            log.warning("game %s: the timer's %s was refused: %s", live.id, command, error)
            self._forget(live.id, deadline, stage)
            return
        self.fired.append((live.id, stage))
        if applied.deferred:
            # the day's end waits for a last word; the timer is done with this stage
            self._forget(live.id, deadline, stage)
