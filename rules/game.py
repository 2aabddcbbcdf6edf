"""The game: its state, the one mutator :meth:`Game.apply`, and read-only queries.

Time is the order of acceptance: every accepted command advances
:attr:`Game.tick` by one, and "the latest vote" or "the earliest proposal"
compare ticks. Randomness comes only from the seed, through a fresh
``random.Random`` keyed by the seed and what is being decided, so a game
replays exactly from its setup, seed and command log.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rules.commands import (
    AppointGodfather,
    AppointJudge,
    CastVote,
    Check,
    Command,
    Compare,
    Elect,
    EndDay,
    EndNight,
    Execute,
    ExecuteByLot,
    Kill,
    Nominate,
    Pass,
    ProcuratorKill,
    Protect,
    Replace,
    RequestLastWord,
    SetTouringOrder,
    StartVoting,
    Tour,
    Unvote,
)
from rules.errors import RuleError
from rules.events import (
    CityDecided,
    ConsigliereDecided,
    Event,
    ExecutionAwaitingHost,
    GameOver,
    GodfatherChanged,
    GodfatherReason,
    GodfatherVoteCast,
    JudgeAppointed,
    KillPrevented,
    LastWordRequested,
    MafiaKillBlocked,
    MafiaKillChosen,
    MafiaKillRefused,
    ManiacChose,
    Nominated,
    PhaseStarted,
    PlayerChecked,
    PlayerKilled,
    PlayerReplaced,
    ProtectionChosen,
    StatusesCompared,
    TouringOrderSet,
    VoteCast,
    VotesTallied,
    VoteWithdrawn,
)
from rules.model import (
    Cause,
    DayFallback,
    FirstPhase,
    ManiacIdle,
    Phase,
    PhaseKind,
    RuleOptions,
    Setup,
    Stage,
    Status,
    Winner,
)
from rules.setup import validate_setup

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


@dataclass
class _Player:
    name: str
    city: str
    status: Status
    alive: bool = True


# (target or None for a refusal, tick of the choice)
_Choice = tuple[str | None, int]


class Game:
    """A running game of multi-city Mafia.

    Build one with :meth:`create`; change it only with :meth:`apply`; read
    it with the query methods. ``to_dict``/``from_dict`` round-trip the
    whole state.
    """

    def __init__(self, setup: Setup, seed: int) -> None:
        """Use :meth:`create`, which validates the setup; this trusts it."""
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
        self.maniac_won = False
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
        self.journalist_compared = False
        self.doctor_choice: str | None = None
        self.pending_executions: list[str] = []
        # the night
        self.protected: str | None = None
        self.kill_choices: dict[str, dict[str, _Choice]] = {city: {} for city in self.cities}
        self.tour_choices: dict[str, _Choice] = {}
        self.maniac_choice: str | None = None
        self.checked: set[str] = set()
        self.godfather_died: set[str] = set()
        self.replaced: list[tuple[str, str]] = []
        """(old, new) of every replacement, in order: the deal names the old ones."""
        for city in self.cities:
            mafiosi = self.living_mafiosi(city)
            if len(mafiosi) == 1:
                self.godfathers[city] = mafiosi[0]
        self._handlers: dict[type[Command], Callable[[Any, bool], list[Event]]] = {
            Nominate: self._nominate,
            CastVote: self._vote,
            Unvote: self._unvote,
            RequestLastWord: self._last_word,
            Protect: self._protect,
            Compare: self._compare,
            Elect: self._elect,
            Kill: self._kill_command,
            Pass: self._pass,
            Tour: self._tour,
            Check: self._check,
            StartVoting: self._start_voting,
            EndDay: self._end_day,
            EndNight: self._end_night,
            ProcuratorKill: self._procurator_kill,
            AppointJudge: self._appoint_judge,
            AppointGodfather: self._appoint_godfather,
            Execute: self._execute,
            ExecuteByLot: self._execute_by_lot,
            Replace: self._replace,
            SetTouringOrder: self._set_touring_order,
        }

    # ------------------------------------------------------------------ create

    @classmethod
    def create(cls, setup: Setup, seed: int) -> Game:
        """A new game at its first phase.

        Raises:
            RuleError: any code of :func:`rules.setup.validate_setup` for a
                setup that is not sound.
        """
        validate_setup(setup)
        return cls(setup, seed)

    def opening_events(self) -> list[Event]:
        """The events that announce the game's start: its first phase and lone Godfathers."""
        events: list[Event] = [self._phase_started()]
        for city in self.cities:
            godfather = self.godfathers.get(city)
            if godfather is not None:
                events.append(GodfatherChanged(city, godfather, GodfatherReason.LONE))
        return events

    # ------------------------------------------------------------------ apply

    def apply(self, command: Command) -> list[Event]:
        """Apply one command and return what happened.

        Raises:
            RuleError: the command is refused (``game_over``, ``wrong_phase``,
                ``not_alive``, ``unknown_player``... see
                :data:`rules.errors.CODES`); the state is then unchanged.
        """
        # Every handler validates completely before it changes anything.
        events = self._handler(command)(command, False)
        self.tick += 1
        return events

    def check(self, command: Command) -> None:
        """Validate ``command`` without applying it.

        Raises:
            RuleError: exactly as :meth:`apply` would.
        """
        self._handler(command)(command, True)

    def _handler(self, command: Command) -> Callable[[Any, bool], list[Event]]:
        handler = self._handlers.get(type(command))
        if handler is None:
            raise RuleError("bad_command", command=type(command).__name__)
        if self.over:
            raise RuleError("game_over")
        return handler

    # ------------------------------------------------------------------ queries

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
            name for name in self.residents[city]
            if self.players[name].alive and self.players[name].status is Status.MAFIOSO
        ]

    def honest_residents(self, city: str) -> list[str]:
        """The living honest residents of a city (everyone but mafiosi and the maniac)."""
        return [
            name for name in self.residents[city]
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

    def repeats(self, command: Command) -> bool:
        """Whether ``command`` is a player's choice the rules would accept that stands already,
        exactly as it is: the same vote, Godfather vote, protection, kill or touring target, or
        pass. Applying it again changes nothing but the choice's time; a command that would
        be refused, or is not a choice, is no repeat. Never raises."""
        try:
            self.check(command)
        except RuleError:
            return False
        actor = self.players.get(getattr(command, "actor", ""))
        if actor is None:
            return False
        name, city, target = actor.name, actor.city, getattr(command, "target", None)
        if isinstance(command, CastVote):
            return self.votes[city].get(name, (None, 0))[0] == target
        if isinstance(command, Elect):
            return self.elect_votes[city].get(name) == target
        if isinstance(command, Protect):
            return self.doctor_choice == target
        if isinstance(command, Kill) and actor.status is Status.MANIAC:
            return self.maniac_choice == target
        if isinstance(command, Kill | Pass):
            standing = self.kill_choices[city].get(name)
            return standing is not None and standing[0] == target
        if isinstance(command, Tour):
            toured = self.tour_choices.get(name)
            return toured is not None and toured[0] == target
        return False

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
        """Decided cities (``City:honest``/``City:mafia``, city order) and ``maniac`` if he won."""
        result = [f"{city}:{self.decided[city].value}" for city in self.cities if city in self.decided]
        if self._maniac_among_winners():
            result.append("maniac")
        return result

    def legal_actions(self, player: str) -> list[LegalAction]:
        """What ``player`` may do now, with the legal targets of each verb.

        For ``compare`` the targets are the players he may name (any two
        different ones). Empty for the dead, or when the game is over.

        Raises:
            RuleError: ``unknown_player``.
        """
        me = self._player(player)
        if self.over or not me.alive:
            return []
        everyone = list(self.players)
        result: list[LegalAction] = []
        targeted: list[tuple[str, Callable[[str], Command]]] = [
            ("nominate", lambda t: Nominate(player, t)),
            ("vote", lambda t: CastVote(player, t)),
            ("protect", lambda t: Protect(player, t)),
            ("elect", lambda t: Elect(player, t)),
            ("kill", lambda t: Kill(player, t)),
            ("tour", lambda t: Tour(player, t)),
            ("check", lambda t: Check(player, t)),
        ]
        for verb, make in targeted:
            targets = tuple(t for t in everyone if self._allowed(make(t)))
            if targets:
                result.append(LegalAction(verb, targets))
        for verb, command in (
            ("unvote", Unvote(player)),
            ("lastword", RequestLastWord(player)),
            ("pass", Pass(player)),
        ):
            if self._allowed(command):
                result.append(LegalAction(verb))
        if len(everyone) > 1 and self._allowed(Compare(player, everyone[0], everyone[1])):
            result.append(LegalAction("compare", tuple(everyone)))
        return result

    def legal_host_actions(self) -> list[LegalAction]:
        """What the Procurator may do now, with legal targets where a verb takes one."""
        if self.over:
            return []
        everyone = list(self.players)
        result: list[LegalAction] = []
        for verb, command in (("voting", StartVoting()), ("night", EndDay()), ("day", EndNight())):
            if self._allowed(command):
                result.append(LegalAction(verb))
        targeted: list[tuple[str, Callable[[str], Command]]] = [
            ("kill", ProcuratorKill),
            ("judge", AppointJudge),
            ("godfather", AppointGodfather),
            ("execute", Execute),
        ]
        for verb, make in targeted:
            targets = tuple(t for t in everyone if self._allowed(make(t)))
            if targets:
                result.append(LegalAction(verb, targets))
        return result

    def _allowed(self, command: Command) -> bool:
        try:
            self.check(command)
        except RuleError:
            return False
        return True

    # ------------------------------------------------------------------ guards

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

    # ------------------------------------------------------------------ day

    def _nominate(self, command: Nominate, dry: bool) -> list[Event]:
        actor = self._living_actor(command.actor)
        self._require_stage(Stage.DISCUSSION)
        if actor.name in self.nominators:
            raise RuleError("already_nominated_today", player=actor.name)
        target = self._living_target(command.target)
        if target.name in self.nominations[actor.city]:
            raise RuleError("already_nominated", player=target.name, city=actor.city)
        if dry:
            return []
        self.nominators.add(actor.name)
        self.nominations[actor.city][target.name] = actor.name
        return [Nominated(actor.city, actor.name, target.name)]

    def _vote(self, command: CastVote, dry: bool) -> list[Event]:
        actor = self._living_actor(command.actor)
        self._require_stage(Stage.VOTING)
        target = self._player(command.target)
        if target.name not in self.nominations[actor.city]:
            raise RuleError("not_nominated", player=target.name, city=actor.city)
        self._living_target(target.name)
        if dry:
            return []
        votes = self.votes[actor.city]
        previous = votes.pop(actor.name, None)
        votes[actor.name] = (target.name, self.tick)
        return [VoteCast(actor.city, actor.name, target.name, previous[0] if previous else None)]

    def _unvote(self, command: Unvote, dry: bool) -> list[Event]:
        actor = self._living_actor(command.actor)
        self._require_stage(Stage.VOTING)
        standing = self.votes[actor.city].get(actor.name)
        if standing is None:
            raise RuleError("no_vote", player=actor.name)
        if dry:
            return []
        del self.votes[actor.city][actor.name]
        return [VoteWithdrawn(actor.city, actor.name, standing[0])]

    def _last_word(self, command: RequestLastWord, dry: bool) -> list[Event]:
        actor = self._living_actor(command.actor)
        self._require_stage(*DAY_STAGES)
        if not any(actor.name in nominated for nominated in self.nominations.values()):
            raise RuleError("not_nominated", player=actor.name)
        if actor.name in self.last_words:
            raise RuleError("last_word_used", player=actor.name)
        if dry:
            return []
        self.last_words.add(actor.name)
        return [LastWordRequested(actor.name, actor.city)]

    def _protect(self, command: Protect, dry: bool) -> list[Event]:
        actor = self._living_actor(command.actor, Status.DOCTOR)
        self._require_stage(*DAY_STAGES)
        target = self._living_target(command.target)
        if target.name == actor.name and not self.options.doctor_self_protect:
            raise RuleError("self_target", player=actor.name)
        if dry:
            return []
        self.doctor_choice = target.name
        return [ProtectionChosen(actor.name, target.name)]

    def _compare(self, command: Compare, dry: bool) -> list[Event]:
        actor = self._living_actor(command.actor, Status.JOURNALIST)
        self._require_stage(*DAY_STAGES)
        if self.journalist_compared:
            raise RuleError("already_compared_today", player=actor.name)
        first = self._player(command.first)
        second = self._player(command.second)
        if first.name == second.name:
            raise RuleError("same_player", player=first.name)
        if dry:
            return []
        self.journalist_compared = True
        return [StatusesCompared(actor.name, first.name, second.name, first.status is second.status)]

    def _start_voting(self, command: StartVoting, dry: bool) -> list[Event]:
        self._require_stage(Stage.DISCUSSION)
        if dry:
            return []
        self.stage = Stage.VOTING
        return [self._phase_started()]

    def _end_day(self, command: EndDay, dry: bool) -> list[Event]:
        self._require_stage(Stage.VOTING)
        if dry:
            return []
        events: list[Event] = []
        day = self.phase.number
        for city in self.cities:
            if not self.alive(city):
                continue
            ranking = self._ranking(city)
            events.append(self._tallied(city, ranking))
            chosen = next((name for name, _, _ in ranking if self.players[name].alive), None)
            by_chance = False
            if chosen is None:
                if self.options.day_fallback is DayFallback.HOST:
                    self.pending_executions.append(city)
                    events.append(ExecutionAwaitingHost(city))
                    continue
                chosen = self._random_execution(city, day)
                by_chance = True
            events.extend(self._die(chosen, Cause.EXECUTION, by_city=city, by_chance=by_chance))
        events.extend(self._check_end())
        if self.over:
            return events
        if self.pending_executions:
            self.stage = Stage.EXECUTION
            return events
        events.extend(self._start_night())
        return events

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

    def _tallied(self, city: str, ranking: list[tuple[str, int, int]]) -> VotesTallied:
        """The city's count as told at the end of the day: who could be executed, every vote in
        the order cast, and the other cities' residents passed over for lacking a majority."""
        votes = self.votes[city]
        ballots = tuple(
            (voter, candidate)
            for voter, (candidate, _) in sorted(votes.items(), key=lambda row: row[1][1])
        )
        eligible = {name for name, _, _ in ranking}
        counts: dict[str, int] = {}
        for _, candidate in ballots:
            counts[candidate] = counts.get(candidate, 0) + 1
        skipped = tuple(sorted(
            ((name, count) for name, count in counts.items() if name not in eligible),
            key=lambda row: -row[1],
        ))
        tally = tuple((name, count) for name, count, _ in ranking)
        return VotesTallied(city, len(votes), tally, ballots, skipped)

    def _random_execution(self, city: str, day: int) -> str:
        rng = random.Random(f"{self.seed}:execution:{day}:{city}")
        own_nominees = [
            name for name in self.nominations[city]
            if self.players[name].city == city and self.players[name].alive
        ]
        return rng.choice(own_nominees or self.alive(city))

    def _execute(self, command: Execute, dry: bool) -> list[Event]:
        self._require_stage(Stage.EXECUTION)
        target = self._living_target(command.target)
        if dry:
            return []
        city = self.pending_executions.pop(0)
        events = self._die(target.name, Cause.EXECUTION, by_city=city)
        events.extend(self._check_end())
        events.extend(self._after_pending())
        return events

    def _execute_by_lot(self, command: ExecuteByLot, dry: bool) -> list[Event]:
        self._require_stage(Stage.EXECUTION)
        if dry:
            return []
        day = self.phase.number
        events: list[Event] = []
        waiting, self.pending_executions = self.pending_executions, []
        for city in waiting:
            if not self.alive(city):
                continue
            chosen = self._random_execution(city, day)
            events.extend(self._die(chosen, Cause.EXECUTION, by_city=city, by_chance=True))
        events.extend(self._check_end())
        events.extend(self._after_pending())
        return events

    def _after_pending(self) -> list[Event]:
        """Drop waiting cities left without residents; start the night once none waits."""
        self.pending_executions = [city for city in self.pending_executions if self.alive(city)]
        if self.over or self.stage is not Stage.EXECUTION or self.pending_executions:
            return []
        return self._start_night()

    # ------------------------------------------------------------------ godfather

    def _elect(self, command: Elect, dry: bool) -> list[Event]:
        actor = self._living_actor(command.actor, Status.MAFIOSO)
        target = self._living_target(command.target)
        if target.status is not Status.MAFIOSO or target.city != actor.city:
            raise RuleError("not_mafioso", player=target.name, city=actor.city)
        if dry:
            return []
        city = actor.city
        self.elect_votes[city][actor.name] = target.name
        events: list[Event] = [GodfatherVoteCast(city, actor.name, target.name)]
        events.extend(self._elect_by_majority(city))
        return events

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

    def _appoint_godfather(self, command: AppointGodfather, dry: bool) -> list[Event]:
        target = self._living_target(command.target)
        if target.status is not Status.MAFIOSO:
            raise RuleError("not_mafioso", player=target.name, city=target.city)
        if dry:
            return []
        if self.godfathers.get(target.city) == target.name:
            return []
        self.godfathers[target.city] = target.name
        return [GodfatherChanged(target.city, target.name, GodfatherReason.APPOINTED)]

    def _set_touring_order(self, command: SetTouringOrder, dry: bool) -> list[Event]:
        self._require_stage(*DAY_STAGES)
        if not command.order:
            raise RuleError("bad_option", option="touring_order", value="[]")
        for city in command.order:
            if city not in self.cities:
                raise RuleError("unknown_city", city=city)
        if dry:
            return []
        self.touring_order = tuple(command.order)
        return [TouringOrderSet(self.touring_order, self.touring_city())]

    def _appoint_judge(self, command: AppointJudge, dry: bool) -> list[Event]:
        target = self._living_target(command.target)
        if dry:
            return []
        self.judges[target.city] = target.name
        return [JudgeAppointed(target.city, target.name)]

    # ------------------------------------------------------------------ night

    def _kill_command(self, command: Kill, dry: bool) -> list[Event]:
        actor = self._living_actor(command.actor, Status.MAFIOSO, Status.MANIAC)
        self._require_stage(Stage.NIGHT)
        target = self._living_target(command.target)
        if actor.status is Status.MANIAC:
            if target.name == actor.name:
                raise RuleError("self_target", player=actor.name)
            if dry:
                return []
            self.maniac_choice = target.name
            return [ManiacChose(actor.name, target.name)]
        if target.city != actor.city:
            raise RuleError("wrong_city", player=target.name, city=actor.city)
        if target.status is Status.MAFIOSO:
            raise RuleError("own_mafioso", player=target.name)
        if dry:
            return []
        self.kill_choices[actor.city][actor.name] = (target.name, self.tick)
        decision = self.godfathers.get(actor.city) == actor.name
        return [MafiaKillChosen(actor.city, actor.name, target.name, decision)]

    def _pass(self, command: Pass, dry: bool) -> list[Event]:
        actor = self._living_actor(command.actor, Status.MAFIOSO)
        self._require_stage(Stage.NIGHT)
        if self.godfathers.get(actor.city) != actor.name:
            raise RuleError("not_godfather", player=actor.name)
        if dry:
            return []
        self.kill_choices[actor.city][actor.name] = (None, self.tick)
        return [MafiaKillRefused(actor.city, actor.name)]

    def _tour(self, command: Tour, dry: bool) -> list[Event]:
        actor = self._living_actor(command.actor, Status.MAFIOSO)
        self._require_stage(Stage.NIGHT)
        if actor.city != self.touring_city():
            raise RuleError("not_touring", city=actor.city)
        target = self._living_target(command.target)
        if target.city == actor.city:
            raise RuleError("wrong_city", player=target.name, city=actor.city)
        if self.judges.get(target.city) == target.name:
            raise RuleError("judge_immune", player=target.name, city=target.city)
        if dry:
            return []
        self.tour_choices[actor.name] = (target.name, self.tick)
        decision = self.godfathers.get(actor.city) == actor.name
        return [MafiaKillChosen(actor.city, actor.name, target.name, decision, touring=True)]

    def _check(self, command: Check, dry: bool) -> list[Event]:
        actor = self._living_actor(command.actor, Status.COMMISSAR)
        self._require_stage(Stage.NIGHT)
        if actor.name in self.checked:
            raise RuleError("already_checked_tonight", player=actor.name)
        target = self._living_target(command.target)
        if target.name == actor.name:
            raise RuleError("self_target", player=actor.name)
        if target.city != actor.city:
            raise RuleError("wrong_city", player=target.name, city=actor.city)
        if dry:
            return []
        self.checked.add(actor.name)
        return [PlayerChecked(actor.name, target.name, target.status is Status.MAFIOSO)]

    def _end_night(self, command: EndNight, dry: bool) -> list[Event]:
        self._require_stage(Stage.NIGHT)
        if dry:
            return []
        events = self._dawn()
        events.extend(self._check_end())
        if not self.over:
            events.extend(self._start_day())
        return events

    def _dawn(self) -> list[Event]:
        """The night's kills, in the order of RULES.md's dawn."""
        events: list[Event] = []
        touring_city = self.touring_city()
        # Every decision is taken on the state at the end of the night,
        # before anyone dies: the night's kills happen together.
        maniac_target = self._maniac_decision(events)
        tour_target = self._mafia_decision(touring_city, touring=True, events=events)
        home_targets = {
            city: self._mafia_decision(city, touring=False, events=events) for city in self.cities
        }
        # Posts emptied at dawn are filled only after it (below), so the
        # only Godfathers who can die at dawn are those in office at the end
        # of the night: a mafioso seated for a moment mid-dawn (the lone
        # survivor of the maniac's kill, say) and killed next is no
        # Godfather who "died this night", and cannot block his city's kill.
        # 1. the maniac
        if maniac_target is not None:
            events.extend(self._night_kill(maniac_target, Cause.MANIAC))
        # 2. a city whose Godfather died this night kills nobody: self.godfather_died
        # 3. the touring kill
        if tour_target is not None:
            if touring_city in self.godfather_died:
                events.append(MafiaKillBlocked(touring_city))
            elif self.judges.get(self.players[tour_target].city) != tour_target:
                events.extend(self._night_kill(tour_target, Cause.TOURING))
        # 4. each remaining city's own kill
        for city in self.cities:
            target = home_targets[city]
            if target is None:
                continue
            if city in self.godfather_died:
                events.append(MafiaKillBlocked(city))
                continue
            events.extend(self._night_kill(target, Cause.MAFIA))
        # After dawn: every city whose mafia lost someone at dawn and has no
        # Godfather fills the post (a lone survivor, or a majority recount).
        emptied = {
            e.city for e in events
            if isinstance(e, PlayerKilled) and e.status is Status.MAFIOSO
        }
        for city in self.cities:
            if city in emptied and city not in self.godfathers:
                events.extend(self._fill_empty_post(city))
        return events

    def _maniac_decision(self, events: list[Event]) -> str | None:
        maniac = next(
            (p for p in self.players.values() if p.status is Status.MANIAC and p.alive), None
        )
        if maniac is None:
            return None
        if self.maniac_choice is not None:
            return self.maniac_choice if self.players[self.maniac_choice].alive else None
        if self.options.maniac_idle is ManiacIdle.NONE:
            return None
        victims = [name for name in self.alive() if name != maniac.name]
        if not victims:
            return None
        rng = random.Random(f"{self.seed}:maniac:{self.phase.number}")
        victim = rng.choice(victims)
        events.append(ManiacChose(maniac.name, victim, by_chance=True))
        return victim

    def _mafia_decision(self, city: str, *, touring: bool, events: list[Event]) -> str | None:
        """The Godfather's word, else the Consigliere's: the target, or None."""
        if touring:
            choices = {
                name: choice for name, choice in self.tour_choices.items()
                if self.players[name].city == city
            }
        else:
            choices = self.kill_choices[city]
        godfather = self.godfathers.get(city)
        if godfather is not None and godfather in choices:
            return choices[godfather][0]
        if not self.living_mafiosi(city):
            return None
        support: dict[str, list[int]] = {}
        for target, tick in choices.values():
            if target is None:
                continue
            entry = support.setdefault(target, [0, tick])
            entry[0] += 1
            entry[1] = max(entry[1], tick)
        chosen: str | None = None
        if support:
            chosen = min(support, key=lambda name: (-support[name][0], support[name][1]))
        if choices:
            events.append(ConsigliereDecided(city, chosen, touring))
        return chosen

    def _night_kill(self, target: str, cause: Cause) -> list[Event]:
        if not self.players[target].alive:
            return []
        if target == self.protected:
            return [KillPrevented(target, cause)]
        return self._die(target, cause, fill_post=False)

    def _start_night(self) -> list[Event]:
        number = self._next_night()
        self.phase = Phase(PhaseKind.NIGHT, number)
        self.stage = Stage.NIGHT
        doctor_alive = any(
            p.alive for p in self.players.values() if p.status is Status.DOCTOR
        )
        self.protected = self.doctor_choice if doctor_alive else None
        self.doctor_choice = None
        for choices in self.kill_choices.values():
            choices.clear()
        self.tour_choices.clear()
        self.maniac_choice = None
        self.checked.clear()
        self.godfather_died.clear()
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
        self.journalist_compared = False
        self.doctor_choice = None
        self.pending_executions = []
        self.protected = None
        return [self._phase_started()]

    def _phase_started(self) -> PhaseStarted:
        touring = self.touring_city() if self.stage is Stage.NIGHT else None
        return PhaseStarted(self.phase, self.stage, touring)

    # ------------------------------------------------------------------ deaths

    def _procurator_kill(self, command: ProcuratorKill, dry: bool) -> list[Event]:
        target = self._living_target(command.target)
        if dry:
            return []
        events = self._die(target.name, Cause.PROCURATOR)
        events.extend(self._check_end())
        events.extend(self._after_pending())
        return events

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
        self.elect_votes[city].pop(name, None)
        if self.judges.get(city) == name:
            del self.judges[city]
        if player.status is Status.MAFIOSO:
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

    # ------------------------------------------------------------------ replacement

    def _replace(self, command: Replace, dry: bool) -> list[Event]:
        old = self._living_target(command.old)
        new = command.new
        if not new or new in self.players or any(new in pair for pair in self.replaced):
            raise RuleError("already_playing", player=new)
        if dry:
            return []
        name, city = old.name, old.city
        self._rename(name, new)
        self.replaced.append((name, new))
        return [PlayerReplaced(name, new, city)]

    def _rename(self, old: str, new: str) -> None:
        """Put ``new`` wherever the state names ``old`` (players, posts, votes, choices)."""

        def one(name: str | None) -> str | None:
            return new if name == old else name

        def name(value: str) -> str:
            return new if value == old else value

        self.players[old].name = new
        self.players = {name(key): player for key, player in self.players.items()}
        self.residents = {city: tuple(name(p) for p in people) for city, people in self.residents.items()}
        self.judges = {city: name(p) for city, p in self.judges.items()}
        self.godfathers = {city: name(p) for city, p in self.godfathers.items()}
        self.elect_votes = {city: {name(v): name(c) for v, c in votes.items()}
                            for city, votes in self.elect_votes.items()}
        self.nominations = {city: {name(c): name(n) for c, n in noms.items()}
                            for city, noms in self.nominations.items()}
        self.nominators = {name(p) for p in self.nominators}
        self.votes = {city: {name(v): (name(c), tick) for v, (c, tick) in votes.items()}
                      for city, votes in self.votes.items()}
        self.last_words = {name(p) for p in self.last_words}
        self.doctor_choice = one(self.doctor_choice)
        self.protected = one(self.protected)
        self.kill_choices = {city: {name(p): (one(t), tick) for p, (t, tick) in choices.items()}
                             for city, choices in self.kill_choices.items()}
        self.tour_choices = {name(p): (one(t), tick) for p, (t, tick) in self.tour_choices.items()}
        self.maniac_choice = one(self.maniac_choice)
        self.checked = {name(p) for p in self.checked}

    def _fill_empty_post(self, city: str) -> list[Event]:
        living = self.living_mafiosi(city)
        if len(living) == 1:
            self.godfathers[city] = living[0]
            return [GodfatherChanged(city, living[0], GodfatherReason.LONE)]
        return self._elect_by_majority(city)

    def _check_end(self) -> list[Event]:
        """Decide cities, the maniac's win and the game's end after a batch of deaths."""
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
        maniac_alive = any(self.players[name].status is Status.MANIAC for name in living)
        if maniac_alive and len(living) == 1:
            self.maniac_won = True
        all_decided = len(self.decided) == len(self.cities)
        if self.maniac_won or (
            all_decided and (not maniac_alive or self.options.maniac_wins_if_survives)
        ):
            self.over = True
            events.append(GameOver(tuple(self.winners())))
        return events

    def _maniac_among_winners(self) -> bool:
        if self.maniac_won:
            return True
        if not (self.over and self.options.maniac_wins_if_survives):
            return False
        return any(p.alive and p.status is Status.MANIAC for p in self.players.values())

    # ------------------------------------------------------------------ plain data

    def to_dict(self) -> dict[str, Any]:
        """The whole state as JSON-able plain data; :meth:`from_dict` inverts it."""
        return {
            "setup": self.setup.to_dict(),
            "seed": self.seed,
            "phase": str(self.phase),
            "stage": self.stage.value,
            "tick": self.tick,
            "over": self.over,
            "alive": {name: p.alive for name, p in self.players.items()},
            "decided": {city: winner.value for city, winner in self.decided.items()},
            "maniac_won": self.maniac_won,
            "deaths": [death.to_dict() for death in self.deaths],
            "touring_order": list(self.touring_order),
            "judges": dict(self.judges),
            "godfathers": dict(self.godfathers),
            "elect_votes": {city: dict(v) for city, v in self.elect_votes.items()},
            "nominations": {city: dict(n) for city, n in self.nominations.items()},
            "nominators": sorted(self.nominators),
            "votes": {
                city: {voter: [candidate, tick] for voter, (candidate, tick) in votes.items()}
                for city, votes in self.votes.items()
            },
            "last_words": sorted(self.last_words),
            "journalist_compared": self.journalist_compared,
            "doctor_choice": self.doctor_choice,
            "pending_executions": list(self.pending_executions),
            "protected": self.protected,
            "kill_choices": {
                city: {name: [target, tick] for name, (target, tick) in choices.items()}
                for city, choices in self.kill_choices.items()
            },
            "tour_choices": {name: [t, tick] for name, (t, tick) in self.tour_choices.items()},
            "maniac_choice": self.maniac_choice,
            "checked": sorted(self.checked),
            "godfather_died": sorted(self.godfather_died),
            **({"replaced": [list(pair) for pair in self.replaced]} if self.replaced else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Game:
        """Rebuild a game from :meth:`to_dict`'s plain data.

        Raises:
            RuleError: if the setup inside is not sound; KeyError/ValueError
                for data that did not come from :meth:`to_dict`.
        """
        game = cls.create(Setup.from_dict(data["setup"]), int(data["seed"]))
        game.phase = Phase.parse(data["phase"])
        game.stage = Stage(data["stage"])
        game.tick = int(data["tick"])
        game.over = bool(data["over"])
        for old, new in data.get("replaced", []):  # the deal names the players who left
            game._rename(str(old), str(new))
            game.replaced.append((str(old), str(new)))
        for name, alive in data["alive"].items():
            game.players[name].alive = bool(alive)
        game.decided = {city: Winner(w) for city, w in data["decided"].items()}
        game.maniac_won = bool(data["maniac_won"])
        game.deaths = [
            Death(d["player"], d["city"], Status(d["status"]), Cause(d["cause"]), Phase.parse(d["phase"]))
            for d in data["deaths"]
        ]
        game.touring_order = tuple(data["touring_order"])
        game.judges = dict(data["judges"])
        game.godfathers = dict(data["godfathers"])
        game.elect_votes = {city: dict(v) for city, v in data["elect_votes"].items()}
        game.nominations = {city: dict(n) for city, n in data["nominations"].items()}
        game.nominators = set(data["nominators"])
        game.votes = {
            city: {voter: (str(c), int(t)) for voter, (c, t) in votes.items()}
            for city, votes in data["votes"].items()
        }
        game.last_words = set(data["last_words"])
        game.journalist_compared = bool(data["journalist_compared"])
        game.doctor_choice = data["doctor_choice"]
        game.pending_executions = list(data["pending_executions"])
        game.protected = data["protected"]
        game.kill_choices = {
            city: {name: (target, int(tick)) for name, (target, tick) in choices.items()}
            for city, choices in data["kill_choices"].items()
        }
        game.tour_choices = {name: (t, int(tick)) for name, (t, tick) in data["tour_choices"].items()}
        game.maniac_choice = data["maniac_choice"]
        game.checked = set(data["checked"])
        game.godfather_died = set(data["godfather_died"])
        return game

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Game):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<Game {self.phase} {self.stage.value} tick={self.tick} over={self.over}>"
