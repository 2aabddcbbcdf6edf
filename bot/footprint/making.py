"""Making a game's footprint (``/host start``), and removing what one attempt made."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bot.channels import MAX_OVERWRITES, VOICE_CHANNEL, Layout, Overwrite, Target
from bot.footprint.declared import Footprint, PlaceSpec, RoleSpec, declared
from bot.i18n import phrase
from bot.outbox.intents import (
    CreateChannel,
    CreateRole,
    DeleteChannel,
    DeleteRole,
    MemberRole,
    Sweep,
)
from bot.service import LiveGame
from bot.storage import OutboxItem
from rules import Game


def provision_plan(live: LiveGame, game: Game, layout: Layout) -> list[OutboxItem]:
    """Everything ``/host start`` makes, in order: the roles, the category, the channels with their
    overwrites, each player's role. Each is an intent of the provisioning lane."""
    footprint = declared(live, game, layout)
    reason = phrase(live, "channel.category", game=live.id)
    items = [create_role_item(footprint, role, reason) for role in footprint.roles]
    items += [create_channel_item(footprint, place, reason) for place in footprint.places]
    items += [
        MemberRole(footprint.guild, seat.user, seat.role, True, lane="provision").item()
        for seat in footprint.seats
    ]
    # last: remove a duplicate that a create whose answer was lost may have left
    made = [entry.payload for entry in items if entry.kind in ("create_role", "create_channel")]
    plan = {
        "roles": [p["name"] for p in made if "type" not in p],
        "category": layout.category,
        "category_name": reason,
        "topics": [p["topic"] for p in made if p.get("topic")],
        "names": [p["name"] for p in made if p.get("type") == VOICE_CHANNEL],
    }
    items.append(Sweep(footprint.guild, plan, lane="provision").item())
    return items


def create_role_item(
    footprint: Footprint, role: RoleSpec, reason: str, key: Target | None = None
) -> OutboxItem:
    """The intent that makes a game role (under ``key``, else under its own)."""
    spec = {
        "name": role.name,
        "permissions": "0",
        "mentionable": False,
        "hoist": False,
        "reason": reason,
    }
    made_as = role.id if key is None else key
    return CreateRole(footprint.guild, str(made_as), spec, lane="provision").item()


def create_channel_item(
    footprint: Footprint,
    place: PlaceSpec,
    reason: str,
    key: Target | None = None,
    overwrites: Iterable[Overwrite] | None = None,
    parent: Target | None = None,
) -> OutboxItem:
    """The intent that makes a game channel with its overwrites (under ``key``, else its own)."""
    chosen = list(place.overwrites if overwrites is None else overwrites)
    assert len(chosen) <= MAX_OVERWRITES, (place.path, len(chosen))
    spec: dict[str, Any] = {
        "type": place.kind,
        "name": place.name,
        "parent": parent or place.parent,
        "reason": reason,
        "overwrites": [o.to_plan() for o in chosen],
    }
    if place.topic:
        spec["topic"] = place.topic
    made_as = place.id if key is None else key
    return CreateChannel(footprint.guild, str(made_as), spec, lane="provision").item()


def rollback_plan(
    guild_id: int, made: dict[str, int], attempt: int, sweep: OutboxItem | None = None
) -> list[OutboxItem]:
    """Remove what one provisioning attempt made: channels (the category last), then roles.

    ``sweep`` (the rollback's own, which removes what was made unheard) comes before the
    category is deleted: Discord leaves a deleted category's children without a parent, where
    a sweep that looks in the category would not find one made unheard."""
    prefix = f"{attempt}:"
    keys = [key for key in made if key.startswith(prefix)]
    roles = [
        key
        for key in keys
        if key.split(":", 1)[1].split(":")[0] in ("living", "quiet", "dead_role")
    ]
    channels = [key for key in keys if key not in roles and key != f"{attempt}:category"]
    items = [DeleteChannel(made[key], lane="provision").item() for key in channels]
    if sweep is not None:
        items.append(sweep)
    if f"{attempt}:category" in made:
        items.append(DeleteChannel(made[f"{attempt}:category"], lane="provision").item())
    items.extend(DeleteRole(guild_id, made[key], lane="provision").item() for key in roles)
    return items
