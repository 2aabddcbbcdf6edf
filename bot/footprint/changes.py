"""What a game's own changes do to its footprint (a death, a co-host, a replacement, a quiet
twin, a spectator's seat, a quiet night, the end's lock): the difference between the footprint
before and after, as intents stored with the command."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from bot.channels import MEMBER, ROLE, Layout, Overwrite, Target, layout_of
from bot.footprint.declared import SPECTATORS_KEY, Footprint, declared, seated
from bot.footprint.making import create_role_item
from bot.i18n import phrase
from bot.outbox import intents
from bot.service import LiveGame
from bot.storage import OutboxItem
from bot.storage.shapes import Channels
from rules import Game


def member_changes(before: Footprint, after: Footprint, users: Collection[int]) -> list[OutboxItem]:
    """What changes on Discord for these members when the game's footprint goes from ``before``
    to ``after``, in an order that never lets one of them hold more than either allows: game
    roles taken, member overwrites put or dropped, game roles given (two game roles' allows would
    add up)."""

    def seats(footprint: Footprint) -> list[tuple[int, Target]]:
        return [(seat.user, seat.role) for seat in footprint.seats if seat.user in users]

    def grants(footprint: Footprint) -> dict[tuple[Target, Target], Overwrite]:
        return {
            (place.id, o.target): o
            for place in footprint.places
            for o in place.overwrites
            if o.type == MEMBER and int(o.target) in users
        }

    guild = after.guild
    old_seats, new_seats = seats(before), seats(after)
    items = [
        intents.MemberRole(guild, user, role, False).item()
        for user, role in old_seats
        if (user, role) not in new_seats
    ]
    old_grants, new_grants = grants(before), grants(after)
    items += [
        intents.Overwrite(place, member, True, overwrite.allow, overwrite.deny).item()
        for (place, member), overwrite in new_grants.items()
        if old_grants.get((place, member)) != overwrite
    ]
    items += [
        intents.Overwrite(place, member, True, delete=True).item()
        for place, member in old_grants
        if (place, member) not in new_grants
    ]
    items += [
        intents.MemberRole(guild, user, role, True).item()
        for user, role in new_seats
        if (user, role) not in old_seats
    ]
    return items


def death_items(game: Game, channels: Channels, player: str) -> list[OutboxItem]:
    """``player`` died (``game`` says so): the difference between the footprint with him alive
    and without (his city role off, his mafia room's overwrite dropped, the dead role on)."""
    layout = layout_of(channels)
    if layout is None:
        return []
    return member_changes(
        declared(None, game, layout, revived={player}), declared(None, game, layout), {int(player)}
    )


def quiet_night_items(game: Game, channels: Channels, *, night: bool) -> list[OutboxItem]:
    """Quiet nights (a house rule): the night (``night``) or the day begins, and the city channels'
    role overwrites go from the footprint by day to the footprint by night (read-only to their own
    living residents), or back. Nothing without quiet nights. A quiet twin's overwrite goes in the
    provisioning lane, after the twin is made (its id may still be a key there)."""
    layout = layout_of(channels)
    if layout is None or not layout.quiet_nights:
        return []
    before = declared(None, game, layout, night=not night)
    after = declared(None, game, layout, night=night)
    twins = {city.quiet for city in layout.cities if city.quiet is not None}
    items = []
    for old, new in zip(before.places, after.places, strict=True):
        for overwrite in new.overwrites:
            if overwrite.type != ROLE or old.role_overwrite(overwrite.target) == overwrite:
                continue
            target = overwrite.target
            role = int(target) if str(target).isdigit() else target
            lane = "provision" if target in twins else ""
            change = intents.Overwrite(
                new.id, role, False, overwrite.allow, overwrite.deny, lane=lane
            )
            items.append(change.item())
    return items


def replacement_items(
    live: LiveGame, game: Game, old: str, new: str, *, quiet: bool
) -> list[OutboxItem]:
    """``new`` took ``old``'s place (the game already names ``new``): the difference between the
    footprint with ``old`` in the seat and with ``new`` (the seat's game role, the city's quiet
    twin if the newcomer turned pings off and the twin exists; a mafia member's room overwrite).
    Updates who is quiet."""
    channels = live.record.channels
    layout = layout_of(channels)
    if layout is None:
        return []
    city = layout.city(game.city_of(new))
    old_role = city.quiet if old in layout.quiet and city.quiet is not None else city.living
    layout.quiet = (layout.quiet - {old}) | ({new} if quiet and city.quiet is not None else set())
    channels["quiet"] = sorted(layout.quiet)
    after = declared(None, game, layout)
    before = seated(after, int(new), int(old), old_role if game.is_alive(new) else layout.dead_role)
    return member_changes(before, after, {int(old), int(new)})


def cohost_items(live: LiveGame, member: int, *, add: bool) -> list[OutboxItem]:
    """A co-host added (or removed) mid-game: the footprint's host overwrite of him on every game
    channel and the category, given (or taken back). Updates ``live.record.channels``'
    co-hosts, so later edits of whole channels keep them."""
    channels = live.record.channels
    layout = layout_of(channels)
    if layout is None or live.game is None:
        return []
    before = declared(None, live.game, layout)
    others = [c for c in layout.cohosts if c != member]
    channels["cohosts"] = layout.cohosts = [*others, member] if add else others
    return member_changes(before, declared(None, live.game, layout), {member})


def role_made_items(
    live: LiveGame, game: Game | None, layout: Layout, key: Target, *, over: bool = False
) -> list[OutboxItem]:
    """A game role made mid-game (``layout`` already names it by ``key``: a quiet twin, the
    spectators'): the role as the footprint declares it, then its overwrite on every channel
    where the footprint gives it one, all in the provisioning lane (the overwrites name it by
    its key, so they must follow its making there)."""
    footprint = declared(live, game, layout, over=over)
    role = next(spec for spec in footprint.roles if spec.id == key)
    items = [create_role_item(footprint, role, phrase(live, "channel.category", game=live.id))]
    for place in footprint.places:
        found = place.role_overwrite(key)
        if found is not None:
            change = intents.Overwrite(
                place.id, key, False, found.allow, found.deny, lane="provision"
            )
            items.append(change.item())
    return items


def quiet_items(
    live: LiveGame, game: Game, player: str, *, wants_pings: bool, lane: str = "permissions"
) -> list[OutboxItem]:
    """A living player turns pings on or off mid-game: the footprint's seat moves from his city's
    living role to its quiet twin (or back). The twin is made the first time a resident of the
    city needs it (:func:`role_made_items`, under ``notify:quiet:<city>``), and the swap follows
    it in the provisioning lane. The new role is given before the old is taken: the two have
    the same overwrites, so he never holds more than either allows, and never loses sight of
    his city meanwhile. Updates ``live.record.channels`` (the twin's key, who is quiet)."""
    channels = live.record.channels
    layout = layout_of(channels)
    if layout is None or not game.is_alive(player):
        return []
    if (player not in layout.quiet) == wants_pings:
        return []
    city = layout.city(game.city_of(player))
    items: list[OutboxItem] = []
    if city.quiet is None:
        city.quiet = f"notify:quiet:{game.cities.index(city.name)}"
        channels["roles"]["cities"][city.name]["quiet"] = city.quiet
        items += role_made_items(live, game, layout, city.quiet)
        lane = "provision"
    before = declared(None, game, layout)
    layout.quiet ^= {player}
    channels["quiet"] = sorted(layout.quiet)
    changes = member_changes(before, declared(None, game, layout), {int(player)})
    return items + [
        replace(item, lane=lane)
        for item in sorted(changes, key=lambda item: not item.payload["add"])
    ]


def watch_items(live: LiveGame, user_id: int, *, watch: bool, busy: bool) -> list[OutboxItem]:
    """A member starts (``watch``) or stops watching the game: the footprint's spectator seat of
    him, given or taken. The first spectator makes the spectators' role
    (:func:`role_made_items`, under ``spectate:role``); his role then follows in the
    provisioning lane, as it does while anything is being made there (``busy``), else it goes
    in the permissions lane. Updates ``live.record.channels`` (the role's key, who watches)."""
    channels = live.record.channels
    layout = Layout.from_channels(channels)
    game, over = live.game, not live.record.open
    items: list[OutboxItem] = []
    lane = "provision" if busy else "permissions"
    if watch and layout.spectators is None:
        layout.spectators = channels["spectators"] = SPECTATORS_KEY
        items += role_made_items(live, game, layout, SPECTATORS_KEY, over=over)
        lane = "provision"
    before = declared(live, game, layout, over=over)
    watching = {int(user) for user in channels.get("watching", [])}
    channels["watching"] = sorted(watching | {user_id} if watch else watching - {user_id})
    changes = member_changes(before, declared(live, game, layout, over=over), {user_id})
    return items + [replace(item, lane=lane) for item in changes]


def made_mid_game(layout: Layout) -> bool:
    """Whether the layout names a role made mid-game (a quiet twin, the spectators') by the key it
    is made under: an intent naming it then goes in the provisioning lane, after its making
    (carried out before the role is made, the key would name nothing)."""
    return any(
        isinstance(key, str) and not key.isdigit()
        for key in [layout.spectators, *(city.quiet for city in layout.cities)]
    )


def end_items(
    channels: Channels, game: Game | None, *, reveal: bool
) -> tuple[list[OutboxItem], str]:
    """The end's lock: the difference between the footprint of the game running and of the game
    over, as one edit of each channel whose overwrites change (its whole list, one call). In the
    permissions lane, or in the provisioning lane while the layout names a role made mid-game by
    its key (see :func:`made_mid_game`). Returns the items and their lane (what is said once the
    lock is on goes in it after them)."""
    layout = layout_of(channels)
    if layout is None:
        return [], "permissions"
    lane = "provision" if made_mid_game(layout) else "permissions"
    before = {place.id: place for place in declared(None, game, layout).places}
    after = declared(None, game, layout, over=True, reveal=reveal)
    items = [
        intents.EditChannel(
            place.id, {"permission_overwrites": [o.to_dict() for o in place.overwrites]}, lane=lane
        ).item()
        for place in after.places
        if before[place.id].overwrites != place.overwrites
    ]
    return items, lane
