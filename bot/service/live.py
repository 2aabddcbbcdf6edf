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
from rules.journal import Journal

Clock = Callable[[], float]

#: how many interaction ids a process remembers to catch repeats without the database
RECENT_INTERACTIONS = 50_000


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


class Held(UserError):
    """The game stands still (the bot lacks a server permission it needs: :mod:`bot.powers`)
    and takes no command now; nothing changed. The subclass names the permissions."""


def last_word_hold(player: str, *, upload: bool = False) -> str:
    """The hold a nominee's last word puts on the day's end while it is recorded (or, with
    ``upload``, while his own file is prepared): :meth:`GameService.hold`."""
    return f"{'upload' if upload else 'lastword'}:{player}"


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
    times_journal: Journal = field(default_factory=Journal, repr=False, compare=False)
    """Notes what undoes a change of ``tick_times`` while a change may yet be undone."""
    tick_times: dict[int, float] = field(default_factory=dict)
    """Wall time (unix) of the accepted commands that still matter, by the rules' tick: the
    standing votes' (the rules count time in ticks; the ballot shows clock times)."""
    stale: bool = False
    """A commit of this game failed: read it again from the database before its next change."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "tick_times":  # tracked, whatever is put there (see :class:`Before`)
            value = self.times_journal.track(value)
        object.__setattr__(self, name, value)

    @property
    def id(self) -> int:
        """The game's id."""
        return self.record.id

    def stage_key(self) -> str | None:
        """The current stage as text, e.g. ``day 1 voting``, or None outside play."""
        if self.game is None or self.game.over:
            return None
        return f"{self.game.phase} {self.game.stage.value}"


class Before:
    """A game in memory as it was before a change (what the database holds), put back when the
    change is not stored; :meth:`keep` once it is. Kept by what changes, so a command costs
    the same in a game of any size or age: the rules' game and the votes' times note what
    undoes each of their changes (:mod:`rules.journal`); the record keeps its fields, and is
    pickled whole only for a change that may touch its contents (:meth:`keep_record`: a
    change of the record, a deal, a command that moves the stage, ends the game or has an
    ``after``), which writes the whole record to the database anyway."""

    __slots__ = ("game", "record", "fields", "image", "times")

    def __init__(self, live: LiveGame) -> None:
        self.game = live.game
        self.record = live.record
        self.fields = dict(vars(live.record))
        self.image: bytes | None = None
        self.times = live.tick_times
        if self.game is not None:
            self.game.savepoint()
        live.times_journal.begin()

    @classmethod
    def of(cls, live: LiveGame, *, record: bool = True) -> Before:
        """What ``live`` holds now; ``record``: the record's contents too (pickled), for a
        change that may touch them (see :meth:`keep_record`)."""
        before = cls(live)
        if record:
            before.keep_record(live)
        return before

    @classmethod
    def applying(
        cls, live: LiveGame, command: Command, *, after: bool
    ) -> tuple[Before, list[Event], bool]:
        """Apply ``command`` to ``live``'s game, keeping what undoes it: that, its events and
        whether the stage changed. The record is kept whole (:attr:`image`) when its contents
        may change with the command and are stored whole: a move of the stage, the game's end,
        or an ``after`` (see :meth:`bot.service.GameService.apply`).

        Raises:
            RuleError: the rules refuse it; nothing changed and nothing is kept.
        """
        game = live.game
        assert game is not None
        stage = live.stage_key()
        before = cls(live)
        try:
            events = game.apply(command)
        except BaseException:
            before.put_back(live)  # the rules check before they change: this undoes nothing
            raise
        changed = live.stage_key() != stage
        if changed or game.over or after:
            before.keep_record(live)
        return before, events, changed

    def keep_record(self, live: LiveGame) -> None:
        """Keep the record's contents as they are now (before they change)."""
        self.image = pickle.dumps(live.record, protocol=pickle.HIGHEST_PROTOCOL)

    def put_back(self, live: LiveGame) -> None:
        """Make ``live`` hold it again."""
        if self.game is not None:
            self.game.rollback()
        live.game = self.game
        live.times_journal.rollback()
        live.tick_times = self.times
        if self.image is not None:
            live.record = pickle.loads(self.image)
        else:
            vars(self.record).clear()
            vars(self.record).update(self.fields)
            live.record = self.record

    def keep(self, live: LiveGame) -> None:
        """The change is stored: keep it, and stop noting what undoes it."""
        if self.game is not None:
            self.game.release()
        live.times_journal.end()


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
