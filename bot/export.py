"""A finished game as a scenario file (docs/scenarios.md) that anyone can replay.

``mafia-bot export`` and ``/mafia export`` write the archived game's seed,
rules, cities with every resident's status, touring order and steps. Players
are named by their display names in the lobby, made valid scenario names (one
word, not ``host``, not empty) and unique. Every command of the log becomes a
step: a player's act as ``NAME VERB [NAME...]``, the host's acts and the
timer's moves (discussion → voting → night → day, an absent host's
execution by lot) as ``host ...`` steps; a newcomer seated by ``host replace
OLD NEW`` is named like the dealt players.

The one logged command the format cannot say is the host's mid-game change
of the touring rotation (``SetTouringOrder``, ``/host touring``). It is
mapped faithfully: a night's touring city is all it changes, so the file's
``touring_order`` lists the touring city of every night the game had, in
order (night *n* takes entry *n − 1*, as the rules read it), and the command
itself is left out (its only other trace, the tick it took, shifts every later
time by one and changes no order between them).

Before a file is handed out it is played by the simulator, exactly as
``mafia-bot simulate`` plays it; if a step is refused, or the deaths, the
winners or the end differ from those the archive recorded when the game
ended, nothing is exported and :class:`ExportError` says why. A file that
simulates to another result is never given.
"""

from __future__ import annotations

import re
from dataclasses import fields
from typing import Any

import yaml

from bot.storage import ArchivedGame
from bot.yamlfile import YamlFileError, parse_yaml
from rules import (
    Game,
    HostCommand,
    PlayerCommand,
    Replace,
    SetTouringOrder,
    Setup,
    command_from_dict,
)
from rules.errors import RuleError
from rules.events import Event, PhaseStarted
from rules.model import Stage
from rules.scenario import HOST, ScenarioError, load_scenario, result_json, run_scenario

_SPACE = re.compile(r"\s+")


class ExportError(Exception):
    """The game cannot be written as a scenario that replays to its result; says why."""


def scenario_names(ids: list[str], names: dict[str, str]) -> dict[str, str]:
    """Player id → a unique, valid scenario name made from his lobby display name.

    White space becomes ``_``; an empty name becomes ``player``; ``host`` (the
    Procurator's word) gets a ``_`` after it; a name already taken gets
    ``_2``, ``_3``... (compared without case, so no two differ by case alone).
    """
    chosen: dict[str, str] = {}
    taken: set[str] = set()
    for player in ids:
        base = _SPACE.sub(
            "_", "".join(c if c.isprintable() else " " for c in names.get(player, player)).strip()
        )
        base = base.strip("_") or "player"
        if base.casefold() == HOST:
            base += "_"
        name, number = base, 1
        while name.casefold() in taken:
            number += 1
            name = f"{base}_{number}"
        taken.add(name.casefold())
        chosen[player] = name
    return chosen


def _touring_per_night(archived: ArchivedGame, setup: Setup) -> list[str]:
    """The touring city of every night the game had, replayed."""
    game = Game.create(setup, archived.seed)
    nights: list[str] = []

    def note(events: list[Event]) -> None:
        nights.extend(
            event.touring_city
            for event in events
            if isinstance(event, PhaseStarted)
            and event.stage is Stage.NIGHT
            and event.touring_city is not None
        )

    note(game.opening_events())
    for command, _ in archived.log:
        note(game.apply(command_from_dict(command)))
    return nights


def player_ids(archived: ArchivedGame, setup: Setup) -> list[str]:
    """Every player of the game: the dealt ones, then each newcomer of a ``host replace`` step
    in the order he came."""
    ids = [player for city in setup.cities for player, _ in city.residents]
    for logged, _source in archived.log:
        if (
            logged.get("by") == "host"
            and logged.get("verb") == Replace.verb
            and isinstance(logged.get("new"), str)
        ):
            ids.append(str(logged["new"]))
    return ids


def scenario_data(archived: ArchivedGame) -> dict[str, Any]:
    """The scenario (plain data) of an archived game, not yet checked.

    Raises:
        ExportError: a logged command that has no scenario step and no faithful mapping.
    """
    try:
        setup = Setup.from_dict(archived.setup)
    except RuleError as error:
        raise ExportError(f"the stored setup cannot be read: {error}") from None
    names = scenario_names(player_ids(archived, setup), archived.names)
    steps: list[str] = []
    retoured = False
    for logged, _source in archived.log:
        try:
            command = command_from_dict(logged)
        except RuleError as error:
            raise ExportError(f"a logged command cannot be read: {error}") from None
        if isinstance(command, SetTouringOrder):
            retoured = True
            continue
        values = [getattr(command, f.name) for f in fields(command) if f.name != "actor"]
        if any(not isinstance(value, str) or value not in names for value in values):
            raise ExportError(f"the command {command.verb!r} names no player of the game: {values}")
        words = [names[value] for value in values]
        if isinstance(command, PlayerCommand):
            steps.append(" ".join([names[command.actor], command.verb, *words]))
        elif isinstance(command, HostCommand):
            steps.append(" ".join([HOST, command.verb, *words]))
        else:
            raise ExportError(f"the command {command.verb!r} has no scenario step")
    rules = {
        key: value
        for key, value in setup.options.to_dict().items()
        if key != "touring_order" and value is not None
    }
    touring = list(setup.options.touring_order) if setup.options.touring_order else None
    if retoured:
        touring = _touring_per_night(archived, setup) or list(setup.city_names)
    scenario: dict[str, Any] = {
        "seed": archived.seed,
        "rules": rules,
        "cities": {
            city.name: {names[player]: status.value for player, status in city.residents}
            for city in setup.cities
        },
    }
    if touring is not None:
        scenario["touring_order"] = touring
    scenario["steps"] = steps
    return scenario


def _expected(archived: ArchivedGame, names: dict[str, str]) -> dict[str, Any]:
    """The result the archive recorded, as the simulator's JSON has it."""
    return {
        "deaths": [
            {
                "player": names.get(d.player, d.player),
                "city": d.city,
                "status": d.status,
                "cause": d.cause,
                "phase": d.phase,
            }
            for d in archived.deaths
        ],
        "winners": list(archived.winners),
        "over": archived.over,
    }


def export_scenario(archived: ArchivedGame) -> str:
    """The archived game as the text of a scenario file, checked by simulating it.

    Raises:
        ExportError: it cannot be written, or its simulation differs from the archive
            (a refused step, other deaths, other winners, another end).
    """
    data = scenario_data(archived)
    body = yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=1000)
    header = (
        f"# Прокуратор: game {archived.game_id}, "
        f"{'played to the end' if archived.over else 'ended by the host'}.\n"
        "# Check it: mafia-bot simulate THIS_FILE\n"
    )
    text = header + body
    try:
        scenario = load_scenario(parse_yaml(text))
    except (ScenarioError, YamlFileError) as error:
        raise ExportError(f"the written scenario does not load: {error}") from None
    result = run_scenario(scenario)
    refused = [step for step in result.steps if not step.ok]
    if refused:
        raise ExportError(
            f"step {refused[0].step!r} is refused when simulated ({refused[0].error})"
        )
    simulated = result_json(result)
    ids = player_ids(archived, Setup.from_dict(archived.setup))
    expected = _expected(archived, scenario_names(ids, archived.names))
    for key in ("deaths", "winners", "over"):
        if simulated[key] != expected[key]:
            raise ExportError(
                f"the simulated {key} differ from the game's: {simulated[key]} != {expected[key]}"
            )
    return text


__all__ = ["ExportError", "export_scenario", "scenario_data", "scenario_names"]
