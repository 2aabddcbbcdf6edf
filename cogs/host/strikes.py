"""Players who left: struck out by the Procurator after ``timers.leave_strike``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from bot.i18n import mention, phrase
from bot.service import GameBroken, Held, LiveGame, MovedOn, NoGame
from bot.storage import GameState, OutboxItem
from bot.storage.health import Health
from bot.timers import HELD, Backoff, GameTasks
from cogs.lobby import log_items
from rules import (
    ProcuratorKill,
    RuleError,
)

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot


log = logging.getLogger(__name__)


class LeaveStrikes(GameTasks):
    """The Procurator's strike of players who left the game or the server (``leave_strike``):
    each game's pending strikes are stored in its record (``lobby.leaving``: player → when), so
    a restart re-arms them; one task per game sleeps until the earliest and is woken by every
    commit and by the database's return. A strike is a :class:`rules.ProcuratorKill` (the rules
    announce the status, as for any death); one no longer possible (he died meanwhile) is
    dropped; one that fails (the database) is tried again after a :class:`bot.timers.Backoff`."""

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._wake: dict[int, asyncio.Event] = {}
        self._closed = False

    @property
    def health(self) -> Health:
        return self.bot.storage.health

    @staticmethod
    def pending(live: LiveGame | None) -> dict[str, float]:
        """The game's strikes to come: player → unix time."""
        if (
            live is None
            or live.record.state != GameState.RUNNING
            or live.game is None
            or live.broken is not None
        ):
            return {}
        return {
            player: float(at)
            for player, at in live.record.lobby.get("leaving", {}).items()
            if at is not None
        }

    def arm(self, live: LiveGame) -> None:
        """(Re)consider a game's strikes; called after every commit."""
        if self._closed or not self.pending(live):
            return
        self._wake_game(live.id, start=True, name=f"strikes-{live.id}")

    async def restore(self, live: LiveGame) -> None:
        """A game loaded at start: arm what it had pending."""
        self.arm(live)

    async def _run(self, game_id: int) -> None:
        wake = self._wake.setdefault(game_id, asyncio.Event())
        backoff = Backoff(f"game {game_id}: the leave strike")
        while not self._closed:
            wake.clear()
            live = self.bot.service.find(game_id)
            due = self.pending(live)
            if live is None or not due:
                return
            player, at = min(due.items(), key=lambda row: row[1])
            delay = at - self.bot.clock()
            if delay <= 0:
                try:
                    await self._strike(live, player)
                except Held as held:  # the game stands still: woken by the commit that lets go
                    log.info("game %s: the strike of %s waits: %s", game_id, player, held.key)
                    delay = HELD
                except Exception as error:
                    delay = backoff.failed(error)
                else:
                    backoff.succeeded()
                    continue
            await self._sleep(wake, delay)

    async def _strike(self, live: LiveGame, player: str) -> None:
        def after(live: LiveGame, events: list[Any]) -> list[OutboxItem]:
            live.record.lobby.get("leaving", {}).pop(player, None)
            return log_items(live, phrase(live, "log.struck", player=mention(player)))

        try:
            await self.bot.service.apply(
                live.id, ProcuratorKill(player), source="timer", after=after
            )
            log.info("game %s: %s struck out after leaving", live.id, player)
        except (RuleError, NoGame, GameBroken, MovedOn) as error:
            log.info("game %s: no strike of %s (%s)", live.id, player, error)

            def forget(live: LiveGame) -> list[OutboxItem]:
                live.record.lobby.get("leaving", {}).pop(player, None)
                return []

            with contextlib.suppress(NoGame, GameBroken):
                await self.bot.service.update(live.id, forget)
