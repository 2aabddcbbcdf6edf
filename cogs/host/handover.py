"""Hosts come and go: the host leaving the server is announced where the players look, a member
with Manage Server (or the hosts' role) takes his place (``/host take``) or ends the game
(``/host end``), a host hands his game to someone else (``/host hand``), and a lobby whose host
is gone closes itself after ``timers.hostless_lobby``.

The host's absence is a mark in the game's record (``lobby.host_gone``: when he left), so a
restart keeps it and re-arms the lobby's closing; it goes when he comes back or someone takes
his place. A new host of a running game gets the host's access to every game channel and the old
one loses it, as a co-host's is given and taken (:func:`host_items`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.channels import layout_of
from bot.errors import UserError
from bot.footprint import declared, member_changes
from bot.i18n import NO_PINGS, key_str, mention, phrase
from bot.outbox.intents import Send
from bot.service import GameBroken, LiveGame, NoGame
from bot.storage import GameState, OutboxItem
from bot.storage.health import Health
from bot.timers import Backoff, GameTasks
from cogs.common import (
    answer,
    cohosts,
    guild_game,
    host_gone,
    host_rights,
    manages_server,
    plays_in,
)
from cogs.host.common import HOST, HostBase
from cogs.lobby import log_items
from cogs.lobby_message import lobby_edit
from cogs.mentions import command
from cogs.spectators import is_spectator

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

log = logging.getLogger(__name__)

#: the states in which a game has a host to lose
HOSTED = (GameState.LOBBY, GameState.STARTING, GameState.RUNNING)


def host_items(live: LiveGame, new: int) -> list[OutboxItem]:
    """The game's host becomes ``new`` (a co-host among them stops being one): the record says
    so, and in a running game the old host's access to its channels goes to the new one."""
    record = live.record
    old = record.host_id
    record.host_id = new
    record.lobby["cohosts"] = [c for c in cohosts(live) if c != new]
    record.lobby.pop("host_gone", None)
    layout = layout_of(record.channels)
    if layout is None or live.game is None:
        return []
    before = declared(None, live.game, layout)
    layout.host = new
    layout.cohosts = [c for c in layout.cohosts if c != new]
    record.channels["host_id"] = new
    record.channels["cohosts"] = list(layout.cohosts)
    return member_changes(before, declared(None, live.game, layout), {old, new})


def public_items(live: LiveGame, text: str) -> list[OutboxItem]:
    """One line where the game's players look: its cities' channels and the host's log once it
    runs, the channel its lobby was opened in before."""
    channels = live.record.channels
    if channels.get("cities"):
        places = [int(ids["text"]) for ids in channels["cities"].values()]
    else:
        channel = live.record.lobby.get("channel_id")
        places = [int(channel)] if channel is not None else []
    message = {"content": text, "allowed_mentions": NO_PINGS}
    return [Send(message, channel=place).item() for place in places] + log_items(live, text)


def successor_refusal(live: LiveGame, member: discord.abc.User) -> UserError | None:
    """Why ``member`` cannot host this game (None: he can): a bot, the host himself, a player
    or a spectator (the host sees every secret)."""
    who = mention(str(member.id))
    if member.bot or member.id == live.record.host_id:
        return UserError("error.successor_bad", member=who)
    if plays_in(live, member.id):
        return UserError("error.cohost_plays", member=who)
    if is_spectator(live.record, member.id):
        return UserError("error.cohost_spectates", member=who)
    return None


class HostHandover(HostBase):
    """``/host take`` and ``/host hand``, and the host's leaving and coming back."""

    @HOST.command(
        name=key_str("cmd.host.take.name"),
        description=key_str("cmd.host.take.description"),
    )
    async def take(self, interaction: discord.Interaction) -> None:
        live = await guild_game(self.bot, interaction)
        user = interaction.user
        if plays_in(live, user.id):  # a player never hosts, whatever his rights
            raise UserError("error.host_plays")
        role = await self.bot.storage.guild_host_role(live.record.guild_id)
        if not (manages_server(user) or host_rights(self.bot, live, user, role)):
            raise UserError("error.take_no_right")
        present = user.id != live.record.host_id and not host_gone(live)
        if present and not await self._host_left(live):
            raise UserError(
                "error.host_present",
                host=mention(str(live.record.host_id)),
                hand=command(live.language, "host hand"),
            )
        await self._hand_over(interaction, live, user, key="hosts.taken")

    @HOST.command(
        name=key_str("cmd.host.hand.name"),
        description=key_str("cmd.host.hand.description"),
    )
    @app_commands.rename(member=key_str("opt.member.name"))
    @app_commands.describe(member=key_str("opt.member.description"))
    async def hand(self, interaction: discord.Interaction, member: discord.Member) -> None:
        live = await guild_game(self.bot, interaction)
        if plays_in(live, interaction.user.id):  # a player never hosts, whatever his rights
            raise UserError("error.host_plays")
        if interaction.user.id != live.record.host_id:
            raise UserError("error.only_host_hands")
        await self._hand_over(interaction, live, member, key="hosts.handed")

    async def _hand_over(
        self,
        interaction: discord.Interaction,
        live: LiveGame,
        member: discord.abc.User,
        *,
        key: str,
    ) -> None:
        """``member`` hosts the game from now on, said where the players look."""
        if live.broken is not None:
            raise GameBroken()
        refusal = successor_refusal(live, member)
        if refusal is not None:
            raise refusal

        def change(live: LiveGame) -> list[OutboxItem]:
            record = live.record
            self.bot.powers.refuse(live)  # held: the host's overwrites could not move with him
            if record.state == GameState.STARTING:  # the channels being made carry the old host
                raise UserError("error.already_starting")
            if record.state not in HOSTED:
                raise UserError("error.no_game")
            refused = successor_refusal(live, member)
            if refused is not None:
                raise refused
            old = mention(str(record.host_id))
            items = host_items(live, member.id)
            line = phrase(live, key, member=mention(str(member.id)), old=old, game=live.id)
            return items + public_items(live, line) + lobby_edit(live)

        if not await self._update(interaction, live, change):
            return
        log.info("game %s: %s hosts it from now on (%s)", live.id, member.id, key)
        await answer(
            interaction,
            phrase(
                live,
                "host.took" if member.id == interaction.user.id else "host.handed",
                member=mention(str(member.id)),
                game=live.id,
                help=command(live.language, "help"),
            ),
        )

    async def _host_left(self, live: LiveGame) -> bool:
        """Whether Discord says the host is no longer a member (a departure the bot did not see:
        it was offline); marks the game if so."""
        guild = self.bot.get_guild(live.record.guild_id)
        if guild is None:
            return False
        try:
            await guild.fetch_member(live.record.host_id)
        except discord.NotFound:
            await self._host_gone(live.record.guild_id, live.record.host_id)
            return True
        except discord.HTTPException as error:
            log.warning("game %s: could not ask Discord for the host: %s", live.id, error)
        return False

    @commands.Cog.listener()
    async def on_raw_member_remove(self, payload: discord.RawMemberRemoveEvent) -> None:
        """A member left the server: the host's leaving is said where the players look, and no
        overwrite of the game names him (nor a co-host or a player who left) any more."""
        try:
            await self._host_gone(payload.guild_id, payload.user.id)
        except (NoGame, GameBroken, UserError) as refusal:
            log.info("guild %s: member %s left: %s", payload.guild_id, payload.user.id, refusal)

    @commands.Cog.listener()
    async def on_member_join(self, member: discord.Member) -> None:
        """A member is back: overwrites name him again; the host who left hosts again (unless
        someone took his place meanwhile), said where the players look."""
        live = await self.bot.service.open_game(member.guild.id)
        if live is None or live.broken is not None:
            return

        def back(live: LiveGame) -> list[OutboxItem]:
            mark_absent(live, member.id, gone=False)
            if live.record.host_id != member.id or live.record.lobby.pop("host_gone", None) is None:
                return []
            log.info("game %s: the host %s is back on the server", live.id, member.id)
            line = phrase(live, "hosts.back", host=mention(str(member.id)), game=live.id)
            return public_items(live, line)

        with contextlib.suppress(NoGame, GameBroken):
            await self.bot.service.update(live.id, back)

    async def _host_gone(self, guild_id: int, user_id: int) -> None:
        live = await self.bot.service.open_game(guild_id)
        if live is None or live.broken is not None or live.record.state not in HOSTED:
            return
        now = self.bot.clock()
        closes = now + self.bot.config.timers.hostless_lobby

        def gone(live: LiveGame) -> list[OutboxItem]:
            record = live.record
            mark_absent(live, user_id, gone=True)
            if record.host_id != user_id or host_gone(live) or record.state not in HOSTED:
                return []
            record.lobby["host_gone"] = now
            log.info("game %s: the host %s left the server", live.id, user_id)
            if record.state != GameState.LOBBY:
                key = "hosts.gone_game"
            else:
                key = (
                    "hosts.gone_lobby"
                    if self.bot.config.timers.hostless_lobby
                    else "hosts.gone_stays"
                )
            line = phrase(
                live,
                key,
                host=mention(str(user_id)),
                game=live.id,
                when=f"<t:{int(closes)}:R>",
                take=command(live.language, "host take"),
                end=command(live.language, "host end"),
            )
            return public_items(live, line)

        await self.bot.service.update(live.id, gone)


def mark_absent(live: LiveGame, user: int, *, gone: bool) -> None:
    """Note that a member the game's overwrites name (its host, a co-host, a player) left the
    server (``gone``) or came back: :func:`bot.footprint.declared` leaves the absent out."""
    channels = live.record.channels
    named = {live.record.host_id, *cohosts(live)}
    if live.game is not None:
        named |= {int(player) for player in live.game.players}
    if not channels.get("roles") or user not in named:
        return
    before = set(channels.get("absent", []))
    after = before | {user} if gone else before - {user}
    if after:
        channels["absent"] = sorted(after)
    else:
        channels.pop("absent", None)


class HostlessLobbies(GameTasks):
    """A lobby whose host left the server closes itself ``timers.hostless_lobby`` seconds later
    unless someone took his place (or he came back). One task per such lobby, armed after every
    commit and at start, sleeping until the lobby's moment."""

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._wake: dict[int, asyncio.Event] = {}
        self._closed = False

    @property
    def health(self) -> Health:
        return self.bot.storage.health

    def closes_at(self, live: LiveGame | None) -> float | None:
        """When the lobby closes itself (None: it has a host, or it is no lobby)."""
        if live is None or live.record.state != GameState.LOBBY or live.broken is not None:
            return None
        left, wait = live.record.lobby.get("host_gone"), self.bot.config.timers.hostless_lobby
        return None if left is None or not wait else float(left) + wait

    def arm(self, live: LiveGame) -> None:
        """(Re)consider a lobby; called after every commit."""
        if not self._closed and self.closes_at(live) is not None:
            self._wake_game(live.id, start=True, name=f"hostless-{live.id}")

    async def restore(self, live: LiveGame) -> None:
        """A game loaded at start: arm its closing if its host had left."""
        self.arm(live)

    async def _run(self, game_id: int) -> None:
        wake = self._wake.setdefault(game_id, asyncio.Event())
        backoff = Backoff(f"game {game_id}: closing the hostless lobby")
        while not self._closed:
            wake.clear()
            at = self.closes_at(self.bot.service.find(game_id))
            if at is None:
                return
            delay = at - self.bot.clock()
            if delay <= 0:
                try:
                    await self._close(game_id)
                except Exception as error:
                    delay = backoff.failed(error)
                else:
                    backoff.succeeded()
                    continue
            await self._sleep(wake, delay)

    async def _close(self, game_id: int) -> None:
        def close(live: LiveGame) -> list[OutboxItem]:
            at = self.closes_at(live)
            if at is None or at > self.bot.clock():
                return []
            live.record.state = GameState.CANCELLED
            live.record.deadline = None
            line = phrase(live, "hosts.lobby_closed", game=live.id)
            return public_items(live, line) + lobby_edit(live)

        with contextlib.suppress(NoGame, GameBroken):
            await self.bot.service.update(game_id, close)
            log.info("game %s: lobby closed, its host left and nobody took his place", game_id)


__all__ = [
    "HostHandover",
    "HostlessLobbies",
    "host_items",
    "mark_absent",
    "public_items",
    "successor_refusal",
]
