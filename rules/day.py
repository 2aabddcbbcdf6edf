"""The day's rules: nominations, votes, the last word, and the day's end with its executions
(the roles' own day moves are their modules', :mod:`rules.roles`)."""

from __future__ import annotations

import random

from rules.commands import (
    CastVote,
    EndDay,
    Execute,
    ExecuteByLot,
    Nominate,
    RequestLastWord,
    StartVoting,
    Unvote,
)
from rules.errors import RuleError
from rules.events import (
    Event,
    ExecutionAwaitingHost,
    LastWordRequested,
    Nominated,
    VoteCast,
    VotesTallied,
    VoteWithdrawn,
)
from rules.model import (
    Cause,
    DayFallback,
    Stage,
)
from rules.state import DAY_STAGES, GameState


class DayRules(GameState):
    """The handlers of the day's commands (each validates completely before it changes anything)."""

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
            raise RuleError("not_nominee", player=actor.name)
        if actor.name in self.last_words:
            raise RuleError("last_word_used", player=actor.name)
        if dry:
            return []
        self.last_words.add(actor.name)
        return [LastWordRequested(actor.name, actor.city)]

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
        skipped = tuple(
            sorted(
                ((name, count) for name, count in counts.items() if name not in eligible),
                key=lambda row: -row[1],
            )
        )
        tally = tuple((name, count) for name, count, _ in ranking)
        return VotesTallied(city, len(votes), tally, ballots, skipped)

    def _random_execution(self, city: str, day: int) -> str:
        rng = random.Random(f"{self.seed}:execution:{day}:{city}")
        own_nominees = [
            name
            for name in self.nominations[city]
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
