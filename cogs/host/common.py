"""What the host's commands share: durations, city names, seats, the timers' announcements, the
groups ``/host``, ``/host cohost`` and ``/host preset``, and
:class:`HostBase`, the commands' way to a host's game."""

from __future__ import annotations

import logging
import random
import re
import unicodedata
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands
from discord.ext import commands

from bot.errors import UserError
from bot.i18n import NO_PINGS, key_str, phrase
from bot.limits import CITIES, CITY_NAME, clip
from bot.options import parse_duration
from bot.outbox.intents import Edit, Send
from bot.service import GameBroken, JustBegan, LiveGame, Seen
from bot.storage import OutboxItem
from cogs.common import (
    InteractionAnswer,
    answer,
    delivered,
    guild_game,
    host_choices,
    is_host,
    require_host,
    running_game,
    seen_by,
)
from cogs.render import (
    ballot_payload,
    ballot_ref,
    deadline_text,
    moment_of,
    moment_text,
)
from rules import (
    Command,
    Stage,
)

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot


log = logging.getLogger(__name__)


#: how long /host start waits for its roles and channels before answering "still starting"
#: (Discord accepts the answer to a deferred interaction for 15 minutes)
START_WAIT = 840.0

#: how long Discord accepts edits of an interaction's answer ("interaction tokens are valid for 15
#: minutes"), and the margin kept from its end: a start that ends later says so in the host's log
TOKEN_LIFETIME, TOKEN_MARGIN = 900.0, 30.0

#: what each kind of provisioning intent needs, to name when Discord refuses it
NEEDS = {
    "create_channel": ["manage_channels"],
    "create_role": ["manage_roles"],
    "member_role": ["manage_roles"],
    "delete_channel": ["manage_channels"],
    "delete_role": ["manage_roles"],
}

#: the longest stage timer, seconds (a week)
MAX_TIMER = 604800

TIMED = ("discussion", "voting", "night", "execution")

#: how long a host's confirmation button may be pressed, seconds
CONFIRM_SECONDS = 120

#: the most co-hosts a game may have (each is an overwrite on every game channel)
MAX_COHOSTS = 5

#: a stage as the service names it: ``day 1 discussion``
STAGE_KEY = re.compile(r"(day|night) \d{1,6} (discussion|voting|execution|night)")

PLAYER = key_str("opt.player.name")

PLAYER_DESCRIPTION = key_str("opt.player.description")


def duration_or_off(text: str) -> int:
    """A lobby setting's time (``10m``, ``24h``...), or 0 for ``off``."""
    off = text.strip().casefold() in ("off", "no", "0", "выкл", "нет")
    return 0 if off else parse_duration(text)


def _choice(value: str, key: str) -> app_commands.Choice[str]:
    return app_commands.Choice(name=key_str(key), value=value)


#: the one separator of city names (the README's "comma separated"): nothing else splits a name
CITY_SEPARATOR = ","


def _visible(char: str) -> bool:
    """A character that shows by itself (not a joiner, a mark or a variation selector alone)."""
    return unicodedata.category(char)[0] not in "CMZ"


def split_names(text: str) -> list[str]:
    """``"Верона, Падуя"`` → the names, split on commas only and stripped; inner runs of white
    space, line breaks and control characters become one space. Every other character is kept
    as written: zero-width joiners and non-joiners (``"👨\u200d👩\u200d👧"``, ``"خرم\u200cآباد"``),
    combining marks, variation selectors. A name with nothing visible in it is dropped."""
    names = []
    for part in text.split(CITY_SEPARATOR):
        kept = "".join(
            " " if char.isspace() or unicodedata.category(char) in ("Cc", "Zl", "Zp") else char
            for char in part
        )
        name = " ".join(kept.split())
        if any(_visible(char) for char in name):
            names.append(name)
    return names


def _same_name(name: str) -> str:
    """What two names must differ in to be two cities: not case, nor how a letter is encoded
    (``"Å"`` written as one character or as ``A`` and a combining ring)."""
    return unicodedata.normalize("NFC", name).casefold()


def check_city_names(names: list[str]) -> None:
    """Refuse a list of cities the game cannot have: none, too many, twice the same, too long.

    Raises:
        UserError: ``error.bad_cities`` or ``error.city_name_too_long`` naming the city.
    """
    if not names or len(names) > CITIES or len({_same_name(n) for n in names}) != len(names):
        raise UserError("error.bad_cities", count=CITIES)
    for name in names:
        if len(name) > CITY_NAME:
            raise UserError("error.city_name_too_long", city=clip(name, CITY_NAME), limit=CITY_NAME)


def seat_players(players: list[int], cities: list[str], seed: int) -> dict[str, list[str]]:
    """Share the lobby's players among the cities at random (seeded), as evenly as possible."""
    shuffled = [str(p) for p in players]
    random.Random(f"{seed}:seats").shuffle(shuffled)
    seats: dict[str, list[str]] = {city: [] for city in cities}
    for index, player in enumerate(shuffled):
        seats[cities[index % len(cities)]].append(player)
    return seats


def deadline_changed_items(
    live: LiveGame, key: str = "host.timer_changed", **params: Any
) -> list[OutboxItem]:
    """A line about the clock (by default: the current stage's new end) in every living city's
    channel, and the ballot's deadline refreshed while voting."""
    game = live.game
    if game is None or not live.record.channels:
        return []
    line = phrase(live, key, deadline=deadline_text(live), **params)
    items: list[OutboxItem] = []
    for city, ids in live.record.channels.get("cities", {}).items():
        if not game.alive(city):
            continue
        items.append(
            Send({"content": line, "allowed_mentions": NO_PINGS}, channel=ids["text"]).item()
        )
        if game.stage is Stage.VOTING:
            items.append(
                Edit(ballot_ref(city, game.phase.number), ballot_payload(live, city)).item()
            )
    return items


async def settle(interaction: discord.Interaction, text: str) -> None:
    """Answer a confirmation's button: its question becomes ``text``, without buttons (or, if the
    press was acknowledged already, the acknowledgement says it)."""
    none = discord.AllowedMentions.none()
    if interaction.type is not discord.InteractionType.component:
        await answer(interaction, text)
        return

    async def send() -> None:
        if interaction.response.is_done():
            await interaction.edit_original_response(content=text, view=None, allowed_mentions=none)
        else:
            await interaction.response.edit_message(content=text, view=None, allowed_mentions=none)

    await delivered(interaction, text, send)


HOST = app_commands.Group(
    name=key_str("cmd.host.name"),
    description=key_str("cmd.host.description"),
    guild_only=True,
)

COHOST = app_commands.Group(
    name=key_str("cmd.host.cohost.name"),
    description=key_str("cmd.host.cohost.description"),
    parent=HOST,
)

PRESET = app_commands.Group(
    name=key_str("cmd.host.preset.name"),
    description=key_str("cmd.host.preset.description"),
    parent=HOST,
)


class HostBase(commands.Cog):
    """The way to a host's game and its changes, for the parts of :class:`cogs.host.HostCog`."""

    bot: ProkuratorBot

    async def _host_game(
        self, interaction: discord.Interaction, *, running: bool = True
    ) -> LiveGame:
        live = await (running_game if running else guild_game)(self.bot, interaction)
        await require_host(self.bot, interaction, live)
        return live

    async def _settings_game(self, interaction: discord.Interaction) -> LiveGame:
        """The host's game for a setting (a lobby or a running game), not a broken one."""
        live = await self._host_game(interaction, running=False)
        if live.broken is not None:
            raise GameBroken()
        return live

    async def _apply(
        self,
        interaction: discord.Interaction,
        live: LiveGame,
        command: Command,
        *,
        seen: Seen | None = None,
        tell_stage: bool = False,
    ) -> None:
        """Apply the host's command and answer him; ``tell_stage``: the answer names the stage
        the game is in now (``/host next``: which stage began)."""
        self._held_without_powers(live)
        try:
            applied = await self.bot.service.apply(
                live.id,
                command,
                source="host",
                interaction_id=interaction.id,
                seen=seen,
                answer=InteractionAnswer(interaction),
            )
        except JustBegan as began:
            phase, _, stage = began.stage.rpartition(" ")
            raise UserError(
                "error.just_began",
                moment=moment_of(seen_by(live, interaction), phase, stage),
                ms=max(0, int(began.late * 1000)),
            ) from None
        if applied.duplicate and not interaction.response.is_done():
            return  # delivered twice: done and answered the first time
        game, reader = live.game, seen_by(live, interaction)
        if applied.deferred:
            text = phrase(reader, "host.deferred")
        elif tell_stage and game is not None and game.over:
            text = phrase(reader, "host.began_end")
        elif tell_stage and game is not None:
            text = phrase(
                reader, "host.began", moment=moment_text(reader), deadline=deadline_text(reader)
            )
        else:
            text = self._done_text(reader)
        await answer(interaction, text)

    def _held_without_powers(self, live: LiveGame) -> None:
        """Refuse an act that moves a running game while the bot lacks a server permission it
        needs (:mod:`bot.powers`): Discord would refuse what the act makes it do.

        Raises:
            UserError: ``error.powers_lacking``, naming the permissions and the bot's role.
        """
        self.bot.powers.refuse(live)

    def _done_text(self, live: LiveGame) -> str:
        """The answer to an act that was committed: "Done", unless the bot lost a power it needs
        meanwhile (then Discord carries it out only once it is given back, and the host is told
        so, never "Done")."""
        refusal = self.bot.powers.refusal(live)
        if refusal is None:
            return phrase(live, "host.done")
        return phrase(live, "host.done_held", **refusal.params_in(live.language))

    async def _update(
        self,
        interaction: discord.Interaction,
        live: LiveGame,
        change: Callable[[LiveGame], list[OutboxItem]],
    ) -> bool:
        """Change the game's record under its lock; False if delivered twice (answered then)."""
        return await self.bot.service.update(
            live.id, change, interaction_id=interaction.id, answer=InteractionAnswer(interaction)
        )

    async def _host_targets(
        self, interaction: discord.Interaction, verb: str, current: str
    ) -> list[app_commands.Choice[str]]:
        if interaction.guild_id is None:
            return []
        live = await self.bot.service.open_game(interaction.guild_id)
        if live is None:
            return []
        role = await self.bot.storage.guild_host_role(live.record.guild_id)
        if not is_host(self.bot, live, interaction.user, role):
            return []  # the host's lists are his alone: /host godfather's names the whole mafia
        return host_choices(live, verb, current)
