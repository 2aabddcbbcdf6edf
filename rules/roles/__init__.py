"""The registry of roles: every module of this package but :mod:`~rules.roles.base` declares
one role (its ``ROLE``), found here without being named, in the order of
:class:`~rules.model.Status`.

What the rules derive from it: the commands' handlers (:data:`HANDLERS`), the acts
(:data:`ACTS`, which :mod:`rules.table` lists for ``/help`` and the bot), the dawn's saves and
voided kills, what roles are told, the standing choices, what falls with the night, the
refusal codes, the sides (who plays alone, whose kill is which cause, who wins by surviving),
what the roles keep in the game's state (:data:`KEPT`, stored with the game), their rule
options (:data:`OPTIONS`, offered by ``/host setup``), and the setup's counts and the deal
(:mod:`rules.setup`). The role's commands and events are added to the rules' plain
data (:data:`rules.commands.PLAYER_COMMANDS`, :data:`rules.events.EVENT_TYPES`).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import replace
from functools import partial

from rules.commands import PLAYER_COMMANDS, Command, PlayerCommand
from rules.errors import CODES
from rules.events import EVENT_TYPES
from rules.model import Cause, RuleOptions, Status
from rules.roles.base import (
    ANY,
    DAY,
    Act,
    Handler,
    Killer,
    Nightfall,
    Role,
    RoleAct,
    RoleOption,
    Saver,
    Stands,
    Teller,
    Voider,
    succeed,
    tell_heirs,
)
from rules.state import Kept


def _discover() -> tuple[Role, ...]:
    found: dict[Status, Role] = {}
    for module in pkgutil.iter_modules(__path__):
        if module.name == "base":
            continue
        declared = importlib.import_module(f"{__name__}.{module.name}").ROLE
        if not isinstance(declared, Role) or declared.status.value != module.name:
            raise TypeError(f"rules.roles.{module.name} must declare ROLE, its Role")
        if (declared.side == "mafia") != declared.status.in_mafia:
            raise TypeError(f"rules.roles.{module.name}: its side and Status.in_mafia disagree")
        found[declared.status] = declared
    missing = [status.value for status in Status if status not in found]
    if missing:
        raise TypeError(f"no module of rules.roles declares {', '.join(missing)}")
    if sum(row.fills for row in found.values()) != 1:
        raise TypeError("exactly one role of rules.roles must fill the seats left (Role.fills)")
    for status, row in found.items():
        if row.succeeds is not None:
            found[status] = _heir(row, found)
    return tuple(found[status] for status in Status)


def _heir(heir: Role, found: dict[Status, Role]) -> Role:
    """An heir's declaration (:attr:`Role.succeeds`) with the act he takes over (done by its
    holder's rules, see :func:`~rules.roles.base.succeed`), its refusal while the holder
    lives, and what he is told (:func:`~rules.roles.base.tell_heirs`)."""
    held = [
        (row, act)
        for row in found.values()
        if row.status is not heir.status
        for act in row.acts
        if act.command.verb == heir.succeeds and act.deed is not None
    ]
    if len(held) != 1:
        raise TypeError(f"rules.roles.{heir.status.value} must succeed one role's act")
    holder, act = held[0]
    assert act.deed is not None
    if heir.told is not None:
        raise TypeError(f"rules.roles.{heir.status.value} is told as an heir (Role.hears)")
    handler = partial(succeed, heir.status, holder.status, act.stage, act.deed)
    taken = RoleAct(act.command, act.stage, handler, act.slash, act.reply, act.stands)
    code = f"{holder.status.value}_alive"
    why = f"the city's {holder.status.value} lives, or died only this {act.stage}"
    return replace(
        heir,
        acts=(*heir.acts, taken),
        codes={**heir.codes, code: f"{why}: the {act.command.verb}s are his"},
        told=partial(tell_heirs, heir, holder, act.stage),
    )


#: every role, in the order of :class:`~rules.model.Status`
ROLES: tuple[Role, ...] = _discover()

#: ``/help`` lists the roles' acts by stage: the day's, then any moment's, then the night's
_STAGE_ORDER = {DAY: 0, ANY: 1}


def _acts() -> tuple[Act, ...]:
    merged: dict[type[Command], Act] = {}
    for row in ROLES:
        for act in row.acts:
            known = merged.get(act.command)
            slash = act.slash or (act.command.verb,)
            actors = (known.actors if known else ()) + (row.status,)
            merged[act.command] = Act(act.command, slash, act.stage, actors)
    return tuple(sorted(merged.values(), key=lambda act: _STAGE_ORDER.get(act.stage, 2)))


#: the roles' acts, one per command, with every status that may send it
ACTS: tuple[Act, ...] = _acts()
#: a role's command → its sender's status → the handler
HANDLERS: dict[type[Command], dict[Status, Handler]] = {}
for _row in ROLES:
    for _act in _row.acts:
        HANDLERS.setdefault(_act.command, {})[_row.status] = _act.handler
#: the dawn's saves, in their place
SAVES: tuple[Saver, ...] = tuple(
    save for _, save in sorted((row.saves for row in ROLES if row.saves), key=lambda s: s[0])
)
#: what voids players' own kills at dawn
VOIDS: tuple[Voider, ...] = tuple(row.voids for row in ROLES if row.voids)
#: what roles are told of an accepted command's events
TELLERS: tuple[Teller, ...] = tuple(row.told for row in ROLES if row.told)
#: the acts whose answer is ``reply.<verb>``
REPLIED: tuple[type[Command], ...] = tuple(
    act.command for row in ROLES for act in row.acts if act.reply
)
#: the acts whose standing choice the role itself tells (``Game.repeats``), by the sender's
#: status
STANDS: dict[type[Command], dict[Status, Stands]] = {}
for _row in ROLES:
    for _act in _row.acts:
        if _act.stands is not None:
            STANDS.setdefault(_act.command, {})[_row.status] = _act.stands
#: the roles' own night kills, decided at dawn in the order of the roles
KILLS: tuple[Killer, ...] = tuple(row.kills for row in ROLES if row.kills)
#: what the roles carry into the night as it falls
NIGHTFALLS: tuple[Nightfall, ...] = tuple(row.nightfall for row in ROLES if row.nightfall)
#: the statuses the host's setup deals or leaves out (an option of ``/host setup`` each)
SWITCHABLE: tuple[Status, ...] = tuple(row.status for row in ROLES if row.switchable)
#: the status that fills a city's seats no other role takes
FILLER: Status = next(row.status for row in ROLES if row.fills)
#: the mafia's own status (the first role declared on its side): the deal's count of it, and
#: its codes (``no_<status>`` for a city without one, ``not_<status>`` for a Godfather who is not)
MAFIA: Status = next(row.status for row in ROLES if row.status.in_mafia)
#: the side each status plays for, by the status's value (as the archive stores it)
SIDE_OF: dict[str, str] = {row.status.value: row.side for row in ROLES}
#: the statuses that play and win alone, with their sides
ALONE: dict[Status, str] = {row.status: row.side for row in ROLES if row.alone}
#: the sides that play alone (a winner of its own, without a city), in the order of the roles
LONE_SIDES: tuple[str, ...] = tuple(dict.fromkeys(ALONE.values()))
#: the causes of the roles' own night kills, with the killer's side
KILL_CAUSES: dict[Cause, str] = {row.cause: row.side for row in ROLES if row.cause is not None}
#: the statuses that play alone and win by surviving too, as the options say
SURVIVES: dict[Status, Callable[[RuleOptions], bool]] = {
    row.status: row.survives for row in ROLES if row.alone and row.survives is not None
}
#: the key the stored game keeps its win alone under
WON_ALONE_KEY: str = next((row.won_alone_key for row in ROLES if row.won_alone_key), "won_alone")
#: what the roles keep in the game's state, by stored key, in the order of the roles
KEPT: dict[str, Kept] = {}
#: the roles' rule options, in the order of the roles
OPTIONS: tuple[RoleOption, ...] = tuple(option for row in ROLES for option in row.options)

for _row in ROLES:
    for _act in _row.acts:
        if issubclass(_act.command, PlayerCommand):
            PLAYER_COMMANDS.setdefault(_act.command.verb, _act.command)
    for _event in _row.events:
        EVENT_TYPES.setdefault(_event.kind, _event)
    for _code, _explained in _row.codes.items():
        CODES.setdefault(_code, _explained)
    for _key, _kept in _row.state.items():
        if _key in KEPT:
            raise TypeError(f"two roles of rules.roles keep {_key} in the game's state")
        KEPT[_key] = _kept


def role(status: Status | str) -> Role:
    """The declaration of a status (``StopIteration`` for none)."""
    return next(row for row in ROLES if row.status == status)


__all__ = [
    "ACTS",
    "ALONE",
    "FILLER",
    "HANDLERS",
    "KILLS",
    "KEPT",
    "KILL_CAUSES",
    "LONE_SIDES",
    "NIGHTFALLS",
    "OPTIONS",
    "REPLIED",
    "ROLES",
    "SAVES",
    "SIDE_OF",
    "STANDS",
    "SURVIVES",
    "SWITCHABLE",
    "TELLERS",
    "VOIDS",
    "WON_ALONE_KEY",
    "Role",
    "RoleAct",
    "role",
]
