"""What a command meets before it is applied: its interaction acknowledged first where
Discord needs it, the stage its sender saw, and the cases :meth:`bot.service.GameService.apply`
answers without applying it (see :mod:`bot.service`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator

from bot.service.live import (
    Answer,
    Applied,
    Expired,
    GameBroken,
    JustBegan,
    LiveGame,
    MovedOn,
    NoGame,
    Seen,
    command_for_deadline,
)
from bot.service.loading import GameLoading
from bot.storage import GameState
from rules import Command, EndDay

log = logging.getLogger("bot.service")


class GameAdmission(GameLoading):
    """The game service's checks of a command before its commit."""

    def _not_applied(
        self,
        live: LiveGame,
        command: Command,
        source: str,
        interaction_id: int | None,
        seen: Seen | None,
    ) -> Applied | None:
        """What :meth:`apply` answers for a command it does not apply (delivered again,
        repeating a standing choice, a day's end waiting for a hold), or None: apply it.

        Raises:
            GameBroken: the game is broken.
            NoGame: the game is not running.
            Held: the game stands still (the bot lacks a power); asked of every command.
            MovedOn: see :meth:`apply`.
            RuleError: the rules refuse a day's end that would wait.
        """
        game_id = live.id
        if live.broken is not None:
            raise GameBroken()
        if live.game is None or live.record.state != GameState.RUNNING:
            raise NoGame(game_id)
        if self._seen(interaction_id):
            log.info(
                "game %s: interaction %s delivered again; applied once", game_id, interaction_id
            )
            return Applied([], duplicate=True)
        held = self.standstill(live, command)
        if held is not None:
            log.info("game %s: %s refused: the game stands still (%s)", game_id, command, held.key)
            raise held
        self._check_seen(live, seen, command)
        if source == "player" and live.game.repeats(command):
            log.info("game %s: %s repeats a standing choice; not applied again", game_id, command)
            return Applied([], repeated=True)
        if (
            source == "timer"
            and live.record.lobby.get("paused")
            and command == command_for_deadline(live.game.stage)
        ):
            # the host paused while this deadline waited for the lock: the clock stands
            log.info("game %s: the timer's %s came after the pause; not applied", game_id, command)
            raise MovedOn()
        if isinstance(command, EndDay) and live.holds:
            live.game.check(command)
            live.deferred.append((command, source, live.stage_key()))
            log.info("game %s: the day's end waits for %s", game_id, sorted(live.holds))
            return Applied([], deferred=True)
        return None

    @contextlib.asynccontextmanager
    async def _locked(
        self, game_id: int, answer: Answer | None, interaction_id: int | None
    ) -> AsyncIterator[None]:
        """Hold the game's lock, the interaction acknowledged first only where its one answer
        would not be in time (:mod:`bot.service.answering`): when too little of Discord's 3 s
        is left before the commit can begin, already or while it waits for the lock (the wait
        is cut short then: the acknowledgement goes out, and the wait goes on). A command that
        gets the lock in time is answered after its commit with one call.

        Raises:
            Expired: Discord refused the acknowledgement (the lock is not held).
        """
        lock = self.lock(game_id)
        if answer is not None:
            self.answer_time.heard(answer.sent_at, self.wall())
        await self._answer_first(answer, interaction_id)
        if answer is not None and lock.locked() and self._answers_later(answer, interaction_id):
            budget = self.answer_time.left(answer.sent_at, self.wall())
            try:
                await asyncio.wait_for(lock.acquire(), max(budget, 0.0))
            except TimeoutError:
                await self._answer_first(answer, interaction_id, now=True)
                await lock.acquire()
        else:
            await lock.acquire()
        began: float | None = None
        try:
            await self._answer_first(answer, interaction_id)
            began = time.monotonic()
            yield
        finally:
            lock.release()
            if began is not None:  # (the acknowledgement's own call is not the command's cost)
                self.answer_time.took(time.monotonic() - began)

    def _answers_later(self, answer: Answer, interaction_id: int | None) -> bool:
        """Whether the interaction is still to be acknowledged (never one this process applied
        already: Discord delivered it twice; the first delivery was acknowledged, and a second
        acknowledgement is refused)."""
        return not answer.deferred and not self._seen(interaction_id)

    async def _answer_first(
        self, answer: Answer | None, interaction_id: int | None = None, *, now: bool = False
    ) -> None:
        """Acknowledge the interaction if one answer after the commit would not be in time (or
        ``now``).

        Raises:
            Expired: Discord refused the acknowledgement.
        """
        if answer is None or not self._answers_later(answer, interaction_id):
            return
        if not now and self.answer_time.left(answer.sent_at, self.wall()) > 0:
            return
        if not await answer.defer():
            raise Expired()

    def _check_seen(self, live: LiveGame, seen: Seen | None, command: Command) -> None:
        if seen is None:
            return
        current = live.stage_key()
        since = live.record.stage_since
        named = seen.stage is not None and seen.stage != current
        # in whole milliseconds, as snowflakes count: a command sent in the millisecond the
        # stage began is taken as sent after it
        earlier = (
            seen.at is not None and since is not None and int(seen.at * 1000) < int(since * 1000)
        )
        if named or earlier:
            log.info(
                "game %s: %s was meant for %s; the game is at %s: refused",
                live.id,
                command,
                seen.stage or f"the stage before {since}",
                current,
            )
            raise MovedOn()
        by_timer = since is not None and live.record.lobby.get("timer_began") == since
        if seen.stage is None and seen.at is not None and by_timer and current is not None:
            assert since is not None
            late = (int(seen.at * 1000) - int(since * 1000)) / 1000  # in whole ms, as above
            if late < seen.settle:
                log.info(
                    "game %s: %s sent %.3f s after the timer began %s: refused as unseen",
                    live.id,
                    command,
                    late,
                    current,
                )
                raise JustBegan(current, late)
