"""Never hammer Discord: what a refusal means, and one circuit breaker per guild.

Discord blocks an IP that makes 10,000 invalid requests (401, 403, 429) in 10
minutes, for every guild the bot serves; a request refused for a permission
will be refused again. So a refusal is classified (:func:`refusal_of`):

* ``power``: 403 Missing Permissions (50013) or Missing Access (50001): the
  bot lacks a permission, or the target is above its highest role;
* ``gone``: 404 Unknown Channel, Member, Message, Role... (``100xx``);
* ``cap``: 400 for a cap (30005 roles, 30013 channels, 30007/30010...), or a
  full category (50035 ``CHANNEL_PARENT_MAX_CHANNELS``);
* ``closed``: 403 50007, a member who takes no DMs (his alone: not the guild's);

and none of them is tried again blindly. Two things hold a guild's items
(:meth:`Breaker.gate`), each lane in its order, while the others go on:

* the bot's powers as the gateway shows them (``lacking``, given by
  :class:`bot.powers.Powers`): an item that needs Manage Roles or Manage
  Channels (:func:`needs`) waits while the bot lacks it, and an item Discord
  refused for a power the bot is now seen to lack stays pending
  (:meth:`Breaker.keeps`) instead of failing: it is carried out once the
  power is given back;
* the guild's refusals: :data:`TRIP` of them within :data:`TRIP_WINDOW`
  seconds open the guild's breaker for a backoff (:data:`BACKOFF_START`,
  doubled each time it opens again without a success between, up to
  :data:`BACKOFF_MAX`), or until the bot's powers in the guild change
  (:meth:`Breaker.changed`, on the gateway's events), whichever comes first.
  After it, one item is let through: a success closes the breaker, another
  refusal opens it again for longer.

At most :data:`TRIP` refusals then reach Discord per opening: with the
backoffs doubling from a minute, a guild's misconfiguration costs a few dozen
invalid requests in 10 minutes, well under 1 % of Discord's limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import discord

from bot.storage import OutboxItem

log = logging.getLogger(__name__)

#: refusals of one guild within :data:`TRIP_WINDOW` seconds that open its breaker
TRIP = 5
TRIP_WINDOW = 60.0
#: the first hold of an open breaker, and the longest (seconds)
BACKOFF_START = 60.0
BACKOFF_MAX = 600.0

MISSING_ACCESS, MISSING_PERMISSIONS, CANNOT_DM = 50001, 50013, 50007
#: Discord's JSON codes of a cap reached (roles, channels, ...)
CAP_CODES = frozenset({30001, 30003, 30005, 30007, 30010, 30013, 30015, 30016, 30018, 30033})
FULL_CATEGORY = "CHANNEL_PARENT_MAX_CHANNELS"

MANAGE_ROLES, MANAGE_CHANNELS = "manage_roles", "manage_channels"
#: the server permissions each kind of outbox item needs (others need none beyond the channel's)
_NEEDS: dict[str, tuple[str, ...]] = {
    "member_role": (MANAGE_ROLES,),
    "create_role": (MANAGE_ROLES,),
    "delete_role": (MANAGE_ROLES,),
    "edit_role": (MANAGE_ROLES,),
    "overwrite": (MANAGE_ROLES,),
    "delete_channel": (MANAGE_CHANNELS,),
    "create_channel": (MANAGE_CHANNELS, MANAGE_ROLES),
    "edit_channel": (MANAGE_CHANNELS,),
    "sweep": (MANAGE_CHANNELS, MANAGE_ROLES),
}

#: the guild of a game (None: not known here)
GuildOf = Callable[[int], int | None]
#: the server permissions the bot lacks in a guild now, as Discord's flag names
Lacking = Callable[[int], Sequence[str]]


def needs(item: OutboxItem) -> tuple[str, ...]:
    """The server permissions an item's call needs (Discord's flag names)."""
    needed = _NEEDS.get(item.kind, ())
    if item.kind == "edit_channel" and "permission_overwrites" in item.payload.get("body", {}):
        needed = (*needed, MANAGE_ROLES)
    return needed


def refusal_of(error: BaseException) -> str | None:
    """What a refusal means: ``power``, ``gone``, ``cap``, ``closed`` (a member's DMs), or None
    (not one Discord repeats)."""
    if not isinstance(error, discord.HTTPException):
        return None
    if error.code == CANNOT_DM:
        return "closed"  # one member's DMs: nothing about the guild
    if error.status in (401, 403) or error.code in (MISSING_ACCESS, MISSING_PERMISSIONS):
        return "power"
    if error.status == 404 or 10001 <= error.code <= 10099:
        return "gone"
    if error.code in CAP_CODES:
        return "cap"
    if error.status == 400 and FULL_CATEGORY in str(getattr(error, "_errors", None) or ""):
        return "cap"
    return None


@dataclass
class _Guild:
    """One guild's refusals and breaker."""

    refusals: deque[float] = field(default_factory=deque)
    until: float = 0.0
    """Until when the breaker is open (0: closed)."""
    backoff: float = BACKOFF_START
    probing: bool = False
    """The breaker's hold is over: the next item goes, its answer closes or opens it again."""
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    """Set whenever the bot's powers in the guild change, or the breaker closes."""


class Breaker:
    """The per-guild circuit breaker and the powers' hold (see the module docstring)."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.guild_of: GuildOf = lambda game_id: None
        """The guild of a game (set where the bot is put together)."""
        self.lacking: Lacking = lambda guild_id: ()
        """What the bot lacks in a guild now (set where the bot is put together)."""
        self._guilds: dict[int, _Guild] = {}
        self.opened = 0
        """How many times a breaker opened (for tests and the log)."""
        self.held = 0
        """How many times an item waited at the gate."""

    def _guild(self, guild_id: int) -> _Guild:
        return self._guilds.setdefault(guild_id, _Guild())

    def is_open(self, guild_id: int) -> bool:
        """Whether the guild's breaker holds its items now."""
        state = self._guilds.get(guild_id)
        return state is not None and self.clock() < state.until

    def missing_for(self, item: OutboxItem, guild_id: int) -> list[str]:
        """The permissions ``item`` needs that the bot lacks in its guild now."""
        lacking = set(self.lacking(guild_id))
        return [power for power in needs(item) if power in lacking]

    async def gate(self, item: OutboxItem) -> None:
        """Wait until ``item`` may be tried: the bot holds what it needs, the breaker is shut."""
        guild_id = self.guild_of(item.game_id)
        if guild_id is None:
            return
        state = self._guild(guild_id)
        counted = False
        while self.missing_for(item, guild_id) or self.clock() < state.until:
            if not counted:
                self.held += 1
                counted = True
            state.changed.clear()
            wait = None if self.missing_for(item, guild_id) else state.until - self.clock()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(state.changed.wait(), wait)
        if state.until:  # the hold is over: this item is the probe
            state.until = 0.0
            state.probing = True

    def keeps(self, item: OutboxItem, error: BaseException) -> bool:
        """Count a refusal; whether the item stays pending (refused for a power the bot is now
        seen to lack: carried out once it is given back) rather than failing."""
        kind = refusal_of(error)
        guild_id = self.guild_of(item.game_id)
        if kind not in ("power", "cap") or guild_id is None:
            return False  # an unknown target is not asked for again anyway (nor counted as invalid)
        self._refused(guild_id, item, error)
        return kind == "power" and bool(self.missing_for(item, guild_id))

    def _refused(self, guild_id: int, item: OutboxItem, error: BaseException) -> None:
        state = self._guild(guild_id)
        now = self.clock()
        state.refusals.append(now)
        while state.refusals and now - state.refusals[0] > TRIP_WINDOW:
            state.refusals.popleft()
        if state.probing or len(state.refusals) >= TRIP:
            if state.probing:
                state.backoff = min(state.backoff * 2, BACKOFF_MAX)
            state.probing = False
            state.until = now + state.backoff
            state.refusals.clear()
            self.opened += 1
            log.warning(
                "guild %s: Discord refused the bot %s (last: %s %s): its requests wait %.0f s "
                "or until the bot's powers there change",
                guild_id,
                "again" if state.backoff > BACKOFF_START else f"{TRIP} times",
                item.kind,
                error,
                state.backoff,
            )

    def succeeded(self, item: OutboxItem) -> None:
        """An item of the game's guild was accepted: a probe closes the breaker for good."""
        guild_id = self.guild_of(item.game_id)
        state = self._guilds.get(guild_id) if guild_id is not None else None
        if state is not None and state.probing:
            state.probing = False
            state.backoff = BACKOFF_START

    def changed(self, guild_id: int) -> None:
        """The bot's powers in a guild changed (a gateway event): what waits looks again, and an
        open breaker lets one item through."""
        state = self._guilds.get(guild_id)
        if state is None:
            return
        if self.clock() < state.until:
            state.until = self.clock()  # the gate sees it over: its next item probes
        state.changed.set()
