"""The commissar: honest, exactly one in every city (the setup refuses a city without one, the
deal gives every city one). Each night he checks one living resident of his city other than
himself (``check``, once a night) and is told whether that one is of the mafia (a Godfather
is: positions are not statuses)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rules.commands import PlayerCommand
from rules.errors import RuleError
from rules.events import Event
from rules.model import Audience, Stage, Status
from rules.night import NightRules
from rules.roles.base import Role, RoleAct


@dataclass(frozen=True)
class Check(PlayerCommand):
    """Night: the commissar checks a resident of his city."""

    verb: ClassVar[str] = "check"
    target: str


@dataclass(frozen=True)
class PlayerChecked(Event):
    """The commissar's answer: whether ``target`` is mafia."""

    kind: ClassVar[str] = "player_checked"
    text: ClassVar[str] = "check"
    commissar: str
    target: str
    is_mafia: bool

    @property
    def audience(self) -> Audience:
        return Audience.only(self.commissar)

    @property
    def reply(self) -> str:
        """``mafia`` or ``not mafia``, as the simulator prints it."""
        return "mafia" if self.is_mafia else "not mafia"


def check(game: NightRules, command: Check, dry: bool) -> list[Event]:
    """``check``: the commissar's, at night (see :func:`checked`).

    Raises:
        RuleError: ``not_alive``, ``wrong_role``, ``wrong_phase``, or any of :func:`checked`.
    """
    actor = game._living_actor(command.actor, Status.COMMISSAR)
    game._require_stage(Stage.NIGHT)
    return checked(game, actor.name, command, dry)


def checked(game: NightRules, checker: str, command: Check, dry: bool) -> list[Event]:
    """The commissar's check by ``checker`` of ``command.target``, once his right to check is
    settled: once a night, a living resident of his city other than himself (an heir's check
    too, :attr:`~rules.roles.base.Role.succeeds`).

    Raises:
        RuleError: ``already_checked_tonight``, ``unknown_player``, ``target_not_alive``,
            ``self_target`` or ``wrong_city``.
    """
    actor = game.players[checker]
    if actor.name in game.checked:
        raise RuleError("already_checked_tonight", player=actor.name)
    target = game._living_target(command.target)
    if target.name == actor.name:
        raise RuleError("self_target", player=actor.name)
    if target.city != actor.city:
        raise RuleError("wrong_city", player=target.name, city=actor.city)
    if dry:
        return []
    game.checked.add(actor.name)
    return [PlayerChecked(actor.name, target.name, target.status.in_mafia)]


ROLE = Role(
    Status.COMMISSAR,
    "honest",
    every_city=True,
    acts=(RoleAct(Check, Stage.NIGHT.value, check, deed=checked),),
    announced="night",
    events=(PlayerChecked,),
    codes={
        "already_checked_tonight": "the commissar has already checked tonight",
        "commissar_count": "a city must have exactly one commissar",
    },
)
