"""The bot's own powers in each guild, as the gateway shows them, and what a game does without them.

A running game needs the bot to hold Manage Roles (the game roles of the
living and the dead, every overwrite) and Manage Channels (its channels) in
the server (:data:`NEEDED`). An admin may take either away mid-game by
editing the bot's role. :class:`Powers` reads what the bot holds from
discord.py's cache, which the gateway keeps (``guild.me.guild_permissions``
and ``guild.me.top_role``; GUILD_ROLE_UPDATE, GUILD_MEMBER_UPDATE for the bot,
GUILD_UPDATE), and while the bot lacks a power:

* the game stops moving: its clock stops as with the host's ``/host pause``
  (what is left of the stage is kept, and stored), its phase timer holds
  (:meth:`Powers.holds`, a hold of :class:`bot.timers.PhaseTimers`: a
  deadline the host set again meanwhile waits too), and the game takes no command from
  anyone: one rule, :meth:`Powers.standstill`, asked by the game service of every command
  (the host's, a player's, the timer's, a strike's, a day's end that waited for a last
  word) and by the commands that change the game's roles without one (``/lastword``,
  ``/mafia notify``, ``/mafia spectate``); each is refused with the reason, in the reader's
  language (:class:`Lacking`). Only a last word already under way when the power went is
  kept (its commit moves no stage and needs no power); the day's end it held waits on. The
  outbox holds every item that needs the power (:mod:`bot.outbox.breaker`), so Discord is
  not asked for what it will refuse. What people may still do is read: ``/help``, ``/mafia
  me``, the status views;
* the host's log says once which permissions to give back to which role, in
  the server's language, and the host gets it in his DMs too;

and when it is given back the log says so, the held items are carried out
(the dead lose their pen), the clock runs again with what was left of the
stage, a day's end that waited is applied, and the game goes on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

import discord

from bot.channels import permission_names
from bot.i18n import NO_PINGS, phrase
from bot.outbox.intents import Send
from bot.service import Held, LiveGame, last_word_hold
from bot.storage import GameState, OutboxItem
from bot.wiring import Hooks
from rules import Command, RequestLastWord

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

log = logging.getLogger(__name__)

#: the server permissions a running game needs the bot to hold (Discord's flag names)
NEEDED = ("manage_channels", "manage_roles")

#: who stopped a game's clock, as its record's pause says (the host's own pause says nobody)
BY = "powers"

#: the states of a game whose outbox items wait for the bot's powers (a start being made or
#: rolled back fails instead, and is told to the host as before)
HELD_STATES = (GameState.RUNNING, GameState.OVER, GameState.CANCELLED)


def lacking_in(guild: discord.Guild | None) -> list[str]:
    """What of :data:`NEEDED` the bot lacks in ``guild`` now (nothing if it is not known)."""
    me = guild.me if guild is not None else None
    if me is None:
        return []
    held = me.guild_permissions
    if held.administrator:
        return []
    return [flag for flag in NEEDED if not getattr(held, flag)]


class Lacking(Held):
    """``error.powers_lacking``: the permissions the bot lacks, named in each reader's language,
    and the bot's role, to which a server admin gives them back."""

    def __init__(self, flags: list[str], role: str, language: str) -> None:
        super().__init__(
            "error.powers_lacking", permissions=permission_names(language, flags), role=role
        )
        self.flags = flags

    def params_in(self, language: str) -> dict[str, Any]:
        """The parameters with the permissions named in ``language``."""
        return {**self.params, "permissions": permission_names(language, self.flags)}


class Powers:
    """Tracks the bot's powers per guild and holds each of its games while one is missing."""

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot
        self._seen: dict[int, tuple[tuple[str, ...], int]] = {}
        """Guild → what the bot lacked there and its highest role's position, when last seen."""
        self._told: dict[int, tuple[str, ...]] = {}
        """Game → what its host was last told the bot lacks."""
        self._pending: set[asyncio.Task[None]] = set()
        self.listeners: dict[str, Any] = {
            "on_guild_role_update": self._role_update,
            "on_guild_role_delete": self._role_event,
            "on_guild_role_create": self._role_event,
            "on_member_update": self._member_update,
            "on_guild_update": self._guild_update,
            "on_guild_available": self._guild_event,
        }
        breaker = bot.outbox.breaker
        breaker.guild_of = self.guild_of
        breaker.lacking = self.lacking

    def hooks(self) -> Hooks:
        """The gateway's events that change the bot's powers, and every commit (a game that
        starts while the bot lacks a power is held at once)."""
        return Hooks(gateway=list(self.listeners.items()), after_commit=[self._committed])

    # ------------------------------------------------------------------ what it knows

    def lacking(self, guild_id: int) -> list[str]:
        """What of :data:`NEEDED` the bot lacks in a guild now."""
        return lacking_in(self.bot.get_guild(guild_id))

    def guild_of(self, game_id: int) -> int | None:
        """The guild of a game whose outbox items wait for the bot's powers (None: they do not)."""
        live = self.bot.service.find(game_id)
        if live is None or live.record.state not in HELD_STATES:
            return None
        return live.record.guild_id

    def holds(self, live: LiveGame) -> bool:
        """Whether a game stands still: it runs, and the bot lacks a power it needs."""
        return self.standstill(live) is not None

    def refusal(self, live: LiveGame) -> Lacking | None:
        """What the bot lacks in the game's guild now, as a refusal (None: nothing)."""
        lacking = self.lacking(live.record.guild_id)
        if not lacking:
            return None
        return Lacking(lacking, self._role_name(live.record.guild_id), live.language)

    def standstill(self, live: LiveGame, command: Command | None = None) -> Lacking | None:
        """The one rule of a game held for the bot's powers: why the game may not take
        ``command`` now, whoever sends it (``command`` None: a change of someone's roles
        without one); None when it may.

        A running game whose guild lacks a power it needs takes nothing, save the last word of
        a nominee who was already speaking (or uploading) when the power went: its commit moves
        no stage and needs no power, and refusing it would lose what he said.
        """
        if live.record.state != GameState.RUNNING:
            return None
        refusal = self.refusal(live)
        if refusal is None:
            return None
        if isinstance(command, RequestLastWord):
            speaking = {last_word_hold(command.actor, upload=kind) for kind in (False, True)}
            if speaking & live.holds:
                return None
        return refusal

    def refuse(self, live: LiveGame, command: Command | None = None) -> None:
        """Refuse what a member asks of a game that stands still (:meth:`standstill`).

        Raises:
            Lacking: it stands still.
        """
        refusal = self.standstill(live, command)
        if refusal is not None:
            raise refusal

    def _role_name(self, guild_id: int) -> str:
        guild = self.bot.get_guild(guild_id)
        me = guild.me if guild is not None else None
        return me.top_role.name if me is not None else "—"

    # ------------------------------------------------------------------ what changes them

    async def _role_update(self, before: discord.Role, after: discord.Role) -> None:
        await self.check(after.guild)

    async def _role_event(self, role: discord.Role) -> None:
        await self.check(role.guild)

    async def _member_update(self, before: discord.Member, after: discord.Member) -> None:
        if self.bot.user is not None and after.id == self.bot.user.id:
            await self.check(after.guild)

    async def _guild_update(self, before: discord.Guild, after: discord.Guild) -> None:
        await self.check(after)

    async def _guild_event(self, guild: discord.Guild) -> None:
        await self.check(guild)

    def _committed(self, live: LiveGame) -> None:
        if live.record.state == GameState.RUNNING and live.id not in self._told:
            lacking = tuple(self.lacking(live.record.guild_id))
            if lacking:
                self._spawn(self._tell(live.id, lacking))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._pending.add(task)  # kept until done (the loop holds only a weak reference)
        task.add_done_callback(self._pending.discard)

    async def check(self, guild: discord.Guild) -> None:
        """Look at the bot's powers in ``guild``: a change wakes what waits for them (the outbox,
        the timers), and each running game's host is told what was lost or given back."""
        me = guild.me
        if me is None:
            return
        now = (tuple(lacking_in(guild)), me.top_role.position)
        if self._seen.get(guild.id) == now:
            return
        before = self._seen.get(guild.id)
        self._seen[guild.id] = now
        if now[0] or (before is not None and before[0]):  # a guild that lacks nothing is no news
            log.info("guild %s: the bot lacks %s (its highest role at %s)", guild.id, *now)
        self.bot.outbox.breaker.changed(guild.id)
        for live in self.bot.service.games_of(guild.id):
            if live.record.state == GameState.RUNNING:
                await self._tell(live.id, now[0])

    def _stop_or_go(self, live: LiveGame, *, held: bool) -> None:
        """Stop the game's clock as the host's ``/host pause`` does, what is left of the stage
        kept (stored: a restart keeps it stopped), or start again one the powers stopped; a
        clock the host stopped himself is his to start again."""
        record, now = live.record, self.bot.clock()
        paused = record.lobby.get("paused")
        if held and not paused and record.deadline is not None:
            remaining = max(0.0, record.deadline - now)
            record.lobby["paused"] = {"stage": live.stage_key(), "remaining": remaining, "by": BY}
            record.deadline, record.deadline_stage = None, None
        elif not held and isinstance(paused, dict) and paused.get("by") == BY:
            del record.lobby["paused"]
            left = paused.get("remaining")
            if left is not None and live.stage_key() is not None:
                record.deadline = now + float(left)
                record.deadline_stage = live.stage_key()
                # reminders whose moment passed while the clock stood are not sent late
                reminders = self.bot.timers.reminders
                record.reminders_sent = [o for o in reminders if o >= float(left)]

    async def _tell(self, game_id: int, lacking: tuple[str, ...]) -> None:
        """Tell the game's host what the bot lacks now, or that it is all back (once each)."""
        told = self._told.get(game_id, ())
        live = self.bot.service.find(game_id)
        paused = live.record.lobby.get("paused") if live is not None else None
        stopped = isinstance(paused, dict) and paused.get("by") == BY  # before a restart, say
        if lacking == told and (lacking or not stopped):
            return
        self._told[game_id] = lacking

        def change(live: LiveGame) -> list[OutboxItem]:
            if live.record.state != GameState.RUNNING:
                return []
            self._stop_or_go(live, held=bool(lacking))
            if lacking:
                text = phrase(
                    live,
                    "powers.lost",
                    permissions=permission_names(live.language, list(lacking)),
                    role=self._role_name(live.record.guild_id),
                )
            else:
                text = phrase(live, "powers.back")
            return told_items(live, text)

        try:
            await self.bot.service.update(game_id, change)
        except Exception:
            log.exception("game %s: could not tell the host about the bot's powers", game_id)
        live = self.bot.service.find(game_id)
        if live is not None:
            self.bot.timers.arm(live)  # held or let go: the timer looks again
            self.bot.outbox.kick(game_id)
        if not lacking:
            await self.bot.service.release(game_id, BY)  # a day's end that waited, applied now


def told_items(live: LiveGame, text: str) -> list[OutboxItem]:
    """A text for the host: in the game's log and in his DMs."""
    message = {"content": text[:2000], "allowed_mentions": NO_PINGS}
    items = [Send(message, user=live.record.host_id).item()]
    log_channel = live.record.channels.get("log")
    if log_channel is not None and str(log_channel).isdigit():
        items.insert(0, Send(message, channel=int(log_channel)).item())
    return items
