"""The game's roles, acts and host commands, declared once.

Everything outside the rules that lists roles or commands reads this table: ``/help``'s
lines and its "wrong stage" refusals, the archive's statuses, the lobby's optional roles,
the players' slash commands and their autocompletes, and the tests that make sure every role and every command has its texts in each language
and its section in the rules. Adding a role or a command starts here (CONTRIBUTING.md).

* :data:`ROLES`: each status, the side it plays for, and whether the host switches it on
  or off in the setup or it is always dealt: the registry's (:mod:`rules.roles`, a module a
  role).
* :data:`ACTS`: each command of the rules a player or the host sends, the slash commands
  that send it (by their default names), the stage ``/help`` files it under, and who may
  send it (the statuses; none named: every living player, or the host). The roles' acts are
  their declarations'; the others are written here.
* :data:`HOST_TOOLS`: the host's commands that move no rule (timers, pauses, the end):
  offered to him whenever his game runs.
* :data:`OWN_COMMAND_ACTS`: the players' acts sent by a slash command of their own, named after
  the verb, whose options are the act's targets (``cogs/play.py`` makes one per row).
"""

from __future__ import annotations

from rules.commands import (
    AppointGodfather,
    AppointJudge,
    CastVote,
    EndDay,
    EndNight,
    Execute,
    ExecuteByLot,
    Nominate,
    ProcuratorKill,
    Replace,
    RequestLastWord,
    SetTouringOrder,
    StartVoting,
    Unvote,
)
from rules.model import Stage, Status
from rules.roles import ACTS as ROLE_ACTS
from rules.roles import OPTIONS as ROLE_OPTIONS
from rules.roles import ROLES, SWITCHABLE, role
from rules.roles.base import ANY, DAY, Act, Role

ACTS: tuple[Act, ...] = (
    Act(Nominate, ("nominate",), Stage.DISCUSSION.value),
    Act(CastVote, ("vote",), Stage.VOTING.value),
    Act(Unvote, ("unvote",), Stage.VOTING.value),
    Act(RequestLastWord, ("lastword speak", "lastword upload"), DAY),
    *ROLE_ACTS,
    Act(StartVoting, ("host next",), Stage.DISCUSSION.value),
    Act(EndDay, ("host next",), Stage.VOTING.value),
    Act(EndNight, ("host next",), Stage.NIGHT.value),
    Act(ProcuratorKill, ("host kill",), ANY),
    Act(AppointJudge, ("host judge",), ANY),
    Act(AppointGodfather, ("host godfather",), ANY),
    Act(Execute, ("host execute",), Stage.EXECUTION.value),
    Act(ExecuteByLot, (), Stage.EXECUTION.value),  # sent by the timer when the host does not choose
    Act(SetTouringOrder, ("host touring",), DAY),
    Act(Replace, ("host replace",), ANY),
)

#: the host's commands that move no rule, offered whenever his game runs
HOST_TOOLS: tuple[str, ...] = (
    "host timer",
    "host extend",
    "host pause",
    "host resume",
    "host replace",
    "host idle",
    "host skip",
    "host end",
)

#: a player's verb → the act
PLAYER_ACTS: dict[str, Act] = {act.verb: act for act in ACTS if not act.by_host}
#: a host's verb → the act
HOST_ACTS: dict[str, Act] = {act.verb: act for act in ACTS if act.by_host}
#: the players' acts sent by one slash command of their own, named after the verb
OWN_COMMAND_ACTS: tuple[Act, ...] = tuple(
    act for act in ACTS if not act.by_host and act.slash == (act.verb,)
)

__all__ = [
    "ACTS",
    "ANY",
    "DAY",
    "HOST_ACTS",
    "HOST_TOOLS",
    "OWN_COMMAND_ACTS",
    "PLAYER_ACTS",
    "ROLES",
    "ROLE_OPTIONS",
    "SWITCHABLE",
    "Act",
    "Role",
    "Status",
    "role",
]
