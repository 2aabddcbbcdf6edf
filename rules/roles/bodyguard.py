"""The bodyguard (телохранитель): honest, at most one in the game. Each night he guards one
living player other than himself, of any city (``guard``; the last choice counts). At dawn the
first night kill that would land on the guarded player (no protection, no save placed before
this one spares him) kills the bodyguard instead, by that kill's cause, and the
guarded player lives; a later kill on him that night lands as usual. A bodyguard who died
earlier in the dawn's order guards nobody, and the kill he takes is a night kill on him (a
protection, or any save of the dawn, spares him). The Procurator's kill and the
executions are no night kills."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rules.commands import PlayerCommand
from rules.events import Event
from rules.model import Audience, Cause, Stage, Status
from rules.night import NightRules
from rules.roles.base import Role, RoleAct, choose_another

VERB = "guard"


@dataclass(frozen=True)
class Guard(PlayerCommand):
    """Night: guard ``target`` until dawn."""

    verb: ClassVar[str] = VERB
    target: str


@dataclass(frozen=True)
class GuardChosen(Event):
    """The bodyguard chose whom he guards tonight (he alone is told)."""

    kind: ClassVar[str] = "guard_chosen"
    bodyguard: str
    target: str

    @property
    def audience(self) -> Audience:
        return Audience.only(self.bodyguard)


@dataclass(frozen=True)
class KillTaken(Event):
    """At dawn the bodyguard took the kill meant for ``target`` (the Procurator's log)."""

    kind: ClassVar[str] = "guarded"
    bodyguard: str
    target: str
    cause: Cause

    @property
    def audience(self) -> Audience:
        return Audience.host()


def guard(game: NightRules, command: Guard, dry: bool) -> list[Event]:
    """``guard``: a living player other than himself, at night.

    Raises:
        RuleError: ``not_alive``, ``wrong_role``, ``wrong_phase``, ``unknown_player``,
            ``target_not_alive`` or ``self_target``.
    """
    chooser = choose_another(game, command.actor, Status.BODYGUARD, VERB, command.target, dry)
    return [] if chooser is None else [GuardChosen(chooser, command.target)]


def take_the_kill(game: NightRules, target: str, cause: Cause) -> list[Event] | None:
    """The first kill on the guarded player lands on a living bodyguard instead."""
    guarding = game.dawn_choices.get(VERB, {})
    for bodyguard, guarded in list(guarding.items()):
        if guarded == target and game.players[bodyguard].alive:
            del guarding[bodyguard]  # he takes only the first
            return [KillTaken(bodyguard, target, cause), *game._night_kill(bodyguard, cause)]
    return None


ROLE = Role(
    Status.BODYGUARD,
    "honest",
    switchable=True,
    per_game=1,
    acts=(RoleAct(Guard, Stage.NIGHT.value, guard, reply=True),),
    announced="night",
    events=(GuardChosen, KillTaken),
    saves=(20, take_the_kill),
)
