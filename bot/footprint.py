"""A game's footprint on Discord, declared, and the one reconciler that keeps Discord to it.

:func:`declared` derives from a game what should exist now: its roles, its
channels with their role overwrites, and which game role each member holds
(his city's living role or its quiet twin alive, the dead role dead, the
spectators' role watching), and whether the game is over (every channel
read-only, the tribune silent, the rooms revealed if the host chose so).
Provisioning (:func:`provision_plan`) makes it; a death and a co-host added
or removed are the difference between the footprint before and after
(:func:`member_changes`), stored with the command, and so are a replacement,
a swap to a quiet twin (:func:`quiet_items`), a spectator's seat
(:func:`watch_items`) and a quiet night's start and end (a house rule: the
footprint by night has the city channels read-only, :func:`quiet_night_items`);
a quiet twin and the spectators' role, made mid-game,
are made as the footprint declares them (:func:`role_made_items`); the end's
lock is the difference between the footprint of the game running and over
(:func:`end_items`). After any of them, and whatever people do,
:class:`Reconciler` compares the footprint with what Discord shows and
repairs the difference through the outbox:

* a game channel deleted by a person is made again, with the overwrites it
  should have now, and the bot says in it that its earlier history is gone
  (a category made again takes its channels back);
* a game role deleted is made again, its overwrites put back everywhere,
  given again to whoever should hold it;
* a member without the game role he should hold gets it (a player who left
  the server and came back: Discord took his roles), one holding a game role
  he should not loses it;
* a game role above the bot's highest role (Discord then refuses to give or
  take it, 403/50013) is worked around: each member it misplaces gets member
  overwrites on the channels where game roles have overwrites, so that he may
  do there exactly what his right role allows, and the host is told in his
  log what to drag where; once the role is below the bot again the
  overwrites go and the roles are put right;
* a game role's overwrite, or @everyone's, someone edited is put back;
* a member who gains Administrator or Manage Roles during the game (who then
  sees the hidden rooms, or can give himself a game role) is reported in the
  host's log;
* after the end, while the game's channels are kept (until a transcript
  replaces them), its lock and the spectators' overwrites are put back, and
  who holds which game role; nothing of a finished game is made again.

It runs on the gateway's own events (channels, roles and members created,
updated or deleted; members joining and leaving), on a refused intent, and
when a guild becomes available (so after a restart), a burst of events
coalesced into one pass, and only while the game's provisioning and
permission lanes are idle (an intent under way is not a difference). A
difference seen in the cache is confirmed by REST before it is repaired.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Collection, Coroutine, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import discord

from bot.channels import (
    CATEGORY,
    MAX_OVERWRITES,
    MEMBER,
    ROLE,
    TEXT,
    VOICE_CHANNEL,
    Layout,
    Overwrite,
    Target,
    layout_of,
    permission_names,
    resolved,
)
from bot.i18n import NO_PINGS, mention, phrase
from bot.outbox import CREATES
from bot.service import Broken, LiveGame, NoGame
from bot.storage import FINISHED, GameRecord, GameState, OutboxItem
from rules import Game

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

log = logging.getLogger(__name__)

#: seconds a burst of gateway events is given to end before one pass over the game
SETTLE = 0.2
#: the lanes that change roles, channels and overwrites (a pass waits until they are idle)
CHANGING_LANES = ("provision", "permissions")
#: server permissions that see through the game's overwrites or hand out its roles
POWERS = discord.Permissions(administrator=True, manage_roles=True)
#: members asked for at once (Discord's limit for a request by ids)
QUERY_CHUNK = 100
#: the provisioning key of a game's spectators' role (made when a first member asks to watch)
SPECTATORS_KEY = "spectate:role"

Path = tuple[str, ...]


@dataclass(frozen=True)
class RoleSpec:
    """A game role that should exist: where the record keeps its id, and its name."""

    path: Path
    id: Target
    name: str


@dataclass(frozen=True)
class PlaceSpec:
    """A game channel that should exist, with the overwrites it should have now."""

    path: Path
    id: Target
    kind: int
    name: str
    parent: Target | None
    overwrites: tuple[Overwrite, ...]
    topic: str | None = None

    def role_overwrite(self, role: Target) -> Overwrite | None:
        """The overwrite a role should have here (None: none)."""
        return next((o for o in self.overwrites if o.type == ROLE and o.target == role), None)


@dataclass(frozen=True)
class Seat:
    """The one game role a member should hold (a player, or a spectator)."""

    user: int
    role: Target
    spectator: bool = False
    """A spectator: of the game's roles only the spectators' is his seat's business."""


@dataclass(frozen=True)
class Footprint:
    """Everything of one game that should be on Discord now."""

    game_id: int
    guild: int
    roles: tuple[RoleSpec, ...]
    places: tuple[PlaceSpec, ...]
    seats: tuple[Seat, ...]

    @property
    def role_ids(self) -> set[Target]:
        """Every game role."""
        return {role.id for role in self.roles}


def declared(
    live: LiveGame | None,
    game: Game | None,
    layout: Layout,
    *,
    over: bool = False,
    reveal: bool = False,
    revived: Collection[str] = (),
    night: bool | None = None,
) -> Footprint:
    """What the game should have on Discord (``layout`` with ids or provisioning keys).

    ``over``: the game has ended (every channel read-only, the tribune silent); with
    ``reveal`` its mafia rooms and log are open to every player, read-only. ``revived``:
    players counted alive still (the footprint as it was before their deaths). ``night``: the
    footprint by night (True) or by day (False) rather than at the game's stage (it differs
    only with quiet nights). Without ``live`` (a footprint compared for who may do what, not
    made) names are empty. Without ``game`` (a broken game whose deal cannot be read) the mafia
    rooms keep only the host, and nobody has a seat."""
    game_id = live.id if live is not None else 0
    closed = layout.closed(game) if night is None else layout.quiet_nights and night

    def name(key: str, **params: Any) -> str:
        return phrase(live, key, game=game_id, **params)[:100] if live is not None else ""

    def topic(key: str, **params: Any) -> str | None:
        return phrase(live, key, game=game_id, **params)[:1024] if live is not None else None

    roles: list[RoleSpec] = []
    for city in layout.cities:
        roles.append(
            RoleSpec(
                ("roles", "cities", city.name, "living"),
                city.living,
                name("game_role.living", city=city.name),
            )
        )
        if city.quiet is not None:
            roles.append(
                RoleSpec(
                    ("roles", "cities", city.name, "quiet"),
                    city.quiet,
                    name("game_role.quiet", city=city.name),
                )
            )
    roles.append(RoleSpec(("roles", "dead"), layout.dead_role, name("game_role.dead")))
    if layout.spectators is not None:
        roles.append(RoleSpec(("spectators",), layout.spectators, name("game_role.spectators")))

    category = layout.category
    places = [
        PlaceSpec(
            ("category",), category, CATEGORY, name("channel.category"), None, tuple(layout.base())
        )
    ]
    for city in layout.cities:
        places.append(
            PlaceSpec(
                ("cities", city.name, "text"),
                city.text,
                TEXT,
                name("channel.city", city=city.name),
                category,
                tuple(layout.city_overwrites(city.name, over=over, closed=closed)),
                topic("channel.topic.city", city=city.name),
            )
        )
        places.append(
            PlaceSpec(
                ("cities", city.name, "mafia"),
                city.mafia,
                TEXT,
                name("channel.mafia", city=city.name),
                category,
                tuple(
                    layout.mafia_overwrites(
                        game, city.name, over=over, reveal=reveal, revived=revived
                    )
                ),
                topic("channel.topic.mafia", city=city.name),
            )
        )
    places.append(
        PlaceSpec(
            ("voice",),
            layout.voice,
            VOICE_CHANNEL,
            name("channel.voice"),
            category,
            tuple(layout.voice_overwrites(over=over)),
        )
    )
    places.append(
        PlaceSpec(
            ("dead",),
            layout.dead,
            TEXT,
            name("channel.dead"),
            category,
            tuple(layout.dead_overwrites(over=over)),
            topic("channel.topic.dead"),
        )
    )
    places.append(
        PlaceSpec(
            ("log",),
            layout.log,
            TEXT,
            name("channel.log"),
            category,
            tuple(layout.log_overwrites(over=over, reveal=reveal)),
            topic("channel.topic.log"),
        )
    )

    seats = (
        []
        if game is None
        else [
            Seat(
                int(player),
                layout.role_of(game, player)
                if game.is_alive(player) or player in revived
                else layout.dead_role,
            )
            for player in game.players
        ]
    )
    if layout.spectators is not None and live is not None:
        seats.extend(
            Seat(int(user), layout.spectators, spectator=True)
            for user in live.record.channels.get("watching", [])
        )
    return Footprint(game_id, layout.guild, tuple(roles), tuple(places), tuple(seats))


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
        OutboxItem(
            "member_role", {"guild_id": guild, "user_id": user, "role": role}, {"add": False}
        )
        for user, role in old_seats
        if (user, role) not in new_seats
    ]
    old_grants, new_grants = grants(before), grants(after)
    for (place, member), overwrite in new_grants.items():
        if old_grants.get((place, member)) != overwrite:
            items.append(
                OutboxItem(
                    "overwrite",
                    {"channel_id": place, "id": member, "type": MEMBER},
                    {"allow": str(overwrite.allow), "deny": str(overwrite.deny)},
                )
            )
    items += [
        OutboxItem(
            "overwrite", {"channel_id": place, "id": member, "type": MEMBER}, {"delete": True}
        )
        for place, member in old_grants
        if (place, member) not in new_grants
    ]
    items += [
        OutboxItem("member_role", {"guild_id": guild, "user_id": user, "role": role}, {"add": True})
        for user, role in new_seats
        if (user, role) not in old_seats
    ]
    return items


def death_items(game: Game, channels: dict[str, Any], player: str) -> list[OutboxItem]:
    """``player`` died (``game`` says so): the difference between the footprint with him alive
    and without (his city role off, his mafia room's overwrite dropped, the dead role on)."""
    layout = layout_of(channels)
    if layout is None:
        return []
    return member_changes(
        declared(None, game, layout, revived={player}), declared(None, game, layout), {int(player)}
    )


def quiet_night_items(game: Game, channels: dict[str, Any], *, night: bool) -> list[OutboxItem]:
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
            items.append(
                OutboxItem(
                    "overwrite",
                    {
                        "channel_id": new.id,
                        "id": int(target) if str(target).isdigit() else target,
                        "type": ROLE,
                    },
                    {"allow": str(overwrite.allow), "deny": str(overwrite.deny)},
                    **({"lane": "provision"} if target in twins else {}),
                )
            )
    return items


def replacement_items(
    live: LiveGame, game: Game, old: str, new: str, *, quiet: bool
) -> list[OutboxItem]:
    """``new`` took ``old``'s place (the game already names ``new``): the difference between the
    footprint with ``old`` in the seat and with ``new`` (the seat's game role, the city's quiet
    twin if the newcomer turned pings off and the twin exists; a mafioso's room overwrite).
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
    before = _seated(
        after, int(new), int(old), old_role if game.is_alive(new) else layout.dead_role
    )
    return member_changes(before, after, {int(old), int(new)})


def _seated(footprint: Footprint, new: int, old: int, role: Target) -> Footprint:
    """The footprint with ``old`` (holding ``role``) where it has ``new``."""
    seats = tuple(
        Seat(old, role) if seat.user == new and not seat.spectator else seat
        for seat in footprint.seats
    )
    places = tuple(
        replace(
            place,
            overwrites=tuple(
                Overwrite(old, o.allow, o.deny, o.type)
                if o.type == MEMBER and o.target == new
                else o
                for o in place.overwrites
            ),
        )
        for place in footprint.places
    )
    return replace(footprint, seats=seats, places=places)


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
            items.append(
                OutboxItem(
                    "overwrite",
                    {"channel_id": place.id, "id": key, "type": ROLE},
                    {"allow": str(found.allow), "deny": str(found.deny)},
                    lane="provision",
                )
            )
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
    channels: dict[str, Any], game: Game | None, *, reveal: bool
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
        OutboxItem(
            "edit_channel",
            {"channel_id": place.id},
            {"permission_overwrites": [o.to_dict() for o in place.overwrites]},
            lane=lane,
        )
        for place in after.places
        if before[place.id].overwrites != place.overwrites
    ]
    return items, lane


# ------------------------------------------------------------------ making it


def provision_plan(live: LiveGame, game: Game, layout: Layout) -> list[OutboxItem]:
    """Everything ``/host start`` makes, in order: the roles, the category, the channels with their
    overwrites, each player's role. Each is an intent of the provisioning lane."""
    footprint = declared(live, game, layout)
    reason = phrase(live, "channel.category", game=live.id)
    items = [create_role_item(footprint, role, reason) for role in footprint.roles]
    items += [create_channel_item(footprint, place, reason) for place in footprint.places]
    items += [
        OutboxItem(
            "member_role",
            {"guild_id": footprint.guild, "user_id": seat.user, "role": seat.role},
            {"add": True},
            lane="provision",
        )
        for seat in footprint.seats
    ]
    # last: remove a duplicate that a create whose answer was lost may have left
    made = [entry.payload for entry in items if entry.kind in ("create_role", "create_channel")]
    items.append(
        OutboxItem(
            "sweep",
            {"guild_id": footprint.guild},
            {
                "roles": [p["name"] for p in made if "type" not in p],
                "category": layout.category,
                "category_name": reason,
                "topics": [p["topic"] for p in made if p.get("topic")],
                "names": [p["name"] for p in made if p.get("type") == VOICE_CHANNEL],
            },
            lane="provision",
        )
    )
    return items


def create_role_item(
    footprint: Footprint, role: RoleSpec, reason: str, key: Target | None = None
) -> OutboxItem:
    """The intent that makes a game role (under ``key``, else under its own)."""
    return OutboxItem(
        "create_role",
        {"guild_id": footprint.guild, "key": role.id if key is None else key},
        {
            "name": role.name,
            "permissions": "0",
            "mentionable": False,
            "hoist": False,
            "reason": reason,
        },
        lane="provision",
    )


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
    payload: dict[str, Any] = {
        "type": place.kind,
        "name": place.name,
        "parent": parent or place.parent,
        "reason": reason,
        "overwrites": [o.to_plan() for o in chosen],
    }
    if place.topic:
        payload["topic"] = place.topic
    return OutboxItem(
        "create_channel",
        {"guild_id": footprint.guild, "key": place.id if key is None else key},
        payload,
        lane="provision",
    )


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
    items = [
        OutboxItem("delete_channel", {"channel_id": made[key]}, {}, lane="provision")
        for key in channels
    ]
    if sweep is not None:
        items.append(sweep)
    if f"{attempt}:category" in made:
        items.append(
            OutboxItem(
                "delete_channel", {"channel_id": made[f"{attempt}:category"]}, {}, lane="provision"
            )
        )
    items.extend(
        OutboxItem("delete_role", {"guild_id": guild_id, "role": made[key]}, {}, lane="provision")
        for key in roles
    )
    return items


# ------------------------------------------------------------------ what Discord shows, and the difference


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

    def __bool__(self) -> bool:
        return bool(
            self.lost_roles or self.lost_places or self.adds or self.removals or self.overwrites
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
    overwrites = []
    for place in footprint.places:
        if int(place.id) not in seen.overwrites:
            continue  # not known to the bot yet (just made): nothing to compare
        present = seen.overwrites[int(place.id)]
        for o in place.overwrites:
            watched = (
                int(o.target) in game_roles or int(o.target) == footprint.guild
            )  # and @everyone's
            if o.type == ROLE and watched and present.get(int(o.target)) != (o.allow, o.deny):
                overwrites.append((int(place.id), int(o.target), o.allow, o.deny))
    return Repairs(
        adds=tuple(adds),
        removals=tuple(removals),
        stuck=tuple(sorted(stuck)),
        standins=standins,
        overwrites=tuple(overwrites),
    )


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
    for channel_id in channel_ids:
        channel = guild.get_channel(channel_id)
        if channel is None:
            continue
        found = {}
        for target, overwrite in channel.overwrites.items():
            if isinstance(target, discord.Role):
                allow, deny = overwrite.pair()
                found[target.id] = (allow.value, deny.value)
        overwrites[channel_id] = found
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


# ------------------------------------------------------------------ the reconciler


def _put(channels: dict[str, Any], path: Path, value: Any) -> None:
    target: Any = channels
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value


def _state(channels: dict[str, Any]) -> dict[str, Any]:
    """The reconciler's own part of a game's record."""
    return channels.setdefault("footprint", {})


class Reconciler:
    """Brings each running game's footprint on Discord back to what it should be (see the module
    docstring); one task per game, woken by events, never two passes of a game at once."""

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._dirty: set[int] = set()
        self._waiting: set[int] = set()
        """Games whose pass waits for their lanes to go idle."""
        self._queried: set[int] = set()
        self._refused: dict[tuple[int, str], str] = {}
        """Discord's code for each making again it refused: (game, key) → code."""
        self._kept: dict[int, set[int]] = {}
        """Guild → its finished games whose channels are kept (their lock is kept true too)."""
        self._finished: dict[int, Game | None] = {}
        """Each kept finished game as its log makes it (None: its log does not replay)."""
        self._started: dict[int, tuple[dict[str, list[str]], set[int]]] = {}
        """Who held powers when a game started (its first commit seen running), and the members
        the bot knew of then, until a pass notes it in the record."""
        self._closed = False
        self.passes = 0
        """Passes made (for tests and benchmarks: a pass that found nothing counts too)."""
        self.listeners: dict[str, Callable[..., Coroutine[Any, Any, None]]] = {
            "on_guild_channel_delete": self._channel_event,
            "on_guild_channel_create": self._channel_event,
            "on_guild_channel_update": self._channel_update,
            "on_guild_role_delete": self._role_event,
            "on_guild_role_create": self._role_event,
            "on_guild_role_update": self._role_update,
            "on_member_join": self._member_event,
            "on_member_remove": self._member_event,
            "on_member_update": self._member_update,
            "on_guild_available": self._guild_available,
        }

    def install(self) -> None:
        """Listen to the gateway, the outbox and the game service."""
        for name, listener in self.listeners.items():
            self.bot.add_listener(listener, name)
        self.bot.outbox.idle_hooks.append(self._idle)
        self.bot.outbox.failure_hooks.append(self._failed)
        self.bot.service.after_commit.append(self._committed)

    async def close(self) -> None:
        """Stop listening and stop every pass."""
        self._closed = True
        for name, listener in self.listeners.items():
            self.bot.remove_listener(listener, name)
        for hooks, hook in (
            (self.bot.outbox.idle_hooks, self._idle),
            (self.bot.outbox.failure_hooks, self._failed),
            (self.bot.service.after_commit, self._committed),
        ):
            if hook in hooks:
                hooks.remove(hook)  # type: ignore[arg-type]
        for task in self._tasks.values():
            task.cancel()
        for task in self._tasks.values():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # ------------------------------------------------------------------ what wakes it

    def request(self, game_id: int) -> None:
        """Look at a game again soon."""
        if self._closed:
            return
        self._dirty.add(game_id)
        task = self._tasks.get(game_id)
        if task is None or task.done():
            self._tasks[game_id] = asyncio.create_task(
                self._run(game_id), name=f"footprint-{game_id}"
            )

    def _guild(self, guild_id: int | None) -> None:
        if guild_id is None:
            return
        for live in self.bot.service.games():
            if live.record.guild_id == guild_id and live.record.state == GameState.RUNNING:
                self.request(live.id)
        for game_id in sorted(self._kept.get(guild_id, ())):
            self.request(game_id)

    async def _channel_event(self, channel: discord.abc.GuildChannel) -> None:
        self._guild(channel.guild.id)

    async def _channel_update(
        self, before: discord.abc.GuildChannel, after: discord.abc.GuildChannel
    ) -> None:
        if before.overwrites != after.overwrites or before.category_id != after.category_id:
            self._guild(after.guild.id)

    async def _role_event(self, role: discord.Role) -> None:
        self._guild(role.guild.id)

    async def _role_update(self, before: discord.Role, after: discord.Role) -> None:
        if before.position != after.position or before.permissions != after.permissions:
            self._guild(after.guild.id)

    async def _member_event(self, member: discord.Member) -> None:
        self._guild(member.guild.id)

    async def _member_update(self, before: discord.Member, after: discord.Member) -> None:
        if before.roles != after.roles:
            self._guild(after.guild.id)

    async def _guild_available(self, guild: discord.Guild) -> None:
        try:
            kept = await self.bot.storage.kept_finished(guild.id)
        except Exception:
            log.exception(
                "guild %s: could not read which finished games keep their channels", guild.id
            )
            kept = []
        if kept:
            self._kept.setdefault(guild.id, set()).update(kept)
        self._guild(guild.id)

    async def _failed(self, item: OutboxItem, error: BaseException) -> None:
        if item.kind in CREATES and str(item.target.get("key", "")).startswith("again"):
            # a role or channel made again that Discord refused: said to the host when the lane
            # is idle, and not tried again in this game (its cap reached, a permission taken)
            code = getattr(error, "code", None) or getattr(error, "status", None) or "—"
            self._refused[(item.game_id, str(item.target["key"]))] = str(code)
            return
        if item.kind in ("member_role", "overwrite", "send", "edit_channel"):
            live = self.bot.service.find(item.game_id)
            if live is not None and live.record.state == GameState.RUNNING:
                self.request(item.game_id)

    def _committed(self, live: LiveGame) -> None:
        if live.record.state != GameState.RUNNING:
            self._started.pop(live.id, None)
        if (
            live.record.state == GameState.RUNNING
            and "footprint" not in live.record.channels
            and live.game is not None
        ):
            # a game just started: who holds powers now is what a later grant is compared with,
            # taken here and not at the first pass (which waits for the lanes: a grant meanwhile
            # would be taken for one held at the start)
            guild = self.bot.get_guild(live.record.guild_id)
            if guild is not None and live.id not in self._started:
                self._started[live.id] = (
                    {str(user): kinds for user, kinds in powers_of(guild).items()},
                    {member.id for member in guild.members},
                )
            self.request(live.id)
        elif kept_after_end(live.record) and live.id not in self._kept.get(
            live.record.guild_id, set()
        ):
            self._kept.setdefault(live.record.guild_id, set()).add(live.id)
            self.request(live.id)  # a game just ended: once its lock is on, it is kept so

    async def _idle(self, game_id: int, lane: str) -> None:
        if lane == "provision":
            await self._remade(game_id)
        if game_id in self._waiting and lane in ("provision", "permissions"):
            self._waiting.discard(game_id)
            self.request(game_id)

    # ------------------------------------------------------------------ a pass

    async def _run(self, game_id: int) -> None:
        while game_id in self._dirty and not self._closed:
            await asyncio.sleep(SETTLE)  # the rest of a burst of events
            self._dirty.discard(game_id)
            if await self._busy(game_id):
                self._waiting.add(game_id)
                if await self._busy(game_id):
                    return  # the idle hook asks again
                self._waiting.discard(game_id)
            try:
                await self.reconcile(game_id)
            except NoGame:
                return
            except Exception:
                log.exception("game %s: could not reconcile its roles and channels", game_id)

    async def _look_when_idle(self, game_id: int) -> None:
        """Look at the game again once its changing lanes are idle: their idle hook asks, or, if
        they went idle before the game was put on the waiting list, a pass is asked for now."""
        self._waiting.add(game_id)
        if not await self._busy(game_id):
            self._waiting.discard(game_id)
            self.request(game_id)

    async def _busy(self, game_id: int) -> bool:
        return (await self.bot.storage.lanes_progress(game_id, CHANGING_LANES))[1] > 0

    async def _ids(self, live: LiveGame) -> Layout | None:
        """The game's layout with every id resolved (None: something is still being made)."""
        channels = live.record.channels
        if "roles" not in channels:
            return None
        layout = Layout.from_channels(channels)
        try:
            return resolved(layout, await self.bot.storage.provisioned(live.id))
        except KeyError:
            return None

    async def reconcile(self, game_id: int) -> Repairs | None:
        """One pass over a game: the difference found (and repaired), None if it was not looked at."""
        live = self.bot.service.find(game_id)
        if live is None or live.record.state != GameState.RUNNING:
            return await self._reconcile_kept(game_id)
        if live.game is None or live.broken is not None:
            return None
        if _state(dict(live.record.channels)).get("remaking"):
            return None
        guild = self.bot.get_guild(live.record.guild_id)
        layout = await self._ids(live)
        if guild is None or layout is None:
            return None
        progress = await self.bot.storage.lanes_progress(game_id, CHANGING_LANES)
        if progress[1]:  # the game's own changes are on their way: look once they are made
            await self._look_when_idle(game_id)
            return None
        self.passes += 1
        footprint = declared(live, live.game, layout)
        users = [seat.user for seat in footprint.seats]
        if game_id not in self._queried:  # after a restart the bot knows no member yet
            self._queried.add(game_id)
            for start in range(0, len(users), QUERY_CHUNK):
                with contextlib.suppress(Exception):
                    await guild.query_members(
                        user_ids=users[start : start + QUERY_CHUNK], limit=QUERY_CHUNK, cache=True
                    )
        seen = observe(guild, [int(place.id) for place in footprint.places], users)
        given_up = {tuple(path) for path in _state(dict(live.record.channels)).get("given_up", [])}
        found = repairs(footprint, seen, given_up)
        if found:
            found = await self._confirmed(guild, footprint, seen, found, given_up)
            if await self.bot.storage.lanes_progress(game_id, CHANGING_LANES) != progress:
                # the game changed Discord while the pass looked (a death committed meanwhile, its
                # roles being given): what it saw is stale, and repairing it would do them twice
                await self._look_when_idle(game_id)
                return None
        await self._write(live, footprint, seen, found, _marker(live))
        return found

    async def _reconcile_kept(self, game_id: int) -> Repairs | None:
        """One pass over a finished game whose channels are kept: the footprint of the game over
        (the end's lock, the spectators' role where it reads) is put back, every overwrite of a
        game role or @everyone and who holds which game role; nothing is made again (what a
        person deletes of a finished game stays deleted, as its transcript would delete it)."""
        storage = self.bot.storage
        record = await storage.game(game_id)
        if record is None or not await self._still_kept(record):
            return None
        guild = self.bot.get_guild(record.guild_id)
        live = LiveGame(record, language=await self.bot.service.language(record.guild_id))
        layout = await self._ids(live)
        if guild is None or layout is None:
            return None
        self.passes += 1
        if game_id not in self._finished:  # a finished game changes no more: replayed once
            try:
                self._finished[game_id] = (
                    await self.bot.service.finished_game(record)
                    if record.setup and record.seed is not None
                    else None
                )
            except Broken:
                self._finished[game_id] = None
        game = self._finished[game_id]
        footprint = declared(
            live, game, layout, over=True, reveal=bool(record.lobby.get("reveal", True))
        )
        users = [seat.user for seat in footprint.seats]
        seen = observe(guild, [int(place.id) for place in footprint.places], users)
        footprint = _of_roles(footprint, seen.roles.keys() | {footprint.guild})
        everything = {role.path for role in footprint.roles} | {
            place.path for place in footprint.places
        }
        found = repairs(footprint, seen, everything)
        if found:
            found = await self._confirmed(guild, footprint, seen, found, everything)
        if not found:
            return found
        items = [
            OutboxItem(
                "member_role",
                {"guild_id": footprint.guild, "user_id": user, "role": role},
                {"add": add},
                lane="permissions",
            )
            for add, pairs in ((False, found.removals), (True, found.adds))
            for user, role in pairs
        ]
        items += [
            OutboxItem(
                "overwrite",
                {"channel_id": channel, "id": role, "type": ROLE},
                {"allow": str(allow), "deny": str(deny)},
                lane="permissions",
            )
            for channel, role, allow, deny in found.overwrites
        ]
        async with self.bot.service.lock(game_id):
            now = await storage.game(game_id)
            if now is None or now.channels != record.channels or not await self._still_kept(now):
                self.request(game_id)  # someone began or stopped watching meanwhile: look again
                return found
            await storage.add_outbox(game_id, items)
        self.bot.outbox.kick(game_id)
        log.warning(
            "game %s (over): footprint repaired: %d role(s) given, %d taken, %d overwrite(s) put back",
            game_id,
            len(found.adds),
            len(found.removals),
            len(found.overwrites),
        )
        return found

    async def _still_kept(self, record: GameRecord) -> bool:
        """Whether a finished game's channels are still kept (no transcript replaces them); a game
        no longer kept is forgotten."""
        transcript = await self.bot.storage.transcript(record.id)
        if kept_after_end(record) and (
            transcript is None or transcript["state"] not in ("posting", "done")
        ):
            return True
        self._kept.get(record.guild_id, set()).discard(record.id)
        self._finished.pop(record.id, None)
        return False

    async def _confirmed(
        self,
        guild: discord.Guild,
        footprint: Footprint,
        seen: Observed,
        found: Repairs,
        given_up: Collection[Path],
    ) -> Repairs:
        """The difference as Discord's REST answers show it (the cache may lag behind the bot's own
        changes): a member's roles, a channel or role that seems gone."""
        http = self.bot.http
        if found.lost_roles or found.lost_places:
            roles = {
                int(role["id"]): int(role.get("position", 0))
                for role in await http.get_roles(guild.id)
            }
            channels = {int(c["id"]) for c in await http.get_all_guild_channels(guild.id)}
            seen = Observed(
                roles,
                channels,
                seen.overwrites,
                seen.members,
                seen.bot_top,
                seen.bot_owns,
                seen.powers,
            )
            return repairs(footprint, seen, given_up)
        overwrites = dict(seen.overwrites)
        for channel_id in {channel for channel, *_ in found.overwrites}:
            try:
                data = await http.get_channel(channel_id)
            except discord.NotFound:
                overwrites.pop(channel_id, None)
                continue
            overwrites[channel_id] = {
                int(o["id"]): (int(o["allow"]), int(o["deny"]))
                for o in data.get("permission_overwrites", [])
                if int(o["type"]) == ROLE
            }
        members = dict(seen.members)
        for user in {user for user, _ in found.adds + found.removals} | set(found.standins):
            try:
                data = await http.get_member(guild.id, user)
            except discord.NotFound:
                members.pop(user, None)
                continue
            members[user] = frozenset(int(role) for role in data.get("roles", []))
        seen = Observed(
            seen.roles, seen.channels, overwrites, members, seen.bot_top, seen.bot_owns, seen.powers
        )
        return repairs(footprint, seen, given_up)

    async def _write(
        self, live: LiveGame, footprint: Footprint, seen: Observed, found: Repairs, marker: str
    ) -> None:
        """Store what the pass decided: its intents, the host's notices, the reconciler's notes
        (nothing if the game changed since the pass looked: a death meanwhile, say; then the game
        is looked at again)."""
        before = _state(dict(live.record.channels))
        known_stuck = set(before.get("stuck", []))
        new_stuck = [role for role in found.stuck if role not in known_stuck]
        powers = {str(user): kinds for user, kinds in seen.powers.items()}
        noted = before.get("powers")
        if noted is None and live.id in self._started:
            # a member the bot did not know of at the start (met since, or queried by this pass)
            # is taken to hold then what he holds now
            held, known = self._started[live.id]
            noted = {
                **{user: kinds for user, kinds in powers.items() if int(user) not in known},
                **held,
            }
        gained = (
            {}
            if noted is None
            else {
                user: [kind for kind in kinds if kind not in noted.get(user, [])]
                for user, kinds in powers.items()
            }
        )
        gained = {
            user: kinds
            for user, kinds in gained.items()
            if kinds and int(user) not in self._staff(live)
        }
        old_standins = {
            int(user): {int(c): tuple(v) for c, v in chans.items()}
            for user, chans in before.get("standins", {}).items()
        }
        if (
            not found
            and not new_stuck
            and not gained
            and before.get("powers") == powers
            and old_standins == found.standins
            and set(found.stuck) == known_stuck
        ):
            return
        bot_role = self._bot_role_name(live)

        def change(live: LiveGame) -> list[OutboxItem]:
            if live.record.state != GameState.RUNNING:
                return []
            if _marker(live) != marker:
                self.request(live.id)
                return []
            state = _state(live.record.channels)
            items = self._items(live, footprint, found, old_standins)
            state["stuck"] = list(found.stuck)
            state["powers"] = powers
            state["standins"] = {
                str(user): {str(c): list(v) for c, v in chans.items()}
                for user, chans in found.standins.items()
            }
            lines = [
                phrase(
                    live,
                    "footprint.role_above",
                    role=self._role_name(footprint, role),
                    bot_role=bot_role,
                )
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
            log_channel = live.record.channels.get("log")
            if log_channel is not None and str(log_channel).isdigit():
                items += [
                    OutboxItem(
                        "send",
                        {"channel_id": int(log_channel)},
                        {"content": line[:2000], "allowed_mentions": NO_PINGS},
                    )
                    for line in lines
                ]
            return items

        await self.bot.service.update(live.id, change)
        stored = self.bot.service.find(live.id)
        if stored is None or "powers" in _state(dict(stored.record.channels)):
            self._started.pop(live.id, None)  # noted in the record from now on
        if found or new_stuck or gained:
            log.warning(
                "game %s: footprint repaired: %d role(s) and %d channel(s) made again, %d role(s) given, "
                "%d taken, %d overwrite(s) put back, roles above the bot %s, members standing in %s, "
                "powers gained %s",
                live.id,
                len(found.lost_roles),
                len(found.lost_places),
                len(found.adds),
                len(found.removals),
                len(found.overwrites),
                list(found.stuck),
                sorted(found.standins),
                gained,
            )

    def _staff(self, live: LiveGame) -> set[int]:
        return {live.record.host_id, *(int(c) for c in live.record.channels.get("cohosts", []))}

    def _bot_role_name(self, live: LiveGame) -> str:
        guild = self.bot.get_guild(live.record.guild_id)
        me = guild.me if guild is not None else None
        return me.top_role.name if me is not None else "—"

    @staticmethod
    def _role_name(footprint: Footprint, role: int) -> str:
        return next((spec.name for spec in footprint.roles if int(spec.id) == role), str(role))

    def _items(
        self,
        live: LiveGame,
        footprint: Footprint,
        found: Repairs,
        old_standins: dict[int, dict[int, tuple[int, int]]],
    ) -> list[OutboxItem]:
        guild = footprint.guild
        items: list[OutboxItem] = []
        if found.lost_roles or found.lost_places:
            return self._remake(live, footprint, found)
        for user, role in found.adds:
            items.append(
                OutboxItem(
                    "member_role",
                    {"guild_id": guild, "user_id": user, "role": role},
                    {"add": True},
                    lane="permissions",
                )
            )
        for user, role in found.removals:
            items.append(
                OutboxItem(
                    "member_role",
                    {"guild_id": guild, "user_id": user, "role": role},
                    {"add": False},
                    lane="permissions",
                )
            )
        for channel, role, allow, deny in found.overwrites:
            items.append(
                OutboxItem(
                    "overwrite",
                    {"channel_id": channel, "id": role, "type": ROLE},
                    {"allow": str(allow), "deny": str(deny)},
                    lane="permissions",
                )
            )
        for user, chans in found.standins.items():
            for channel, (allow, deny) in chans.items():
                if old_standins.get(user, {}).get(channel) != (allow, deny):
                    items.append(
                        OutboxItem(
                            "overwrite",
                            {"channel_id": channel, "id": user, "type": MEMBER},
                            {"allow": str(allow), "deny": str(deny)},
                            lane="permissions",
                        )
                    )
        for user, chans in old_standins.items():
            for channel in chans:
                if channel not in found.standins.get(user, {}):
                    items.append(
                        OutboxItem(
                            "overwrite",
                            {"channel_id": channel, "id": user, "type": MEMBER},
                            {"delete": True},
                            lane="permissions",
                        )
                    )
        return items

    def _remake(self, live: LiveGame, footprint: Footprint, found: Repairs) -> list[OutboxItem]:
        """Make lost roles and channels again under fresh keys (the record keeps the old ids until
        they are made: :meth:`_remade` swaps them and says so in the new channels)."""
        state = _state(live.record.channels)
        serial = int(state.get("serial", 0)) + 1
        state["serial"] = serial
        reason = phrase(live, "channel.category", game=live.id)
        keys: dict[Target, str] = {}
        remaking: list[dict[str, Any]] = []
        items: list[OutboxItem] = []
        for role in found.lost_roles:
            key = f"again{serial}:{'/'.join(role.path)}"
            keys[role.id] = key
            remaking.append(
                {"key": key, "path": list(role.path), "kind": "role", "name": role.name}
            )
            items.append(create_role_item(footprint, role, reason, key))
        lost = {place.id for place in found.lost_places}
        for place in found.lost_places:
            key = f"again{serial}:{'/'.join(place.path)}"
            keys[place.id] = key
            remaking.append(
                {"key": key, "path": list(place.path), "kind": "channel", "name": place.name}
            )

        def swapped(overwrites: Iterable[Overwrite]) -> list[Overwrite]:
            return [
                Overwrite(keys.get(o.target, o.target), o.allow, o.deny, o.type) for o in overwrites
            ]

        for place in found.lost_places:
            parent = keys.get(place.parent, place.parent) if place.parent is not None else None
            items.append(
                create_channel_item(
                    footprint, place, reason, keys[place.id], swapped(place.overwrites), parent
                )
            )
        for role in found.lost_roles:
            for place in footprint.places:
                if place.id in lost:
                    continue
                found_overwrite = place.role_overwrite(role.id)
                if found_overwrite is not None:
                    items.append(
                        OutboxItem(
                            "overwrite",
                            {"channel_id": place.id, "id": keys[role.id], "type": ROLE},
                            {
                                "allow": str(found_overwrite.allow),
                                "deny": str(found_overwrite.deny),
                            },
                            lane="provision",
                        )
                    )
            for seat in footprint.seats:
                if seat.role == role.id:
                    items.append(
                        OutboxItem(
                            "member_role",
                            {
                                "guild_id": footprint.guild,
                                "user_id": seat.user,
                                "role": keys[role.id],
                            },
                            {"add": True},
                            lane="provision",
                        )
                    )
        state["remaking"] = remaking
        return items

    async def _remade(self, game_id: int) -> None:
        """The provisioning lane is idle: what was made again takes the old ids' place in the
        record, a category's channels go back in it, and each new channel says why it is new."""
        live = self.bot.service.find(game_id)
        if live is None or live.record.state != GameState.RUNNING:
            return
        remaking = _state(dict(live.record.channels)).get("remaking")
        if not remaking:
            return
        made = await self.bot.storage.provisioned(game_id)

        def change(live: LiveGame) -> list[OutboxItem]:
            channels = live.record.channels
            state = _state(channels)
            items: list[OutboxItem] = []
            for entry in state.pop("remaking", []):
                new = made.get(entry["key"])
                if new is None:
                    code = self._refused.pop((game_id, entry["key"]), "—")
                    log.error(
                        "game %s: %s was not made again (Discord: %s)", game_id, entry["key"], code
                    )
                    state.setdefault("given_up", []).append(entry["path"])
                    log_channel = channels.get("log")
                    if log_channel is not None and str(log_channel).isdigit():
                        items.append(
                            OutboxItem(
                                "send",
                                {"channel_id": int(log_channel)},
                                {
                                    "content": phrase(
                                        live,
                                        f"footprint.not_made.{entry['kind']}",
                                        name=entry.get("name", "—"),
                                        code=code,
                                    ),
                                    "allowed_mentions": NO_PINGS,
                                },
                            )
                        )
                    continue
                _put(channels, tuple(entry["path"]), new)
                if entry["kind"] == "channel" and tuple(entry["path"]) != ("category",):
                    items.append(
                        OutboxItem(
                            "send",
                            {"channel_id": new},
                            {
                                "content": phrase(live, "footprint.channel_again"),
                                "allowed_mentions": NO_PINGS,
                            },
                        )
                    )
                elif tuple(entry["path"]) == ("category",):
                    items += [
                        OutboxItem(
                            "edit_channel",
                            {"channel_id": place},
                            {"parent_id": new},
                            lane="permissions",
                        )
                        for place in _children(channels)
                    ]
            return items

        await self.bot.service.update(game_id, change)
        self.request(game_id)


def _of_roles(footprint: Footprint, existing: Collection[int]) -> Footprint:
    """The footprint without what names a game role that is gone (a finished game's role a
    person deleted is not made again: nobody is given it, no overwrite of it is put back)."""
    places = tuple(
        replace(
            place,
            overwrites=tuple(
                o for o in place.overwrites if o.type != ROLE or int(o.target) in existing
            ),
        )
        for place in footprint.places
    )
    return replace(
        footprint,
        places=places,
        seats=tuple(seat for seat in footprint.seats if int(seat.role) in existing),
    )


def kept_after_end(record: GameRecord) -> bool:
    """Whether a game has ended and its channels were kept at its end (not deleted)."""
    return (
        record.state in FINISHED
        and "roles" in record.channels
        and record.lobby.get("at_end", "keep") == "keep"
    )


def _marker(live: LiveGame) -> str:
    """What a pass's decisions rest on: the game's places and roles, who plays and who lives."""
    channels = {key: value for key, value in live.record.channels.items() if key != "footprint"}
    game = live.game
    seats = (sorted(game.players), sorted(game.alive())) if game is not None else ()
    return json.dumps([channels, seats], sort_keys=True, default=str)


def _children(channels: dict[str, Any]) -> list[int]:
    ids = [ids[kind] for ids in channels["cities"].values() for kind in ("text", "mafia")]
    return [int(value) for value in [*ids, channels["voice"], channels["dead"], channels["log"]]]


__all__ = [
    "Footprint",
    "Observed",
    "PlaceSpec",
    "Reconciler",
    "Repairs",
    "RoleSpec",
    "Seat",
    "cohost_items",
    "death_items",
    "declared",
    "end_items",
    "kept_after_end",
    "made_mid_game",
    "member_changes",
    "observe",
    "provision_plan",
    "quiet_items",
    "quiet_night_items",
    "repairs",
    "replacement_items",
    "role_made_items",
    "rollback_plan",
    "watch_items",
]
