"""The lover (любовница): honest, at most one in the game. Each night she visits one living
player other than herself, of any city (``visit``; the last choice counts; only she and the
Procurator know). The visited player survives every night kill that night, and his own kill
counts for nothing: one who kills alone kills nobody, a visited Godfather's word is void (the
Consigliere decides from the other proposals), a visited mafia member's proposal does not count.
Her dying at dawn does not undo the visit: the night's decisions are taken before anyone
dies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rules.commands import PlayerCommand
from rules.events import Event
from rules.model import Audience, Cause, Stage, Status
from rules.night import NightRules
from rules.roles.base import Role, RoleAct, choose_another

VERB = "visit"


@dataclass(frozen=True)
class Visit(PlayerCommand):
    """Night: visit ``target`` until dawn."""

    verb: ClassVar[str] = VERB
    target: str


@dataclass(frozen=True)
class VisitChosen(Event):
    """The lover chose whom she visits tonight (she alone is told, not the visited)."""

    kind: ClassVar[str] = "visit_chosen"
    lover: str
    target: str

    @property
    def audience(self) -> Audience:
        return Audience.only(self.lover)


@dataclass(frozen=True)
class VisitSaved(Event):
    """The lover's visit saved ``target`` from a night kill (the Procurator's log)."""

    kind: ClassVar[str] = "visited_saved"
    target: str
    cause: Cause

    @property
    def audience(self) -> Audience:
        return Audience.host()


def visit(game: NightRules, command: Visit, dry: bool) -> list[Event]:
    """``visit``: a living player other than herself, at night.

    Raises:
        RuleError: ``not_alive``, ``wrong_role``, ``wrong_phase``, ``unknown_player``,
            ``target_not_alive`` or ``self_target``.
    """
    chooser = choose_another(game, command.actor, Status.LOVER, VERB, command.target, dry)
    return [] if chooser is None else [VisitChosen(chooser, command.target)]


def visited(game: NightRules) -> set[str]:
    """The players visited tonight, as the night ended."""
    return set(game.dawn_choices.get(VERB, {}).values())


def save(game: NightRules, target: str, cause: Cause) -> list[Event] | None:
    """A visited player survives every night kill."""
    return [VisitSaved(target, cause)] if target in visited(game) else None


ROLE = Role(
    Status.LOVER,
    "honest",
    switchable=True,
    per_game=1,
    acts=(RoleAct(Visit, Stage.NIGHT.value, visit, reply=True),),
    announced="night",
    events=(VisitChosen, VisitSaved),
    saves=(10, save),
    voids=visited,
)
