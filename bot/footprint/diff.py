"""What Discord shows of a game's footprint (:func:`observe`, confirmed by REST:
:func:`confirmed`), and the difference from what should be there, as what to do about it
(:func:`repairs`)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import discord

from bot.channels import ROLE
from bot.footprint.declared import Footprint, Path, PlaceSpec, RoleSpec

#: server permissions that see through the game's overwrites or hand out its roles
POWERS = discord.Permissions(administrator=True, manage_roles=True)


@dataclass(frozen=True)
class Observed:
    """What the bot sees of a guild: roles (id → position), channels, members' roles (only the
    members it knows of), its own highest position, and who holds :data:`POWERS`."""

    roles: dict[int, int]
    channels: set[int]
    overwrites: dict[int, dict[int, tuple[int, int]]]
    """Channel → role id → (allow, deny) of its role overwrites."""
    members: dict[int, frozenset[int]]
    bot_top: int
    bot_owns: bool = False
    powers: dict[int, list[str]] = field(default_factory=dict)
    me: int = 0
    """The bot's own user id (0: not known)."""
    mine: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Channel → (allow, deny) of the bot's own member overwrite there ((0, 0): none)."""

    def manageable(self, role: int) -> bool:
        """Whether Discord lets the bot give and take this role (it is below the bot's highest)."""
        return self.bot_owns or self.roles.get(role, 0) < self.bot_top


@dataclass(frozen=True)
class Repairs:
    """The difference between a footprint and what Discord shows, as what to do about it."""

    lost_roles: tuple[RoleSpec, ...] = ()
    lost_places: tuple[PlaceSpec, ...] = ()
    adds: tuple[tuple[int, int], ...] = ()
    """(member, role) to give."""
    removals: tuple[tuple[int, int], ...] = ()
    """(member, role) to take."""
    stuck: tuple[int, ...] = ()
    """Game roles not below the bot's highest role (Discord lets it neither give nor take them)."""
    standins: dict[int, dict[int, tuple[int, int]]] = field(default_factory=dict)
    """Member → channel → (allow, deny) of the member overwrite that stands in for his roles."""
    overwrites: tuple[tuple[int, int, int, int], ...] = ()
    """(channel, role, allow, deny) of game role overwrites to put back."""
    own: tuple[tuple[int, int, int, int], ...] = ()
    """(channel, the bot's id, allow, deny) of the bot's own member overwrites to put back: before anything
    else, the category's first (Discord lets the bot change a channel only while it sees it, and
    set in a channel only what it holds in the category)."""

    def __bool__(self) -> bool:
        return bool(
            self.lost_roles
            or self.lost_places
            or self.adds
            or self.removals
            or self.overwrites
            or self.own
        )


def repairs(footprint: Footprint, seen: Observed, given_up: Collection[Path] = ()) -> Repairs:
    """What to do so that Discord shows ``footprint`` (every id resolved). A lost role or channel
    is made again (nothing else of it is repaired meanwhile) unless Discord refused that once
    (``given_up``: the host was told); a member's game roles are put right where Discord lets
    the bot, and where not, member overwrites stand in for them."""
    lost_roles = tuple(
        role
        for role in footprint.roles
        if int(role.id) not in seen.roles and role.path not in given_up
    )
    lost_places = tuple(
        place
        for place in footprint.places
        if int(place.id) not in seen.channels and place.path not in given_up
    )
    if lost_roles or lost_places:
        return Repairs(lost_roles=lost_roles, lost_places=lost_places)
    game_roles = {int(role) for role in footprint.role_ids}
    places = [
        place
        for place in footprint.places
        if any(o.type == ROLE and int(o.target) in game_roles for o in place.overwrites)
    ]
    adds, removals = [], []
    stuck = {role for role in game_roles if not seen.manageable(role)}
    standins: dict[int, dict[int, tuple[int, int]]] = {}
    for seat in footprint.seats:
        held = seen.members.get(seat.user)
        if held is None:
            continue  # not on the server now, or not known to the bot yet
        wanted = int(seat.role)
        mine = set(held) & ({wanted} if seat.spectator else game_roles)
        after = set(mine)
        if wanted not in mine and seen.manageable(wanted):
            adds.append((seat.user, wanted))
            after.add(wanted)
        for extra in mine - {wanted}:
            if seen.manageable(extra):
                removals.append((seat.user, extra))
                after.discard(extra)
        if after != {wanted}:
            standins[seat.user] = standin(places, after, wanted)
    overwrites, own = _overwrites_back(footprint, seen, game_roles)
    return Repairs(
        adds=tuple(adds),
        removals=tuple(removals),
        stuck=tuple(sorted(stuck)),
        standins=standins,
        overwrites=tuple(overwrites),
        own=tuple(own),
    )


def _overwrites_back(
    footprint: Footprint, seen: Observed, game_roles: set[int]
) -> tuple[list[tuple[int, int, int, int]], list[tuple[int, int, int, int]]]:
    """The declared overwrites Discord does not show as declared: @everyone's and the game
    roles' (channel, role, allow, deny), and the bot's own (channel, bot, allow, deny)."""
    overwrites: list[tuple[int, int, int, int]] = []
    own: list[tuple[int, int, int, int]] = []
    for place in footprint.places:
        if int(place.id) not in seen.overwrites:
            continue  # not known to the bot yet (just made): nothing to compare
        present = seen.overwrites[int(place.id)]
        for o in place.overwrites:
            if o.type != ROLE and seen.me and int(o.target) == seen.me:
                if seen.mine.get(int(place.id), (0, 0)) != (o.allow, o.deny):
                    own.append((int(place.id), seen.me, o.allow, o.deny))
                continue
            watched = (
                int(o.target) in game_roles or int(o.target) == footprint.guild
            )  # and @everyone's
            if o.type == ROLE and watched and present.get(int(o.target)) != (o.allow, o.deny):
                overwrites.append((int(place.id), int(o.target), o.allow, o.deny))
    return overwrites, own


def standin(places: list[PlaceSpec], held: set[int], wanted: int) -> dict[int, tuple[int, int]]:
    """Member overwrites that let a member holding the game roles ``held`` do, in each of these
    channels, what the role ``wanted`` lets him (member overwrites come after role overwrites)."""
    result = {}
    for place in places:
        granted = 0
        for role in held:
            found = place.role_overwrite(role)
            if found is not None:
                granted |= found.allow
        right = place.role_overwrite(wanted)
        allow, deny = (right.allow, right.deny) if right is not None else (0, 0)
        deny |= granted & ~allow
        if allow or deny:
            result[int(place.id)] = (allow, deny)
    return result


def observe(guild: discord.Guild, channel_ids: Iterable[int], members: Iterable[int]) -> Observed:
    """What the bot's cache shows of a guild (these channels' overwrites, these members)."""
    me = guild.me
    overwrites: dict[int, dict[int, tuple[int, int]]] = {}
    mine: dict[int, tuple[int, int]] = {}
    for channel_id in channel_ids:
        channel = guild.get_channel(channel_id)
        if channel is None:
            continue
        mine[channel_id] = next(
            (
                (raw.allow, raw.deny)
                for raw in channel._overwrites
                if me is not None and raw.id == me.id and raw.is_member()
            ),
            (0, 0),
        )
        # the raw bit fields, as :func:`bot.footprint.effective.observe` reads them: discord.py's
        # PermissionOverwrite loses a bit both allowed and denied, and building one for each
        # overwrite (a flag at a time) took 9 ms of a 30-player game's pass, most of it
        overwrites[channel_id] = {
            raw.id: (raw.allow, raw.deny) for raw in channel._overwrites if raw.is_role()
        }
    held: dict[int, frozenset[int]] = {}
    for user in members:
        member = guild.get_member(user)
        if member is not None:
            held[user] = frozenset(role.id for role in member.roles)
    return Observed(
        roles={role.id: role.position for role in guild.roles},
        channels={c.id for c in guild.channels},
        overwrites=overwrites,
        members=held,
        bot_top=me.top_role.position if me is not None else 0,
        bot_owns=me is not None and guild.owner_id == me.id,
        powers=powers_of(guild),
        me=me.id if me is not None else 0,
        mine=mine,
    )


def powers_of(guild: discord.Guild) -> dict[int, list[str]]:
    """The members (neither bots nor the owner) who hold :data:`POWERS`, as the cache shows them."""
    powers = {}
    for member in guild.members:
        if member.bot or member.id == guild.owner_id:
            continue
        granted = member.guild_permissions
        if granted.administrator:  # holds every permission: named by this one alone
            powers[member.id] = ["administrator"]
        elif granted.manage_roles:
            powers[member.id] = ["manage_roles"]
    return powers


async def confirmed(
    http: discord.http.HTTPClient,
    guild: discord.Guild,
    footprint: Footprint,
    seen: Observed,
    found: Repairs,
    given_up: Collection[Path],
) -> Repairs:
    """The difference as Discord's REST answers show it (the cache may lag behind the bot's own
    changes): a member's roles, a channel or role that seems gone."""
    if found.lost_roles or found.lost_places:
        roles = {
            int(role["id"]): int(role.get("position", 0)) for role in await http.get_roles(guild.id)
        }
        channels = {int(c["id"]) for c in await http.get_all_guild_channels(guild.id)}
        return repairs(footprint, replace(seen, roles=roles, channels=channels), given_up)
    overwrites, mine = dict(seen.overwrites), dict(seen.mine)
    for channel_id in {channel for channel, *_ in found.overwrites + found.own}:
        try:
            channel = await http.get_channel(channel_id)
        except discord.NotFound:
            overwrites.pop(channel_id, None)
            continue
        overwrites[channel_id] = _role_overwrites(channel)
        mine[channel_id] = _own_overwrite(channel, seen.me)
    members = dict(seen.members)
    for user in {user for user, _ in found.adds + found.removals} | set(found.standins):
        try:
            member = await http.get_member(guild.id, user)
        except discord.NotFound:
            members.pop(user, None)
            continue
        members[user] = frozenset(int(role) for role in member.get("roles", []))
    return repairs(
        footprint, replace(seen, overwrites=overwrites, mine=mine, members=members), given_up
    )


def _role_overwrites(channel: Mapping[str, Any]) -> dict[int, tuple[int, int]]:
    """A channel's role overwrites as Discord's JSON gives them: role id → (allow, deny)."""
    return {
        int(o["id"]): (int(o["allow"]), int(o["deny"]))
        for o in channel.get("permission_overwrites", [])
        if int(o["type"]) == ROLE
    }


def _own_overwrite(channel: Mapping[str, Any], me: int) -> tuple[int, int]:
    """The bot's own member overwrite as Discord's JSON gives it ((0, 0): none)."""
    for o in channel.get("permission_overwrites", []):
        if int(o["type"]) != ROLE and int(o["id"]) == me:
            return int(o["allow"]), int(o["deny"])
    return 0, 0
