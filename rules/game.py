"""The game: the one mutator :meth:`Game.apply`, the legal actions, the host's commands and plain data.

The state and the rules both halves share are in :mod:`rules.state`; the day's handlers in
:mod:`rules.day`, the night's in :mod:`rules.night`.

Time is the order of acceptance: every accepted command advances
:attr:`Game.tick` by one, and "the latest vote" or "the earliest proposal"
compare ticks. Randomness comes only from the seed, through a fresh
``random.Random`` keyed by the seed and what is being decided, so a game
replays exactly from its setup, seed and command log.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, cast

from rules.commands import (
    AppointGodfather,
    AppointJudge,
    CastVote,
    Command,
    Elect,
    EndDay,
    EndNight,
    Execute,
    ExecuteByLot,
    Kill,
    Nominate,
    Pass,
    PlayerCommand,
    ProcuratorKill,
    Replace,
    RequestLastWord,
    SetTouringOrder,
    StartVoting,
    Tour,
    Unvote,
)
from rules.day import DayRules
from rules.errors import RuleError
from rules.events import (
    Event,
    GodfatherChanged,
    GodfatherReason,
    JudgeAppointed,
    PlayerReplaced,
    TouringOrderSet,
    event_to_dict,
)
from rules.model import (
    Cause,
    Phase,
    PhaseKind,
    Setup,
    Stage,
    Status,
    Winner,
)
from rules.night import NightRules
from rules.roles import (
    ALONE,
    HANDLERS,
    KEPT,
    KILLS,
    MAFIA,
    NIGHTFALLS,
    SAVES,
    STANDS,
    SURVIVES,
    TELLERS,
    VOIDS,
    WON_ALONE_KEY,
)
from rules.setup import validate_setup
from rules.state import DAY_STAGES, Death, LegalAction
from rules.table import PLAYER_ACTS

__all__ = ["DAY_STAGES", "Death", "Game", "LegalAction"]


class Game(DayRules, NightRules):
    """A running game of multi-city Mafia.

    Build one with :meth:`create`; change it only with :meth:`apply`; read
    it with the query methods. ``to_dict``/``from_dict`` round-trip the
    whole state.
    """

    saves = SAVES
    kills = KILLS
    nightfalls = NIGHTFALLS
    voids = VOIDS
    alone = ALONE
    survives = SURVIVES
    won_alone_key = WON_ALONE_KEY
    role_keys = KEPT

    def __init__(self, setup: Setup, seed: int) -> None:
        """Use :meth:`create`, which validates the setup; this trusts it."""
        super().__init__(setup, seed)
        self._handlers: dict[type[Command], Callable[[Any, bool], list[Event]]] = {
            Nominate: self._nominate,
            CastVote: self._vote,
            Unvote: self._unvote,
            RequestLastWord: self._last_word,
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
        # a role's command goes to the handler of its sender's status (the first role's for
        # a sender of none, which refuses him)
        for kind, by_status in HANDLERS.items():
            first = next(iter(by_status.values()))
            self._handlers[kind] = partial(first, self)

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

    def apply(self, command: Command) -> list[Event]:
        """Apply one command and return what happened.

        Raises:
            RuleError: the command is refused (``game_over``, ``wrong_phase``,
                ``not_alive``, ``unknown_player``... see
                :data:`rules.errors.CODES`); the state is then unchanged.
        """
        # Every handler validates completely before it changes anything.
        events = self._handler(command)(command, False)
        for tell in TELLERS:
            for told in tell(self, events):
                # no room of his own: he reads it again in his role's view
                player = told.audience.player
                if player is not None:
                    self.notes.setdefault(player, []).append(event_to_dict(told))
                events.append(told)
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
        by_status = HANDLERS.get(type(command), {})
        if len(by_status) > 1 and isinstance(command, PlayerCommand):
            sender = self.players.get(command.actor)
            if sender is not None and sender.status in by_status:
                return partial(by_status[sender.status], self)
        return handler

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
        stands = STANDS.get(type(command), {}).get(actor.status)
        if stands is not None:
            return stands(self, command)
        if isinstance(command, Kill | Pass):
            standing = self.kill_choices[city].get(name)
            return standing is not None and standing[0] == target
        if isinstance(command, Tour):
            toured = self.tour_choices.get(name)
            return toured is not None and toured[0] == target
        held = self.choices.get(command.verb, {})
        return name in held and held[name] == target

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
        # the acts on one player, then those on none, then those on two (any two different)
        for act in PLAYER_ACTS.values():
            make = cast(Callable[..., Command], act.command)
            if len(act.targets) == 1:
                targets = tuple(t for t in everyone if self._allowed(make(player, t)))
                if targets:
                    result.append(LegalAction(act.verb, targets))
        for act in PLAYER_ACTS.values():
            make = cast(Callable[..., Command], act.command)
            if not act.targets and self._allowed(make(player)):
                result.append(LegalAction(act.verb))
        for act in PLAYER_ACTS.values():
            make = cast(Callable[..., Command], act.command)
            two = len(act.targets) == 2 and len(everyone) > 1
            if two and self._allowed(make(player, everyone[0], everyone[1])):
                result.append(LegalAction(act.verb, tuple(everyone)))
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

    def _appoint_godfather(self, command: AppointGodfather, dry: bool) -> list[Event]:
        target = self._living_target(command.target)
        if not target.status.in_mafia:
            raise RuleError(f"not_{MAFIA.value}", player=target.name, city=target.city)
        if dry:
            return []
        if self.godfathers.get(target.city) == target.name:
            return []
        self.godfathers[target.city] = target.name
        return [GodfatherChanged(target.city, target.name, GodfatherReason.APPOINTED)]

    def _procurator_kill(self, command: ProcuratorKill, dry: bool) -> list[Event]:
        target = self._living_target(command.target)
        if dry:
            return []
        events = self._die(target.name, Cause.PROCURATOR)
        events.extend(self._check_end())
        events.extend(self._after_pending())
        return events

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
            self.won_alone_key: self.won_alone,
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
            **self._kept_data(PhaseKind.DAY),
            "pending_executions": list(self.pending_executions),
            "protected": self.protected,
            "kill_choices": {
                city: {name: [target, tick] for name, (target, tick) in choices.items()}
                for city, choices in self.kill_choices.items()
            },
            "tour_choices": {name: [t, tick] for name, (t, tick) in self.tour_choices.items()},
            **self._kept_data(PhaseKind.NIGHT),
            "checked": sorted(self.checked),
            "godfather_died": sorted(self.godfather_died),
            **({"replaced": [list(pair) for pair in self.replaced]} if self.replaced else {}),
            **(
                {"choices": {v: dict(held) for v, held in self.choices.items()}}
                if self.choices
                else {}
            ),
            **(
                {"notes": {p: [dict(n) for n in told] for p, told in self.notes.items()}}
                if self.notes
                else {}
            ),
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
        game.won_alone = bool(data[cls.won_alone_key])
        game.deaths = [
            Death(
                d["player"],
                d["city"],
                Status(d["status"]),
                Cause(d["cause"]),
                Phase.parse(d["phase"]),
            )
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
        game.pending_executions = list(data["pending_executions"])
        game.protected = data["protected"]
        game.kill_choices = {
            city: {name: (target, int(tick)) for name, (target, tick) in choices.items()}
            for city, choices in data["kill_choices"].items()
        }
        game.tour_choices = {
            name: (t, int(tick)) for name, (t, tick) in data["tour_choices"].items()
        }
        game.checked = set(data["checked"])
        game.godfather_died = set(data["godfather_died"])
        game.choices = {str(v): dict(held) for v, held in data.get("choices", {}).items()}
        game.notes = {str(p): [dict(n) for n in told] for p, told in data.get("notes", {}).items()}
        for key, kept in cls.role_keys.items():
            value = data.get(key, kept.initial)
            game.role_state[key] = bool(value) if isinstance(kept.initial, bool) else value
        return game

    def _kept_data(self, cleared: PhaseKind) -> dict[str, Any]:
        """What the roles keep until the start of a ``cleared`` phase, as stored: the day's
        after the day's own state, the night's after the night's."""
        return {
            key: self.role_state[key]
            for key, kept in self.role_keys.items()
            if kept.cleared is cleared
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Game):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<Game {self.phase} {self.stage.value} tick={self.tick} over={self.over}>"
