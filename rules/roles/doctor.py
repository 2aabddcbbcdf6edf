"""The doctor: honest, at most one in the game. By day he protects one living player for the
coming night (``protect``; the last choice counts; himself only if the rules' option allows
it). At nightfall his choice holds if he lives; at dawn a night kill on the protected player
is prevented."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rules.commands import Command, PlayerCommand
from rules.day import DayRules
from rules.errors import RuleError
from rules.events import Event
from rules.model import Audience, PhaseKind, Status
from rules.roles.base import DAY, Role, RoleAct, RoleOption
from rules.state import DAY_STAGES, Kept

#: his day's choice (stored under this key), put back at daybreak
CHOICE = "doctor_choice"


@dataclass(frozen=True)
class Protect(PlayerCommand):
    """The doctor protects ``target`` for the coming night (day)."""

    verb: ClassVar[str] = "protect"
    target: str


@dataclass(frozen=True)
class ProtectionChosen(Event):
    """The doctor chose whom to protect during the coming night."""

    kind: ClassVar[str] = "protection_chosen"
    text: ClassVar[str] = "protect"
    doctor: str
    target: str

    @property
    def audience(self) -> Audience:
        return Audience.only(self.doctor)


def protect(game: DayRules, command: Protect, dry: bool) -> list[Event]:
    """``protect``: a living player, by day (himself as the option allows).

    Raises:
        RuleError: ``not_alive``, ``wrong_role``, ``wrong_phase``, ``unknown_player``,
            ``target_not_alive`` or ``self_target``.
    """
    actor = game._living_actor(command.actor, Status.DOCTOR)
    game._require_stage(*DAY_STAGES)
    target = game._living_target(command.target)
    if target.name == actor.name and not game.options.doctor_self_protect:
        raise RuleError("self_target", player=actor.name)
    if dry:
        return []
    game.role_state[CHOICE] = target.name
    return [ProtectionChosen(actor.name, target.name)]


def stands(game: Any, command: Command) -> bool:
    """Whether the protection asked for is the one chosen already."""
    return bool(game.role_state[CHOICE] == getattr(command, "target", None))


def nightfall(game: Any) -> None:
    """The day's choice protects through the night if the doctor lives."""
    alive = any(p.alive for p in game.players.values() if p.status is Status.DOCTOR)
    game.protected = game.role_state[CHOICE] if alive else None
    game.role_state[CHOICE] = None


ROLE = Role(
    Status.DOCTOR,
    "honest",
    switchable=True,
    per_game=1,
    dealt_from=6,
    acts=(RoleAct(Protect, DAY, protect, reply=True, stands=stands),),
    announced="day",
    presets={"beginners": True, "club": True},
    events=(ProtectionChosen,),
    nightfall=nightfall,
    state={CHOICE: Kept(None, PhaseKind.DAY, names=True)},
    options=(RoleOption("doctor_self_protect"),),
)
