"""The shapes of a game record's JSON fields: its lobby and its channels.

Both are stored as JSON objects (``games.lobby``, ``games.channels``), so they
are typed as :class:`~typing.TypedDict`: the stored form stays what it was, and
mypy checks every key code reads or writes. ``total=False``: a key is absent
until something sets it; readers give its default (``lobby.get("reveal",
True)``).

A lobby holds two kinds of keys: what the host chooses before the start
(:class:`LobbySettings`) and what the game keeps for itself while it runs
(:class:`GameMarks`: a pause, a provisioning under way, the day's votes...).
They share one JSON object because both are written in the same commit as the
command that changes them.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict, cast

#: an id on Discord, or the key of something a provisioning makes until it is made
Target = int | str


class Seat(TypedDict, total=False):
    """A member signed up in the lobby (or a stand-in who replaced one)."""

    id: int
    name: str
    exposed: list[str]
    """The hidden rooms his server permissions already show him (said to the host at the start)."""
    replaces: int
    replaced_by: int


class LobbySettings(TypedDict, total=False):
    """What the host (or a preset, or the server's config) chooses before the start."""

    channel_id: int | None
    """The channel the lobby was opened in."""
    players: list[Seat]
    setup: dict[str, Any]
    """The setup options (``rules.setup``) chosen with ``/host setup``."""
    rules: dict[str, Any]
    """Rule options overriding the config's (``rules.model.RuleOptions``)."""
    timers: dict[str, int]
    """A stage's timer in seconds, by stage key."""
    cohosts: list[int]
    preset: dict[str, Any]
    """The preset the settings came from (its key, name and settings: ``cogs.presets``)."""
    reveal: bool
    pings: bool
    quiet_nights: bool
    everyone_reads: bool
    at_end: str
    """``keep`` (the channels stay, read-only) or ``delete`` (config ``channels.at_end``)."""
    archive_after: int
    spectators: str
    will: int
    idle_strike: int
    leave_strike: int | None
    scheduled: int
    """The schedule the lobby was opened for (``/mafia schedule``)."""


class Paused(TypedDict):
    """A paused game: the stage it was paused in and the seconds its timer had left."""

    stage: str | None
    remaining: float | None
    by: NotRequired[str]
    """Who stopped it when not the host: ``powers``, the bot lacking a permission
    (:mod:`bot.powers`)."""


class Provision(TypedDict, total=False):
    """A start under way: the attempt, where it is, what it makes, and how it ends."""

    attempt: int
    state: str
    layout: Channels
    exposed: dict[str, list[str]]
    answer: dict[str, Any]
    reason: dict[str, Any]
    target: str


class Attendance(TypedDict, total=False):
    """A roll call before the start: its round, who was asked, who answered, until when."""

    round: int
    asked: list[int]
    confirmed: list[int]
    until: float


class DayVotes(TypedDict):
    """One city's ballots of one day, for the summary at the end."""

    day: int
    city: str
    ballots: list[list[Any]]


class GameMarks(TypedDict, total=False):
    """What a game keeps for itself in its lobby while it is started and played."""

    paused: Paused
    provision: Provision
    attempts: int
    attendance: Attendance
    leaving: dict[str, float | None]
    """Players who left the server, by name: when they are struck out (None: never)."""
    votes: list[DayVotes]
    wills: dict[str, str]
    idle_checked: str | None
    timer_began: float | None
    scheduled_pinged: bool
    host_gone: float
    """When the host left the server (unix time); gone once he is back or someone took over."""


class Lobby(LobbySettings, GameMarks, total=False):
    """A game record's ``lobby``: its settings and its marks."""


class CityChannels(TypedDict):
    """A city's channels: its public text channel and its mafia's hidden room."""

    text: int
    mafia: int


class CityRoles(TypedDict, total=False):
    """A city's game roles: its living residents', and the quiet twin when it has one."""

    living: int
    quiet: Target
    """Named by its key while it is being made (it is made mid-game, for a first quiet player)."""


class GameRoles(TypedDict):
    """The game's roles: the dead's and each city's."""

    dead: int
    cities: dict[str, CityRoles]


class Channels(TypedDict, total=False):
    """A game record's ``channels``: where the game is on Discord (``bot.channels.Layout``'s
    stored form, its ids as Discord gave them), and what the footprint and the season keep
    beside it. A start's plan (:attr:`Provision.layout`) has the same shape with the keys of
    what it makes in place of the ids; the spectators' role is named by its key until made."""

    guild_id: int
    bot_id: int
    host_id: int
    category: int
    voice: int
    dead: int
    log: int
    everyone_reads: bool
    cities: dict[str, CityChannels]
    roles: GameRoles
    quiet: list[str]
    cohosts: list[int]
    spectators: Target
    quiet_nights: bool
    absent: list[int]
    """Members named by the footprint who left the server (until they come back): no overwrite
    names them, as Discord refuses a channel's overwrites that name a non-member."""
    watching: list[int]
    at_end: str
    archive_after: int
    footprint: dict[str, Any]


def as_json(lobby: Lobby) -> dict[str, Any]:
    """The lobby as the JSON object it is stored as, for code that walks keys named in a list
    (a preset's house rules are copied key by key), which a TypedDict cannot check."""
    return cast(dict[str, Any], lobby)
