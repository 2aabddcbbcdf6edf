"""Phase timers: when a stage's deadline passes, do what the host would; remind before it.

The deadline is stored with the game, so a restart re-arms it (a deadline
that passed while the bot was down fires at once). Each game has one task
that sleeps until its next reminder or deadline and is woken whenever the
game's record changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from bot.service import Clock, GameService, LiveGame, NoGame, command_for_deadline
from bot.storage import OutboxItem
from rules import RuleError

log = logging.getLogger(__name__)

ReminderRenderer = Callable[[LiveGame, int], list[OutboxItem]]


class PhaseTimers:
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

    def arm(self, live: LiveGame) -> None:
        """(Re)consider a game's deadline; called after every commit."""
        if self._closed:
            return
        game_id = live.id
        self._wake.setdefault(game_id, asyncio.Event()).set()
        task = self._tasks.get(game_id)
        if (task is None or task.done()) and live.record.deadline is not None:
            self._tasks[game_id] = asyncio.create_task(self._run(game_id), name=f"timer-{game_id}")

    def arm_all(self) -> int:
        """Arm every loaded game (after a restart); returns how many have a deadline."""
        for live in self.service.games():
            self.arm(live)
        return sum(1 for task in self._tasks.values() if not task.done())

    async def close(self) -> None:
        """Stop every timer task (deadlines stay stored)."""
        self._closed = True
        for task in self._tasks.values():
            task.cancel()
        for task in self._tasks.values():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def _due_reminders(self, live: LiveGame) -> list[int]:
        record = live.record
        if record.deadline is None:
            return []
        duration = self.service.stage_duration(live)
        return [
            offset for offset in self.reminders
            if offset not in record.reminders_sent and offset < duration
        ]

    async def _run(self, game_id: int) -> None:
        wake = self._wake.setdefault(game_id, asyncio.Event())
        while not self._closed:
            wake.clear()
            try:
                live = self.service.live(game_id)
            except NoGame:
                return
            deadline = live.record.deadline
            if deadline is None:
                return
            now = self.clock()
            if now >= deadline:
                await self._fire(live)
                continue
            reminders = self._due_reminders(live)
            due = [offset for offset in reminders if deadline - offset <= now]
            if due:
                offset = min(due)
                items = self.render_reminder(live, offset)
                # an older reminder that came due at the same time is not worth a message
                for stale in due:
                    if await self.service.mark_reminder(game_id, stale, items if stale == offset else []):
                        log.info("game %s: reminder %s s before %s", game_id, stale, live.record.deadline_stage)
                continue
            upcoming = [deadline - offset for offset in reminders] + [deadline]
            delay = max(0.0, min(upcoming) - now)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), timeout=delay)

    async def _fire(self, live: LiveGame) -> None:
        record = live.record
        stage_key = record.deadline_stage
        game = live.game
        if game is None or stage_key != live.stage_key():
            record.deadline = None
            return
        command = command_for_deadline(game.stage)
        if command is None:
            record.deadline = None
            return
        log.info("game %s: time is up for %s: %s", live.id, stage_key, command)
        try:
            applied = await self.service.apply(live.id, command, source="timer")
        except (RuleError, NoGame) as error:
            log.warning("game %s: the timer's %s was refused: %s", live.id, command, error)
            record.deadline = None
            return
        self.fired.append((live.id, stage_key or ""))
        if applied.deferred:
            # the day's end waits for a last word; the timer is done with this stage
            record.deadline = None
