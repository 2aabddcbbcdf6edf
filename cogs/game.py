"""The glue between the game service and Discord: rendering, buttons, reminders.

Buttons and select menus carry persistent custom ids (``mafia:<action>:<game>:...``),
parsed by discord.py's ``DynamicItem`` router (:mod:`cogs.components`, registered
here), so they keep working after a restart. Other cogs register a handler per
action.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import discord
from discord.ext import commands

from bot.i18n import phrase
from bot.service import LiveGame
from bot.storage import OutboxItem
from cogs.components import ITEMS
from cogs.mentions import command
from cogs.render import deadline_text, render, with_ping
from cogs.votes import observe, restorer
from rules import Stage

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

log = logging.getLogger(__name__)

ComponentHandler = Callable[[discord.Interaction, list[str]], Awaitable[None]]


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
        return [
            OutboxItem(
                "send",
                {"channel_id": log_channel},
                {
                    "content": phrase(
                        live,
                        "log.execution_soon",
                        minutes=minutes,
                        deadline=deadline_text(live),
                        execute=command(live.language, "host execute"),
                    ),
                    "allowed_mentions": {"parse": []},
                },
            )
        ]
    text = phrase(
        live, f"reminder.{game.stage.value}", minutes=minutes, deadline=deadline_text(live)
    )
    return [
        OutboxItem("send", {"channel_id": ids["text"]}, with_ping(live, city, {"content": text}))
        for city, ids in live.record.channels.get("cities", {}).items()
        if game.alive(city)
    ]


class GameCog(commands.Cog):
    """Installs the renderer and the persistent components; holds their handlers."""

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot
        self.handlers: dict[str, ComponentHandler] = {}
        bot.service.render = render
        bot.service.observers.append(observe)
        bot.service.restorers.append(restorer(bot.storage))
        bot.timers.render_reminder = reminder_items

    async def cog_load(self) -> None:
        """Route the ``mafia:`` components through discord.py's dynamic items."""
        self.bot.add_dynamic_items(*ITEMS)

    async def cog_unload(self) -> None:
        """Stop routing them."""
        self.bot.remove_dynamic_items(*ITEMS)

    def register(self, action: str, handler: ComponentHandler) -> None:
        """Handle components whose custom id is ``mafia:<action>:...``; the handler gets the
        id's fields (:data:`cogs.components.FORMS`)."""
        self.handlers[action] = handler


async def setup(bot: ProkuratorBot) -> None:
    """Load the cog."""
    await bot.add_cog(GameCog(bot))
