"""The players' commands: the day (nominate, vote, protect, compare) and the night.

Every command is answered privately; what is public is announced by the
renderer from the rules' events. Player options autocomplete only the legal
targets, from the rules' ``legal_actions``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.errors import UserError
from bot.i18n import key_str, mention, phrase
from bot.service import LiveGame, Seen
from bot.wiring import Hooks
from cogs.common import (
    InteractionAnswer,
    answer,
    player_of,
    resolve_player,
    running_game,
    target_choices,
)
from rules import (
    CastVote,
    Check,
    Command,
    Compare,
    Elect,
    Event,
    Kill,
    Nominate,
    Pass,
    Protect,
    Tour,
    Unvote,
)
from rules import events as ev

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

log = logging.getLogger(__name__)

PLAYER = key_str("player", "opt.player.name")
PLAYER_DESCRIPTION = key_str("The player", "opt.player.description")


def reply_text(live: LiveGame, command: Command, events: list[Event]) -> str:
    """The private answer to an accepted command (with the secret answer, if any)."""
    say = lambda key, **params: phrase(live, key, **params)  # noqa: E731
    for event in events:
        if isinstance(event, ev.PlayerChecked):
            return say(
                "reply.check", target=mention(event.target), answer=say(f"answer.{event.reply}")
            )
        if isinstance(event, ev.StatusesCompared):
            return say(
                "reply.compare",
                first=mention(event.first),
                second=mention(event.second),
                answer=say(f"answer.{event.reply}"),
            )
        if isinstance(event, ev.ManiacChose):
            return say("reply.maniac", target=mention(event.target))
        if isinstance(event, ev.MafiaKillChosen):
            key = "reply.decision" if event.decision else "reply.proposal"
            return say(key + ("_tour" if event.touring else ""), target=mention(event.target))
    target = getattr(command, "target", None)
    keys = {
        Nominate: "reply.nominate",
        CastVote: "reply.vote",
        Unvote: "reply.unvote",
        Protect: "reply.protect",
        Elect: "reply.elect",
        Pass: "reply.pass",
    }
    return say(keys.get(type(command), "reply.done"), target=mention(target) if target else "")


class PlayCog(commands.Cog):
    """Day and night commands of the players."""

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot

    def hooks(self) -> Hooks:
        """The ballot's menu and its "take my vote back" button."""
        return Hooks(components={"vote": self._vote_select, "unvote": self._unvote_button})

    async def act(
        self,
        interaction: discord.Interaction,
        build: Callable[[LiveGame, str], Command],
        *,
        seen: Seen | None = None,
    ) -> None:
        """Apply the command ``build`` makes for the interaction's player; answer privately.

        The rules refuse a player's command out of its stage, so a player's slash command
        carries no stage; a ballot's menu and button carry the ballot's (``seen``).
        """
        live = await running_game(self.bot, interaction)
        player = player_of(live, interaction)
        command = build(live, player)
        applied = await self.bot.service.apply(
            live.id,
            command,
            source="player",
            interaction_id=interaction.id,
            seen=seen,
            answer=InteractionAnswer(interaction),
        )
        if applied.duplicate:
            if interaction.response.is_done():  # acknowledged before the repeat was seen
                await answer(interaction, phrase(live, "reply.done"))
            return
        if applied.repeated:  # the same choice again: nothing is posted a second time
            target = getattr(command, "target", None)
            await answer(
                interaction,
                phrase(live, "reply.repeated", target=mention(target))
                if target
                else phrase(live, "reply.repeated_pass"),
            )
            return
        await answer(interaction, reply_text(live, command, applied.events))

    async def _choices(
        self, interaction: discord.Interaction, verb: str, current: str
    ) -> list[app_commands.Choice[str]]:
        if interaction.guild_id is None:
            return []
        live = await self.bot.service.open_game(interaction.guild_id)
        if live is None or live.game is None:
            return []
        return target_choices(live, str(interaction.user.id), verb, current)

    # ------------------------------------------------------------------ day

    @app_commands.command(
        name=key_str("nominate", "cmd.nominate.name"),
        description=key_str("Nominate a player for execution", "cmd.nominate.description"),
    )
    @app_commands.rename(player=PLAYER)
    @app_commands.describe(player=PLAYER_DESCRIPTION)
    @app_commands.guild_only()
    async def nominate(self, interaction: discord.Interaction, player: str) -> None:
        await self.act(interaction, lambda live, me: Nominate(me, resolve_player(live, player)))

    @nominate.autocomplete("player")
    async def _nominate_targets(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return await self._choices(interaction, "nominate", current)

    @app_commands.command(
        name=key_str("vote", "cmd.vote.name"),
        description=key_str("Vote for a nominee of your city", "cmd.vote.description"),
    )
    @app_commands.rename(player=PLAYER)
    @app_commands.describe(player=PLAYER_DESCRIPTION)
    @app_commands.guild_only()
    async def vote(self, interaction: discord.Interaction, player: str) -> None:
        await self.act(interaction, lambda live, me: CastVote(me, resolve_player(live, player)))

    @vote.autocomplete("player")
    async def _vote_targets(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return await self._choices(interaction, "vote", current)

    @app_commands.command(
        name=key_str("unvote", "cmd.unvote.name"),
        description=key_str("Cancel your vote", "cmd.unvote.description"),
    )
    @app_commands.guild_only()
    async def unvote(self, interaction: discord.Interaction) -> None:
        await self.act(interaction, lambda live, me: Unvote(me))

    @app_commands.command(
        name=key_str("protect", "cmd.protect.name"),
        description=key_str("Doctor: protect a player tonight", "cmd.protect.description"),
    )
    @app_commands.rename(player=PLAYER)
    @app_commands.describe(player=PLAYER_DESCRIPTION)
    @app_commands.guild_only()
    async def protect(self, interaction: discord.Interaction, player: str) -> None:
        await self.act(interaction, lambda live, me: Protect(me, resolve_player(live, player)))

    @protect.autocomplete("player")
    async def _protect_targets(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return await self._choices(interaction, "protect", current)

    @app_commands.command(
        name=key_str("compare", "cmd.compare.name"),
        description=key_str("Journalist: compare two players' statuses", "cmd.compare.description"),
    )
    @app_commands.rename(
        first=key_str("first", "opt.first.name"), second=key_str("second", "opt.second.name")
    )
    @app_commands.describe(first=PLAYER_DESCRIPTION, second=PLAYER_DESCRIPTION)
    @app_commands.guild_only()
    async def compare(self, interaction: discord.Interaction, first: str, second: str) -> None:
        await self.act(
            interaction,
            lambda live, me: Compare(me, resolve_player(live, first), resolve_player(live, second)),
        )

    @compare.autocomplete("first")
    @compare.autocomplete("second")
    async def _compare_targets(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return await self._choices(interaction, "compare", current)

    # ------------------------------------------------------------------ mafia and night

    @app_commands.command(
        name=key_str("elect", "cmd.elect.name"),
        description=key_str("Mafia: vote for your Godfather", "cmd.elect.description"),
    )
    @app_commands.rename(player=PLAYER)
    @app_commands.describe(player=PLAYER_DESCRIPTION)
    @app_commands.guild_only()
    async def elect(self, interaction: discord.Interaction, player: str) -> None:
        await self.act(interaction, lambda live, me: Elect(me, resolve_player(live, player)))

    @elect.autocomplete("player")
    async def _elect_targets(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return await self._choices(interaction, "elect", current)

    @app_commands.command(
        name=key_str("kill", "cmd.kill.name"),
        description=key_str("Night: the mafia's or the maniac's victim", "cmd.kill.description"),
    )
    @app_commands.rename(player=PLAYER)
    @app_commands.describe(player=PLAYER_DESCRIPTION)
    @app_commands.guild_only()
    async def kill(self, interaction: discord.Interaction, player: str) -> None:
        await self.act(interaction, lambda live, me: Kill(me, resolve_player(live, player)))

    @kill.autocomplete("player")
    async def _kill_targets(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return await self._choices(interaction, "kill", current)

    @app_commands.command(
        name=key_str("tour", "cmd.tour.name"),
        description=key_str("Night: the touring kill in another city", "cmd.tour.description"),
    )
    @app_commands.rename(player=PLAYER)
    @app_commands.describe(player=PLAYER_DESCRIPTION)
    @app_commands.guild_only()
    async def tour(self, interaction: discord.Interaction, player: str) -> None:
        await self.act(interaction, lambda live, me: Tour(me, resolve_player(live, player)))

    @tour.autocomplete("player")
    async def _tour_targets(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return await self._choices(interaction, "tour", current)

    @app_commands.command(
        name=key_str("pass", "cmd.pass.name"),
        description=key_str("Godfather: no kill tonight", "cmd.pass.description"),
    )
    @app_commands.guild_only()
    async def pass_(self, interaction: discord.Interaction) -> None:
        await self.act(interaction, lambda live, me: Pass(me))

    @app_commands.command(
        name=key_str("check", "cmd.check.name"),
        description=key_str("Commissar: check a resident of your city", "cmd.check.description"),
    )
    @app_commands.rename(player=PLAYER)
    @app_commands.describe(player=PLAYER_DESCRIPTION)
    @app_commands.guild_only()
    async def check(self, interaction: discord.Interaction, player: str) -> None:
        await self.act(interaction, lambda live, me: Check(me, resolve_player(live, player)))

    @check.autocomplete("player")
    async def _check_targets(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return await self._choices(interaction, "check", current)

    # ------------------------------------------------------------------ the ballot

    async def _ballot(
        self, interaction: discord.Interaction, parts: list[str]
    ) -> tuple[LiveGame, Seen | None]:
        """The game of a ballot's component, and the voting it was posted for (known once
        Discord accepted the ballot message): a ballot of another day, city or game is no
        longer active."""
        live = await running_game(self.bot, interaction)
        if not parts or parts[0] != str(live.id):
            raise UserError("error.stale_button")
        message = interaction.message
        ref = (
            await self.bot.storage.ref_of_message(live.id, message.id)
            if message is not None
            else None
        )
        if ref is None or not ref.startswith("ballot:"):
            return live, None
        city, _, day = ref.removeprefix("ballot:").rpartition(":")  # ballot_ref's form
        assert live.game is not None
        if len(parts) > 1 and (
            city not in live.game.cities or str(live.game.cities.index(city)) != parts[1]
        ):
            raise UserError("error.stale_button")
        return live, Seen(stage=f"day {day} voting")

    async def _vote_select(self, interaction: discord.Interaction, parts: list[str]) -> None:
        _, seen = await self._ballot(interaction, parts)
        values = (interaction.data or {}).get("values", [])
        if not values:
            raise UserError("error.no_such_player", name="")
        candidate = str(values[0])
        await self.act(
            interaction, lambda live, me: CastVote(me, resolve_player(live, candidate)), seen=seen
        )

    async def _unvote_button(self, interaction: discord.Interaction, parts: list[str]) -> None:
        _, seen = await self._ballot(interaction, parts)
        await self.act(interaction, lambda live, me: Unvote(me), seen=seen)


async def setup(bot: ProkuratorBot) -> None:
    """Load the cog."""
    await bot.add_cog(PlayCog(bot))
