"""Whether a guild has room for a game: counted before ``/host start`` makes anything.

Discord caps a guild at 500 channels (categories included, threads not), a
category at 50 channels and a guild at 250 roles (@everyone included); past a
cap it refuses the create (30013, 50035, 30005), and a start refused half-way
is rolled back. So the start first counts what the game will make
(:func:`footprint`) against what the guild holds (:func:`shortfall`, pure)
and refuses in the server's language with what to free (:func:`check_room`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import discord

from bot.errors import UserError
from cogs.failures import MAX_CATEGORY_CHANNELS, MAX_CHANNELS, MAX_ROLES
from rules import Game

#: the channels of a game besides its cities' two each: the tribune, the dead's, the host's log
SHARED_CHANNELS = 3


@dataclass(frozen=True)
class Footprint:
    """What a game makes on Discord when it starts."""

    channels: int
    """Channels in all, its category included."""
    in_category: int
    """Channels in its category."""
    roles: int


def footprint(game: Game, quiet: Collection[str], *, spectators: bool) -> Footprint:
    """A game's roles and channels: per city a channel, a mafia room, a living role and its
    quiet twin if a resident turned pings off; the tribune, the dead's channel and the log in
    one category; the dead's role; the spectators' role if spectators are let in (it is made
    for the first of them)."""
    cities = len(game.cities)
    twins = sum(
        1 for city in game.cities if any(player in quiet for player in game.residents[city])
    )
    inside = 2 * cities + SHARED_CHANNELS
    return Footprint(
        channels=inside + 1, in_category=inside, roles=cities + twins + 1 + int(spectators)
    )


@dataclass(frozen=True)
class Shortfall:
    """One cap the game would pass: what it needs, what is free, how many to free."""

    what: str
    """``channels``, ``category`` or ``roles``."""
    needed: int
    free: int
    limit: int

    @property
    def missing(self) -> int:
        """How many to free."""
        return self.needed - self.free


def shortfall(need: Footprint, *, channels: int, roles: int) -> list[Shortfall]:
    """The caps a game needing ``need`` would pass in a guild holding ``channels`` channels
    (categories included, threads not) and ``roles`` roles (@everyone included); empty when
    it fits."""
    found = []
    for what, needed, held, limit in (
        ("channels", need.channels, channels, MAX_CHANNELS),
        ("category", need.in_category, 0, MAX_CATEGORY_CHANNELS),
        ("roles", need.roles, roles, MAX_ROLES),
    ):
        free = max(0, limit - held)
        if needed > free:
            found.append(Shortfall(what, needed, free, limit))
    return found


def check_room(
    guild: discord.Guild, game: Game, quiet: Collection[str], *, spectators: bool
) -> None:
    """Refuse a start the guild has no room for, naming the first cap it would pass.

    Raises:
        UserError: ``error.no_room.channels``, ``.category`` or ``.roles`` with what the game
            needs, what is free, the cap and how many to free (``count``).
    """
    lacking = shortfall(
        footprint(game, quiet, spectators=spectators),
        channels=len(guild.channels),
        roles=len(guild.roles),
    )
    if lacking:
        first = lacking[0]
        raise UserError(
            f"error.no_room.{first.what}",
            needed=first.needed,
            free=first.free,
            limit=first.limit,
            count=first.missing,
        )


__all__ = ["Footprint", "Shortfall", "check_room", "footprint", "shortfall"]
