"""The sergeant (сержант): honest, at most one in a city (switched on, one in every city). He
is his city's checker's heir (``succeeds`` the role whose act is ``check``): he is told every
answer the checker gets, the moment the checker gets it, and from the first night that begins
after the checker's death he checks by the checker's rules; before that his ``check`` is
refused. His status stays his own: a check of him says "not mafia"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rules.events import Event
from rules.model import Audience, Status
from rules.roles.base import Role


@dataclass(frozen=True)
class SergeantTold(Event):
    """The sergeant hears the answer his city's checker got (he alone)."""

    kind: ClassVar[str] = "sergeant_told"
    unasked: ClassVar[bool] = True
    sergeant: str
    checker: str
    target: str
    is_mafia: bool

    @property
    def audience(self) -> Audience:
        return Audience.only(self.sergeant)

    @property
    def reply(self) -> str:
        """``mafia`` or ``not mafia``, as the checker's answer."""
        return "mafia" if self.is_mafia else "not mafia"


@dataclass(frozen=True)
class SergeantTookOver(Event):
    """The first night after his city's checker's death began: the sergeant checks now (he
    alone is told)."""

    kind: ClassVar[str] = "sergeant_took_over"
    unasked: ClassVar[bool] = True
    sergeant: str
    city: str

    @property
    def audience(self) -> Audience:
        return Audience.only(self.sergeant)


def hears(sergeant: str, answer: Any) -> Event:
    """What he hears of his checker's answer (its checker, target and verdict)."""
    return SergeantTold(sergeant, answer.audience.player, answer.target, answer.is_mafia)


ROLE = Role(
    Status.SERGEANT,
    "honest",
    switchable=True,
    per_city=1,
    dealt_per_city=True,
    succeeds="check",
    hears=hears,
    took_over=SergeantTookOver,
    announced="night",
    events=(SergeantTold, SergeantTookOver),
)
