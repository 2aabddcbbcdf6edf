"""The glue between the game service and Discord: rendering, buttons, reminders.

Buttons and select menus carry persistent custom ids (``mafia:<action>:<game>:...``),
parsed by discord.py's ``DynamicItem`` router (:mod:`cogs.components`, registered
here), so they keep working after a restart. Each cog declares the handler of its
actions in its hooks (:class:`bot.wiring.Hooks`); this one declares the renderer, the
votes' observer, the reminders and the commands' mentions in texts.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from discord.ext import commands

from bot.i18n import phrase
from bot.outbox.intents import Send
from bot.service import LiveGame
from bot.storage import OutboxItem
from bot.wiring import Hooks
from cogs.components import ITEMS
from cogs.mentions import command, command_field, set_command_ids
from cogs.render import deadline_text, render, with_ping
from cogs.votes import observe, restorer
from rules import Stage

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

log = logging.getLogger(__name__)


def reminder_items(live: LiveGame, offset: int) -> list[OutboxItem]:
    """ "N minutes left" in every living city's channel, pinging its living role, with the deadline
    as a Discord timestamp."""
    game = live.game
    if game is None or not live.record.channels:
        return []
    minutes = max(1, round(offset / 60))
    log_channel = live.record.channels.get("log")
    if game.stage is Stage.EXECUTION:  # the host is awaited: remind him alone
        if log_channel is None:
            return []
        content = phrase(
            live,
            "log.execution_soon",
            minutes=minutes,
            deadline=deadline_text(live),
            execute=command(live.language, "host execute"),
        )
        return [Send({"content": content, "allowed_mentions": {"parse": []}}, log_channel).item()]
    text = phrase(
        live, f"reminder.{game.stage.value}", minutes=minutes, deadline=deadline_text(live)
    )
    return [
        Send(with_ping(live, city, {"content": text}), ids["text"]).item()
        for city, ids in live.record.channels.get("cities", {}).items()
        if game.alive(city)
    ]


class GameCog(commands.Cog):
    """Routes the persistent components; declares the renderer and what goes with it."""

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot

    def hooks(self) -> Hooks:
        """The renderer, the votes' observer and its restorer, the reminders, and the
        commands' mentions in texts (their ids once synced)."""
        return Hooks(
            render=render,
            observers=[observe],
            restorers=[restorer(self.bot.storage)],
            render_reminder=reminder_items,
            text_fallback=command_field,
            command_ids=[set_command_ids],
        )

    async def cog_load(self) -> None:
        """Route the ``mafia:`` components through discord.py's dynamic items."""
        self.bot.add_dynamic_items(*ITEMS)

    async def cog_unload(self) -> None:
        """Stop routing them."""
        self.bot.remove_dynamic_items(*ITEMS)


async def setup(bot: ProkuratorBot) -> None:
    """Load the cog."""
    await bot.add_cog(GameCog(bot))
