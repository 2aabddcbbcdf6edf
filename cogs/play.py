"""The players' commands: the day (nominate, vote, protect, compare) and the night.

Every command is answered privately; what is public is announced by the
renderer from the rules' events. Player options autocomplete only the legal
targets, from the rules' ``legal_actions``. The commands are the table's
(:data:`rules.table.OWN_COMMAND_ACTS`): one per act, made by :func:`act_command`,
whose texts are the catalogue's; a new act is a row of the table and its texts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Concatenate

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
    interaction_data,
    player_of,
    resolve_player,
    running_game,
    seen_by,
    target_choices,
)
from cogs.render import ROLE_EVENTS, role_event_line
from rules import (
    CastVote,
    Command,
    Elect,
    Event,
    Nominate,
    Pass,
    Unvote,
)
from rules import events as ev
from rules.roles import REPLIED
from rules.table import OWN_COMMAND_ACTS, Act

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

log = logging.getLogger(__name__)

PLAYER_DESCRIPTION = key_str("opt.player.description")
#: the language of a command's default name and description (the others localise them)
ENGLISH = "en"


def reply_text(live: LiveGame, command: Command, events: list[Event]) -> str:
    """The private answer to an accepted command (with the secret answer, if any)."""

    def say(key: str, **params: Any) -> str:
        return phrase(live, key, **params)

    for event in events:
        if _answers(command, event):
            return role_event_line(live, event, book="reply")
        if isinstance(event, ev.MafiaKillChoice):
            key = "reply.decision" if event.decision else "reply.proposal"
            return say(key + ("_tour" if event.touring else ""), target=mention(event.target))
    target = getattr(command, "target", None)
    keys = {
        Nominate: "reply.nominate",
        CastVote: "reply.vote",
        Unvote: "reply.unvote",
        Elect: "reply.elect",
        Pass: "reply.pass",
    }
    key = keys.get(type(command)) or (
        f"reply.{command.verb}" if type(command) in REPLIED else "reply.done"
    )
    return say(key, target=mention(target) if target else "")


def _answers(command: Command, event: Event) -> bool:
    """Whether ``event`` is a role's answer to ``command`` (``reply.<stem>``): one that carries
    a secret ``reply`` or says it ``answers``, for its sender alone."""
    mine = event.audience.player == getattr(command, "actor", None)
    answer = event.answers or isinstance(getattr(event, "reply", None), str)
    return type(event) in ROLE_EVENTS and mine and answer


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
        reader = seen_by(live, interaction)
        if applied.duplicate:
            if interaction.response.is_done():  # acknowledged before the repeat was seen
                await answer(interaction, phrase(reader, "reply.done"))
            return
        if applied.repeated:  # the same choice again: nothing is posted a second time
            target = getattr(command, "target", None)
            await answer(
                interaction,
                phrase(reader, "reply.repeated", target=mention(target))
                if target
                else phrase(reader, "reply.repeated_pass"),
            )
            return
        await answer(interaction, reply_text(reader, command, applied.events))

    async def _choices(
        self, interaction: discord.Interaction, verb: str, current: str
    ) -> list[app_commands.Choice[str]]:
        if interaction.guild_id is None:
            return []
        live = await self.bot.service.open_game(interaction.guild_id)
        if live is None or live.game is None:
            return []
        return target_choices(live, str(interaction.user.id), verb, current)

    # ------------------------------------------------------------------ the acts' commands

    async def _send(self, interaction: discord.Interaction) -> None:
        """``/unvote``, ``/pass``: an act without a target."""
        await self._send_act(interaction)

    async def _send_on(self, interaction: discord.Interaction, player: str) -> None:
        """``/nominate``, ``/vote``, ``/kill``...: an act on one player."""
        await self._send_act(interaction, player)

    async def _send_on_two(self, interaction: discord.Interaction, first: str, second: str) -> None:
        """``/compare``: an act on two players."""
        await self._send_act(interaction, first, second)

    async def _send_act(self, interaction: discord.Interaction, *typed: str) -> None:
        """The act of the interaction's command, on the players its options name."""
        make: Callable[..., Command] = act_of(interaction).command
        await self.act(
            interaction, lambda live, me: make(me, *(resolve_player(live, name) for name in typed))
        )

    async def _targets(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        """Autocomplete of an act's option: its legal targets."""
        return await self._choices(interaction, act_of(interaction).verb, current)

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
        values = interaction_data(interaction).get("values", [])
        if not values:
            raise UserError("error.no_such_player", name="")
        candidate = str(values[0])
        await self.act(
            interaction, lambda live, me: CastVote(me, resolve_player(live, candidate)), seen=seen
        )

    async def _unvote_button(self, interaction: discord.Interaction, parts: list[str]) -> None:
        _, seen = await self._ballot(interaction, parts)
        await self.act(interaction, lambda live, me: Unvote(me), seen=seen)


#: a command's targets → the options that name them
OPTION_OF_TARGET = {"target": "player"}
#: an act's options → the callback that takes them
CALLBACKS: dict[
    tuple[str, ...],
    Callable[Concatenate[PlayCog, discord.Interaction, ...], Coroutine[Any, Any, None]],
] = {
    (): PlayCog._send,
    ("player",): PlayCog._send_on,
    ("first", "second"): PlayCog._send_on_two,
}


def act_command(act: Act) -> app_commands.Command[PlayCog, ..., None]:
    """The slash command of a player's act (:data:`~rules.table.OWN_COMMAND_ACTS`): named
    after it, described by the catalogue's ``cmd.<name>.*``, its targets as options that
    autocomplete offers from the legal targets; in a guild only."""
    name = act.slash[0]
    options = tuple(OPTION_OF_TARGET.get(target, target) for target in act.targets)
    command: app_commands.Command[PlayCog, ..., None] = app_commands.Command(
        name=key_str(f"cmd.{name}.name"),
        description=key_str(f"cmd.{name}.description"),
        callback=CALLBACKS[options],
    )
    if options:
        app_commands.rename(**{o: key_str(f"opt.{o}.name") for o in options})(command)
        app_commands.describe(**{o: PLAYER_DESCRIPTION for o in options})(command)
    for option in options:
        command.autocomplete(option)(PlayCog._targets)
    return app_commands.guild_only()(command)


#: slash command (default name) → the act it sends
ACT_OF_COMMAND = {act.slash[0]: act for act in OWN_COMMAND_ACTS}
# the acts' commands, in the table's order, before the cog's own (none today)
PlayCog.__cog_app_commands__ = [
    *(act_command(act) for act in OWN_COMMAND_ACTS),
    *PlayCog.__cog_app_commands__,
]


def act_of(interaction: discord.Interaction) -> Act:
    """The act whose command the interaction runs (or autocompletes)."""
    assert interaction.command is not None
    return ACT_OF_COMMAND[interaction.command.name]


async def setup(bot: ProkuratorBot) -> None:
    """Load the cog."""
    await bot.add_cog(PlayCog(bot))
