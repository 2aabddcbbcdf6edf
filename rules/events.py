"""Events: what happened, in the past tense, each with who may see it.

A cog never decides secrecy by itself: it posts an event only where
:attr:`Event.audience` says. The Procurator sees every event.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import Enum, StrEnum
from typing import Any, ClassVar

from rules.model import Audience, Cause, Phase, PhaseKind, Stage, Status, Winner


@dataclass(frozen=True)
class Event:
    """Base of every event; ``kind`` names it in plain data."""

    kind: ClassVar[str] = ""
    text: ClassVar[str] = ""
    """The stem of its lines in the catalogues (``log.<text>``) where it is not its kind."""
    answers: ClassVar[bool] = False
    """An answer to its sender's command (``reply.<stem>``), as an event with a ``reply``."""
    unasked: ClassVar[bool] = False
    """Told to one player without a command of his being answered (a role's news): the bot
    brings it to him, as no answer of his carries it."""

    @property
    def audience(self) -> Audience:
        """Who may see this event (besides the Procurator)."""
        return Audience.everyone()

    def stem(self) -> str:
        """The stem of its lines in the catalogues: its ``text``, else its kind."""
        return self.text or self.kind


@dataclass(frozen=True)
class PhaseStarted(Event):
    """A phase or a day stage began; at night, ``touring_city`` holds the touring right."""

    kind: ClassVar[str] = "phase_started"
    phase: Phase
    stage: Stage
    touring_city: str | None = None


@dataclass(frozen=True)
class Nominated(Event):
    """``nominator`` nominated ``candidate`` in ``city``."""

    kind: ClassVar[str] = "nominated"
    city: str
    nominator: str
    candidate: str


@dataclass(frozen=True)
class VoteCast(Event):
    """``voter`` voted for ``candidate`` in ``city`` (moving ``previous`` if any)."""

    kind: ClassVar[str] = "vote_cast"
    city: str
    voter: str
    candidate: str
    previous: str | None = None


@dataclass(frozen=True)
class VoteWithdrawn(Event):
    """``voter`` cancelled his vote for ``candidate``."""

    kind: ClassVar[str] = "vote_withdrawn"
    city: str
    voter: str
    candidate: str


@dataclass(frozen=True)
class LastWordRequested(Event):
    """A nominee asked for his last word; the bot calls him to the tribune."""

    kind: ClassVar[str] = "last_word_requested"
    player: str
    city: str


@dataclass(frozen=True)
class GodfatherVoteCast(Event):
    """A member of a city's mafia voted for its Godfather: seen by the city's mafia."""

    kind: ClassVar[str] = "godfather_vote_cast"
    city: str
    voter: str
    candidate: str

    @property
    def audience(self) -> Audience:
        return Audience.mafia_of(self.city)


class GodfatherReason(StrEnum):
    """Why a city's Godfather changed."""

    ELECTED = "elected"
    """Votes from more than half of the city's living mafiosi."""
    APPOINTED = "appointed"
    """Named by the Procurator."""
    LONE = "lone"
    """The only living member of the city's mafia."""
    DIED = "died"
    """The Godfather died; the post is empty."""


@dataclass(frozen=True)
class GodfatherChanged(Event):
    """A city's Godfather post changed; ``godfather`` is None when it is empty."""

    kind: ClassVar[str] = "godfather_changed"
    city: str
    godfather: str | None
    reason: GodfatherReason

    @property
    def audience(self) -> Audience:
        return Audience.mafia_of(self.city)


class MafiaKillChoice(Event):
    """A member of a city's mafia chose its victim at night: a decision if he is its
    Godfather, else a proposal; ``touring`` is True for the kill in another city. The event is
    declared by the status of the mafia's members (:mod:`rules.roles`), with its fields, one of
    which names the member who chose (:attr:`chooser`)."""

    city: str
    target: str
    decision: bool
    touring: bool

    #: the field naming the member who chose (the declaring module's own word for him)
    chooser_field: ClassVar[str]

    @property
    def chooser(self) -> str:
        """The member of the mafia who chose."""
        return str(getattr(self, self.chooser_field))

    @property
    def audience(self) -> Audience:
        return Audience.mafia_of(self.city)


@dataclass(frozen=True)
class MafiaKillRefused(Event):
    """The Godfather refused his mafia's own kill tonight."""

    kind: ClassVar[str] = "mafia_kill_refused"
    city: str
    godfather: str

    @property
    def audience(self) -> Audience:
        return Audience.mafia_of(self.city)


@dataclass(frozen=True)
class ConsigliereDecided(Event):
    """At the end of the night the Consigliere settled a mafia's kill.

    ``target`` is None when the mafia refused or said nothing.
    """

    kind: ClassVar[str] = "consigliere_decided"
    city: str
    target: str | None
    touring: bool = False

    @property
    def audience(self) -> Audience:
        return Audience.mafia_of(self.city)


@dataclass(frozen=True)
class KillPrevented(Event):
    """A protection saved ``target`` from a night kill (Procurator only)."""

    kind: ClassVar[str] = "kill_prevented"
    target: str
    cause: Cause

    @property
    def audience(self) -> Audience:
        return Audience.host()


@dataclass(frozen=True)
class KillVoided(Event):
    """At dawn a player's own kill counted for nothing (a role's voids made it so, as a
    visit does): ``role`` is the status of a role that kills alone, ``godfather`` (his
    word) or ``proposal`` (another mafia member's). Procurator only."""

    kind: ClassVar[str] = "kill_voided"
    player: str
    city: str
    role: str

    @property
    def audience(self) -> Audience:
        return Audience.host()


@dataclass(frozen=True)
class MafiaKillBlocked(Event):
    """A city's mafia killed nobody because its Godfather died this night."""

    kind: ClassVar[str] = "mafia_kill_blocked"
    city: str

    @property
    def audience(self) -> Audience:
        return Audience.host()


@dataclass(frozen=True)
class JudgeAppointed(Event):
    """The Procurator named the Judge of a city."""

    kind: ClassVar[str] = "judge_appointed"
    city: str
    judge: str


@dataclass(frozen=True)
class TouringOrderSet(Event):
    """The Procurator set the touring rotation; ``next_city`` tours the coming night."""

    kind: ClassVar[str] = "touring_order_set"
    order: tuple[str, ...]
    next_city: str


@dataclass(frozen=True)
class VotesTallied(Event):
    """The tally of a city at the end of the day: ``(candidate, votes)`` best first.

    ``tally`` holds the candidates who could be executed (a resident, or a
    resident of another city with votes from more than half of the voters).
    ``ballots`` is every standing vote, ``(voter, candidate)`` in the order
    they were cast (a moved vote counts from its move). ``skipped`` is each
    candidate of another city who had votes but not more than half of the
    ``voters``, so was passed over: ``(candidate, votes)``, most votes first.
    """

    kind: ClassVar[str] = "votes_tallied"
    city: str
    voters: int
    tally: tuple[tuple[str, int], ...]
    ballots: tuple[tuple[str, str], ...] = ()
    skipped: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class ExecutionAwaitingHost(Event):
    """Nobody was chosen in ``city``: the day stays open for the Procurator."""

    kind: ClassVar[str] = "execution_awaiting_host"
    city: str


@dataclass(frozen=True)
class PlayerReplaced(Event):
    """``new`` took ``old``'s place in ``city``: his status and secrets, unsaid (public: who
    left and who came, as everyone sees the city's residents change)."""

    kind: ClassVar[str] = "player_replaced"
    old: str
    new: str
    city: str


@dataclass(frozen=True)
class PlayerKilled(Event):
    """A player died; his status is announced to everyone.

    ``city`` is his own city; ``by_city`` the city that executed him.
    """

    kind: ClassVar[str] = "player_killed"
    player: str
    city: str
    status: Status
    cause: Cause
    phase: Phase
    by_city: str | None = None
    by_chance: bool = False


@dataclass(frozen=True)
class CityDecided(Event):
    """A city is decided for good."""

    kind: ClassVar[str] = "city_decided"
    city: str
    winner: Winner


@dataclass(frozen=True)
class GameOver(Event):
    """The game is over; ``winners`` like ``Verona:honest``, and the side of a role that plays
    alone by its name alone (:meth:`rules.state.GameState.winners`)."""

    kind: ClassVar[str] = "game_over"
    winners: tuple[str, ...]


EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (
        PhaseStarted,
        Nominated,
        VoteCast,
        VoteWithdrawn,
        LastWordRequested,
        GodfatherVoteCast,
        GodfatherChanged,
        MafiaKillRefused,
        ConsigliereDecided,
        KillPrevented,
        KillVoided,
        MafiaKillBlocked,
        JudgeAppointed,
        TouringOrderSet,
        VotesTallied,
        ExecutionAwaitingHost,
        PlayerReplaced,
        PlayerKilled,
        CityDecided,
        GameOver,
    )
}


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Phase):
        return str(value)
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    return value


def event_to_dict(event: Event) -> dict[str, Any]:
    """Plain data: ``{"kind": ..., <fields>}`` with enums as values and phases as text."""
    data: dict[str, Any] = {"kind": event.kind}
    for f in fields(event):
        data[f.name] = _plain(getattr(event, f.name))
    return data


_FIELD_TYPES: dict[str, Any] = {
    "phase": Phase.parse,
    "stage": Stage,
    "status": Status,
    "cause": Cause,
    "winner": Winner,
    "reason": GodfatherReason,
    "tally": lambda rows: tuple((str(name), int(votes)) for name, votes in rows),
    "skipped": lambda rows: tuple((str(name), int(votes)) for name, votes in rows),
    "ballots": lambda rows: tuple((str(voter), str(candidate)) for voter, candidate in rows),
    "winners": lambda names: tuple(str(name) for name in names),
    "order": lambda names: tuple(str(name) for name in names),
}


def event_from_dict(data: dict[str, Any]) -> Event:
    """The inverse of :func:`event_to_dict`.

    Raises:
        KeyError: if ``kind`` is unknown or a field is missing.
    """
    cls = EVENT_TYPES[data["kind"]]
    values: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in data:
            continue
        raw = data[f.name]
        convert = _FIELD_TYPES.get(f.name)
        values[f.name] = convert(raw) if convert is not None and raw is not None else raw
    return cls(**values)


__all__ = [
    "EVENT_TYPES",
    "CityDecided",
    "ConsigliereDecided",
    "Event",
    "ExecutionAwaitingHost",
    "GameOver",
    "GodfatherChanged",
    "GodfatherReason",
    "GodfatherVoteCast",
    "JudgeAppointed",
    "KillPrevented",
    "KillVoided",
    "LastWordRequested",
    "MafiaKillBlocked",
    "MafiaKillChoice",
    "MafiaKillRefused",
    "Nominated",
    "PhaseKind",
    "PhaseStarted",
    "PlayerKilled",
    "PlayerReplaced",
    "TouringOrderSet",
    "VoteCast",
    "VoteWithdrawn",
    "VotesTallied",
    "event_from_dict",
    "event_to_dict",
]
