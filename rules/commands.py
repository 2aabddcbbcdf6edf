"""Commands: what players and the Procurator ask the game to do.

Commands are imperative and immutable. :func:`command_to_dict` and
:func:`command_from_dict` turn them into plain data for the command log.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

from rules.errors import RuleError


@dataclass(frozen=True)
class Command:
    """Base of every command. ``verb`` names it in logs and scenario files."""

    verb: ClassVar[str] = ""


@dataclass(frozen=True)
class PlayerCommand(Command):
    """A command made by a player, ``actor``."""

    actor: str


@dataclass(frozen=True)
class Nominate(PlayerCommand):
    """Nominate ``target`` for execution in the actor's city (discussion)."""

    verb: ClassVar[str] = "nominate"
    target: str


@dataclass(frozen=True)
class CastVote(PlayerCommand):
    """Vote for ``target``, a nominee of the actor's city (voting)."""

    verb: ClassVar[str] = "vote"
    target: str


@dataclass(frozen=True)
class Unvote(PlayerCommand):
    """Cancel the actor's standing vote (voting)."""

    verb: ClassVar[str] = "unvote"


@dataclass(frozen=True)
class RequestLastWord(PlayerCommand):
    """A nominee asks for his last word (once per day)."""

    verb: ClassVar[str] = "lastword"


@dataclass(frozen=True)
class Elect(PlayerCommand):
    """A member of a city's mafia votes ``target`` for its Godfather (any phase)."""

    verb: ClassVar[str] = "elect"
    target: str


@dataclass(frozen=True)
class Kill(PlayerCommand):
    """Night: the Godfather decides, another member of his mafia proposes, a role that kills
    alone kills."""

    verb: ClassVar[str] = "kill"
    target: str


@dataclass(frozen=True)
class Pass(PlayerCommand):
    """Night: the Godfather refuses his mafia's own kill."""

    verb: ClassVar[str] = "pass"


@dataclass(frozen=True)
class Tour(PlayerCommand):
    """Night: the touring kill in another city (the Godfather decides, another member of his
    mafia proposes)."""

    verb: ClassVar[str] = "tour"
    target: str


@dataclass(frozen=True)
class HostCommand(Command):
    """A command made by the Procurator (or the phase timer on his behalf)."""


@dataclass(frozen=True)
class StartVoting(HostCommand):
    """Close nominations: discussion → voting."""

    verb: ClassVar[str] = "voting"


@dataclass(frozen=True)
class EndDay(HostCommand):
    """End the day: the cities execute, then the night starts."""

    verb: ClassVar[str] = "night"


@dataclass(frozen=True)
class EndNight(HostCommand):
    """End the night: dawn's kills, then the next day starts."""

    verb: ClassVar[str] = "day"


@dataclass(frozen=True)
class ProcuratorKill(HostCommand):
    """The Procurator strikes out ``target``, who dies at once."""

    verb: ClassVar[str] = "kill"
    target: str


@dataclass(frozen=True)
class AppointJudge(HostCommand):
    """The Procurator makes ``target`` the Judge of his city."""

    verb: ClassVar[str] = "judge"
    target: str


@dataclass(frozen=True)
class AppointGodfather(HostCommand):
    """The Procurator makes ``target``, a member of his city's mafia, its Godfather."""

    verb: ClassVar[str] = "godfather"
    target: str


@dataclass(frozen=True)
class Execute(HostCommand):
    """The Procurator names the one to execute for a city left waiting."""

    verb: ClassVar[str] = "execute"
    target: str


@dataclass(frozen=True)
class ExecuteByLot(HostCommand):
    """The Procurator named nobody in time: every city left waiting executes by lot, as
    ``day_fallback: random`` would (the bot's timer gives this for an absent host)."""

    verb: ClassVar[str] = "lot"


@dataclass(frozen=True)
class Replace(HostCommand):
    """The Procurator seats ``new``, a newcomer, in the living player ``old``'s place: his
    status, city, posts, votes and choices; ``old`` leaves the game."""

    verb: ClassVar[str] = "replace"
    old: str
    new: str


@dataclass(frozen=True)
class SetTouringOrder(HostCommand):
    """The Procurator sets the public touring rotation (by day; from the next night on).

    Not a scenario-file verb: scenarios set ``touring_order`` in their setup.
    """

    verb: ClassVar[str] = "touring"
    order: tuple[str, ...]


PLAYER_COMMANDS: dict[str, type[PlayerCommand]] = {
    cls.verb: cls
    for cls in (
        Nominate,
        CastVote,
        Unvote,
        RequestLastWord,
        Elect,
        Kill,
        Pass,
        Tour,
    )
}
HOST_COMMANDS: dict[str, type[HostCommand]] = {
    cls.verb: cls
    for cls in (
        StartVoting,
        EndDay,
        EndNight,
        ProcuratorKill,
        AppointJudge,
        AppointGodfather,
        Execute,
        ExecuteByLot,
        Replace,
    )
}


#: every host command the command log may hold (the scenario verbs and more)
LOGGED_HOST_COMMANDS: dict[str, type[HostCommand]] = {
    **HOST_COMMANDS,
    SetTouringOrder.verb: SetTouringOrder,
}


def command_to_dict(command: Command) -> dict[str, Any]:
    """Plain data for the command log: ``{"by": "player"|"host", "verb": ..., ...}``."""
    by = "host" if isinstance(command, HostCommand) else "player"
    data = {"by": by, "verb": command.verb, **asdict(command)}
    return {key: list(value) if isinstance(value, tuple) else value for key, value in data.items()}


def command_from_dict(data: dict[str, Any]) -> Command:
    """The inverse of :func:`command_to_dict`.

    Raises:
        RuleError: ``bad_command`` if the data names no known command or has
            the wrong fields.
    """
    table: dict[str, type[Command]]
    table = dict(LOGGED_HOST_COMMANDS) if data.get("by") == "host" else dict(PLAYER_COMMANDS)
    cls = table.get(str(data.get("verb")))
    if cls is None:
        raise RuleError("bad_command", verb=repr(data.get("verb")))
    names = [f.name for f in fields(cls)]
    try:
        values = {name: data[name] for name in names}
    except KeyError as missing:
        raise RuleError("bad_command", verb=cls.verb, missing=str(missing)) from None
    for name, value in values.items():
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            values[name] = tuple(value)
        elif not isinstance(value, str):
            raise RuleError("bad_command", verb=cls.verb)
    return cls(**values)
