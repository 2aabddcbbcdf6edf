"""Spectators: members who do not play read a game's city channels, and nothing else.

``/mafia spectate`` (``/мафия наблюдать``) lets a member of the guild who is
neither a player nor the host of the game read its city channels (View
Channel and Read Message History, never anything that writes: the dead's
:data:`bot.permissions.SILENCE` is denied); the same command again, or
``/mafia leave``, stops it. The host chooses in the lobby with ``/host setup
spectators``: ``on`` (the default: a Mafia game is a show, and what the city
channels hold is what every player reads), ``off``, or ``after`` (only once
the game is over, its channels kept read-only).

Permissions through a role, as every public fact of a game: the game's
spectator role (not mentionable, permissions 0) is part of its declared
footprint (``bot.footprint``) once a first member asks to watch: made then,
with one overwrite on each city channel, all intents of the provisioning
lane; each spectator then gets the role (the permissions lane, or the
provisioning lane while the role is being made, so his role never comes
before it), and the reconciler keeps the role, its overwrites and who holds
it true, during the game and after it while its channels are kept. Holding it says only "watches game N", a public fact. The
role is in no mafia room, the host's log, the dead's channel or the
tribune, and the end's reveal (which opens the rooms to every player) does
not open them to it: a spectator never reads a secret. The city channel
carries one overwrite more, whatever the number of spectators.

At Discord's cap of 250 roles a first spectator is told there is no room for the role, and
nothing is made (``bot.footprint.room``); if Discord refuses the role anyway, whoever asked is
told privately and no longer counted as watching.

The game's record keeps who watches (``channels["watching"]``) and the role
(``channels["spectators"]``, its key until Discord returned its id).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import discord

from bot.errors import UserError
from bot.footprint import watch_items
from bot.footprint.room import ROLE_CAP, no_spectators_room
from bot.i18n import phrase, reader_language, t
from bot.service import GameBroken, LiveGame
from bot.storage import FINISHED, GameRecord, GameState, OutboxItem
from cogs.common import InteractionAnswer, is_host

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

log = logging.getLogger(__name__)

MODES = ("off", "on", "after")
#: spectators are let in unless the host says otherwise (see the module docstring)
DEFAULT_MODE = "on"


def mode_of(record: GameRecord) -> str:
    """The game's spectator setting: ``off``, ``on`` or ``after``."""
    mode = record.lobby.get("spectators", DEFAULT_MODE)
    return mode if mode in MODES else DEFAULT_MODE


def watching(record: GameRecord) -> set[int]:
    """The members who watch the game."""
    return {int(user) for user in record.channels.get("watching", [])}


def is_spectator(record: GameRecord, user_id: int) -> bool:
    """Whether the member watches the game (so he may not take a seat in it)."""
    return user_id in watching(record)


def watch_hint(live: LiveGame, user_id: int) -> str:
    """What a member who does not play in the running game can do to follow it, in
    ``live``'s language: first ``/mafia spectate`` (or wait for the end, or nothing, as the
    game's setting says), or how to stop if he watches already."""
    if is_spectator(live.record, user_id):
        return phrase(live, "help.spectator_watching", game=live.id)
    return phrase(live, f"help.spectator_{mode_of(live.record)}", game=live.id)


def players_of(record: GameRecord) -> set[int]:
    """Who plays in the game (its lobby's players, as dealt)."""
    return {int(p["id"]) for p in record.lobby.get("players", [])}


async def watched_game(bot: ProkuratorBot, guild_id: int) -> LiveGame | None:
    """The game a member of the guild may watch or stop watching: the open one, else the latest,
    once it is over (the ``after`` setting), None if there is neither."""
    live = await bot.service.open_game(guild_id)
    if live is not None:
        return live
    record = await bot.storage.latest_game(guild_id)
    if record is None or record.state not in FINISHED or not record.channels.get("roles"):
        return None
    return LiveGame(record, language=await bot.service.language(guild_id))


async def is_watching(bot: ProkuratorBot, interaction: discord.Interaction) -> bool:
    """Whether the member watches the game of his guild (``/mafia leave`` then stops that)."""
    if interaction.guild_id is None:
        return False
    live = await watched_game(bot, interaction.guild_id)
    return live is not None and is_spectator(live.record, interaction.user.id)


async def toggle(bot: ProkuratorBot, interaction: discord.Interaction) -> str:
    """``/mafia spectate``: start watching, or stop if he watches; the answer's text.

    Raises:
        UserError: nothing to watch, spectators not let in (now), he plays or hosts, the
            channels are gone, the bot lacks a power his role needs (:mod:`bot.powers`).
    """
    if interaction.guild_id is None:
        raise UserError("error.guild_only")
    live = await watched_game(bot, interaction.guild_id)
    if live is None:
        raise UserError("error.spectate_nothing")
    user = interaction.user
    watch = not is_spectator(live.record, user.id)
    if watch:
        await _may_watch(bot, live, user)
    refusal = bot.powers.refusal(live)  # his role changes: not while the bot lacks the power
    if refusal is not None:
        raise refusal
    game_id = live.id
    busy = bool(await bot.storage.pending_outbox(game_id, 1, lane="provision"))

    def change(live: LiveGame) -> list[OutboxItem]:
        # under the game's lock: it may have moved on, or he may have asked twice, meanwhile
        if live.record.open and live.record.state != GameState.RUNNING:
            raise UserError("error.spectate_not_started")
        if is_spectator(live.record, user.id) == watch:
            raise UserError("error.spectate_already" if watch else "error.spectate_not_watching")
        return watch_items(live, user.id, watch=watch, busy=busy)

    if live.record.open:
        if not await bot.service.update(
            game_id, change, interaction_id=interaction.id, answer=InteractionAnswer(interaction)
        ):
            return t(
                reader_language(interaction.locale),
                "spectate.started" if watch else "spectate.stopped",
                game=game_id,
            )
    else:
        # a finished game is no longer in the service: its record is changed here, under its lock
        async with bot.service.lock(game_id):
            record = await bot.storage.game(game_id)
            assert record is not None
            closed = LiveGame(record, language=live.language)
            items = change(closed)
            await bot.storage.save_game(record, interaction_id=interaction.id, outbox=items)
        bot.outbox.kick(game_id)
    log.info("game %s: %s %s watching", game_id, user.id, "starts" if watch else "stops")
    reader = reader_language(interaction.locale)  # his answer alone
    return t(reader, "spectate.started" if watch else "spectate.stopped", game=game_id)


async def _may_watch(bot: ProkuratorBot, live: LiveGame, user: discord.abc.User | Any) -> None:
    record = live.record
    if live.broken is not None:
        raise GameBroken()
    if record.open and (record.state != GameState.RUNNING or live.game is None):
        raise UserError("error.spectate_not_started")
    mode = mode_of(record)
    if mode == "off":
        raise UserError("error.spectators_off")
    if mode == "after" and record.open:
        raise UserError("error.spectators_after")
    if is_host(bot, live, user, await bot.storage.guild_host_role(record.guild_id)):
        raise UserError("error.spectate_host")
    if user.id in players_of(record):
        raise UserError("error.spectate_player")
    if not record.open and record.lobby.get("at_end", "keep") == "delete":
        raise UserError("error.spectate_gone")
    if no_spectators_room(record.channels, bot.get_guild(record.guild_id)):
        # the spectators' role cannot be made: nothing is promised that is not there
        raise UserError("error.spectate_no_room", limit=ROLE_CAP)
