"""A game's channels: what they are, who may do what in them, and provisioning them.

One category per game; per city a public text channel and a hidden mafia
channel; one voice channel (the tribune) for last words; a channel for the
dead; a host-only log. Permissions are member overwrites the bot sets
itself: a city's living residents write in their city's channel, everyone
in the game may read it (``channels.everyone_reads``); only a city's living
mafiosi see its mafia channel; the dead write only in the dead channel and
speak nowhere; the host sees everything.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import discord

from bot.permissions import BOT, EVERYONE_DENY, HOST, LISTEN, READ, SILENCE, VOICE, WRITE, missing
from bot.storage import OutboxItem
from rules import Game, Status

log = logging.getLogger(__name__)

P = discord.Permissions

MEMBER = 1
ROLE = 0


@dataclass(frozen=True)
class Overwrite:
    """One permission overwrite of one member (or role) on one channel."""

    target: int
    allow: int
    deny: int
    type: int = MEMBER

    def to_dict(self) -> dict[str, Any]:
        """The overwrite as Discord's JSON."""
        return {"id": str(self.target), "type": self.type, "allow": str(self.allow),
                "deny": str(self.deny)}


def missing_permissions(permissions: discord.Permissions) -> list[str]:
    """The names of what the bot lacks to run a game (empty when all is there)."""
    return [name.replace("_", " ").title() for name in missing(permissions)]


def city_overwrites(
    game: Game, city: str, *, host_id: int, bot_id: int, guild_id: int, everyone_reads: bool
) -> list[Overwrite]:
    """A city channel: residents alive write, the game reads, the dead read only."""
    result = [
        Overwrite(guild_id, 0, EVERYONE_DENY.value, ROLE),
        Overwrite(bot_id, BOT.value, 0),
        Overwrite(host_id, HOST.value, 0),
    ]
    for player in game.players:
        resident = game.city_of(player) == city
        if not (resident or everyone_reads):
            continue
        if resident and game.is_alive(player):
            result.append(Overwrite(int(player), READ.value | WRITE.value, 0))
        else:
            result.append(Overwrite(int(player), READ.value, SILENCE.value))
    return result


def mafia_overwrites(game: Game, city: str, *, host_id: int, bot_id: int, guild_id: int) -> list[Overwrite]:
    """A mafia channel: only the city's living mafiosi (and the host) see it."""
    result = [
        Overwrite(guild_id, 0, EVERYONE_DENY.value, ROLE),
        Overwrite(bot_id, BOT.value, 0),
        Overwrite(host_id, HOST.value, 0),
    ]
    for player in game.living_mafiosi(city):
        result.append(Overwrite(int(player), READ.value | WRITE.value, 0))
    return result


def voice_overwrites(game: Game, *, host_id: int, bot_id: int, guild_id: int) -> list[Overwrite]:
    """The tribune: the living may speak; the dead may listen, never speak."""
    result = [
        Overwrite(guild_id, 0, EVERYONE_DENY.value, ROLE),
        Overwrite(bot_id, BOT.value, 0),
        Overwrite(host_id, HOST.value, 0),
    ]
    for player in game.players:
        if game.is_alive(player):
            result.append(Overwrite(int(player), VOICE.value, 0))
        else:
            result.append(Overwrite(int(player), LISTEN.value, SILENCE.value))
    return result


def dead_overwrites(game: Game, *, host_id: int, bot_id: int, guild_id: int) -> list[Overwrite]:
    """The dead channel: only the dead (and the host) see and write."""
    result = [
        Overwrite(guild_id, 0, EVERYONE_DENY.value, ROLE),
        Overwrite(bot_id, BOT.value, 0),
        Overwrite(host_id, HOST.value, 0),
    ]
    for player in game.players:
        if not game.is_alive(player):
            result.append(Overwrite(int(player), READ.value | WRITE.value, 0))
    return result


def log_overwrites(*, host_id: int, bot_id: int, guild_id: int) -> list[Overwrite]:
    """The host's log: the host alone."""
    return [
        Overwrite(guild_id, 0, EVERYONE_DENY.value, ROLE),
        Overwrite(bot_id, BOT.value, 0),
        Overwrite(host_id, HOST.value, 0),
    ]


def death_overwrites(game: Game, channels: dict[str, Any], player: str) -> list[OutboxItem]:
    """What changes when ``player`` dies: silent everywhere, welcome among the dead."""
    if not channels:
        return []
    member = int(player)
    city = game.city_of(player)
    items: list[OutboxItem] = []

    def put(channel_id: int, allow: int, deny: int) -> None:
        items.append(OutboxItem(
            "overwrite", {"channel_id": channel_id, "id": member, "type": MEMBER},
            {"allow": str(allow), "deny": str(deny)},
        ))

    for name, ids in channels.get("cities", {}).items():
        if name == city or channels.get("everyone_reads", True):
            put(ids["text"], READ.value, SILENCE.value)
    if game.status_of(player) is Status.MAFIOSO:
        put(channels["cities"][city]["mafia"], 0, READ.value | WRITE.value)
    if "voice" in channels:
        put(channels["voice"], LISTEN.value, SILENCE.value)
    if "dead" in channels:
        put(channels["dead"], READ.value | WRITE.value, 0)
    return items


def end_of_game_items(channels: dict[str, Any], game: Game, at_end: str) -> list[OutboxItem]:
    """At the end: delete the game's channels, or make every one read-only (and the voice mute) for
    the game."""
    if not channels:
        return []
    ids: list[int] = []
    for city in channels.get("cities", {}).values():
        ids.extend([city["text"], city["mafia"]])
    ids.extend(channels[key] for key in ("voice", "dead", "log") if key in channels)
    if at_end == "delete":
        items = [OutboxItem("delete_channel", {"channel_id": cid}, {}) for cid in ids]
        if "category" in channels:
            items.append(OutboxItem("delete_channel", {"channel_id": channels["category"]}, {}))
        return items
    readers: list[tuple[int, list[str]]] = [
        (ids["text"], list(game.players)) for ids in channels.get("cities", {}).values()
    ]
    readers.extend(
        (ids["mafia"], game.living_mafiosi(city)) for city, ids in channels.get("cities", {}).items()
    )
    if "dead" in channels:
        readers.append((channels["dead"], [p for p in game.players if not game.is_alive(p)]))
    items = [
        OutboxItem(
            "overwrite", {"channel_id": channel_id, "id": int(player), "type": MEMBER},
            {"allow": str(READ.value), "deny": str(SILENCE.value)},
        )
        for channel_id, players in readers
        for player in players
    ]
    if "voice" in channels:  # the tribune falls silent too (the dead are silent there already)
        items.extend(
            OutboxItem(
                "overwrite", {"channel_id": channels["voice"], "id": int(player), "type": MEMBER},
                {"allow": str(LISTEN.value), "deny": str(SILENCE.value)},
            )
            for player in game.alive()
        )
    return items
