"""The maniac: plays for himself, at most one in the game. Each night he chooses one living
player other than himself (``kill``; the last choice counts); at dawn his kill lands first.
One who said nothing kills by lot (the rules' ``maniac_idle`` option) or nobody; one whose own
kill is voided kills nobody."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, ClassVar

from rules.commands import Command, Kill
from rules.errors import RuleError
from rules.events import Event, KillVoided
from rules.model import Audience, Cause, ManiacIdle, Stage, Status
from rules.night import NightRules
from rules.roles.base import Role, RoleAct


@dataclass(frozen=True)
class ManiacChose(Event):
    """The maniac chose tonight's victim (or the random choice made for him)."""

    kind: ClassVar[str] = "maniac_chose"
    answers: ClassVar[bool] = True
    maniac: str
    target: str
    by_chance: bool = False

    @property
    def audience(self) -> Audience:
        return Audience.only(self.maniac)

    def stem(self) -> str:
        return "maniac_random" if self.by_chance else "maniac"


def kill(game: NightRules, command: Kill, dry: bool) -> list[Event]:
    """``kill``: a living player other than himself, at night.

    Raises:
        RuleError: ``not_alive``, ``wrong_role``, ``wrong_phase``, ``unknown_player``,
            ``target_not_alive`` or ``self_target``.
    """
    actor = game._living_actor(command.actor, Status.MANIAC)
    game._require_stage(Stage.NIGHT)
    target = game._living_target(command.target)
    if target.name == actor.name:
        raise RuleError("self_target", player=actor.name)
    if dry:
        return []
    game.maniac_choice = target.name
    return [ManiacChose(actor.name, target.name)]


def stands(game: Any, command: Command) -> bool:
    """Whether the kill asked for is the one chosen already."""
    return bool(game.maniac_choice == getattr(command, "target", None))


def decide(game: NightRules, events: list[Event], void: set[str]) -> tuple[str, Cause] | None:
    """At dawn, before the mafia's decisions: the living maniac's victim, if any (by lot for
    one who said nothing, as the option says; none for one whose kill is voided)."""
    maniac = next((p for p in game.players.values() if p.status is Status.MANIAC and p.alive), None)
    if maniac is None:
        return None
    if maniac.name in void:
        events.append(KillVoided(maniac.name, maniac.city, Status.MANIAC.value))
        return None
    if game.maniac_choice is not None:
        alive = game.players[game.maniac_choice].alive
        return (game.maniac_choice, Cause.MANIAC) if alive else None
    if game.options.maniac_idle is ManiacIdle.NONE:
        return None
    victims = [name for name in game.alive() if name != maniac.name]
    if not victims:
        return None
    rng = random.Random(f"{game.seed}:maniac:{game.phase.number}")
    victim = rng.choice(victims)
    events.append(ManiacChose(maniac.name, victim, by_chance=True))
    return victim, Cause.MANIAC


ROLE = Role(
    Status.MANIAC,
    "maniac",
    alone=True,
    cause=Cause.MANIAC,
    switchable=True,
    per_game=1,
    dealt_from=10,
    acts=(RoleAct(Kill, Stage.NIGHT.value, kill, stands=stands),),
    announced="night",
    presets={"beginners": False, "club": True},
    events=(ManiacChose,),
    kills=decide,
)
