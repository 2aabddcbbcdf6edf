"""The intents that repair a difference a pass found: roles given and taken, overwrites put
back, member overwrites standing in for roles the bot cannot move, lost roles and channels made
again (and what takes their place once made), and what the host is told in his log."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from bot.channels import Overwrite, Target, permission_names
from bot.footprint.declared import Footprint, PlaceSpec, RoleSpec
from bot.footprint.diff import Repairs
from bot.footprint.making import create_channel_item, create_role_item
from bot.footprint.record import children, notes, put
from bot.footprint.room import CAP_CODES, Room, defer, made_again
from bot.i18n import NO_PINGS, mention, phrase
from bot.outbox import intents
from bot.service import LiveGame
from bot.storage import OutboxItem
from bot.storage.shapes import Channels

log = logging.getLogger(__name__)

#: the standing-in member overwrites noted in the record: member → channel → (allow, deny)
Standins = dict[int, dict[int, tuple[int, int]]]


def repair_items(
    live: LiveGame,
    footprint: Footprint,
    found: Repairs,
    old_standins: Standins,
    room: Room | None = None,
    narrowing: Sequence[OutboxItem] = (),
) -> list[OutboxItem]:
    """What puts the difference right, in the permissions lane: the bot's own overwrites put
    back (:func:`own_items`) and @everyone's (what the bot may set is computed from both), then
    ``narrowing`` (the grants beyond the rules taken away, computed as if those were back:
    :func:`bot.footprint.effective.items`), roles taken, then given, the game roles' overwrites
    put back, member overwrites put or dropped (``old_standins``: those put before). What
    takes access away goes before what gives it: the lane carries them out one by one, and a
    role given before a moderator's grant is taken would let the grant through meanwhile.
    A lost role or channel is made again instead (:func:`remake_items`; ``room``: what the
    guild has room for, None if not known)."""
    if found.lost_roles or found.lost_places:
        return [*remake_items(live, footprint, found, room), *narrowing]
    guild, lane = footprint.guild, "permissions"
    gone = _given_up_roles(live, footprint)  # Discord has no such role: nothing to give
    found = replace(
        found,
        adds=tuple(add for add in found.adds if add[1] not in gone),
        overwrites=tuple(o for o in found.overwrites if o[1] not in gone),
    )
    # @everyone's overwrites before the rest: what the bot holds in a category, and so may set
    # in its channels, is computed from them (its own overwrite aside)
    reach = [o for o in found.overwrites if o[1] == guild]
    rest = [o for o in found.overwrites if o[1] != guild]
    items = own_items(found) + [
        intents.Overwrite(channel, role, False, allow, deny, lane=lane).item()
        for channel, role, allow, deny in reach
    ]
    items += narrowing
    items += [intents.MemberRole(guild, u, r, False, lane=lane).item() for u, r in found.removals]
    items += [intents.MemberRole(guild, u, r, True, lane=lane).item() for u, r in found.adds]
    items += [
        intents.Overwrite(channel, role, False, allow, deny, lane=lane).item()
        for channel, role, allow, deny in rest
    ]
    items += [
        intents.Overwrite(channel, user, True, allow, deny, lane=lane).item()
        for user, chans in found.standins.items()
        for channel, (allow, deny) in chans.items()
        if old_standins.get(user, {}).get(channel) != (allow, deny)
    ]
    items += [
        intents.Overwrite(channel, user, True, delete=True, lane=lane).item()
        for user, chans in old_standins.items()
        for channel in chans
        if channel not in found.standins.get(user, {})
    ]
    return items


def own_items(found: Repairs) -> list[OutboxItem]:
    """The bot's own member overwrites put back, first of all and in the footprint's order (the
    category's first): once @everyone is kept out of a channel the bot changes it only through
    its own overwrite, and it may set in a channel only what it holds in the category."""
    return [
        intents.Overwrite(channel, bot, True, allow, deny, lane="permissions").item()
        for channel, bot, allow, deny in found.own
    ]


def _given_up_roles(live: LiveGame, footprint: Footprint) -> set[int]:
    """The game roles deleted and not made again (given up, or waiting for room)."""
    given_up = notes(live.record.channels).get("given_up", [])
    return {int(role.id) for role in footprint.roles if list(role.path) in given_up}


def kept_items(footprint: Footprint, found: Repairs) -> list[OutboxItem]:
    """What puts a finished game's difference right, in the permissions lane: the bot's own
    overwrites put back, roles taken, then given, overwrites put back."""
    guild, lane = footprint.guild, "permissions"
    items = own_items(found)
    items += [
        intents.MemberRole(guild, user, role, add, lane=lane).item()
        for add, pairs in ((False, found.removals), (True, found.adds))
        for user, role in pairs
    ]
    items += [
        intents.Overwrite(channel, role, False, allow, deny, lane=lane).item()
        for channel, role, allow, deny in found.overwrites
    ]
    return items


def remake_items(
    live: LiveGame, footprint: Footprint, found: Repairs, room: Room | None = None
) -> list[OutboxItem]:
    """Make lost roles and channels again under fresh keys (the record keeps the old ids until
    they are made: :func:`remade_items` swaps them and says so in the new channels). When the
    guild has no ``room`` for all of them, none is tried: they wait until room is freed
    (:func:`bot.footprint.room.defer`)."""
    lacking = room.lacking(len(found.lost_roles), len(found.lost_places)) if room else None
    if lacking is not None:
        entries = [{"path": list(r.path), "kind": "role", "name": r.name} for r in found.lost_roles]
        entries += [
            {"path": list(p.path), "kind": "channel", "name": p.name} for p in found.lost_places
        ]
        return defer(live, entries, lacking)
    state = notes(live.record.channels)
    serial = int(state.get("serial", 0)) + 1
    state["serial"] = serial
    reason = phrase(live, "channel.category", game=live.id)
    keys: dict[Target, str] = {}
    remaking: list[dict[str, Any]] = []
    lost: list[tuple[RoleSpec | PlaceSpec, str]] = [(role, "role") for role in found.lost_roles]
    lost += [(place, "channel") for place in found.lost_places]
    for spec, kind in lost:
        key = f"again{serial}:{'/'.join(spec.path)}"
        keys[spec.id] = key
        remaking.append({"key": key, "path": list(spec.path), "kind": kind, "name": spec.name})
    items = [create_role_item(footprint, role, reason, keys[role.id]) for role in found.lost_roles]
    items += [_channel_again(footprint, place, reason, keys) for place in found.lost_places]
    lost_places = {place.id for place in found.lost_places}
    for role in found.lost_roles:
        items += _role_again(footprint, role, keys[role.id], lost_places)
    state["remaking"] = remaking
    return items


def _channel_again(
    footprint: Footprint, place: PlaceSpec, reason: str, keys: dict[Target, str]
) -> OutboxItem:
    """A lost channel made again under its fresh key, its overwrites and parent naming what is
    made again with it by their fresh keys."""
    overwrites = [
        Overwrite(keys.get(o.target, o.target), o.allow, o.deny, o.type) for o in place.overwrites
    ]
    parent = keys.get(place.parent, place.parent) if place.parent is not None else None
    return create_channel_item(footprint, place, reason, keys[place.id], overwrites, parent)


def _role_again(
    footprint: Footprint, role: RoleSpec, key: str, lost: set[Target]
) -> list[OutboxItem]:
    """A role made again (under ``key``): its overwrites on the channels that are not made again
    too, then given to whoever should hold it, in the provisioning lane after its making."""
    items = []
    for place in footprint.places:
        if place.id in lost:
            continue
        found = place.role_overwrite(role.id)
        if found is not None:
            change = intents.Overwrite(
                place.id, key, False, found.allow, found.deny, lane="provision"
            )
            items.append(change.item())
    items += [
        intents.MemberRole(footprint.guild, seat.user, key, True, lane="provision").item()
        for seat in footprint.seats
        if seat.role == role.id
    ]
    return items


def remade_items(
    live: LiveGame, made: dict[str, int], refused: dict[tuple[int, str], str]
) -> list[OutboxItem]:
    """What was made again (``made``: provisioning key → id) takes the old ids' place in the
    record, a category's channels go back in it, and each new channel says why it is new; what
    Discord refused (``refused``: its code) is given up and the host told."""
    channels = live.record.channels
    state = notes(channels)
    items: list[OutboxItem] = []
    for entry in state.pop("remaking", []):
        new = made.get(entry["key"])
        if new is None:
            code = refused.pop((live.id, entry["key"]), "—")
            items += _not_made(live, state, entry, code)
            continue
        path = tuple(entry["path"])
        put(channels, path, new)
        items += made_again(live, entry["path"])
        if entry["kind"] == "channel" and path != ("category",):
            text = phrase(live, "footprint.channel_again")
            message = {"content": text, "allowed_mentions": NO_PINGS}
            items.append(intents.Send(message, channel=new).item())
        elif path == ("category",):
            items += [
                intents.EditChannel(place, {"parent_id": new}, lane="permissions").item()
                for place in children(channels)
            ]
    return items


def _not_made(
    live: LiveGame, state: dict[str, Any], entry: dict[str, Any], code: str
) -> list[OutboxItem]:
    """A role or channel Discord refused to make again: given up, and the host told; one
    refused for a cap waits for room instead (:func:`bot.footprint.room.defer`)."""
    log.error("game %s: %s was not made again (Discord: %s)", live.id, entry["key"], code)
    if code in CAP_CODES:
        return defer(live, [entry], CAP_CODES[code])
    state.setdefault("given_up", []).append(entry["path"])
    text = phrase(
        live, f"footprint.not_made.{entry['kind']}", name=entry.get("name", "—"), code=code
    )
    return to_log(live.record.channels, text)


def notices(
    live: LiveGame,
    footprint: Footprint,
    new_stuck: list[int],
    gained: dict[str, list[str]],
    bot_role: str,
) -> list[str]:
    """What the host is told: each game role newly above the bot's (``bot_role``), each member
    who gained :data:`~bot.footprint.diff.POWERS`."""
    lines = [
        phrase(live, "footprint.role_above", role=role_name(footprint, role), bot_role=bot_role)
        for role in new_stuck
    ]
    lines += [
        phrase(
            live,
            "footprint.powers",
            member=mention(user),
            permissions=permission_names(live.language, kinds),
        )
        for user, kinds in gained.items()
    ]
    return lines


def role_name(footprint: Footprint, role: int) -> str:
    """A game role's name as the footprint declares it (its id if it declares none)."""
    return next((spec.name for spec in footprint.roles if int(spec.id) == role), str(role))


def to_log(channels: Channels, content: str) -> list[OutboxItem]:
    """A text posted in the host's log (nothing while the log is not made)."""
    log_channel = channels.get("log")
    if log_channel is None or not str(log_channel).isdigit():
        return []
    message = {"content": content, "allowed_mentions": NO_PINGS}
    return [intents.Send(message, channel=int(log_channel)).item()]
