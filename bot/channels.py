"""A game's roles and channels: what they are, who may do what in them, and how they are made.

Permissions go through game roles, secrets through member overwrites. Per
game the bot makes roles that are not mentionable and grant nothing
(permissions 0): per city one for its living residents and, when some
resident turned pings off, its quiet twin (same overwrites, never pinged);
and one for the game's dead. Each player holds exactly one game role at a
time. Role membership is public on Discord, so a role carries only public
facts: a city, alive or dead.

One category per game; per city a public text channel and a hidden mafia
room; one voice channel (the tribune) for last words; a channel for the
dead; a log only the host sees. In every one @everyone is denied View
Channel and Connect, and the bot and the host have member overwrites. A
city channel: the city's living roles write; the other cities' living roles
and the dead role read (all only with ``channels.everyone_reads``; without
it only the city's own, the dead role too when there is a single city), and
the game's spectator role reads, once a first spectator made it (it is in
no other channel, and the end's reveal does not open the rooms to it). The
mafia room: member overwrites of the city's living mafiosi, never a role.
The tribune: the living roles speak and write in its text chat, the dead
role listens. The dead channel: the dead role writes. The dead are denied
:data:`bot.permissions.SILENCE` wherever they read (on the tribune
:data:`bot.permissions.TRIBUNE_SILENCE`: its status line and events too). At the end every channel
is read-only to all who could read it, and the tribune silent. With quiet nights (a house rule)
a city channel is read-only at night to its own living roles too.

So a channel carries at most 3 + 2 × cities + 2 overwrites (a mafia room
3 + its mafiosi), within Discord's 100 for 200 players in 10 cities, and a
death is three REST calls: the city role off, the mafia room's overwrite
dropped (a mafia member's), the dead role on.

Names, topics and audit-log reasons say nothing beyond those public facts.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, cast

import discord

from bot.i18n import mention, phrase, t
from bot.limits import listing
from bot.outbox.intents import DeleteChannel, DeleteRole
from bot.permissions import (
    BOT,
    EVERYONE_DENY,
    HOST,
    LISTEN,
    READ,
    READS_AUDIT_LOG,
    SEES_HIDDEN,
    SILENCE,
    TRIBUNE_SILENCE,
    VOICE,
    WRITE,
    flag_names,
    missing,
)
from bot.service import LiveGame
from bot.storage import OutboxItem
from bot.storage.shapes import Channels
from rules import Game, Stage

log = logging.getLogger(__name__)

MEMBER = 1
ROLE = 0
TEXT, VOICE_CHANNEL, CATEGORY = 0, 2, 4

#: the most overwrites Discord takes in one channel
MAX_OVERWRITES = 100

Target = int | str
"""An id, or the key under which the game's provisioning makes it (resolved by the outbox)."""


@dataclass(frozen=True)
class Overwrite:
    """One permission overwrite of one member (or role) on one channel."""

    target: Target
    allow: int
    deny: int
    type: int = MEMBER

    def to_dict(self) -> dict[str, Any]:
        """The overwrite as Discord's JSON (needs a resolved id)."""
        return {
            "id": str(self.target),
            "type": self.type,
            "allow": str(self.allow),
            "deny": str(self.deny),
        }

    def to_plan(self) -> dict[str, Any]:
        """The overwrite as a provisioning intent stores it (the target may be a key)."""
        return {"target": self.target, "type": self.type, "allow": self.allow, "deny": self.deny}


@dataclass
class CityPlaces:
    """One city's channels and roles (ids, or provisioning keys)."""

    name: str
    text: Target
    mafia: Target
    living: Target
    quiet: Target | None = None

    @property
    def roles(self) -> list[Target]:
        """The city's living roles: the pinged one and, if made, its quiet twin."""
        return [self.living] + ([self.quiet] if self.quiet is not None else [])


@dataclass
class Layout:
    """Where a game is on Discord: its roles and channels, and who may see what."""

    guild: int
    bot: int
    host: int
    category: Target
    cities: list[CityPlaces]
    voice: Target
    dead: Target
    log: Target
    dead_role: Target
    everyone_reads: bool = True
    quiet: set[str] = field(default_factory=set)
    cohosts: list[int] = field(default_factory=list)
    spectators: Target | None = None
    """The game's spectator role (made when a first member asks to watch; None until then)."""
    quiet_nights: bool = False
    """A house rule: at night the city channels are read-only to their own living residents too."""
    absent: set[int] = field(default_factory=set)
    """Members who left the server (a host, a co-host, a player): not named by any overwrite."""

    def base(self) -> list[Overwrite]:
        """What every game channel has: @everyone kept out, the bot, the host and his co-hosts in."""
        return [
            Overwrite(self.guild, 0, EVERYONE_DENY.value, ROLE),
            Overwrite(self.bot, BOT.value, 0),
            Overwrite(self.host, HOST.value, 0),
            *(Overwrite(c, HOST.value, 0) for c in self.cohosts),
        ]

    def city(self, name: str) -> CityPlaces:
        """One city's places."""
        return next(city for city in self.cities if city.name == name)

    def role_of(self, game: Game, player: str) -> Target:
        """The living role a player holds: his city's, or its quiet twin."""
        city = self.city(game.city_of(player))
        return city.quiet if player in self.quiet and city.quiet is not None else city.living

    # ------------------------------------------------------------------ overwrites

    def closed(self, game: Game | None) -> bool:
        """Whether the city channels are read-only to their living residents now (quiet nights, at
        night)."""
        return self.quiet_nights and game is not None and game.stage is Stage.NIGHT

    def city_overwrites(
        self, name: str, *, over: bool = False, closed: bool = False
    ) -> list[Overwrite]:
        """A city channel: its living roles write (not when ``closed``: a quiet night), the others
        read (see the module docstring)."""
        result = self.base()
        for city in self.cities:
            if city.name == name:
                allow, deny = (
                    (READ.value, SILENCE.value) if over or closed else (READ.value | WRITE.value, 0)
                )
            elif self.everyone_reads:
                allow, deny = READ.value, SILENCE.value
            else:
                continue
            result.extend(Overwrite(role, allow, deny, ROLE) for role in city.roles)
        if self.everyone_reads or len(self.cities) == 1:
            result.append(Overwrite(self.dead_role, READ.value, SILENCE.value, ROLE))
        if self.spectators is not None:
            result.append(Overwrite(self.spectators, READ.value, SILENCE.value, ROLE))
        return result

    def mafia_overwrites(
        self,
        game: Game | None,
        name: str,
        *,
        over: bool = False,
        reveal: bool = False,
        revived: Collection[str] = (),
    ) -> list[Overwrite]:
        """A mafia room: only the city's living mafiosi (and the host) see it; at the end, with
        ``reveal``, every player of the game reads it. (No game: a broken one whose deal cannot
        be read; its room keeps only the host.) ``revived``: players counted alive still (the
        room as it was before their deaths)."""
        allow, deny = (READ.value, SILENCE.value) if over else (READ.value | WRITE.value, 0)
        mafiosi = (
            []
            if game is None
            else [
                p
                for p in game.residents[name]
                if game.status_of(p).in_mafia and (game.is_alive(p) or p in revived)
            ]
            if revived
            else game.living_mafiosi(name)
        )
        result = self.base() + [Overwrite(int(p), allow, deny) for p in mafiosi]
        return result + (self.everyone_reads_at_end() if over and reveal else [])

    def everyone_reads_at_end(self) -> list[Overwrite]:
        """Every game role reads, nobody writes: at the end, the secrets open to all players."""
        return [Overwrite(role, READ.value, SILENCE.value, ROLE) for role in self.roles()]

    def voice_overwrites(self, *, over: bool = False) -> list[Overwrite]:
        """The tribune: the living speak and write in its chat; the dead (everyone, at the end)
        listen."""
        living = (LISTEN.value, TRIBUNE_SILENCE.value) if over else (VOICE.value, 0)
        result = self.base()
        for city in self.cities:
            result.extend(Overwrite(role, *living, ROLE) for role in city.roles)
        result.append(Overwrite(self.dead_role, LISTEN.value, TRIBUNE_SILENCE.value, ROLE))
        return result

    def dead_overwrites(self, *, over: bool = False) -> list[Overwrite]:
        """The dead channel: only the dead (and the host) see and write."""
        allow, deny = (READ.value, SILENCE.value) if over else (READ.value | WRITE.value, 0)
        return self.base() + [Overwrite(self.dead_role, allow, deny, ROLE)]

    def log_overwrites(self, *, over: bool = False, reveal: bool = False) -> list[Overwrite]:
        """The host's log: the host alone; at the end, with ``reveal``, every player reads it."""
        return self.base() + (self.everyone_reads_at_end() if over and reveal else [])

    def channels(
        self, game: Game | None, *, over: bool = False, reveal: bool = False
    ) -> list[tuple[Target, list[Overwrite]]]:
        """Every channel of the game with the overwrites it has (at the end, with ``over``; the
        mafia rooms and the log open to every player, read-only, with ``reveal``; the city channels
        closed at a quiet night)."""
        result: list[tuple[Target, list[Overwrite]]] = []
        for city in self.cities:
            result.append(
                (city.text, self.city_overwrites(city.name, over=over, closed=self.closed(game)))
            )
            result.append(
                (city.mafia, self.mafia_overwrites(game, city.name, over=over, reveal=reveal))
            )
        result.append((self.voice, self.voice_overwrites(over=over)))
        result.append((self.dead, self.dead_overwrites(over=over)))
        result.append((self.log, self.log_overwrites(over=over, reveal=reveal)))
        return result

    def roles(self) -> list[Target]:
        """Every game role."""
        return [role for city in self.cities for role in city.roles] + [self.dead_role]

    # ------------------------------------------------------------------ stored form

    def to_channels(self) -> Channels:
        """The record's ``channels``: what the cogs need to find the game on Discord (ids once
        :func:`resolved`; a plan's keys before)."""
        stored = {
            "guild_id": self.guild,
            "bot_id": self.bot,
            "host_id": self.host,
            "category": self.category,
            "voice": self.voice,
            "dead": self.dead,
            "log": self.log,
            "everyone_reads": self.everyone_reads,
            "cities": {city.name: {"text": city.text, "mafia": city.mafia} for city in self.cities},
            "roles": {
                "dead": self.dead_role,
                "cities": {
                    city.name: {
                        "living": city.living,
                        **({"quiet": city.quiet} if city.quiet else {}),
                    }
                    for city in self.cities
                },
            },
            "quiet": sorted(self.quiet),
            "cohosts": list(self.cohosts),
            **({"spectators": self.spectators} if self.spectators is not None else {}),
            **({"quiet_nights": True} if self.quiet_nights else {}),
            **({"absent": sorted(self.absent)} if self.absent else {}),
        }
        return cast(Channels, stored)

    @classmethod
    def from_channels(cls, channels: Channels) -> Layout:
        """The layout of a running game from its record's ``channels``."""
        roles = channels["roles"]
        return cls(
            guild=int(channels["guild_id"]),
            bot=int(channels["bot_id"]),
            host=int(channels["host_id"]),
            category=channels["category"],
            cities=[
                CityPlaces(
                    name,
                    ids["text"],
                    ids["mafia"],
                    roles["cities"][name]["living"],
                    roles["cities"][name].get("quiet"),
                )
                for name, ids in channels["cities"].items()
            ],
            voice=channels["voice"],
            dead=channels["dead"],
            log=channels["log"],
            dead_role=roles["dead"],
            everyone_reads=bool(channels.get("everyone_reads", True)),
            quiet=set(channels.get("quiet", [])),
            cohosts=[int(c) for c in channels.get("cohosts", [])],
            spectators=channels.get("spectators"),
            quiet_nights=bool(channels.get("quiet_nights", False)),
            absent={int(member) for member in channels.get("absent", [])},
        )


# ------------------------------------------------------------------ provisioning


def plan_keys(attempt: int) -> dict[str, str]:
    """The keys of one provisioning attempt's roles and channels, by what they are."""
    return {name: f"{attempt}:{name}" for name in ("category", "voice", "dead", "log", "dead_role")}


def layout_for(
    live: LiveGame, game: Game, *, guild_id: int, bot_id: int, quiet: set[str], attempt: int
) -> Layout:
    """The layout a provisioning attempt makes, with keys for ids."""
    keys = plan_keys(attempt)
    cities = []
    for index, city in enumerate(game.cities):
        has_quiet = any(player in quiet for player in game.residents[city])
        cities.append(
            CityPlaces(
                city,
                f"{attempt}:text:{index}",
                f"{attempt}:mafia:{index}",
                f"{attempt}:living:{index}",
                f"{attempt}:quiet:{index}" if has_quiet else None,
            )
        )
    return Layout(
        guild=guild_id,
        bot=bot_id,
        host=live.record.host_id,
        category=keys["category"],
        cities=cities,
        voice=keys["voice"],
        dead=keys["dead"],
        log=keys["log"],
        dead_role=keys["dead_role"],
        everyone_reads=bool(live.record.lobby.get("everyone_reads", True)),
        quiet={player for player in game.players if player in quiet},
        cohosts=[int(c) for c in live.record.lobby.get("cohosts", [])],
        quiet_nights=bool(live.record.lobby.get("quiet_nights", False)),
    )


def resolved(layout: Layout, ids: dict[str, int]) -> Layout:
    """The layout with every key replaced by the id Discord returned for it."""

    def one(value: Target | None) -> Any:
        if value is None or isinstance(value, int):
            return value
        return ids[value]

    return Layout(
        guild=layout.guild,
        bot=layout.bot,
        host=layout.host,
        category=one(layout.category),
        cities=[
            CityPlaces(c.name, one(c.text), one(c.mafia), one(c.living), one(c.quiet))
            for c in layout.cities
        ],
        voice=one(layout.voice),
        dead=one(layout.dead),
        log=one(layout.log),
        dead_role=one(layout.dead_role),
        everyone_reads=layout.everyone_reads,
        quiet=set(layout.quiet),
        cohosts=list(layout.cohosts),
        spectators=one(layout.spectators),
        quiet_nights=layout.quiet_nights,
    )


# ------------------------------------------------------------------ during and after the game


def layout_of(channels: Channels) -> Layout | None:
    """The layout of a game's record ``channels`` (None before the game has game roles)."""
    if "roles" not in channels:
        if channels:
            log.warning("a game's channels were made before game roles: no permission change")
        return None
    return Layout.from_channels(channels)


def end_of_game_items(channels: Channels, game: Game | None, at_end: str) -> list[OutboxItem]:
    """At the end, with ``at_end`` ``delete``: delete the game's channels and roles (after the last
    messages said in them). Channels kept (``keep``) are locked as the footprint of the game over
    says (``bot.footprint.end_items``): nothing here."""
    layout = layout_of(channels)
    if layout is None or at_end != "delete":
        return []
    items = [DeleteChannel(target).item() for target, _ in layout.channels(game)]
    items.append(DeleteChannel(layout.category).item())
    spectators = [layout.spectators] if layout.spectators is not None else []
    items.extend(
        DeleteRole(layout.guild, role, lane="messages").item()
        for role in layout.roles() + spectators
    )
    return items


# ------------------------------------------------------------------ what a player's client can learn


def exposure(member: discord.Member | discord.User | Any) -> list[str]:
    """What a member's server permissions let him see of the game's secrets: ``hidden`` (every
    hidden room: an administrator or the owner), ``audit`` (the audit log: who was let in)."""
    permissions = getattr(member, "guild_permissions", None)
    if permissions is None:
        return []
    guild = getattr(member, "guild", None)
    owner = guild is not None and getattr(guild, "owner_id", None) == member.id
    found = []
    if owner or permissions.value & SEES_HIDDEN.value:
        found.append("hidden")
    if owner or permissions.value & (SEES_HIDDEN.value | READS_AUDIT_LOG.value):
        found.append("audit")
    return found


def exposure_lines(live: LiveGame, exposed: dict[str, list[str]], limit: int = 400) -> list[str]:
    """Warnings naming the players whose server permissions show them hidden rooms or the audit
    log (``exposed``: player → what :func:`exposure` found), a count and the names that fit."""
    lines = []
    for kind in ("hidden", "audit"):
        players = [player for player, kinds in exposed.items() if kind in kinds]
        if players:
            lines.append(
                phrase(
                    live,
                    f"exposed.{kind}",
                    count=len(players),
                    players=listing(live.language, [mention(p) for p in players], limit),
                )
            )
    return lines


def lobby_exposure(live: LiveGame) -> dict[str, list[str]]:
    """What the lobby's players' server permissions showed when they joined."""
    return {
        str(p["id"]): list(p["exposed"])
        for p in live.record.lobby.get("players", [])
        if p.get("exposed")
    }


def permission_names(language: str, flags: list[str]) -> str:
    """Permissions by the names Discord's client gives them in ``language``, comma separated."""
    return ", ".join(t(language, f"permission.{flag}") for flag in flags)


def missing_permissions(permissions: discord.Permissions) -> list[str]:
    """Discord's flag names of what the bot lacks to run a game (empty when all is there)."""
    return missing(permissions)


__all__ = [
    "CATEGORY",
    "MAX_OVERWRITES",
    "TEXT",
    "VOICE_CHANNEL",
    "CityPlaces",
    "Layout",
    "Overwrite",
    "end_of_game_items",
    "exposure",
    "exposure_lines",
    "flag_names",
    "layout_for",
    "layout_of",
    "lobby_exposure",
    "missing_permissions",
    "permission_names",
    "resolved",
]
