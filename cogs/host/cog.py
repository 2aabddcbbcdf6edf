"""The Procurator's cog: the parts of ``/host`` joined, and what it hooks into."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from bot.footprint import (
    Reconciler,
)
from bot.footprint.room import RoomWatch
from bot.wiring import Hooks
from cogs.idle import IdleWatch

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

from cogs.host.common import (
    HOST,
    START_WAIT,
    TOKEN_LIFETIME,
)
from cogs.host.handover import HostHandover, HostlessLobbies
from cogs.host.play import (
    HostPlay,
)
from cogs.host.settings import (
    HostSettings,
)
from cogs.host.strikes import (
    LeaveStrikes,
)


class HostCog(HostSettings, HostPlay, HostHandover):
    """The Procurator's commands."""

    host = HOST

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot
        self._waiters: dict[int, asyncio.Future[str]] = {}
        """The /host start waiting for each game's provisioning, to answer it."""
        self.start_wait = START_WAIT
        self.token_lifetime = TOKEN_LIFETIME
        self.strikes = LeaveStrikes(bot)
        self.hostless = HostlessLobbies(bot)
        self.footprint = Reconciler(bot)
        """Keeps each running game's roles and channels what they should be."""
        self.room = RoomWatch(bot, self.footprint)
        """Keeps what the footprint makes mid-game fail-closed at Discord's caps."""
        self.idle_watch = IdleWatch(bot)

    def hooks(self) -> Hooks:
        """In this order: the start's provisioning (the outbox's idle lanes and refusals), the
        confirm and cancel buttons, the leave strikes, the footprint's reconciler, the idle
        watch."""
        return Hooks.joined(
            [
                Hooks(
                    idle_hooks=[self._provision_idle],
                    failure_hooks=[self._provision_failed],
                    components={"confirm": self._confirmed, "cancel": self._cancelled},
                    after_commit=[self.strikes.arm, self.hostless.arm],
                    restorers=[self.strikes.restore, self.hostless.restore],
                ),
                self.footprint.hooks(),
                self.room.hooks(),
                self.idle_watch.hooks(),
            ]
        )

    async def cog_unload(self) -> None:
        """Stop listening to the outbox."""
        self.room.close()
        if self._provision_idle in self.bot.outbox.idle_hooks:
            self.bot.outbox.idle_hooks.remove(self._provision_idle)
        if self._provision_failed in self.bot.outbox.failure_hooks:
            self.bot.outbox.failure_hooks.remove(self._provision_failed)
        for hook in (self.strikes.arm, self.hostless.arm):
            if hook in self.bot.service.after_commit:
                self.bot.service.after_commit.remove(hook)
        for restorer in (self.strikes.restore, self.hostless.restore):
            if restorer in self.bot.service.restorers:
                self.bot.service.restorers.remove(restorer)
        await self.strikes.close()
        await self.hostless.close()
        await self.footprint.close()
        await self.idle_watch.detach()
