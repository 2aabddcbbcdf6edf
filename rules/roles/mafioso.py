"""The mafioso: his city's mafia, one or more in every city (the deal gives each city its
mafia, :mod:`rules.setup`). At any phase he votes for his city's Godfather among its
mafiosi (``elect``). At night he chooses his city's victim (``kill``), a resident of his
city who is not one of its mafiosi: the Godfather's choice is the mafia's decision, another
mafioso's a proposal; the Godfather alone refuses the kill (``pass``). The mafia holding the
touring right chooses one resident of another city (``tour``) the same way. What the night's
choices come to at dawn (the Godfather's word, else the Consigliere's) is the night's,
:mod:`rules.night`; a mafioso is a member of the mafia (:attr:`~rules.model.Status.in_mafia`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rules.commands import Elect, Kill, Pass, Tour
from rules.errors import RuleError
from rules.events import Event, GodfatherVoteCast, MafiaKillChoice, MafiaKillRefused
from rules.model import Stage, Status
from rules.night import NightRules
from rules.roles.base import ANY, Role, RoleAct

NIGHT = Stage.NIGHT.value


@dataclass(frozen=True)
class MafiaKillChosen(MafiaKillChoice):
    """A mafioso chose a victim at night: a decision if Godfather, else a proposal.

    ``touring`` is True for the kill in another city.
    """

    kind: ClassVar[str] = "mafia_kill_chosen"
    chooser_field: ClassVar[str] = "mafioso"
    city: str
    mafioso: str
    target: str
    decision: bool
    touring: bool = False


def elect(game: NightRules, command: Elect, dry: bool) -> list[Event]:
    """``elect``: a living mafioso of his city, at any phase.

    Raises:
        RuleError: ``not_alive``, ``wrong_role``, ``unknown_player``, ``target_not_alive``
            or ``not_mafioso``.
    """
    actor = game._living_actor(command.actor, Status.MAFIOSO)
    target = game._living_target(command.target)
    if not target.status.in_mafia or target.city != actor.city:
        raise RuleError("not_mafioso", player=target.name, city=actor.city)
    if dry:
        return []
    city = actor.city
    game.elect_votes[city][actor.name] = target.name
    events: list[Event] = [GodfatherVoteCast(city, actor.name, target.name)]
    events.extend(game._elect_by_majority(city))
    return events


def kill(game: NightRules, command: Kill, dry: bool) -> list[Event]:
    """``kill``: a living resident of his city who is not a mafioso, at night.

    Raises:
        RuleError: ``not_alive``, ``wrong_role``, ``wrong_phase``, ``unknown_player``,
            ``target_not_alive``, ``wrong_city`` or ``own_mafioso``.
    """
    actor = game._living_actor(command.actor, Status.MAFIOSO)
    game._require_stage(Stage.NIGHT)
    target = game._living_target(command.target)
    if target.city != actor.city:
        raise RuleError("wrong_city", player=target.name, city=actor.city)
    if target.status.in_mafia:
        raise RuleError("own_mafioso", player=target.name)
    if dry:
        return []
    game.kill_choices[actor.city][actor.name] = (target.name, game.tick)
    decision = game.godfathers.get(actor.city) == actor.name
    return [MafiaKillChosen(actor.city, actor.name, target.name, decision)]


def refuse(game: NightRules, command: Pass, dry: bool) -> list[Event]:
    """``pass``: the Godfather refuses his city's kill, at night.

    Raises:
        RuleError: ``not_alive``, ``wrong_role``, ``wrong_phase`` or ``not_godfather``.
    """
    actor = game._living_actor(command.actor, Status.MAFIOSO)
    game._require_stage(Stage.NIGHT)
    if game.godfathers.get(actor.city) != actor.name:
        raise RuleError("not_godfather", player=actor.name)
    if dry:
        return []
    game.kill_choices[actor.city][actor.name] = (None, game.tick)
    return [MafiaKillRefused(actor.city, actor.name)]


def tour(game: NightRules, command: Tour, dry: bool) -> list[Event]:
    """``tour``: a living resident of another city, by the mafia holding the touring right,
    at night; never that city's acting Judge.

    Raises:
        RuleError: ``not_alive``, ``wrong_role``, ``wrong_phase``, ``not_touring``,
            ``unknown_player``, ``target_not_alive``, ``wrong_city`` or ``judge_immune``.
    """
    actor = game._living_actor(command.actor, Status.MAFIOSO)
    game._require_stage(Stage.NIGHT)
    if actor.city != game.touring_city():
        raise RuleError("not_touring", city=actor.city)
    target = game._living_target(command.target)
    if target.city == actor.city:
        raise RuleError("wrong_city", player=target.name, city=actor.city)
    if game.judges.get(target.city) == target.name:
        raise RuleError("judge_immune", player=target.name, city=target.city)
    if dry:
        return []
    game.tour_choices[actor.name] = (target.name, game.tick)
    decision = game.godfathers.get(actor.city) == actor.name
    return [MafiaKillChosen(actor.city, actor.name, target.name, decision, touring=True)]


ROLE = Role(
    Status.MAFIOSO,
    "mafia",
    acts=(
        RoleAct(Elect, ANY, elect),
        RoleAct(Kill, NIGHT, kill),
        RoleAct(Tour, NIGHT, tour),
        RoleAct(Pass, NIGHT, refuse),
    ),
    announced="night",
    events=(MafiaKillChosen,),
    codes={
        "own_mafioso": "the mafia cannot kill one of its own mafiosi",
        "not_mafioso": "the target is not a mafioso of this city",
        "no_mafioso": "a city has no mafioso",
    },
)
