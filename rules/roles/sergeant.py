"""The sergeant (сержант): honest, at most one in a city (switched on, one in every city). He
is told every answer his city's commissar gets, the moment the commissar gets it. From the
first night that begins after his commissar's death he is his city's commissar: ``check``
with the commissar's rules; before that his ``check`` is refused (``commissar_alive``). His
status stays his own: a check of him says "not mafia"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rules.errors import RuleError
from rules.events import Event, PhaseStarted
from rules.model import Audience, Stage, Status
from rules.night import NightRules
from rules.roles.base import Role, RoleAct
from rules.roles.commissar import Check, PlayerChecked, checked


@dataclass(frozen=True)
class SergeantTold(Event):
    """The sergeant hears his commissar's answer (he alone)."""

    kind: ClassVar[str] = "sergeant_told"
    unasked: ClassVar[bool] = True
    sergeant: str
    commissar: str
    target: str
    is_mafia: bool

    @property
    def audience(self) -> Audience:
        return Audience.only(self.sergeant)

    @property
    def reply(self) -> str:
        """``mafia`` or ``not mafia``, as the commissar's answer."""
        return "mafia" if self.is_mafia else "not mafia"


@dataclass(frozen=True)
class SergeantTookOver(Event):
    """The first night after his commissar's death began: the sergeant checks now (he
    alone is told)."""

    kind: ClassVar[str] = "sergeant_took_over"
    unasked: ClassVar[bool] = True
    sergeant: str
    city: str

    @property
    def audience(self) -> Audience:
        return Audience.only(self.sergeant)


def commissar_of(game: NightRules, city: str) -> str:
    """The city's commissar (every city has one)."""
    return next(n for n in game.residents[city] if game.players[n].status is Status.COMMISSAR)


def check(game: NightRules, command: Check, dry: bool) -> list[Event]:
    """``check`` as the commissar, once he is dead and a night has begun since.

    Raises:
        RuleError: ``not_alive``, ``wrong_role``, ``wrong_phase``, ``commissar_alive``, or any
            refusal of the commissar's check.
    """
    actor = game._living_actor(command.actor, Status.SERGEANT)
    game._require_stage(Stage.NIGHT)
    commissar = commissar_of(game, actor.city)
    tonight = any(d.player == commissar and d.phase == game.phase for d in game.deaths)
    if game.players[commissar].alive or tonight:
        raise RuleError("commissar_alive", player=actor.name, commissar=commissar)
    return checked(game, actor.name, command.target, dry)


def tell(game: Any, events: list[Event]) -> list[Event]:
    """Every living sergeant of a commissar's city hears the commissar's answer; when a night
    begins, one whose commissar is dead hears, once, that the checks are his."""
    told: list[Event] = []
    for event in events:
        if isinstance(event, PlayerChecked):
            checker = game.players[event.commissar]
            if checker.status is Status.COMMISSAR:
                told.extend(
                    SergeantTold(name, event.commissar, event.target, event.is_mafia)
                    for name in sergeants(game, checker.city)
                )
        elif isinstance(event, PhaseStarted) and event.stage is Stage.NIGHT:
            told.extend(
                SergeantTookOver(name, city)
                for city in game.cities
                if not game.players[commissar_of(game, city)].alive
                for name in sergeants(game, city)
                if not any(n["kind"] == SergeantTookOver.kind for n in game.notes.get(name, []))
            )
    return told


def sergeants(game: Any, city: str) -> list[str]:
    """The city's living sergeants."""
    return [
        name
        for name in game.residents[city]
        if game.players[name].status is Status.SERGEANT and game.players[name].alive
    ]


ROLE = Role(
    Status.SERGEANT,
    "honest",
    switchable=True,
    per_city=1,
    dealt_per_city=True,
    acts=(RoleAct(Check, Stage.NIGHT.value, check),),
    announced="night",
    events=(SergeantTold, SergeantTookOver),
    told=tell,
    codes={
        "commissar_alive": "the city's commissar lives, or died only this night: the checks are his"
    },
)
