"""One invariant, computed the way Discord computes it: in every channel of a running game (its
category included) no member may do more than the rules let him now.

The reconciler's other checks compare the overwrites the footprint declares (@everyone's and
the game roles') with Discord's; what a moderator adds beside them (a member overwrite, an
overwrite for a server role, a game role's overwrite where it has none) they do not see. This
module looks at the result instead: for every member the bot knows of and every game channel it
computes his effective permissions by Discord's documented algorithm (:func:`in_channel`: the
server permissions of @everyone and his roles, Administrator and the owner, then the channel's
overwrites for @everyone, his roles combined and himself, the implicit rules, a timeout), from
the bot's cached guild state as the other checks' repairs will leave it, and compares, for the
permissions the game governs (:data:`GOVERNED`), with what the footprint lets him
(:func:`allowed`: the same algorithm over the declared overwrites, his seat's game role and a
base of every permission, so that only what the rules deny counts). Any excess is removed, the
smallest change that is sure to hold:

0. a member overwrite the footprint declares (the bot's, the host's, a mafia member's in his room)
   that a person deleted or changed, or lost by a "Sync Now" with the category, is put back;
1. a game role held by a member whose seat is not that role (a moderator gave it) is taken back
   when Discord lets the bot (the role is below the bot's highest);
2. an overwrite for a role or a member that the footprint does not declare on that channel
   loses every governed bit it allows (deleted once it allows and denies nothing), whoever
   holds the role: the rules grant nothing through it, and its holders, or the member, may be
   unknown to the bot (it asks for no member list); one change covers today's and tomorrow's;
3. what is left comes from the member's own overwrite or from server permissions. A server
   role's grant at guild level cannot be taken away by deleting an overwrite (there is none),
   and editing the server's role would change the whole server; so the member's own overwrite
   on that channel loses the allowed bits and, if that is not enough, denies them. A member
   overwrite is applied last, so its deny holds whatever his roles say (Administrator aside).
   One that denies nothing and grants what the bot may not set is deleted (a delete is not
   checked bit by bit).

Less than the rules allow is left alone (a moderator's deny or timeout is moderation), but for
the declared member overwrites (0.), and so are a finished game's channels.

What the bot cannot change is reported once to the host, with the exact fix, and logged: the
server's owner and a member with Administrator (no overwrite hides a channel from them), and
bits the bot may not set in an overwrite because it lacks them itself. A report is made again
only after the condition went away and came back.

A difference seen in the cache is confirmed by REST (the channel's overwrites, the member's
roles, the roles' permissions) before it is repaired: the cache may lag behind the bot's own
changes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import discord

from bot.channels import MEMBER, ROLE, permission_names
from bot.footprint.declared import Footprint, PlaceSpec
from bot.footprint.diff import Repairs
from bot.i18n import mention, phrase
from bot.outbox import intents
from bot.permissions import flag_names
from bot.service import LiveGame
from bot.storage import OutboxItem

log = logging.getLogger(__name__)

P = discord.Permissions

#: the permissions the game governs: seeing, writing, speaking, joining the tribune, and the
#: thread, poll and voice-message family the dead are denied
GOVERNED = P(
    view_channel=True,
    send_messages=True,
    speak=True,
    connect=True,
    send_messages_in_threads=True,
    create_public_threads=True,
    create_private_threads=True,
    send_polls=True,
    send_voice_messages=True,
).value
ALL = P.all().value
ADMINISTRATOR = P(administrator=True).value
VIEW = P(view_channel=True).value
SEND = P(send_messages=True).value
CONNECT = P(connect=True).value
MANAGE_ROLES = P(manage_roles=True).value
#: what Discord drops in a text chat without Send Messages
NEEDS_SEND = P(
    mention_everyone=True, send_tts_messages=True, embed_links=True, attach_files=True
).value
#: what Discord leaves a member in a timeout
TIMED_OUT = P(view_channel=True, read_message_history=True).value
#: what stays without View Channel (permissions of no channel at all)
GUILD_ONLY = P(
    kick_members=True,
    ban_members=True,
    administrator=True,
    manage_guild=True,
    view_audit_log=True,
    view_guild_insights=True,
    change_nickname=True,
    manage_nicknames=True,
    manage_expressions=True,
    manage_events=True,
    moderate_members=True,
    create_expressions=True,
    create_events=True,
).value | (1 << 41)  # View Creator Monetization Analytics (no keyword in discord.py's stubs)
#: channel types with a voice part (voice, stage)
VOICE_KINDS = (2, 13)
#: channel types with a text chat (text, announcement, and the chat of voice and stage)
CHAT_KINDS = (0, 5, *VOICE_KINDS)
#: members fetched by REST at most in one pass to confirm what the cache shows
CONFIRM_MEMBERS = 50

Key = tuple[int, int]
"""An overwrite's target: (type, id), type 0 a role, 1 a member."""
Pair = tuple[int, int]
"""An overwrite's (allow, deny)."""


@dataclass(frozen=True)
class Person:
    """A member as the algorithm needs him: his roles (@everyone left out), a timeout."""

    roles: frozenset[int]
    timed_out: bool = False


@dataclass
class Scene:
    """A guild as the algorithm needs it: its roles, the game's channels, its members."""

    guild: int
    owner: int
    me: int
    roles: dict[int, int]
    """Role id (@everyone's is the guild's id) → its server permissions."""
    positions: dict[int, int]
    names: dict[int, str]
    places: dict[int, tuple[int, int | None, dict[Key, Pair]]]
    """Channel → (its type, its parent, its overwrites)."""
    people: dict[int, Person]


@dataclass(frozen=True)
class Fixes:
    """What a pass found beyond the rules and what removes it."""

    removals: tuple[tuple[int, int], ...] = ()
    """(member, game role) to take."""
    overwrites: tuple[tuple[int, int, int, Pair | None], ...] = ()
    """(channel, type, target, (allow, deny) or None: delete)."""
    unfixable: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    """What the bot cannot change: key → (text key, its parameters)."""

    def __bool__(self) -> bool:
        return bool(self.removals or self.overwrites)


# ---------------------------------------------------------------------------- the algorithm


def base_of(scene: Scene, user: int) -> int:
    """A member's server permissions: the owner and an administrator hold every one."""
    if user == scene.owner:
        return ALL
    person = scene.people[user]
    value = scene.roles.get(scene.guild, 0)
    for role in person.roles:
        value |= scene.roles.get(role, 0)
    return ALL if value & ADMINISTRATOR else value


def in_channel(
    base: int, guild: int, user: int, roles: Iterable[int], overwrites: dict[Key, Pair], kind: int
) -> int:
    """Discord's permissions of a member in a channel from his server permissions ``base``: the
    channel's overwrite for @everyone, then his roles' combined (denies, then allows), then his
    own; without View Channel nothing of the channel; in a text chat without Send Messages
    nothing that only sending needs; on a voice channel without Connect no Manage Channels."""
    if base & ADMINISTRATOR:
        return ALL
    value = base
    allow, deny = overwrites.get((ROLE, guild), (0, 0))
    value = (value & ~deny) | allow
    allow = deny = 0
    for role in roles:
        found = overwrites.get((ROLE, role))
        if found is not None:
            allow, deny = allow | found[0], deny | found[1]
    value = (value & ~deny) | allow
    allow, deny = overwrites.get((MEMBER, user), (0, 0))
    value = (value & ~deny) | allow
    if not value & VIEW:
        return value & GUILD_ONLY
    if kind in CHAT_KINDS and not value & SEND:
        value &= ~NEEDS_SEND
    if kind in VOICE_KINDS and not value & CONNECT:
        value &= ~P(manage_channels=True).value
    return value


def effective(scene: Scene, user: int, channel: int) -> int:
    """What a member may do in one of the game's channels, as Discord computes it."""
    kind, _, overwrites = scene.places[channel]
    base = base_of(scene, user)
    value = in_channel(base, scene.guild, user, scene.people[user].roles, overwrites, kind)
    if scene.people[user].timed_out and base != ALL:
        value &= TIMED_OUT
    return value


def allowed(footprint: Footprint, place: PlaceSpec, user: int, seat: int | None) -> int:
    """What the rules let a member do in a channel now, of :data:`GOVERNED`: the algorithm over
    the declared overwrites, his seat's role alone, and every permission (but Administrator) as
    his server permissions (what the server itself withholds is no grant to remove)."""
    overwrites = {(o.type, int(o.target)): (o.allow, o.deny) for o in place.overwrites}
    roles = () if seat is None else (seat,)
    kind = place.kind
    return (
        in_channel(ALL & ~ADMINISTRATOR, footprint.guild, user, roles, overwrites, kind) & GOVERNED
    )


def reach(scene: Scene, channel: int) -> int:
    """The bits the bot may set in an overwrite of this channel: those it holds in the guild,
    or in the channel's category for a channel in one (everything with Administrator, or with a
    Manage Roles overwrite in the channel)."""
    base = base_of(scene, scene.me)
    if base & ADMINISTRATOR:
        return ALL
    _, parent, overwrites = scene.places[channel]
    mine = [
        (ROLE, scene.guild),
        (MEMBER, scene.me),
        *((ROLE, r) for r in scene.people[scene.me].roles),
    ]
    if any(overwrites.get(key, (0, 0))[0] & MANAGE_ROLES for key in mine):
        return ALL
    if parent is not None and parent in scene.places:
        return effective(scene, scene.me, parent) & ~MANAGE_ROLES
    return base & ~MANAGE_ROLES


# ---------------------------------------------------------------------------- what Discord shows


def observe(guild: discord.Guild, channel_ids: Iterable[int]) -> Scene | None:
    """The bot's cache of a guild, for these channels (None: the bot is not in it yet)."""
    me = guild.me
    if me is None:
        return None
    places: dict[int, tuple[int, int | None, dict[Key, Pair]]] = {}
    for channel_id in channel_ids:
        channel = guild.get_channel(channel_id)
        if channel is None:
            continue
        # the raw bit fields: discord.py's PermissionOverwrite keeps one state a bit, and loses
        # a bit both allowed and denied (Discord applies the allow last: the bit is granted)
        found: dict[Key, Pair] = {
            (ROLE if raw.is_role() else MEMBER, raw.id): (raw.allow, raw.deny)
            for raw in channel._overwrites
        }
        places[channel_id] = (channel.type.value, channel.category_id, found)
    return Scene(
        guild=guild.id,
        owner=guild.owner_id or 0,
        me=me.id,
        roles={role.id: role.permissions.value for role in guild.roles},
        positions={role.id: role.position for role in guild.roles},
        names={role.id: role.name for role in guild.roles},
        places=places,
        people={
            member.id: Person(
                frozenset(role.id for role in member.roles if role.id != guild.id),
                member.is_timed_out(),
            )
            for member in guild.members
        },
    )


def after_repairs(scene: Scene, found: Repairs, old_standins: dict[int, dict[int, Pair]]) -> Scene:
    """The scene as the other checks' repairs (``found``) will leave it: game roles given and
    taken, game role overwrites put back, member overwrites standing in for roles put or
    dropped (``old_standins``: those put before), the bot's own overwrites put back."""
    people = dict(scene.people)
    for user, role in found.adds:
        if user in people:
            people[user] = replace(people[user], roles=people[user].roles | {role})
    for user, role in found.removals:
        if user in people:
            people[user] = replace(people[user], roles=people[user].roles - {role})
    places = {cid: (kind, parent, dict(ows)) for cid, (kind, parent, ows) in scene.places.items()}
    for kind, rows in ((ROLE, found.overwrites), (MEMBER, found.own)):
        for channel, target, allow, deny in rows:
            if channel in places:
                places[channel][2][(kind, target)] = (allow, deny)
    for user, chans in old_standins.items():
        for channel in chans:
            if channel in places and channel not in found.standins.get(user, {}):
                places[channel][2].pop((MEMBER, user), None)
    for user, chans in found.standins.items():
        for channel, pair in chans.items():
            if channel in places:
                places[channel][2][(MEMBER, user)] = pair
    return replace(scene, people=people, places=places)


async def confirmed(http: discord.http.HTTPClient, scene: Scene, fixes: Fixes) -> Scene:
    """The scene with what ``fixes`` rest on read again by REST: the roles' permissions, the
    channels' overwrites and their categories' (what the bot may set in a channel is what it
    holds in its category), the members' roles (a member or channel gone is dropped)."""
    roles = {int(r["id"]): int(r.get("permissions", 0)) for r in await http.get_roles(scene.guild)}
    places = dict(scene.places)
    fixed = {channel for channel, *_ in fixes.overwrites}
    fixed |= {p for c in fixed if c in places and (p := places[c][1]) is not None and p in places}
    for channel in sorted(fixed):
        try:
            data: Any = await http.get_channel(channel)
        except discord.NotFound:
            places.pop(channel, None)
            continue
        kind, parent, _ = places[channel]
        places[channel] = (kind, parent, _overwrites(data))
    people = dict(scene.people)
    users = {user for user, _ in fixes.removals}
    users |= {target for _, kind, target, _ in fixes.overwrites if kind == MEMBER}
    for user in sorted(users & people.keys())[:CONFIRM_MEMBERS]:  # the ones the cache knows
        try:
            member: Any = await http.get_member(scene.guild, user)
        except discord.NotFound:
            people.pop(user, None)
            continue
        held = frozenset(int(role) for role in member.get("roles", []) if int(role) in roles)
        people[user] = replace(people[user], roles=held)
    return replace(scene, roles=roles, places=places, people=people)


def _overwrites(channel: dict[str, Any]) -> dict[Key, Pair]:
    """A channel's overwrites as Discord's JSON gives them."""
    return {
        (int(o["type"]), int(o["id"])): (int(o["allow"]), int(o["deny"]))
        for o in channel.get("permission_overwrites", [])
    }


# ---------------------------------------------------------------------------- the check


def check(footprint: Footprint, scene: Scene, ours: Iterable[tuple[int, int]] = ()) -> Fixes:
    """Every grant beyond the rules in the game's channels, and what removes it (see the module
    docstring for the order of the fixes); ``ours``: (channel, member) of the reconciler's own
    member overwrites standing in for roles, left as they are."""
    kept = set(ours)
    seats: dict[int, int] = {}
    spectators: set[int] = set()
    for seat in footprint.seats:
        if seat.user not in seats:
            seats[seat.user] = int(seat.role)
            if seat.spectator:
                spectators.add(seat.user)
    removals, scene = _off_seat_roles(footprint, scene, seats, spectators)
    original = scene.places
    scene = _members_back(footprint, scene)
    overwrites: list[tuple[int, int, int, Pair | None]] = []
    unfixable: dict[str, tuple[str, dict[str, Any]]] = {}
    for place in footprint.places:
        channel = int(place.id)
        if channel not in scene.places:
            continue
        excess = _excess(footprint, scene, place, seats)
        mine = {(MEMBER, user) for place_id, user in kept if place_id == channel}
        overwrites += _fix_channel(scene, place, excess, unfixable, original[channel][2], mine)
    return Fixes(tuple(removals), tuple(overwrites), unfixable)


def _members_back(footprint: Footprint, scene: Scene) -> Scene:
    """The scene with the declared member overwrites (the bot's, the host's and co-hosts', the
    mafiosi's in their room) as declared, for members on the server: a person who deleted or
    edited one, or synced the channel with its category, does not keep a mafia member out of
    his room (what the bot may set, :func:`reach`, aside)."""
    places = dict(scene.places)
    for place in footprint.places:
        channel = int(place.id)
        if channel not in places:
            continue
        kind, parent, present = places[channel]
        can = reach(scene, channel)
        wanted = {}
        for o in place.overwrites:
            key, pair = (MEMBER, int(o.target)), (o.allow, o.deny)
            now = present.get(key, (0, 0))
            changed = (now[0] ^ pair[0]) | (now[1] ^ pair[1])
            if o.type == MEMBER and key[1] in scene.people and changed and not changed & ~can:
                wanted[key] = pair
        if wanted:
            places[channel] = (kind, parent, {**present, **wanted})
    return replace(scene, places=places)


def _off_seat_roles(
    footprint: Footprint, scene: Scene, seats: dict[int, int], spectators: set[int]
) -> tuple[list[tuple[int, int]], Scene]:
    """Game roles held by members not seated as players (outsiders, spectators) beyond their
    seat's, taken where Discord lets the bot; the scene without them."""
    game_roles = {int(role) for role in footprint.role_ids}
    top = max((scene.positions.get(r, 0) for r in scene.people[scene.me].roles), default=0)
    removals = []
    people = dict(scene.people)
    for user, person in scene.people.items():
        if user == scene.me or (user in seats and user not in spectators):
            continue  # a player's game roles are the other checks' business
        for role in sorted((person.roles & game_roles) - {seats.get(user, 0)}):
            if scene.me == scene.owner or scene.positions.get(role, 0) < top:
                removals.append((user, role))
                people[user] = replace(people[user], roles=people[user].roles - {role})
    return removals, replace(scene, people=people)


def _excess(
    footprint: Footprint, scene: Scene, place: PlaceSpec, seats: dict[int, int]
) -> dict[int, int]:
    """Member → what he may do in the channel of :data:`GOVERNED` that the rules deny him. Members
    alike (same roles, no overwrite of their own) are computed once."""
    channel = int(place.id)
    own = {target for kind, target in scene.places[channel][2] if kind == MEMBER}
    declared = {int(o.target) for o in place.overwrites if o.type == MEMBER}
    actual_of: dict[tuple[frozenset[int], bool], int] = {}
    allowed_of: dict[int | None, int] = {}
    result = {}
    for user, person in scene.people.items():
        if user == scene.me:
            continue
        if user in own or user == scene.owner:
            actual = effective(scene, user, channel) & GOVERNED
        else:
            key = (person.roles, person.timed_out)
            if key not in actual_of:
                actual_of[key] = effective(scene, user, channel) & GOVERNED
            actual = actual_of[key]
        if not actual:
            continue
        seat = seats.get(user)
        if user in declared:
            rules = allowed(footprint, place, user, seat)
        else:
            if seat not in allowed_of:
                allowed_of[seat] = allowed(footprint, place, 0, seat)
            rules = allowed_of[seat]
        if actual & ~rules:
            result[user] = actual & ~rules
    return result


def _fix_channel(
    scene: Scene,
    place: PlaceSpec,
    excess: dict[int, int],
    unfixable: dict[str, tuple[str, dict[str, Any]]],
    before: dict[Key, Pair],
    mine: set[Key],
) -> list[tuple[int, int, int, Pair | None]]:
    """The overwrite changes from ``before`` (what Discord shows) that put the scene's member
    overwrites back and take each member's ``excess`` away in one channel; what no overwrite can
    take goes to ``unfixable``."""
    channel = int(place.id)
    kind, parent, restored = scene.places[channel]
    work = dict(restored)
    declared = {(o.type, int(o.target)) for o in place.overwrites} | mine
    can = reach(scene, channel)
    fixable = {}
    for user, bits in excess.items():
        if user == scene.owner:
            unfixable[f"{user}:owner"] = ("footprint.effective.owner", {"member": user})
        elif base_of(scene, user) & ADMINISTRATOR:
            held = (scene.guild, *scene.people[user].roles)
            roles = [r for r in held if scene.roles.get(r, 0) & ADMINISTRATOR]
            names = [scene.names.get(r, str(r)) for r in roles]
            unfixable[f"{user}:administrator"] = (
                "footprint.effective.administrator",
                {"member": user, "roles": names},
            )
        else:
            fixable[user] = bits
    for key, (allow, deny) in restored.items():
        if key not in declared and allow & GOVERNED & can:
            work[key] = (allow & ~(GOVERNED & can), deny)  # the rules grant nothing through it
    trial = replace(scene, places={**scene.places, channel: (kind, parent, work)})
    for user, bits in fixable.items():
        _member_fix(trial, channel, user, bits, can, work, ours=(MEMBER, user) in declared)
        left = effective(trial, user, channel) & bits
        if left:
            unfixable[f"{user}:reach:{channel}"] = (
                "footprint.effective.reach",
                {"member": user, "channel": channel, "bits": left},
            )
    changes: list[tuple[int, int, int, Pair | None]] = []
    for key in sorted(work):
        now, old = work[key], before.get(key)
        if now == old or (old is None and now == (0, 0)):
            continue
        # Discord refuses an overwrite put for one not on the server (404): his goes
        away = key[0] == MEMBER and key[1] not in scene.people
        gone = (now == (0, 0) and key not in declared) or away
        changes.append((channel, key[0], key[1], None if gone else now))
    return changes


def _member_fix(
    scene: Scene, channel: int, user: int, bits: int, can: int, work: dict[Key, Pair], *, ours: bool
) -> None:
    """The member's own overwrite in ``work`` changed so that he has none of ``bits`` (what the
    bot may set, ``can``): its allowed bits first, then denied if that is not enough; an
    overwrite that denies nothing and grants what the bot may not touch is deleted (Discord
    checks no bits on a delete) unless the footprint declares it (``ours``)."""
    key = (MEMBER, user)
    allow, deny = work.get(key, (0, 0))
    if (
        not ours
        and not deny
        and allow & bits & ~can
        and effective(scene, user, channel) & bits & ~can
    ):
        work[key] = (0, 0)
    now = effective(scene, user, channel) & bits & can
    if not now:
        return
    allow, deny = work.get(key, (0, 0))
    work[key] = (allow & ~now, deny)
    still = effective(scene, user, channel) & bits & can
    if still:
        work[key] = (allow & ~now, deny | still)


# ---------------------------------------------------------------------------- what is stored


def items(guild: int, fixes: Fixes) -> list[OutboxItem]:
    """The fixes as intents, in the permissions lane: roles taken, then overwrites."""
    lane = "permissions"
    result = [
        intents.MemberRole(guild, user, role, False, lane=lane).item()
        for user, role in fixes.removals
    ]
    for channel, kind, target, pair in fixes.overwrites:
        member = kind == MEMBER
        if pair is None:
            result.append(intents.Overwrite(channel, target, member, delete=True, lane=lane).item())
        else:
            result.append(
                intents.Overwrite(channel, target, member, pair[0], pair[1], lane=lane).item()
            )
    return result


def not_told_here(gained: dict[str, list[str]], fixes: Fixes) -> dict[str, list[str]]:
    """Who gained which powers (:func:`bot.footprint.repair.notices`' report), without an
    Administrator these fixes report with its exact fix."""
    result = {
        user: [
            kind
            for kind in kinds
            if kind != "administrator" or f"{user}:administrator" not in fixes.unfixable
        ]
        for user, kinds in gained.items()
    }
    return {user: kinds for user, kinds in result.items() if kinds}


def reports(live: LiveGame, fixes: Fixes, state: dict[str, Any], bot_role: str) -> list[str]:
    """What the host is told of what the bot cannot change, each once: not what the reconciler's
    notes (``state``) say was told and still holds; the notes then hold what is told now."""
    skip = set(state.get("told", []))
    state["told"] = sorted(fixes.unfixable)
    lines = []
    for key, (text, params) in sorted(fixes.unfixable.items()):
        if key in skip:
            continue
        words: dict[str, Any] = {"member": mention(str(params["member"])), "bot_role": bot_role}
        if "roles" in params:
            words["roles"] = ", ".join(f"«{name}»" for name in params["roles"])
        if "bits" in params:
            words["channel"] = f"<#{params['channel']}>"
            words["permissions"] = permission_names(live.language, flag_names(int(params["bits"])))
        lines.append(phrase(live, text, **words))
        log.warning("game %s: %s cannot be repaired by the bot (%s)", live.id, key, text)
    return lines


def log_fixed(game_id: int, fixes: Fixes) -> None:
    """The log's line for what a pass removed."""
    if fixes:
        log.warning(
            "game %s: grants beyond the rules removed: %d game role(s) taken, overwrites changed %s",
            game_id,
            len(fixes.removals),
            [(channel, target, pair) for channel, _, target, pair in fixes.overwrites],
        )
