"""The night's rules: the dawn that carries out the night's decisions in the order of RULES.md,
the mafia's among them (the Godfather's word, else the Consigliere's). The roles' own acts,
the mafia's choices included, are their modules', :mod:`rules.roles`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from rules.commands import EndNight
from rules.events import (
    ConsigliereDecided,
    Event,
    KillPrevented,
    KillVoided,
    MafiaKillBlocked,
    PlayerKilled,
)
from rules.model import Cause, Stage
from rules.state import GameState


class NightRules(GameState):
    """The end of the night and its dawn."""

    saves: ClassVar[tuple[Callable[[Any, str, Cause], list[Event] | None], ...]] = ()
    """The roles' saves at dawn, in their place (:attr:`rules.roles.base.Role.saves`)."""
    voids: ClassVar[tuple[Callable[[Any], set[str]], ...]] = ()
    """What voids players' own kills at dawn (:attr:`rules.roles.base.Role.voids`)."""
    kills: ClassVar[
        tuple[Callable[[Any, list[Event], set[str]], tuple[str, Cause] | None], ...]
    ] = ()
    """The roles' own night kills, decided at dawn (:attr:`rules.roles.base.Role.kills`)."""

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
        self.dawn_choices = {verb: dict(held) for verb, held in self.choices.items()}
        void: set[str] = set().union(*(voided(self) for voided in self.voids))
        own_kills = [decided(self, events, void) for decided in self.kills]
        tour_target = self._mafia_decision(touring_city, touring=True, events=events, void=void)
        home_targets = {
            city: self._mafia_decision(city, touring=False, events=events, void=void)
            for city in self.cities
        }
        # Posts emptied at dawn are filled only after it (below), so the
        # only Godfathers who can die at dawn are those in office at the end
        # of the night: a mafia member seated for a moment mid-dawn (the lone
        # survivor of a role's own kill, say) and killed next is no
        # Godfather who "died this night", and cannot block his city's kill.
        # 1. the roles' own kills
        for own in own_kills:
            if own is not None:
                events.extend(self._night_kill(*own))
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
        emptied = {e.city for e in events if isinstance(e, PlayerKilled) and e.status.in_mafia}
        for city in self.cities:
            if city in emptied and city not in self.godfathers:
                events.extend(self._fill_empty_post(city))
        self.dawn_choices = {}
        return events

    def _mafia_decision(
        self, city: str, *, touring: bool, events: list[Event], void: set[str]
    ) -> str | None:
        """The Godfather's word, else the Consigliere's: the target, or None. The choices of
        the players in ``void`` count for nothing."""
        held = self.tour_choices if touring else self.kill_choices[city]
        godfather = self.godfathers.get(city)
        for name in held:
            voided = KillVoided(name, city, "godfather" if name == godfather else "proposal")
            if name in void and self.players[name].city == city and voided not in events:
                events.append(voided)
        choices = {
            name: choice
            for name, choice in held.items()
            if self.players[name].city == city and name not in void
        }
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
        for save in self.saves:
            saved = save(self, target, cause)
            if saved is not None:
                return saved
        return self._die(target, cause, fill_post=False)
