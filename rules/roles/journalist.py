"""The journalist: honest, at most one in the game. Once a day he compares two players'
statuses (``compare``: any two different players, living or dead) and is told whether they
are the same."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rules.commands import PlayerCommand
from rules.day import DayRules
from rules.errors import RuleError
from rules.events import Event
from rules.model import Audience, PhaseKind, Status
from rules.roles.base import DAY, Role, RoleAct
from rules.state import DAY_STAGES, Kept

#: whether he compared today (stored under this key), put back at daybreak
COMPARED = "journalist_compared"


@dataclass(frozen=True)
class Compare(PlayerCommand):
    """The journalist compares the statuses of two players (once per day)."""

    verb: ClassVar[str] = "compare"
    first: str
    second: str


@dataclass(frozen=True)
class StatusesCompared(Event):
    """The journalist's answer: whether two players' statuses are the same."""

    kind: ClassVar[str] = "statuses_compared"
    text: ClassVar[str] = "compare"
    journalist: str
    first: str
    second: str
    same: bool

    @property
    def audience(self) -> Audience:
        return Audience.only(self.journalist)

    @property
    def reply(self) -> str:
        """``same`` or ``different``, as the simulator prints it."""
        return "same" if self.same else "different"


def compare(game: DayRules, command: Compare, dry: bool) -> list[Event]:
    """``compare``: two different players, once a day.

    Raises:
        RuleError: ``not_alive``, ``wrong_role``, ``wrong_phase``, ``already_compared_today``,
            ``unknown_player`` or ``same_player``.
    """
    actor = game._living_actor(command.actor, Status.JOURNALIST)
    game._require_stage(*DAY_STAGES)
    if game.role_state[COMPARED]:
        raise RuleError("already_compared_today", player=actor.name)
    first = game._player(command.first)
    second = game._player(command.second)
    if first.name == second.name:
        raise RuleError("same_player", player=first.name)
    if dry:
        return []
    game.role_state[COMPARED] = True
    return [StatusesCompared(actor.name, first.name, second.name, first.status is second.status)]


ROLE = Role(
    Status.JOURNALIST,
    "honest",
    switchable=True,
    per_game=1,
    dealt_from=8,
    acts=(RoleAct(Compare, DAY, compare),),
    announced="day",
    presets={"beginners": False, "club": True},
    events=(StatusesCompared,),
    codes={"already_compared_today": "the journalist has already compared today"},
    state={COMPARED: Kept(False, PhaseKind.DAY)},
)
