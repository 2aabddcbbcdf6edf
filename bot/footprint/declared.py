"""What a game should have on Discord now: its roles, its channels with their overwrites, its
seats (:func:`declared`)."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from typing import Any

from bot.channels import (
    CATEGORY,
    MEMBER,
    ROLE,
    TEXT,
    VOICE_CHANNEL,
    CityPlaces,
    Layout,
    Overwrite,
    Target,
)
from bot.i18n import phrase
from bot.service import LiveGame
from rules import Game

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


@dataclass(frozen=True)
class _Names:
    """The names and topics of a game's roles and channels, in its language (none without
    ``live``: a footprint compared for who may do what, not made)."""

    live: LiveGame | None

    def name(self, key: str, **params: Any) -> str:
        """A role's or channel's name."""
        if self.live is None:
            return ""
        return phrase(self.live, key, game=self.live.id, **params)[:100]

    def topic(self, key: str, **params: Any) -> str | None:
        """A channel's topic."""
        if self.live is None:
            return None
        return phrase(self.live, key, game=self.live.id, **params)[:1024]

    def place(
        self,
        path: Path,
        place: Target,
        kind: int,
        parent: Target | None,
        overwrites: Iterable[Overwrite],
        key: str,
        topic: str | None = None,
        **params: Any,
    ) -> PlaceSpec:
        """A channel named by the text ``key`` (and ``topic``: its topic's) with ``params``."""
        return PlaceSpec(
            path,
            place,
            kind,
            self.name(key, **params),
            parent,
            tuple(overwrites),
            self.topic(topic, **params) if topic is not None else None,
        )


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
    names = _Names(live)
    places = [
        names.place(
            ("category",), layout.category, CATEGORY, None, layout.base(), "channel.category"
        )
    ]
    for city in layout.cities:
        places += _city_places(layout, game, city, names, over, reveal, revived, closed)
    places += _common_places(layout, names, over=over, reveal=reveal)
    if layout.absent:  # Discord refuses overwrites that name a member who left the server
        places = [
            replace(place, overwrites=present(place.overwrites, layout.absent)) for place in places
        ]
    return Footprint(
        game_id,
        layout.guild,
        tuple(_role_specs(layout, names)),
        tuple(places),
        tuple(_seats(live, game, layout, revived)),
    )


def present(overwrites: Iterable[Overwrite], absent: Collection[int]) -> tuple[Overwrite, ...]:
    """The overwrites without those of members who left the server."""
    return tuple(o for o in overwrites if o.type != MEMBER or int(o.target) not in absent)


def _role_specs(layout: Layout, names: _Names) -> list[RoleSpec]:
    """The game's roles: each city's living role (and its quiet twin), the dead's, the
    spectators'."""
    roles: list[RoleSpec] = []
    for city in layout.cities:
        roles.append(
            RoleSpec(
                ("roles", "cities", city.name, "living"),
                city.living,
                names.name("game_role.living", city=city.name),
            )
        )
        if city.quiet is not None:
            roles.append(
                RoleSpec(
                    ("roles", "cities", city.name, "quiet"),
                    city.quiet,
                    names.name("game_role.quiet", city=city.name),
                )
            )
    roles.append(RoleSpec(("roles", "dead"), layout.dead_role, names.name("game_role.dead")))
    if layout.spectators is not None:
        roles.append(
            RoleSpec(("spectators",), layout.spectators, names.name("game_role.spectators"))
        )
    return roles


def _city_places(
    layout: Layout,
    game: Game | None,
    city: CityPlaces,
    names: _Names,
    over: bool,
    reveal: bool,
    revived: Collection[str],
    closed: bool,
) -> list[PlaceSpec]:
    """A city's channel and its mafia's room."""
    category, params = layout.category, {"city": city.name}
    text = layout.city_overwrites(city.name, over=over, closed=closed)
    mafia = layout.mafia_overwrites(game, city.name, over=over, reveal=reveal, revived=revived)
    return [
        names.place(
            ("cities", city.name, "text"),
            city.text,
            TEXT,
            category,
            text,
            "channel.city",
            "channel.topic.city",
            **params,
        ),
        names.place(
            ("cities", city.name, "mafia"),
            city.mafia,
            TEXT,
            category,
            mafia,
            "channel.mafia",
            "channel.topic.mafia",
            **params,
        ),
    ]


def _common_places(layout: Layout, names: _Names, *, over: bool, reveal: bool) -> list[PlaceSpec]:
    """The channels every city shares: the tribune, the dead's channel, the host's log."""
    category = layout.category
    return [
        names.place(
            ("voice",),
            layout.voice,
            VOICE_CHANNEL,
            category,
            layout.voice_overwrites(over=over),
            "channel.voice",
        ),
        names.place(
            ("dead",),
            layout.dead,
            TEXT,
            category,
            layout.dead_overwrites(over=over),
            "channel.dead",
            "channel.topic.dead",
        ),
        names.place(
            ("log",),
            layout.log,
            TEXT,
            category,
            layout.log_overwrites(over=over, reveal=reveal),
            "channel.log",
            "channel.topic.log",
        ),
    ]


def _seats(
    live: LiveGame | None, game: Game | None, layout: Layout, revived: Collection[str]
) -> list[Seat]:
    """Each player's game role (his city's, or the dead's), then each spectator's."""
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
    return seats


def of_roles(footprint: Footprint, existing: Collection[int]) -> Footprint:
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


def seated(footprint: Footprint, new: int, old: int, role: Target) -> Footprint:
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
