"""What the picture shows, as plain data: its columns, cities, lanes, ends and votes
(:func:`layout`; the package's docstring says how it is laid out)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from bot.archive import replay_log, side_of
from bot.i18n import t
from bot.picture.style import (
    CAUSE_MARK,
    LANES_UP_TO,
    MARKS,
    MAX_COLUMNS,
    RUN_COLUMNS,
)
from bot.storage import ArchivedGame
from rules import Command, Execute, Game, Phase, ProcuratorKill, Setup
from rules import events as ev

log = logging.getLogger(__name__)


def phases(archived: ArchivedGame) -> list[str]:
    """Every phase the game had, in order: ``day 1``, ``night 1``, ..."""
    first = str(archived.setup.get("rules", {}).get("first_phase") or "day")
    kind, number = archived.last_phase.split()
    last = int(number)
    order: list[str] = []
    for n in range(1, last + 1):
        pair = [f"night {n}", f"day {n}"] if first == "night" else [f"day {n}", f"night {n}"]
        order.extend(pair)
    return order[: order.index(archived.last_phase) + 1]


@dataclass(frozen=True)
class Column:
    """One column: a phase, or (in a long game) a run of consecutive ones."""

    phases: tuple[str, ...]
    label: str
    """The header: the phase's number, or the run's first and last phase ("D13–N18")."""

    @property
    def night(self) -> bool:
        """A night (a run is neither)."""
        return len(self.phases) == 1 and self.phases[0].startswith("night")


@dataclass(frozen=True)
class Seat:
    """Who held a lane from ``column`` on: the dealt player (column 0) or a newcomer."""

    player: str
    name: str
    column: int


@dataclass(frozen=True)
class End:
    """How a lane ended: its player's death in ``column``.

    ``mark`` is one of :data:`MARKS`; ``by_city`` the city that executed the
    player, when it is not the player's own.
    """

    column: int
    mark: str
    by_city: str | None = None


@dataclass(frozen=True)
class Lane:
    """One seat of the deal from the deal to the end: ``end`` is None for who is alive at the end."""

    number: int
    city: str
    status: str
    side: str
    seats: tuple[Seat, ...]
    end: End | None
    won: bool


@dataclass(frozen=True)
class CityBlock:
    """A city: its result, who is alive, its lanes (or, counting, its dead by column and cause)."""

    city: str
    result: str
    alive: int
    residents: int
    lanes: tuple[Lane, ...] = ()
    counts: dict[int, dict[str, int]] = field(default_factory=dict)
    decided: int | None = None
    """The column in which the city was decided for good (None: never, or not known)."""


@dataclass(frozen=True)
class VoteCell:
    """A player's vote at the end of one day: for the lane ``candidate``, in columns
    ``column`` … ``column + span - 1`` (the day's number)."""

    column: int
    span: int
    candidate: int
    side: str
    executed: bool


@dataclass(frozen=True)
class Picture:
    """What the picture shows, before it is painted."""

    language: str
    mode: str
    """``lanes`` (a lane per player) or ``counts`` (a lane per city)."""
    title: str
    verdict: str
    columns: tuple[Column, ...]
    cities: tuple[CityBlock, ...]
    votes: dict[int, tuple[VoteCell, ...]] | None = None
    """Lane number -> its votes, when the votes panel was asked for and can be drawn."""
    votes_omitted: bool = False
    """The votes panel was asked for but the game is too big for it."""

    def lanes(self) -> list[Lane]:
        """Every lane, city by city."""
        return [lane for block in self.cities for lane in block.lanes]

    def marks(self) -> list[str]:
        """The marks the picture uses, in the legend's order."""
        used = {lane.end.mark for lane in self.lanes() if lane.end is not None}
        used |= {
            CAUSE_MARK[cause]
            for block in self.cities
            for cells in block.counts.values()
            for cause in cells
        }
        return [mark for mark in MARKS if mark in used]


def _mark(event: ev.PlayerKilled, command: Command, source: str) -> str:
    if event.cause.value == "execution":
        return "lot" if event.by_chance else "host" if isinstance(command, Execute) else "vote"
    if event.cause.value == "procurator":
        return "idle" if isinstance(command, ProcuratorKill) and source == "timer" else "procurator"
    return event.cause.value


@dataclass
class _Story:
    """What the replay tells beyond the archive's rows."""

    deaths: dict[str, tuple[str, str, str | None]] = field(default_factory=dict)
    """player -> (phase, mark, the executing city)."""
    replaced: dict[str, tuple[str, str]] = field(default_factory=dict)
    """old player -> (newcomer, phase)."""
    decided: dict[str, str] = field(default_factory=dict)
    """city -> the phase it was decided in."""

    def listen(self, command: Command, source: str, phase: Phase, events: list[ev.Event]) -> None:
        for event in events:
            if isinstance(event, ev.PlayerKilled):
                self.deaths[event.player] = (
                    str(event.phase),
                    _mark(event, command, source),
                    event.by_city,
                )
            elif isinstance(event, ev.PlayerReplaced):
                self.replaced[event.old] = (event.new, str(phase))
            elif isinstance(event, ev.CityDecided):
                self.decided.setdefault(event.city, str(phase))


def _columns(say: Callable[..., str], every: list[str]) -> list[Column]:
    """One column per phase, or at most :data:`MAX_COLUMNS`, each a run of phases."""
    if len(every) <= MAX_COLUMNS:
        return [Column((phase,), phase.split()[1]) for phase in every]
    size = math.ceil(len(every) / RUN_COLUMNS)
    runs = [tuple(every[start : start + size]) for start in range(0, len(every), size)]
    return [
        Column(
            run,
            f"{_short(say, run[0])}–{_short(say, run[-1])}"
            if len(run) > 1
            else _short(say, run[0]),
        )
        for run in runs
    ]


def layout(archived: ArchivedGame, language: str, *, votes: bool = False) -> Picture:
    """What the picture of ``archived`` shows, texts in ``language`` (module docstring)."""
    say: Callable[..., str] = partial(t, language)
    columns = _columns(say, phases(archived))
    at = {phase: index for index, column in enumerate(columns) for phase in column.phases}
    last = len(columns) - 1
    title = say("picture.title", game=archived.game_id, cities=", ".join(archived.cities))
    if archived.over:
        winners = ", ".join(_winner(say, w) for w in archived.winners) or say("winners.none")
        verdict = say("picture.winners", winners=winners)
    else:
        verdict = say("picture.cancelled", phase=_phase_name(say, archived.last_phase))
    residents = {
        city: sum(1 for p in archived.players if p.city == city) for city in archived.cities
    }
    alive = {
        city: sum(1 for p in archived.players if p.city == city and p.survived)
        for city in archived.cities
    }

    def block(city: str, **parts: Any) -> CityBlock:
        return CityBlock(city, _result(archived, city), alive[city], residents[city], **parts)

    if len(archived.players) > LANES_UP_TO:
        counts: dict[str, dict[int, dict[str, int]]] = {city: {} for city in archived.cities}
        for death in archived.deaths:
            cell = counts.setdefault(death.city, {}).setdefault(at.get(death.phase, last), {})
            cell[death.cause] = cell.get(death.cause, 0) + 1
        return Picture(
            language,
            "counts",
            title,
            verdict,
            tuple(columns),
            tuple(block(city, counts=counts[city]) for city in archived.cities),
            votes_omitted=votes,
        )

    story = _Story()
    replay_log(
        archived.setup,
        archived.seed,
        [(index, command, source) for index, (command, source) in enumerate(archived.log, 1)],
        story.listen,
    )
    blocks, lane_of = _lane_blocks(archived, story, at, block)
    panel = None
    if votes and len(columns) == len(phases(archived)):
        panel = _votes(archived, columns, lane_of, story)
    return Picture(
        language,
        "lanes",
        title,
        verdict,
        tuple(columns),
        tuple(blocks),
        panel,
        votes_omitted=votes and panel is None,
    )


def _lane_blocks(
    archived: ArchivedGame, story: _Story, at: dict[str, int], block: Callable[..., CityBlock]
) -> tuple[list[CityBlock], dict[str, Lane]]:
    """Each city's block of lanes, a lane per seat of the deal, and the lane of every player
    who sat in one."""
    last = max(at.values(), default=0)
    dealt = Game.create(Setup.from_dict(archived.setup), archived.seed)
    final = {p.player: p for p in archived.players}
    blocks, lane_of, number = [], {}, 0
    for city in archived.cities:
        lanes = []
        for player in dealt.residents[city]:
            number += 1
            seats = [Seat(player, archived.names.get(player, player), 0)]
            while seats[-1].player in story.replaced:
                new, phase = story.replaced[seats[-1].player]
                seats.append(Seat(new, archived.names.get(new, new), at.get(phase, last)))
            holder = seats[-1].player
            end = None
            if holder in story.deaths:
                phase, mark, by_city = story.deaths[holder]
                end = End(
                    at.get(phase, last), mark, by_city if by_city not in (None, city) else None
                )
            known = final.get(holder)
            if known is None:  # the replay and the archive disagree (the rules changed since)
                log.warning(
                    "picture of game %s: %s is not among the archived players; drawn as dealt",
                    archived.game_id,
                    holder,
                )
                status = dealt.status_of(player).value
                lanes.append(Lane(number, city, status, side_of(status), tuple(seats), end, False))
            else:
                lanes.append(
                    Lane(number, city, known.status, known.side, tuple(seats), end, bool(known.won))
                )
            lane_of.update({seat.player: lanes[-1] for seat in seats})
        decided = story.decided.get(city)
        moment = None if decided is None else at.get(decided, last)
        blocks.append(block(city, lanes=tuple(lanes), decided=moment))
    return blocks, lane_of


def _votes(
    archived: ArchivedGame, columns: list[Column], lane_of: dict[str, Lane], story: _Story
) -> dict[int, tuple[VoteCell, ...]]:
    """Each lane's votes, a cell per day under the columns of that day's number."""
    spans: dict[int, list[int]] = {}
    for index, column in enumerate(columns):
        spans.setdefault(int(column.phases[0].split()[1]), []).append(index)
    executed = {
        (int(phase.split()[1]), by_city, player)
        for player, (phase, mark, by_city) in story.deaths.items()
        if mark in ("vote", "lot", "host")
    }
    cells: dict[int, list[VoteCell]] = {}
    for vote in archived.votes:
        voter, candidate = lane_of.get(vote.voter), lane_of.get(vote.candidate)
        if voter is None or candidate is None or vote.day not in spans:
            continue
        span = spans[vote.day]
        cells.setdefault(voter.number, []).append(
            VoteCell(
                span[0],
                len(span),
                candidate.number,
                candidate.side,
                (vote.day, vote.city, vote.candidate) in executed,
            )
        )
    return {lane: tuple(found) for lane, found in cells.items()}


def _result(archived: ArchivedGame, city: str) -> str:
    return (
        "honest"
        if f"{city}:honest" in archived.winners
        else "mafia"
        if f"{city}:mafia" in archived.winners
        else "undecided"
    )


def _short(say: Callable[..., str], phase: str) -> str:
    kind, number = phase.split()
    return say(f"picture.short.{kind}", number=number)


def _phase_name(say: Callable[..., str], phase: str) -> str:
    kind, number = phase.split()
    text = say(f"phase_name.{kind}", number=number)
    return text[:1].upper() + text[1:]


def _winner(say: Callable[..., str], winner: str) -> str:
    if ":" not in winner:  # a side that plays alone
        return say(f"winner.{winner}")
    city, side = winner.rsplit(":", 1)
    return say(f"winner.{side}", city=city)
