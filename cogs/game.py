"""The glue between the game service and Discord: rendering, buttons, reminders.

Buttons and select menus carry persistent custom ids (``mafia:<action>:<game>:...``)
and are dispatched here from ``on_interaction``, so they keep working after a
restart. Other cogs register a handler per action.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import discord
from discord.ext import commands

from bot.service import LiveGame
from bot.storage import OutboxItem
from cogs.common import phrase
from cogs.render import deadline_text, render, with_ping
from cogs.votes import observe, restorer

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

log = logging.getLogger(__name__)

ComponentHandler = Callable[[discord.Interaction, list[str]], Awaitable[None]]
PREFIX = "mafia"


def reminder_items(live: LiveGame, offset: int) -> list[OutboxItem]:
    """"N minutes left" in every living city's channel, pinging its living role, with the deadline
    as a Discord timestamp."""
    game = live.game
    if game is None or not live.record.channels:
        return []
    minutes = max(1, round(offset / 60))
    text = phrase(live, f"reminder.{game.stage.value}", minutes=minutes, deadline=deadline_text(live))
    return [
        OutboxItem("send", {"channel_id": ids["text"]}, with_ping(live, city, {"content": text}))
        for city, ids in live.record.channels.get("cities", {}).items()
        if game.alive(city)
    ]


class GameCog(commands.Cog):
    """Installs the renderer and dispatches persistent components."""

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot
        self.handlers: dict[str, ComponentHandler] = {}
        bot.service.render = render
        bot.service.observers.append(observe)
        bot.service.restorers.append(restorer(bot.storage))
        bot.timers.render_reminder = reminder_items

    def register(self, action: str, handler: ComponentHandler) -> None:
        """Handle components whose custom id is ``mafia:<action>:...``."""
        self.handlers[action] = handler

    @commands.Cog.listener()
    async def on_interaction(self, interaction: discord.Interaction) -> None:
        if interaction.type is not discord.InteractionType.component:
            return
        custom_id = str((interaction.data or {}).get("custom_id", ""))
        parts = custom_id.split(":")
        if len(parts) < 3 or parts[0] != PREFIX:
            return
        handler = self.handlers.get(parts[1])
        if handler is None:
            log.warning("no handler for component %r", custom_id)
            return
        try:
            await handler(interaction, parts[2:])
        except Exception as error:  # the same answers as for slash commands
            await self.bot.handle_error(interaction, error)


async def setup(bot: ProkuratorBot) -> None:
    """Load the cog."""
    await bot.add_cog(GameCog(bot))
