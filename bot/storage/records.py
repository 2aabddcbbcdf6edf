"""What the database holds, as the bot reads it: games, outbox items, snapshots, the archive's
rows and statistics, and the errors storage raises."""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, cast

import aiosqlite

from bot.errors import UserError
from bot.storage.shapes import Channels, Lobby
from rules.roles import SIDE_OF as ROLE_SIDES

log = logging.getLogger(__name__)


class GameState(StrEnum):
    """Where a game is in its life: a lobby, being started (its channels being made), running,
    then over (played to its end) or cancelled. Stored as its value."""

    LOBBY = "lobby"
    STARTING = "starting"
    RUNNING = "running"
    OVER = "over"
    CANCELLED = "cancelled"


#: a game in one of these states is the guild's open game (one at a time)
OPEN_STATES = (GameState.LOBBY, GameState.STARTING, GameState.RUNNING)

#: a game in one of these states has ended
FINISHED = (GameState.OVER, GameState.CANCELLED)


def sql_states(states: Iterable[GameState]) -> str:
    """States as the items of an SQL list: ``'lobby', 'starting', 'running'``."""
    return ", ".join(f"'{state.value}'" for state in states)


#: the outbox's lanes, each carried out in order on its own (see :mod:`bot.outbox`)
LANES = ("provision", "permissions", "messages")

#: the lane of each kind of item unless the item names one
KIND_LANES = {
    "create_role": "provision",
    "create_channel": "provision",
    "delete_role": "provision",
    "overwrite": "permissions",
    "member_role": "permissions",
}


class IntegrityError(sqlite3.IntegrityError):
    """A constraint of the database refused a write (raised by the PostgreSQL backend; a subclass
    of sqlite3's, so code that catches that one catches both)."""


class PlayerBusy(UserError):
    """A player is already in another game being started or running (the database refused him);
    a refusal the user reads like any other (``error.player_in_other_game``)."""

    def __init__(self, user_id: int, game_id: int | None = None) -> None:
        super().__init__("error.player_in_other_game", player=f"<@{user_id}>")
        self.user_id = user_id
        self.game_id = game_id

    def __str__(self) -> str:
        return f"user {self.user_id} already plays in game {self.game_id}"


#: the states whose players are in ``active_players``
ACTIVE_STATES = (GameState.STARTING, GameState.RUNNING)


def is_postgres(database: Path | str) -> bool:
    """Whether a ``database:`` value is a PostgreSQL URL (else it is a SQLite file path)."""
    return isinstance(database, str) and database.startswith(("postgresql://", "postgres://"))


class GameExists(Exception):
    """The guild already has an open game."""


class StorageError(Exception):
    """The database cannot be opened or used: damaged, not a database, unreadable."""


class CommitUnknown(StorageError):
    """The connection broke while COMMIT was on its way: the server may or may not have
    committed (PostgreSQL flushes the commit, then answers; a crash between the two loses only
    the answer)."""


def is_storage_failure(error: BaseException) -> bool:
    """Whether ``error`` is the database failing (down, unreachable, disk full or damaged), as
    opposed to a refusal (a repeated interaction, a busy player) or a bug."""
    if isinstance(error, (sqlite3.IntegrityError, UserError)):
        return False
    if isinstance(error, (sqlite3.Error, OSError, StorageError, TimeoutError)):
        return True
    try:
        import asyncpg
    except ImportError:
        return False
    return isinstance(error, (asyncpg.PostgresError, asyncpg.InterfaceError))


class DamagedLog(Exception):
    """A stored command row cannot be read (not JSON, not an object)."""

    def __init__(self, game_id: int, seq: int, detail: str) -> None:
        super().__init__(f"game {game_id}: command {seq} is unreadable: {detail}")
        self.game_id = game_id
        self.seq = seq


@dataclass
class GameRecord:
    """A game as stored: its lobby until dealt, then its setup, seed and channels."""

    id: int
    guild_id: int
    host_id: int
    state: GameState
    created_at: float
    lobby: Lobby
    setup: dict[str, Any] | None = None
    seed: int | None = None
    channels: Channels = field(default_factory=lambda: Channels())
    deadline: float | None = None
    deadline_stage: str | None = None
    reminders_sent: list[int] = field(default_factory=list)
    command_count: int = 0
    stage_since: float | None = None
    damaged: str | None = None
    """Why the stored row could not be read (its JSON fields are then empty), or None."""

    @property
    def open(self) -> bool:
        """A lobby, a game being started or a running game."""
        return self.state in OPEN_STATES


@dataclass(frozen=True)
class OutboxItem:
    """Something to do on Discord, stored before it is done."""

    kind: str
    target: dict[str, Any]
    payload: dict[str, Any]
    id: int = 0
    game_id: int = 0
    seq: int | None = None
    attempts: int = 0
    lane: str = ""
    """The lane it goes in; empty: the lane of its kind (:data:`KIND_LANES`, else messages)."""
    created_at: float = 0.0

    @property
    def queue(self) -> str:
        """The lane the item is carried out in."""
        return self.lane or KIND_LANES.get(self.kind, "messages")


@dataclass(frozen=True)
class StoredSnapshot:
    """A snapshot as stored: its text, checked against its checksum by :attr:`intact`."""

    seq: int
    text: str
    checksum: str | None
    rules_version: str | None

    @property
    def intact(self) -> bool:
        """Whether the text is what was written (a snapshot from before checksums never is)."""
        return self.checksum is not None and checksum(self.text) == self.checksum


@dataclass(frozen=True)
class CommandRow:
    """One entry of a game's command log."""

    seq: int
    command: dict[str, Any]
    interaction_id: int | None
    source: str


def checksum(text: str) -> str:
    """The checksum stored with a snapshot: SHA-256 of its text, in hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _game(row: aiosqlite.Row) -> GameRecord:
    try:
        return _parse_game(row)
    except (ValueError, TypeError) as error:
        # one damaged row must not keep the other games from loading: it is kept, marked
        log.error("game %s: its stored row is unreadable: %s", row["id"], error)
        return GameRecord(
            id=row["id"],
            guild_id=row["guild_id"],
            host_id=row["host_id"],
            state=_state(row["state"]),
            created_at=row["created_at"],
            lobby={"players": []},
            damaged=str(error),
        )


def _state(value: str) -> GameState:
    """A damaged row's state: as stored when it is one, else cancelled (never open again)."""
    try:
        return GameState(value)
    except ValueError:
        return GameState.CANCELLED


def _parse_game(row: aiosqlite.Row) -> GameRecord:
    lobby = json.loads(row["lobby"])
    channels = json.loads(row["channels"])
    if not isinstance(lobby, dict) or not isinstance(channels, dict):
        raise ValueError("lobby or channels is not a JSON object")
    return GameRecord(
        id=row["id"],
        guild_id=row["guild_id"],
        host_id=row["host_id"],
        state=GameState(row["state"]),
        created_at=row["created_at"],
        lobby=cast(Lobby, lobby),  # JSON as stored: its shape is the code's (shapes.py)
        setup=json.loads(row["setup"]) if row["setup"] else None,
        seed=row["seed"],
        channels=cast(Channels, channels),
        deadline=row["deadline"],
        deadline_stage=row["deadline_stage"],
        reminders_sent=json.loads(row["reminders_sent"]),
        command_count=row["command_count"],
        stage_since=row["stage_since"],
    )


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _dumps(value: Any) -> str:
    return _ENCODER.encode(value)


UPDATE_GAME = (
    "UPDATE games SET host_id = ?, state = ?, lobby = ?, setup = ?, seed = ?, channels = ?, "
    "deadline = ?, deadline_stage = ?, reminders_sent = ?, command_count = ?, stage_since = ? "
    "WHERE id = ?"
)

INSERT_OUTBOX = (
    "INSERT INTO outbox (game_id, seq, kind, lane, target, payload, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def _game_row(record: GameRecord) -> tuple[Any, ...]:
    """The parameters of :data:`UPDATE_GAME` for a record."""
    return (
        record.host_id,
        record.state,
        _dumps(record.lobby),
        _dumps(record.setup) if record.setup is not None else None,
        record.seed,
        _dumps(record.channels),
        record.deadline,
        record.deadline_stage,
        _dumps(record.reminders_sent),
        record.command_count,
        record.stage_since,
        record.id,
    )


def _outbox_rows(
    game_id: int, seq: int | None, items: Iterable[OutboxItem], now: float
) -> list[tuple[Any, ...]]:
    """The parameters of :data:`INSERT_OUTBOX` for items (lane in the fourth place)."""
    return [
        (game_id, seq, item.kind, item.queue, _dumps(item.target), _dumps(item.payload), now)
        for item in items
    ]


Statements = list[tuple[str, list[tuple[Any, ...]]]]
"""A write: its statements in order, each with its rows (one ``executemany`` each)."""


def _item(row: aiosqlite.Row) -> OutboxItem:
    return OutboxItem(
        kind=row["kind"],
        target=json.loads(row["target"]),
        payload=json.loads(row["payload"]),
        id=row["id"],
        game_id=row["game_id"],
        seq=row["seq"],
        attempts=row["attempts"],
        lane=row["lane"],
        created_at=row["created_at"],
    )


@dataclass(frozen=True)
class LoggedCommand:
    """One command of a game's log, with who gave it (player, host, timer) and when."""

    seq: int
    command: dict[str, Any]
    source: str
    created_at: float


@dataclass(frozen=True)
class ArchiveSource:
    """What a game's archive is built from."""

    record: GameRecord
    log: list[LoggedCommand]
    voice: list[tuple[int, int | None, dict[str, Any]]]
    """The game's ``voice`` outbox items: (item id, seq of its command, payload)."""


@dataclass(frozen=True)
class ArchivedDeath:
    """One death of an archived game."""

    player: str
    city: str
    status: str
    cause: str
    phase: str
    by_city: str | None = None


@dataclass(frozen=True)
class ArchivedVote:
    """A vote counted at the end of a day: ``voter`` for ``candidate`` in ``city``."""

    day: int
    city: str
    voter: str
    candidate: str


@dataclass(frozen=True)
class ArchivedLastWord:
    """A last word: the command that gave it, and the recording's outbox item and message."""

    seq: int
    player: str
    phase: str
    outbox_id: int | None = None
    path: str | None = None
    duration: float | None = None
    channel_id: int | None = None
    message_id: int | None = None


@dataclass(frozen=True)
class ArchivedPlayer:
    """One player of an archived game and what he did in it."""

    player: str
    name: str
    city: str
    status: str
    side: str
    won: int
    survived: int
    executed: int
    votes: int
    votes_mafia: int
    checks: int
    hits: int
    replaced_by: str | None = None
    """Who took his seat (``/host replace``): he left the game before its end."""

    @property
    def figures(self) -> tuple[int, ...]:
        """What the player did, as the archive and the statistics store it: won, survived,
        executed, votes, votes for a mafia member, checks, hits."""
        return (
            self.won,
            self.survived,
            self.executed,
            self.votes,
            self.votes_mafia,
            self.checks,
            self.hits,
        )


@dataclass(frozen=True)
class ArchivedGame:
    """A finished game as archived: everything needed to show it, replay it and export it."""

    game_id: int
    guild_id: int
    host_id: int
    ended: str
    created_at: float
    ended_at: float
    seed: int
    setup: dict[str, Any]
    names: dict[str, str]
    log: list[tuple[dict[str, Any], str]]
    winners: list[str]
    last_phase: str
    cities: list[str]
    deaths: list[ArchivedDeath]
    votes: list[ArchivedVote]
    last_words: list[ArchivedLastWord]
    players: list[ArchivedPlayer]
    """Who sat in each seat at the end."""
    replaced: list[ArchivedPlayer] = field(default_factory=list)
    """Who left a seat to a replacement (``replaced_by``), in the order of the replacements."""

    @property
    def over(self) -> bool:
        """Played to the end (not ended by the host)."""
        return self.ended == GameState.OVER


@dataclass(frozen=True)
class ArchivedSummary:
    """One line of the guild's history."""

    game_id: int
    host_id: int
    ended: str
    ended_at: float
    winners: list[str]
    last_phase: str
    players: int
    cities: list[str]


@dataclass(frozen=True)
class PlayerStats:
    """A player's figures in a guild, over the games played to the end."""

    player: str
    name: str
    games: int
    wins: int
    survived: int
    executed: int
    votes: int
    votes_mafia: int
    checks: int
    hits: int
    mu: float
    sigma: float
    rating: float
    by_status: dict[str, tuple[int, int]] = field(default_factory=dict)
    """status -> (games, wins)."""
    replaced: int = 0
    """Games he left to a replacement (not among ``games``: he did not play them to the end)."""


#: the side a status plays for, as its role declares it (:data:`rules.roles.SIDE_OF`)
SIDE_OF: dict[str, str] = dict(ROLE_SIDES)


@dataclass(frozen=True)
class GuildResults:
    """How the statuses and the sides fared in a guild, over its games played to the end: each
    player's seat counts once (a game of three mafiosi counts three mafia seats)."""

    by_status: dict[str, tuple[int, int]]
    """status -> (seats, seats that won)."""
    by_side: dict[str, tuple[int, int]]
    """side (honest, mafia, or a lone role's) -> (seats, seats that won)."""


RateGame = Callable[
    [list[ArchivedPlayer], dict[str, tuple[float, float]], dict[str, tuple[float, float]]],
    tuple[dict[str, tuple[float, float]], dict[str, tuple[float, float]]],
]
"""(players, their stored (mu, sigma), the sides' stored (mu, sigma)) -> the new ones of both."""


def _archived_player(row: aiosqlite.Row) -> ArchivedPlayer:
    return ArchivedPlayer(
        row["player"],
        row["name"],
        row["city"],
        row["status"],
        row["side"],
        row["won"],
        row["survived"],
        row["executed"],
        row["votes"],
        row["votes_mafia"],
        row["checks"],
        row["hits"],
        row["replaced_by"],
    )


def _player_stats(row: aiosqlite.Row, by_status: dict[str, tuple[int, int]]) -> PlayerStats:
    return PlayerStats(
        row["player"],
        row["name"],
        row["games"],
        row["wins"],
        row["survived"],
        row["executed"],
        row["votes"],
        row["votes_mafia"],
        row["checks"],
        row["hits"],
        row["mu"],
        row["sigma"],
        row["rating"],
        by_status,
        row["replaced"],
    )
