"""What the service hands out and takes: a loaded game (:class:`LiveGame`), what a command's sender
saw (:class:`Seen`), its answer (:class:`Answer`), the refusals, and the renderer's protocol."""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Protocol

from bot.errors import UserError
from bot.storage import (
    GameRecord,
    OutboxItem,
)
from rules import (
    Command,
    EndDay,
    EndNight,
    Event,
    ExecuteByLot,
    Game,
    Stage,
    StartVoting,
)

Clock = Callable[[], float]

#: how many interaction ids a process remembers to catch repeats without the database
RECENT_INTERACTIONS = 50_000

#: an interaction older than this (seconds since Discord created it) is acknowledged before
#: its command is committed: Discord refuses answers after 3 s, and the commit, the answer's
#: trip and a clock a little off must fit in what is left
DEFER_AFTER = 1.5


class NoGame(Exception):
    """No such game, or it is not running."""


class MovedOn(UserError):
    """The command was meant for a stage the game has already left; nothing changed."""

    def __init__(self) -> None:
        super().__init__("error.moved_on")


class JustBegan(MovedOn):
    """A person's stage move sent within moments of the timer beginning the stage it would end:
    he could not have seen that stage yet; nothing changed. ``stage`` is the stage the timer
    began (``day 1 voting``), ``late`` how many seconds after its start the command was sent."""

    def __init__(self, stage: str, late: float) -> None:
        super().__init__()
        self.stage = stage
        self.late = late


class GameBroken(UserError):
    """The game's log no longer replays: only closing it is accepted."""

    def __init__(self) -> None:
        super().__init__("error.game_broken")


class NotStored(UserError):
    """The database failed to store the change: nothing of it counts, memory is as before."""

    def __init__(self) -> None:
        super().__init__("error.not_stored")


class Unconfirmed(UserError):
    """The database went while the change was being committed: it may stand or not; the game
    is read again from the database before its next change."""

    def __init__(self) -> None:
        super().__init__("storage.unconfirmed")


class Expired(Exception):
    """Discord no longer accepts the interaction's answer: the command was not applied."""


class Broken(Exception):
    """A stored game cannot be rebuilt; ``key`` and ``params`` say why, in the catalogue."""

    def __init__(self, key: str, **params: Any) -> None:
        super().__init__(f"{key} {params}")
        self.key = key
        self.params = params


@dataclass(frozen=True)
class Seen:
    """What a command's sender saw: the stage he names (``day 1 discussion``) and/or when he
    sent it (unix time, from his interaction's snowflake). Either may be unknown."""

    stage: str | None = None
    at: float | None = None
    settle: float = 0.0
    """A person's stage move that names no stage: refused (:class:`JustBegan`) when sent less
    than this many seconds after the timer began the current stage (the game's lobby keeps
    when, as ``timer_began``)."""


class Answer(Protocol):
    """The interaction a command came with, as far as the service needs it."""

    @property
    def sent_at(self) -> float:
        """Unix time Discord created the interaction."""
        ...

    @property
    def deferred(self) -> bool:
        """Whether it is acknowledged already."""
        ...

    async def defer(self) -> bool:
        """Acknowledge it now ("thinking…"); False if Discord refused."""
        ...


@cache
def rules_version() -> str:
    """A digest of the rules' source: a snapshot written by other rules is checked by a
    full replay."""
    digest = hashlib.sha256()
    folder = resources.files("rules")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".py"):
            digest.update(entry.name.encode())
            digest.update(entry.read_bytes())
    return digest.hexdigest()[:16]


@dataclass
class LiveGame:
    """A game in memory: its stored record and, once dealt, the rules' game."""

    record: GameRecord
    game: Game | None = None
    language: str = "ru"
    holds: set[str] = field(default_factory=set)
    deferred: list[tuple[Command, str, str | None]] = field(default_factory=list)
    broken: Broken | None = None
    """Why the stored game cannot be played on (None: it can)."""
    tick_times: dict[int, float] = field(default_factory=dict)
    """Wall time (unix) of the accepted commands that still matter, by the rules' tick: the
    standing votes' (the rules count time in ticks; the ballot shows clock times)."""
    stale: bool = False
    """A commit of this game failed: read it again from the database before its next change."""

    @property
    def id(self) -> int:
        """The game's id."""
        return self.record.id

    def stage_key(self) -> str | None:
        """The current stage as text, e.g. ``day 1 voting``, or None outside play."""
        if self.game is None or self.game.over:
            return None
        return f"{self.game.phase} {self.game.stage.value}"


@dataclass(frozen=True)
class Before:
    """A game in memory as it was before a change (what the database holds), put back when the
    change is not stored. Kept on every change, so kept cheaply (some 30 µs, a tenth of
    :func:`copy.deepcopy`'s time for a running game's record): the record pickled (plain data
    of this process, read back only here), the rules' state as its plain data (the
    round-tripping form the snapshots use); each is rebuilt only when put back."""

    record: bytes
    game: dict[str, Any] | None
    tick_times: dict[int, float]

    @classmethod
    def of(cls, live: LiveGame) -> Before:
        """What ``live`` holds now."""
        game = live.game.to_dict() if live.game is not None else None
        return cls(
            pickle.dumps(live.record, protocol=pickle.HIGHEST_PROTOCOL), game, dict(live.tick_times)
        )

    def put_back(self, live: LiveGame) -> None:
        """Make ``live`` hold it again."""
        live.record = pickle.loads(self.record)
        live.game = Game.from_dict(self.game) if self.game is not None else None
        live.tick_times = dict(self.tick_times)


@dataclass(frozen=True)
class Applied:
    """The outcome of :meth:`GameService.apply`."""

    events: list[Event]
    duplicate: bool = False
    deferred: bool = False
    seq: int | None = None
    repeated: bool = False
    """A player's choice that stood already as it is: not applied, nothing announced."""


class Renderer(Protocol):
    """Turns rule events into outbox items (messages, permission changes)."""

    def __call__(self, live: LiveGame, events: list[Event]) -> list[OutboxItem]: ...


Listener = Callable[[LiveGame, list[Event]], Awaitable[None]]

Observer = Callable[[LiveGame, list[Event], float], None]
"""Sees a command's events with the wall time it was accepted, before they are rendered and
stored (what the game remembers of it beyond the rules' state: when each vote came)."""


def timer_mark(began: float | None) -> Callable[[LiveGame, list[Event]], list[OutboxItem]]:
    """The ``after`` of a timer's move (:meth:`GameService.apply`): if the stage changed from the
    one that began at ``began``, the lobby keeps that the timer began this one
    (``timer_began``), so that a person's move sent moments later is refused (:class:`JustBegan`)."""

    def mark(live: LiveGame, events: list[Event]) -> list[OutboxItem]:
        if live.record.stage_since != began:
            live.record.lobby["timer_began"] = live.record.stage_since
        return []

    return mark


def nothing_to_render(live: LiveGame, events: list[Event]) -> list[OutboxItem]:
    """The renderer used until the Discord layer installs its own."""
    return []


#: the stages a timer ends, by their timer's name (``execution``: how long a day waits for an
#: absent host's ``/host execute`` before the city executes by lot)
TIMED_STAGES = {
    Stage.DISCUSSION: "discussion",
    Stage.VOTING: "voting",
    Stage.NIGHT: "night",
    Stage.EXECUTION: "execution",
}


def command_for_deadline(stage: Stage) -> Command | None:
    """What the timer does when a stage's time is up (what the host would do)."""
    if stage is Stage.DISCUSSION:
        return StartVoting()
    if stage is Stage.VOTING:
        return EndDay()
    if stage is Stage.NIGHT:
        return EndNight()
    if stage is Stage.EXECUTION:
        return ExecuteByLot()
    return None
