"""What every game cog shares: finding the game, players' names, hosts, targets, answering.

Answering follows the service's policy (see :mod:`bot.service`): a cog hands
its interaction to the service as an :class:`InteractionAnswer`, which the
service acknowledges before the commit when Discord needs it, and the cog
answers after the commit with :func:`answer_lines`, which edits that
acknowledgement or sends the first answer.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

import discord
from discord import app_commands
from discord.ext import commands

from bot.display import shown
from bot.errors import UserError
from bot.i18n import key_str, mention, phrase, reader_language
from bot.limits import OPTION_LABEL, SELECT_OPTIONS, chunks, clip
from bot.service import GameBroken, LiveGame, Seen
from bot.storage import GameState
from rules import LegalAction

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

log = logging.getLogger(__name__)

MAX_CHOICES = SELECT_OPTIONS


class InteractionAnswer:
    """An interaction as the service sees it: when Discord created it, and a way to
    acknowledge it ("thinking…", visible to the user alone) before a commit."""

    def __init__(self, interaction: discord.Interaction) -> None:
        self.interaction = interaction
        self.sent_at = interaction.created_at.timestamp()

    @property
    def deferred(self) -> bool:
        """Whether it is acknowledged (deferred or answered) already."""
        return self.interaction.response.is_done()

    async def defer(self) -> bool:
        """Acknowledge it now; False (logged) if Discord no longer takes it."""
        try:
            await self.interaction.response.defer(ephemeral=True, thinking=True)
        except discord.HTTPException as error:
            log.info(
                "interaction %s could not be acknowledged (%s): its command is not applied",
                self.interaction.id,
                error,
            )
            return False
        return True


def bot_of(interaction: discord.Interaction) -> ProkuratorBot:
    """The bot an interaction came to (discord.py types it as any client: this one is ours)."""
    return cast("ProkuratorBot", interaction.client)


def sent_at(interaction: discord.Interaction) -> Seen:
    """What the sender of a slash command saw: the game as it was when Discord created it."""
    return Seen(at=interaction.created_at.timestamp())


def names(live: LiveGame) -> dict[str, str]:
    """Player id (as the rules know him) → display name, from the lobby."""
    return {str(p["id"]): str(p["name"]) for p in live.record.lobby.get("players", [])}


def name_of(live: LiveGame, player: str) -> str:
    """A player's display name."""
    for entry in live.record.lobby.get("players", []):
        if str(entry["id"]) == player:
            return str(entry["name"])
    return player


def shown_name(live: LiveGame, player: str) -> str:
    """A player's display name, escaped for a text (:func:`shown`); a label or a menu option,
    which Discord never renders as markdown, takes :func:`name_of`."""
    return shown(name_of(live, player))


def seen_by(live: LiveGame, interaction: discord.Interaction) -> LiveGame:
    """The game as the sender of ``interaction`` reads his private answer: the same game, in
    his own client's language (:func:`bot.i18n.reader_language`). Only for building that
    answer's text: what the game posts speaks the server's language (``live``)."""
    return replace(live, language=reader_language(interaction.locale))


def status_text(live: LiveGame, status: str) -> str:
    """A status in the game's language."""
    return phrase(live, f"status.{status}")


def plays_in(live: LiveGame, user_id: int) -> bool:
    """Whether the user plays in this game: joined its lobby, was dealt a status, or was
    replaced in it (he knew its secrets)."""
    player = str(user_id)
    if live.game is not None and player in live.game.players:
        return True
    return any(str(entry["id"]) == player for entry in live.record.lobby.get("players", []))


def cohosts(live: LiveGame) -> list[int]:
    """The game's co-hosts (``/host cohost add``): they see what the host sees."""
    return [int(member) for member in live.record.lobby.get("cohosts", [])]


def host_rights(
    bot: ProkuratorBot, live: LiveGame, member: discord.abc.User, host_role_id: int | None
) -> bool:
    """The game's host, a co-host, a member with the configured host role (playing or not), or,
    while the host is gone from the server, a member with Manage Server."""
    if member.id == live.record.host_id or member.id in cohosts(live):
        return True
    roles = getattr(member, "roles", [])
    if host_role_id is not None and any(role.id == host_role_id for role in roles):
        return True
    name = bot.config.host_role
    if name is not None and any(role.name == name for role in roles):
        return True
    return host_gone(live) and manages_server(member)


def host_gone(live: LiveGame) -> bool:
    """Whether the game's host has left the server (and nobody has taken his place yet)."""
    return live.record.lobby.get("host_gone") is not None


def manages_server(member: discord.abc.User) -> bool:
    """A member with Manage Server: he may stand in for a host who left (``/host take``,
    ``/host end``)."""
    permissions = getattr(member, "guild_permissions", None)
    return bool(permissions is not None and permissions.manage_guild)


def is_host(
    bot: ProkuratorBot, live: LiveGame, member: discord.abc.User, host_role_id: int | None
) -> bool:
    """May use the host's commands and lists in this game: he has host rights and does not play
    in it (whatever his roles: a player never sees what the host sees)."""
    return host_rights(bot, live, member, host_role_id) and not plays_in(live, member.id)


async def guild_game(bot: ProkuratorBot, interaction: discord.Interaction) -> LiveGame:
    """The open game of the interaction's guild.

    Raises:
        UserError: outside a guild, or no open game there.
    """
    if interaction.guild_id is None:
        raise UserError("error.guild_only")
    live = await bot.service.open_game(interaction.guild_id)
    if live is None:
        raise UserError("error.no_game")
    return live


async def running_game(bot: ProkuratorBot, interaction: discord.Interaction) -> LiveGame:
    """The running game of the guild.

    Raises:
        UserError: no running game here (:class:`GameBroken`: it is broken).
    """
    live = await guild_game(bot, interaction)
    if live.broken is not None:
        raise GameBroken()
    if live.game is None or live.record.state != GameState.RUNNING:
        raise UserError("error.not_started")
    return live


async def require_host(
    bot: ProkuratorBot, interaction: discord.Interaction, live: LiveGame
) -> None:
    """Refuse anyone but the game's host, its co-hosts or the host role, and any of them who
    plays in the game.

    Raises:
        UserError: ``error.not_host``, or ``error.host_plays`` for a player with host rights.
    """
    role = await bot.storage.guild_host_role(live.record.guild_id)
    if not host_rights(bot, live, interaction.user, role):
        raise UserError("error.not_host")
    if plays_in(live, interaction.user.id):
        log.info(
            "refused a host command to %s in game %s: he plays in it", interaction.user.id, live.id
        )
        raise UserError("error.host_plays")


def player_of(live: LiveGame, interaction: discord.Interaction) -> str:
    """The interaction's user as a player of the game.

    Raises:
        UserError: he does not play in this game.
    """
    player = str(interaction.user.id)
    if live.game is None or player not in live.game.players:
        raise UserError("error.not_player")
    return player


def interaction_data(interaction: discord.Interaction) -> Mapping[str, Any]:
    """What the interaction carries (a component's ``custom_id``, a menu's ``values``), empty
    when nothing: read by key, as discord.py types it as a union of Discord's payloads."""
    data: Mapping[str, Any] = interaction.data or {}
    return data


def resolve_player(live: LiveGame, text: str) -> str:
    """A player from an option value: his id (what autocomplete sends) or his name.

    Raises:
        UserError: ``error.unknown_player`` naming what was typed.
    """
    value = text.strip()
    known = names(live)
    if value in known:
        return value
    if value.startswith("<@") and value.endswith(">"):
        inner = value.strip("<@!>")
        if inner in known:
            return inner
    lowered = value.casefold()
    matches = [player for player, name in known.items() if name.casefold() == lowered]
    if len(matches) == 1:
        return matches[0]
    raise UserError("error.no_such_player", name=shown(clip(value, 60)))


async def answer(interaction: discord.Interaction, text: str) -> None:
    """Answer privately after a commit: edit the acknowledgement, or send the first answer."""
    await answer_lines(interaction, [text])


async def answer_lines(
    interaction: discord.Interaction, lines: list[str], *, ephemeral: bool = True
) -> None:
    """Answer with ``lines``, split into as many messages as Discord's limits need.

    The first message is the interaction's answer (or its deferred original,
    edited); the rest are follow-ups. Names never ping anybody. Then come the member's answers
    Discord did not deliver before; an answer Discord refuses is kept for his next command if
    the interaction changed something (:mod:`bot.notices`), else only logged.
    """
    none = discord.AllowedMentions.none()
    parts = chunks(lines) or ["—"]
    first, rest = parts[0], parts[1:]

    async def send() -> None:
        if interaction.response.is_done():
            await interaction.edit_original_response(content=first, allowed_mentions=none)
        else:
            await interaction.response.send_message(
                first, ephemeral=ephemeral, allowed_mentions=none
            )
        for part in rest:
            await interaction.followup.send(part, ephemeral=ephemeral, allowed_mentions=none)

    await delivered(interaction, "\n".join(parts), send)


async def delivered(
    interaction: discord.Interaction, text: str, send: Callable[[], Awaitable[None]]
) -> None:
    """Answer ``interaction`` by ``send`` (which says ``text``), then hand the member the
    answers Discord did not deliver before. If Discord refuses this one, it is kept for his
    next command when the interaction changed something (it was committed first), else only
    logged (:mod:`bot.notices`)."""
    bot = bot_of(interaction)
    try:
        await send()
    except (discord.HTTPException, discord.RateLimited) as error:
        await bot.notices.undelivered(
            interaction,
            text,
            error,
            applied=bot.service.applied(interaction.id),
            language=await bot.language_for(interaction),
        )
        return
    await bot.notices.hand_out(interaction)


def _choices(
    live: LiveGame, actions: list[LegalAction], verb: str, current: str
) -> list[app_commands.Choice[str]]:
    known = names(live)
    lowered = current.casefold()
    for action in actions:
        if action.verb == verb and action.targets:
            return [
                app_commands.Choice(
                    name=clip(known.get(target, target), OPTION_LABEL), value=target
                )
                for target in action.targets
                if lowered in known.get(target, target).casefold()
            ][:MAX_CHOICES]
    return []


def target_choices(
    live: LiveGame, player: str, verb: str, current: str
) -> list[app_commands.Choice[str]]:
    """Autocomplete: the legal targets of ``verb`` for ``player``, filtered by what he typed."""
    if live.game is None or player not in live.game.players:
        return []
    return _choices(live, live.game.legal_actions(player), verb, current)


def host_choices(live: LiveGame, verb: str, current: str) -> list[app_commands.Choice[str]]:
    """Autocomplete for the host's commands: legal targets of ``verb``."""
    if live.game is None:
        return []
    return _choices(live, live.game.legal_host_actions(), verb, current)


__all__ = [
    "MAX_CHOICES",
    "InteractionAnswer",
    "bot_of",
    "answer",
    "answer_lines",
    "delivered",
    "interaction_data",
    "sent_at",
    "guild_game",
    "cohosts",
    "host_choices",
    "host_gone",
    "host_rights",
    "is_host",
    "key_str",
    "manages_server",
    "mention",
    "name_of",
    "names",
    "phrase",
    "player_of",
    "plays_in",
    "require_host",
    "resolve_player",
    "running_game",
    "seen_by",
    "shown",
    "shown_name",
    "status_text",
    "target_choices",
]


def join_group(
    bot: ProkuratorBot, cog: commands.Cog, group_name: str
) -> list[app_commands.Command[Any, ..., Any]]:
    """Move a cog's slash commands into another cog's group (``/host``, ``/mafia``), which must
    be loaded first; returns them, for :func:`leave_group`.

    Raises:
        RuntimeError: the group is not there.
    """
    group = bot.tree.get_command(group_name)
    if not isinstance(group, app_commands.Group):
        raise RuntimeError(f"{type(cog).__name__} needs the /{group_name} group, loaded before it")
    moved = []
    for command in list(cog.__cog_app_commands__):
        assert isinstance(command, app_commands.Command)
        group.add_command(command)
        moved.append(command)
    cog.__cog_app_commands__ = []  # the group's now, not top-level commands of the cog
    return moved


def leave_group(
    bot: ProkuratorBot, group_name: str, moved: list[app_commands.Command[Any, ..., Any]]
) -> None:
    """Take back what :func:`join_group` moved."""
    group = bot.tree.get_command(group_name)
    if isinstance(group, app_commands.Group):
        for command in moved:
            group.remove_command(command.name)
