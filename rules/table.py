"""The game's roles, acts and host commands, declared once.

Everything outside the rules that lists roles or commands reads this table: ``/help``'s
lines and its "wrong stage" refusals, the archive's statuses, the lobby's optional roles,
the players' slash commands and their autocompletes, and the tests that make sure every role and every command has its texts in each language
and its section in the rules. Adding a role or a command starts here (CONTRIBUTING.md).

* :data:`ROLES`: each status, the side it plays for, and whether the host switches it on
  or off in the setup (the doctor, the journalist, the maniac) or it is always dealt.
* :data:`ACTS`: each command of the rules a player or the host sends, the slash commands
  that send it (by their default names), the stage ``/help`` files it under, and who may
  send it (the statuses; none named: every living player, or the host).
* :data:`HOST_TOOLS`: the host's commands that move no rule (timers, pauses, the end):
  offered to him whenever his game runs.
* :data:`OWN_COMMAND_ACTS`: the players' acts sent by a slash command of their own, named after
  the verb, whose options are the act's targets (``cogs/play.py`` makes one per row).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from rules.commands import (
    AppointGodfather,
    AppointJudge,
    CastVote,
    Check,
    Command,
    Compare,
    Elect,
    EndDay,
    EndNight,
    Execute,
    ExecuteByLot,
    HostCommand,
    Kill,
    Nominate,
    Pass,
    ProcuratorKill,
    Protect,
    Replace,
    RequestLastWord,
    SetTouringOrder,
    StartVoting,
    Tour,
    Unvote,
)
from rules.model import Stage, Status


@dataclass(frozen=True)
class Role:
    """A status as the game deals it."""

    status: Status
    side: str
    """``honest``, ``mafia`` or ``maniac``: whom the role plays for."""
    switchable: bool = False
    """Whether the host's setup deals it or leaves it out (an option of ``/host setup`` named
    after the status); otherwise every game has it."""


@dataclass(frozen=True)
class Act:
    """A command of the rules and the slash commands that send it."""

    command: type[Command]
    slash: tuple[str, ...]
    """The slash commands (default names) that send it, the main one first."""
    stage: str
    """Where ``/help`` files it: a :class:`~rules.model.Stage`'s value, :data:`DAY` or :data:`ANY`."""
    actors: tuple[Status, ...] = ()
    """The statuses that may send it; none: every living player (the host, for his acts)."""

    @property
    def verb(self) -> str:
        """The command's verb, as ``legal_actions`` and the scenarios name it."""
        return self.command.verb

    @property
    def by_host(self) -> bool:
        """Whether the host sends it."""
        return issubclass(self.command, HostCommand)

    @property
    def targets(self) -> tuple[str, ...]:
        """The command's fields after its actor: whom it is sent about, in order."""
        return tuple(field.name for field in fields(self.command) if field.name != "actor")


ROLES: tuple[Role, ...] = (
    Role(Status.CITIZEN, "honest"),
    Role(Status.MAFIOSO, "mafia"),
    Role(Status.COMMISSAR, "honest"),
    Role(Status.DOCTOR, "honest", switchable=True),
    Role(Status.JOURNALIST, "honest", switchable=True),
    Role(Status.MANIAC, "maniac", switchable=True),
)

#: ``/help``'s stage of a command of any stage of a day
DAY = "day"
#: ``/help``'s stage of a command of any moment
ANY = "any"

ACTS: tuple[Act, ...] = (
    Act(Nominate, ("nominate",), Stage.DISCUSSION.value),
    Act(CastVote, ("vote",), Stage.VOTING.value),
    Act(Unvote, ("unvote",), Stage.VOTING.value),
    Act(RequestLastWord, ("lastword speak", "lastword upload"), DAY),
    Act(Protect, ("protect",), DAY, (Status.DOCTOR,)),
    Act(Compare, ("compare",), DAY, (Status.JOURNALIST,)),
    Act(Elect, ("elect",), ANY, (Status.MAFIOSO,)),
    Act(Kill, ("kill",), Stage.NIGHT.value, (Status.MAFIOSO, Status.MANIAC)),
    Act(Tour, ("tour",), Stage.NIGHT.value, (Status.MAFIOSO,)),
    Act(Pass, ("pass",), Stage.NIGHT.value, (Status.MAFIOSO,)),
    Act(Check, ("check",), Stage.NIGHT.value, (Status.COMMISSAR,)),
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
#: the statuses the host's setup deals or leaves out (an option of ``/host setup`` each)
SWITCHABLE: tuple[Status, ...] = tuple(row.status for row in ROLES if row.switchable)


def role(status: Status | str) -> Role:
    """The row of a status (``KeyError`` for none)."""
    return next(row for row in ROLES if row.status == status)
