"""Scenario files: a whole game written down (docs/scenarios.md).

This module works on already-parsed data (the command line reads the YAML);
it turns a scenario into a setup and commands, plays it, and renders the
result as the documented JSON. The readable transcript, in the player's
language, is the bot's (``bot/simulate.py``): texts live in its catalogues.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from rules.commands import (
    HOST_COMMANDS,
    PLAYER_COMMANDS,
    Command,
    HostCommand,
    PlayerCommand,
    Replace,
)
from rules.errors import RuleError
from rules.events import Event
from rules.game import Game
from rules.model import Phase, Setup, Stage

HOST = "host"


class ScenarioError(Exception):
    """A scenario file that cannot be played; the message names the problem and where."""


@dataclass(frozen=True)
class Scenario:
    """A parsed scenario: the setup, the seed and the steps as text and command."""

    setup: Setup
    seed: int
    steps: tuple[tuple[str, Command], ...]


@dataclass
class StepResult:
    """What one step did: ok or the refusal code, the private reply, the events.

    ``phase``, ``stage`` and ``waiting`` (the cities waiting for ``host
    execute``) are where the game stands after the step; the JSON leaves
    them out, the transcript shows them.
    """

    step: str
    ok: bool
    error: str | None = None
    reply: str | None = None
    events: list[Event] = field(default_factory=list)
    phase: Phase | None = None
    stage: Stage | None = None
    waiting: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """``{step, ok, error, reply}`` as the JSON output has it."""
        return {"step": self.step, "ok": self.ok, "error": self.error, "reply": self.reply}


@dataclass
class ScenarioResult:
    """A played scenario: the final game, the opening events and every step."""

    game: Game
    opening: list[Event]
    steps: list[StepResult]


def _arity(cls: type[Command]) -> int:
    return len(fields(cls)) - (1 if issubclass(cls, PlayerCommand) else 0)


def _where(index: int, lines: Sequence[int] | None) -> str:
    where = f"step {index + 1}"
    if lines is not None and index < len(lines):
        where += f" (line {lines[index]})"
    return where


def parse_step(text: str, players: Mapping[str, object]) -> Command:
    """Turn one step like ``romeo vote tybalt`` into a command.

    Raises:
        ScenarioError: for an unknown verb, an unknown player or the wrong
            number of arguments (the message has no position; callers add it).
    """
    words = text.split()
    if len(words) < 2:
        raise ScenarioError(f"cannot read step {text!r}: expected 'PLAYER VERB [ARGS]'")
    actor, verb, args = words[0], words[1], words[2:]
    cls: type[Command] | None
    if actor == HOST:
        cls = HOST_COMMANDS.get(verb)
        if cls is None:
            raise ScenarioError(f"unknown host verb {verb!r} in {text!r}")
    else:
        if actor not in players:
            raise ScenarioError(f"unknown player {actor!r} in {text!r}")
        cls = PLAYER_COMMANDS.get(verb)
        if cls is None:
            raise ScenarioError(f"unknown verb {verb!r} in {text!r}")
    if len(args) != _arity(cls):
        raise ScenarioError(
            f"{verb!r} takes {_arity(cls)} argument(s), got {len(args)} in {text!r}"
        )
    # a replacement's newcomer is the one name a step may bring in
    known = args[:1] if cls is Replace else args
    for name in known:
        if name not in players:
            raise ScenarioError(f"unknown player {name!r} in {text!r}")
    if cls is Replace and args[1] == HOST:
        raise ScenarioError(f"'host' is reserved for the Procurator in {text!r}")
    if issubclass(cls, HostCommand):
        return cls(*args)
    return cls(actor, *args)


def load_scenario(data: object, step_lines: Sequence[int] | None = None) -> Scenario:
    """Check a parsed scenario file and build its setup and commands.

    ``step_lines`` gives the file line of each step, for error messages.

    Raises:
        ScenarioError: for a bad setup (with the rules' reason), a bad seed,
            or a bad step (naming the step and its line).
    """
    if not isinstance(data, Mapping):
        raise ScenarioError("a scenario must be a mapping with 'cities' and 'steps'")
    unknown = set(data) - {"seed", "rules", "cities", "touring_order", "steps"}
    if unknown:
        raise ScenarioError(f"unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    seed = data.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ScenarioError(f"'seed' must be an integer, got {seed!r}")
    if data.get("rules") is not None and not isinstance(data.get("rules"), Mapping):
        raise ScenarioError("'rules' must be a mapping of rule options")
    if not isinstance(data.get("cities"), Mapping):
        raise ScenarioError("'cities' must be a mapping: city -> player -> status")
    try:
        setup = Setup.from_dict(data)
        game = Game.create(setup, seed)
    except RuleError as error:
        raise ScenarioError(f"bad setup: {error}") from None
    if HOST in game.players:
        raise ScenarioError("bad setup: 'host' is reserved for the Procurator")
    raw_steps = data.get("steps") or []
    if not isinstance(raw_steps, list):
        raise ScenarioError("'steps' must be a list")
    steps: list[tuple[str, Command]] = []
    players: dict[str, object] = dict(game.players)
    for index, raw in enumerate(raw_steps):
        if not isinstance(raw, str):
            raise ScenarioError(f"{_where(index, step_lines)}: a step must be text, got {raw!r}")
        text = " ".join(raw.split())
        try:
            command = parse_step(text, players)
        except ScenarioError as error:
            raise ScenarioError(f"{_where(index, step_lines)}: {error}") from None
        steps.append((text, command))
        if isinstance(command, Replace):  # the newcomer plays from the next step on
            players[command.new] = command
    return Scenario(setup, seed, tuple(steps))


def run_scenario(scenario: Scenario) -> ScenarioResult:
    """Play every step; a refused step changes nothing and the run goes on."""
    game = Game.create(scenario.setup, scenario.seed)
    result = ScenarioResult(game, game.opening_events(), [])
    for text, command in scenario.steps:
        try:
            events = game.apply(command)
        except RuleError as error:
            step = StepResult(text, False, error.code)
        else:
            reply = _reply(command, events)
            step = StepResult(text, True, None, reply, events)
        step.phase, step.stage = game.phase, game.stage
        step.waiting = tuple(game.pending_executions) if game.stage is Stage.EXECUTION else ()
        result.steps.append(step)
    return result


def _reply(command: Command, events: list[Event]) -> str | None:
    """The secret answer its sender is given (a check's, a comparison's), if any."""
    actor = getattr(command, "actor", None)
    for event in events:
        reply = getattr(event, "reply", None)
        if isinstance(reply, str) and event.audience.player == actor:
            return reply
    return None


def result_json(result: ScenarioResult) -> dict[str, Any]:
    """The documented JSON: ``steps``, ``deaths``, ``alive``, ``winners``, ``over``."""
    game = result.game
    return {
        "steps": [step.to_dict() for step in result.steps],
        "deaths": [death.to_dict() for death in game.deaths],
        "alive": {city: game.alive(city) for city in game.cities},
        "winners": game.winners(),
        "over": game.over,
    }


__all__ = [
    "Scenario",
    "ScenarioError",
    "ScenarioResult",
    "StepResult",
    "load_scenario",
    "parse_step",
    "result_json",
    "run_scenario",
]
