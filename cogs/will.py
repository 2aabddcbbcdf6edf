"""``/will``: a written will, a house rule the host turns on (``/host setup will:N``, off by
default: the rules have no such thing). A living player writes up to ``N`` characters while the
game runs, and may rewrite, read or erase it; when he dies (any death), the bot publishes it in
his city's channel after the death itself. Until then nobody but him sees it: it is stored in the
game's record (``lobby.wills``), which nothing shows.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.errors import UserError
from bot.i18n import key_str, mention, phrase
from bot.service import LiveGame
from bot.storage import GameState, OutboxItem
from cogs.common import InteractionAnswer, answer, player_of, running_game, seen_by

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

log = logging.getLogger(__name__)

#: the longest will a host may allow, in characters
LONGEST = 1000


def will_limit(live: LiveGame) -> int:
    """The longest will of this game, in characters (0: wills are off)."""
    return int(live.record.lobby.get("will") or 0)


def will_of(live: LiveGame, player: str) -> str | None:
    """What ``player`` wrote, if wills are on and he wrote one."""
    if not will_limit(live):
        return None
    text = live.record.lobby.get("wills", {}).get(player)
    return str(text) if text else None


def will_lines(live: LiveGame, player: str) -> list[str]:
    """A dead player's will as his city reads it (nothing if he left none)."""
    text = will_of(live, player)
    if text is None:
        return []
    quoted = "\n".join(f"> {line}" if line.strip() else ">" for line in text.splitlines())
    return [f"{phrase(live, 'will.published', player=mention(player))}\n{quoted}"]


class WillCog(commands.Cog):
    """``/will write|show|erase``."""

    will = app_commands.Group(
        name=key_str("cmd.will.name"),
        description=key_str("cmd.will.description"),
        guild_only=True,
    )

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot

    async def _writer(self, interaction: discord.Interaction) -> tuple[LiveGame, str]:
        """The game and the living player who may write a will in it.

        Raises:
            UserError: no running game, wills off, not a player, dead.
        """
        live = await running_game(self.bot, interaction)
        if not will_limit(live):
            raise UserError("error.will_off")
        player = player_of(live, interaction)
        assert live.game is not None
        if not live.game.is_alive(player):
            raise UserError("error.will_dead")
        return live, player

    async def _store(
        self, interaction: discord.Interaction, live: LiveGame, player: str, text: str | None
    ) -> bool:
        def change(live: LiveGame) -> list[OutboxItem]:
            if (
                live.game is None
                or live.record.state != GameState.RUNNING
                or not live.game.is_alive(player)
            ):
                raise UserError("error.will_dead")  # died (or the game ended) while this waited
            wills = live.record.lobby.setdefault("wills", {})
            if text is None:
                wills.pop(player, None)
            else:
                wills[player] = text
            return []

        return await self.bot.service.update(
            live.id, change, interaction_id=interaction.id, answer=InteractionAnswer(interaction)
        )

    @will.command(
        name=key_str("cmd.will.write.name"),
        description=key_str("cmd.will.write.description"),
    )
    @app_commands.rename(text=key_str("opt.will_text.name"))
    @app_commands.describe(text=key_str("opt.will_text.description"))
    async def write(
        self, interaction: discord.Interaction, text: app_commands.Range[str, 1, LONGEST]
    ) -> None:
        live, player = await self._writer(interaction)
        limit = will_limit(live)
        text = text.strip()
        if not text:
            raise UserError("error.will_empty")
        if len(text) > limit:
            raise UserError("error.will_too_long", count=limit, length=len(text))
        if not await self._store(interaction, live, player, text):
            return  # delivered twice: done and answered the first time
        log.info("game %s: %s wrote a will of %s characters", live.id, player, len(text))
        await answer(
            interaction,
            phrase(seen_by(live, interaction), "will.written", count=len(text), limit=limit),
        )

    @will.command(
        name=key_str("cmd.will.show.name"),
        description=key_str("cmd.will.show.description"),
    )
    async def show(self, interaction: discord.Interaction) -> None:
        live, player = await self._writer(interaction)
        text = will_of(live, player)
        if text is None:
            await answer(
                interaction, phrase(seen_by(live, interaction), "will.none", count=will_limit(live))
            )
            return
        await answer(interaction, f"{phrase(seen_by(live, interaction), 'will.yours')}\n{text}")

    @will.command(
        name=key_str("cmd.will.erase.name"),
        description=key_str("cmd.will.erase.description"),
    )
    async def erase(self, interaction: discord.Interaction) -> None:
        live, player = await self._writer(interaction)
        if will_of(live, player) is None:
            raise UserError("error.will_nothing")
        if not await self._store(interaction, live, player, None):
            return
        log.info("game %s: %s erased his will", live.id, player)
        await answer(interaction, phrase(seen_by(live, interaction), "will.erased"))


async def setup(bot: ProkuratorBot) -> None:
    await bot.add_cog(WillCog(bot))


__all__ = ["LONGEST", "WillCog", "will_limit", "will_lines", "will_of"]
