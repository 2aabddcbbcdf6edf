"""A game's state and what every rule reads or does to it: queries, guards, deaths, phases.

:class:`GameState` holds the whole state of a game; the day's and the night's rules
(:mod:`rules.day`, :mod:`rules.night`) are its subclasses, and :class:`rules.game.Game` joins
them. The methods here are the ones both halves of the game use: the public queries, the
guards that refuse a command, a death and what it clears, the end check, the start of a phase
and a replacement's renaming.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from rules.errors import RuleError
from rules.events import (
    CityDecided,
    Event,
    GameOver,
    GodfatherChanged,
    GodfatherReason,
    PhaseStarted,
    PlayerKilled,
)
from rules.journal import Journal, Recorded
from rules.model import (
    Cause,
    FirstPhase,
    Phase,
    PhaseKind,
    RuleOptions,
    Setup,
    Stage,
    Status,
    Winner,
)

DAY_STAGES = (Stage.DISCUSSION, Stage.VOTING, Stage.EXECUTION)


@dataclass(frozen=True)
class Death:
    """One death: who, his city and status, why, and in which phase."""

    player: str
    city: str
    status: Status
    cause: Cause
    phase: Phase

    def to_dict(self) -> dict[str, str]:
        """Plain data, as the simulator's JSON prints it."""
        return {
            "player": self.player,
            "city": self.city,
            "status": self.status.value,
            "cause": self.cause.value,
            "phase": str(self.phase),
        }


@dataclass(frozen=True)
class LegalAction:
    """Something a player may do now: a verb and, if it takes one, its legal targets."""

    verb: str
    targets: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Kept:
    """A value a role keeps in the game's state (:attr:`GameState.role_state`, stored under its
    key): its value as a game starts, the phase whose start puts it back to that value, and
    whether it holds a player's name (renamed on a replacement)."""

    initial: str | bool | None
    cleared: PhaseKind
    names: bool = False


@dataclass
class _Player(Recorded):
    name: str
    city: str
    status: Status
    alive: bool = True


# (target or None for a refusal, tick of the choice)
_Choice = tuple[str | None, int]


class GameState(Recorded):
    """The state of a running game and the rules both day and night use. Read it through the
    queries; it changes only through :meth:`rules.game.Game.apply`. Its containers and
    players are tracked by its journal (:mod:`rules.journal`), so a change can be undone."""

    nightfalls: ClassVar[tuple[Callable[[Any], None], ...]] = ()
    """What the roles carry into the night as it falls (:attr:`rules.roles.base.Role.nightfall`)."""
    alone: ClassVar[Mapping[Status, str]] = {}
    """The statuses that play and win alone, with their sides (:attr:`rules.roles.base.Role.alone`)."""
    survives: ClassVar[Mapping[Status, Callable[[RuleOptions], bool]]] = {}
    """Of those, the ones who also win by being alive when the game ends, as the options say
    (:attr:`rules.roles.base.Role.survives`)."""
    won_alone_key: ClassVar[str] = "won_alone"
    """The stored key of :attr:`won_alone` (:attr:`rules.roles.base.Role.won_alone_key`)."""
    role_keys: ClassVar[Mapping[str, Kept]] = {}
    """What the roles keep in :attr:`role_state`, by key (:attr:`rules.roles.base.Role.state`)."""

    def __init__(self, setup: Setup, seed: int) -> None:
        """The state at the first phase of ``setup`` (trusted: :meth:`Game.create` validates it)."""
        self._journal = Journal()
        self.setup = setup
        self.seed = seed
        self.options: RuleOptions = setup.options
        self.cities: tuple[str, ...] = setup.city_names
        self.players: dict[str, _Player] = {}
        self.residents: dict[str, tuple[str, ...]] = {}
        for dealt in setup.cities:
            self.residents[dealt.name] = tuple(name for name, _ in dealt.residents)
            for name, status in dealt.residents:
                self.players[name] = _Player(name, dealt.name, status)
        first_night = self.options.first_phase is FirstPhase.NIGHT
        self.phase = Phase(PhaseKind.NIGHT if first_night else PhaseKind.DAY, 1)
        self.stage = Stage.NIGHT if first_night else Stage.DISCUSSION
        self.tick = 0
        self.over = False
        self.decided: dict[str, Winner] = {}
        self.won_alone = False
        """One who plays alone was left alive alone (stored under the key of
        :attr:`won_alone_key`)."""
        self.deaths: list[Death] = []
        self.touring_order: tuple[str, ...] = self.options.touring_order or self.cities
        self.judges: dict[str, str] = {}
        self.godfathers: dict[str, str] = {}
        self.elect_votes: dict[str, dict[str, str]] = {city: {} for city in self.cities}
        # the day
        self.nominations: dict[str, dict[str, str]] = {city: {} for city in self.cities}
        self.nominators: set[str] = set()
        self.votes: dict[str, dict[str, tuple[str, int]]] = {city: {} for city in self.cities}
        self.last_words: set[str] = set()
        self.pending_executions: list[str] = []
        # the night
        self.protected: str | None = None
        self.kill_choices: dict[str, dict[str, _Choice]] = {city: {} for city in self.cities}
        self.tour_choices: dict[str, _Choice] = {}
        self.checked: set[str] = set()
        self.godfather_died: set[str] = set()
        self.replaced: list[tuple[str, str]] = []
        """(old, new) of every replacement, in order: the deal names the old ones."""
        self.choices: dict[str, dict[str, str]] = {}
        """The roles' night choices (a role's handler keeps them): verb → the chooser → his
        choice; cleared when a night starts, dropped when the chooser dies."""
        self.dawn_choices: dict[str, dict[str, str]] = {}
        """During the dawn, :attr:`choices` as the night ended (the dead keep theirs)."""
        self.role_state: dict[str, Any] = {k: kept.initial for k, kept in self.role_keys.items()}
        """What the roles keep of their own (:attr:`role_keys`): its key → its value."""
        self.notes: dict[str, list[dict[str, Any]]] = {}
        """What a player was told that he did not ask (a role's ``told``), as plain events,
        oldest first: he reads them again in his role's view."""
        for city in self.cities:
            mafiosi = self.living_mafiosi(city)
            if len(mafiosi) == 1:
                self.godfathers[city] = mafiosi[0]

    def savepoint(self) -> None:
        """Keep from now on what undoes each change, so that :meth:`rollback` can put the game
        back as it is now, at the cost of what changed; :meth:`release` keeps the changes. A
        new savepoint keeps the changes of the one before."""
        self._changes().begin()

    def rollback(self) -> None:
        """Put the game back as it was at :meth:`savepoint` (nothing, with none open)."""
        self._changes().rollback()

    def release(self) -> None:
        """Keep the changes since :meth:`savepoint`, and stop noting them."""
        self._changes().end()

    def _changes(self) -> Journal:
        journal = self._journal
        assert journal is not None
        return journal

    def status_of(self, player: str) -> Status:
        """The player's status (secret while he lives).

        Raises:
            RuleError: ``unknown_player``.
        """
        return self._player(player).status

    def city_of(self, player: str) -> str:
        """The player's city.

        Raises:
            RuleError: ``unknown_player``.
        """
        return self._player(player).city

    def is_alive(self, player: str) -> bool:
        """Whether the player is alive.

        Raises:
            RuleError: ``unknown_player``.
        """
        return self._player(player).alive

    def alive(self, city: str | None = None) -> list[str]:
        """Living players, in setup order; of one city if ``city`` is given."""
        names: Iterable[str] = self.residents[city] if city is not None else self.players
        return [name for name in names if self.players[name].alive]

    def living_mafiosi(self, city: str) -> list[str]:
        """The living mafiosi of a city, in setup order."""
        return [
            name
            for name in self.residents[city]
            if self.players[name].alive and self.players[name].status.in_mafia
        ]

    def honest_residents(self, city: str) -> list[str]:
        """The living honest residents of a city (those whose status is honest)."""
        return [
            name
            for name in self.residents[city]
            if self.players[name].alive and self.players[name].status.honest
        ]

    def godfather_of(self, city: str) -> str | None:
        """The city's Godfather, or None when the post is empty."""
        return self.godfathers.get(city)

    def judge_of(self, city: str) -> str | None:
        """The city's acting Judge, or None."""
        return self.judges.get(city)

    def nominees(self, city: str) -> list[str]:
        """Today's nominees of a city, in nomination order."""
        return list(self.nominations[city])

    def vote_counts(self, city: str) -> list[tuple[str, int]]:
        """Standing votes for each of today's nominees of a city, in nomination order."""
        counts = dict.fromkeys(self.nominations[city], 0)
        for candidate, _ in self.votes[city].values():
            counts[candidate] = counts.get(candidate, 0) + 1
        return list(counts.items())

    def voter_of(self, player: str) -> str | None:
        """Whom the player's standing vote is for, if any."""
        standing = self.votes[self._player(player).city].get(player)
        return standing[0] if standing else None

    def tally(self, city: str) -> list[tuple[str, int]]:
        """The city's current count: ``(candidate, standing votes)``, best first."""
        return [(name, count) for name, count, _ in self._ranking(city)]

    def touring_city(self, night: int | None = None) -> str:
        """The city whose mafia holds the touring right on night ``night`` (default: this one)."""
        order = self.touring_order
        if night is None:
            night = self.phase.number if self.phase.kind is PhaseKind.NIGHT else self._next_night()
        return order[(night - 1) % len(order)]

    def winners(self) -> list[str]:
        """Decided cities (``City:honest``/``City:mafia``, city order), then the side of each
        role that plays alone and won (its side alone, no city)."""
        result = [
            f"{city}:{self.decided[city].value}" for city in self.cities if city in self.decided
        ]
        return result + self._lone_winners()

    def _player(self, name: str) -> _Player:
        player = self.players.get(name)
        if player is None:
            raise RuleError("unknown_player", player=name)
        return player

    def _living_actor(self, name: str, *statuses: Status) -> _Player:
        actor = self._player(name)
        if not actor.alive:
            raise RuleError("not_alive", player=name)
        if statuses and actor.status not in statuses:
            raise RuleError("wrong_role", player=name, status=actor.status.value)
        return actor

    def _living_target(self, name: str) -> _Player:
        target = self._player(name)
        if not target.alive:
            raise RuleError("target_not_alive", player=name)
        return target

    def _require_stage(self, *stages: Stage) -> None:
        if self.stage not in stages:
            raise RuleError("wrong_phase", phase=str(self.phase), stage=self.stage.value)

    def _ranking(self, city: str) -> list[tuple[str, int, int]]:
        """Eligible candidates with votes: (name, votes, last vote tick), best first."""
        votes = self.votes[city]
        voters = len(votes)
        counts: dict[str, list[int]] = {}
        for candidate, tick in votes.values():
            entry = counts.setdefault(candidate, [0, tick])
            entry[0] += 1
            entry[1] = max(entry[1], tick)
        eligible = [
            (name, count, last)
            for name, (count, last) in counts.items()
            if self.players[name].city == city or count * 2 > voters
        ]
        eligible.sort(key=lambda row: (-row[1], row[2]))
        return eligible

    def _after_pending(self) -> list[Event]:
        """Drop waiting cities left without residents; start the night once none waits."""
        self.pending_executions = [city for city in self.pending_executions if self.alive(city)]
        if self.over or self.stage is not Stage.EXECUTION or self.pending_executions:
            return []
        return self._start_night()

    def _elect_by_majority(self, city: str) -> list[Event]:
        """Seat a candidate backed by more than half of the living mafiosi, if any."""
        living = self.living_mafiosi(city)
        counts: dict[str, int] = {}
        for _voter, candidate in self.elect_votes[city].items():
            counts[candidate] = counts.get(candidate, 0) + 1
        for candidate, count in counts.items():
            if count * 2 > len(living) and self.godfathers.get(city) != candidate:
                self.godfathers[city] = candidate
                return [GodfatherChanged(city, candidate, GodfatherReason.ELECTED)]
        return []

    def _start_night(self) -> list[Event]:
        number = self._next_night()
        self.phase = Phase(PhaseKind.NIGHT, number)
        self.stage = Stage.NIGHT
        for fall in self.nightfalls:
            fall(self)
        for choices in self.kill_choices.values():
            choices.clear()
        self.tour_choices.clear()
        self._clear_kept(PhaseKind.NIGHT)
        self.checked.clear()
        self.godfather_died.clear()
        self.choices.clear()
        return [self._phase_started()]

    def _next_night(self) -> int:
        if self.phase.kind is PhaseKind.NIGHT:
            return self.phase.number + 1
        day_first = self.options.first_phase is FirstPhase.DAY
        return self.phase.number if day_first else self.phase.number + 1

    def _start_day(self) -> list[Event]:
        day_first = self.options.first_phase is FirstPhase.DAY
        number = self.phase.number + 1 if day_first else self.phase.number
        self.phase = Phase(PhaseKind.DAY, number)
        self.stage = Stage.DISCUSSION
        for nominated in self.nominations.values():
            nominated.clear()
        for votes in self.votes.values():
            votes.clear()
        self.nominators.clear()
        self.last_words.clear()
        self._clear_kept(PhaseKind.DAY)
        self.pending_executions = []
        self.protected = None
        return [self._phase_started()]

    def _clear_kept(self, starting: PhaseKind) -> None:
        """Put back what the roles keep until the phase ``starting`` starts."""
        for key, kept in self.role_keys.items():
            if kept.cleared is starting:
                self.role_state[key] = kept.initial

    def _phase_started(self) -> PhaseStarted:
        touring = self.touring_city() if self.stage is Stage.NIGHT else None
        return PhaseStarted(self.phase, self.stage, touring)

    def _die(
        self,
        name: str,
        cause: Cause,
        *,
        by_city: str | None = None,
        by_chance: bool = False,
        fill_post: bool = True,
    ) -> list[Event]:
        """Kill one player and clear what he held; the end check is the caller's.

        With ``fill_post`` false (dawn's kills) an emptied Godfather's post is
        left empty for the caller to fill once the whole batch is over.
        """
        player = self.players[name]
        player.alive = False
        city = player.city
        self.deaths.append(Death(name, city, player.status, cause, self.phase))
        events: list[Event] = [
            PlayerKilled(name, city, player.status, cause, self.phase, by_city, by_chance)
        ]
        # The dead lose what they held: a standing vote, a night choice, a post.
        self.votes[city].pop(name, None)
        self.kill_choices[city].pop(name, None)
        self.tour_choices.pop(name, None)
        for held in self.choices.values():
            held.pop(name, None)
        self.elect_votes[city].pop(name, None)
        if self.judges.get(city) == name:
            del self.judges[city]
        if player.status.in_mafia:
            for voter, candidate in list(self.elect_votes[city].items()):
                if candidate == name:
                    del self.elect_votes[city][voter]
            if self.godfathers.get(city) == name:
                del self.godfathers[city]
                self.elect_votes[city].clear()
                if self.stage is Stage.NIGHT:
                    self.godfather_died.add(city)
                events.append(GodfatherChanged(city, None, GodfatherReason.DIED))
            if fill_post and city not in self.godfathers:
                events.extend(self._fill_empty_post(city))
        return events

    def _rename(self, old: str, new: str) -> None:
        """Put ``new`` wherever the state names ``old`` (players, posts, votes, choices)."""

        def one(name: str | None) -> str | None:
            return new if name == old else name

        def name(value: str) -> str:
            return new if value == old else value

        self.players[old].name = new
        self.players = {name(key): player for key, player in self.players.items()}
        self.residents = {
            city: tuple(name(p) for p in people) for city, people in self.residents.items()
        }
        self.judges = {city: name(p) for city, p in self.judges.items()}
        self.godfathers = {city: name(p) for city, p in self.godfathers.items()}
        self.elect_votes = {
            city: {name(v): name(c) for v, c in votes.items()}
            for city, votes in self.elect_votes.items()
        }
        self.nominations = {
            city: {name(c): name(n) for c, n in noms.items()}
            for city, noms in self.nominations.items()
        }
        self.nominators = {name(p) for p in self.nominators}
        self.votes = {
            city: {name(v): (name(c), tick) for v, (c, tick) in votes.items()}
            for city, votes in self.votes.items()
        }
        self.last_words = {name(p) for p in self.last_words}
        self.protected = one(self.protected)
        self.kill_choices = {
            city: {name(p): (one(t), tick) for p, (t, tick) in choices.items()}
            for city, choices in self.kill_choices.items()
        }
        self.tour_choices = {name(p): (one(t), tick) for p, (t, tick) in self.tour_choices.items()}
        self.role_state = {
            key: one(value) if self.role_keys[key].names else value
            for key, value in self.role_state.items()
        }
        self.checked = {name(p) for p in self.checked}
        self.choices = {
            verb: {name(p): name(t) for p, t in held.items()} for verb, held in self.choices.items()
        }
        self.notes = {
            name(p): [{k: name(v) if isinstance(v, str) else v for k, v in n.items()} for n in told]
            for p, told in self.notes.items()
        }

    def _fill_empty_post(self, city: str) -> list[Event]:
        living = self.living_mafiosi(city)
        if len(living) == 1:
            self.godfathers[city] = living[0]
            return [GodfatherChanged(city, living[0], GodfatherReason.LONE)]
        return self._elect_by_majority(city)

    def _check_end(self) -> list[Event]:
        """Decide cities, a win alone and the game's end after a batch of deaths."""
        events: list[Event] = []
        for city in self.cities:
            if city in self.decided:
                continue
            mafiosi = len(self.living_mafiosi(city))
            if mafiosi == 0:
                self.decided[city] = Winner.HONEST
            elif mafiosi >= len(self.honest_residents(city)):
                self.decided[city] = Winner.MAFIA
            else:
                continue
            events.append(CityDecided(city, self.decided[city]))
        living = self.alive()
        alone_alive = any(self.players[name].status in self.alone for name in living)
        if alone_alive and len(living) == 1:
            self.won_alone = True
        all_decided = len(self.decided) == len(self.cities)
        if self.won_alone or (all_decided and self._survivors_win()):
            self.over = True
            events.append(GameOver(tuple(self.winners())))
        return events

    def _lone_winners(self) -> list[str]:
        """The sides of the living who play alone, once one of them is left alone or, when
        the options let a survivor win, once the game is over (nothing changes after it)."""
        if not (self.won_alone or (self.over and self._survivors_win())):
            return []
        return self.lone_sides_alive()

    def _survivors_win(self) -> bool:
        """Whether every living player who plays alone wins by being alive at the end, as the
        options say (:attr:`survives`); true when none lives."""
        living = (p.status for p in self.players.values() if p.alive and p.status in self.alone)
        return all(
            status in self.survives and self.survives[status](self.options) for status in living
        )

    def lone_sides_alive(self) -> list[str]:
        """The sides of the living who play alone (:attr:`alone`), in setup order."""
        sides = (self.alone.get(p.status) for p in self.players.values() if p.alive)
        return list(dict.fromkeys(side for side in sides if side is not None))
