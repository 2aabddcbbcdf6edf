"""The rules of multi-city Mafia with a Procurator (``RULES.md``), as a pure library.

No Discord, no asyncio, no I/O, no clock: commands in, events out.

>>> from rules import Game, Nominate, deal
>>> game = Game.create(deal({"Verona": ["romeo", "tybalt", "escalus"]}, seed=7), seed=7)
>>> [e.kind for e in game.apply(Nominate("romeo", "tybalt"))]
['nominated']
"""

from rules.commands import (
    AppointGodfather,
    AppointJudge,
    CastVote,
    Command,
    Elect,
    EndDay,
    EndNight,
    Execute,
    ExecuteByLot,
    HostCommand,
    Kill,
    Nominate,
    Pass,
    PlayerCommand,
    ProcuratorKill,
    Replace,
    RequestLastWord,
    SetTouringOrder,
    StartVoting,
    Tour,
    Unvote,
    command_from_dict,
    command_to_dict,
)
from rules.errors import CODES, RuleError
from rules.events import Event, event_from_dict, event_to_dict
from rules.game import Death, Game, LegalAction
from rules.model import (
    Audience,
    AudienceKind,
    Cause,
    CitySetup,
    DayFallback,
    FirstPhase,
    Phase,
    PhaseKind,
    RuleOptions,
    Setup,
    Stage,
    Status,
    Winner,
)
from rules.setup import RoleCounts, deal, validate_setup

__all__ = [
    "CODES",
    "AppointGodfather",
    "AppointJudge",
    "Audience",
    "AudienceKind",
    "CastVote",
    "Cause",
    "CitySetup",
    "Command",
    "DayFallback",
    "Death",
    "Elect",
    "EndDay",
    "EndNight",
    "Event",
    "Execute",
    "ExecuteByLot",
    "FirstPhase",
    "Game",
    "HostCommand",
    "Kill",
    "LegalAction",
    "Nominate",
    "Pass",
    "Phase",
    "PhaseKind",
    "PlayerCommand",
    "ProcuratorKill",
    "Replace",
    "RequestLastWord",
    "RoleCounts",
    "RuleError",
    "RuleOptions",
    "SetTouringOrder",
    "Setup",
    "Stage",
    "StartVoting",
    "Status",
    "Tour",
    "Unvote",
    "Winner",
    "command_from_dict",
    "command_to_dict",
    "deal",
    "event_from_dict",
    "event_to_dict",
    "validate_setup",
]
