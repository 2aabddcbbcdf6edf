"""``mafia-bot simulate FILE [--json] [--lang ru|en]``: read a scenario file and play it.

The JSON (docs/scenarios.md) is the same in every language; the
transcript is written in the chosen language from the bot's catalogues
(``simulate.*`` keys, the statuses' ``status.*``). Without ``--lang`` the
language is the system locale's (the first of ``LANGUAGE``, ``LC_ALL``,
``LC_MESSAGES``, ``LANG`` that is set, read by Babel) when that is Russian,
else English: the simulator is a host's tool on his own machine, where the
locale says what he reads.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import fields
from enum import Enum
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from babel import default_locale

from bot.i18n import t
from bot.yamlfile import YamlFileError, read_yaml
from rules.events import (
    CityDecided,
    Event,
    ExecutionAwaitingHost,
    GameOver,
    KillPrevented,
    KillVoided,
    MafiaKillBlocked,
    PhaseStarted,
    PlayerKilled,
    PlayerReplaced,
)
from rules.model import AudienceKind, Cause, PhaseKind, Stage
from rules.roles import ROLES
from rules.scenario import (
    ScenarioError,
    ScenarioResult,
    StepResult,
    load_scenario,
    result_json,
    run_scenario,
)

LANGUAGES = ("en", "ru")
#: the roles' own events (:attr:`rules.roles.base.Role.events`)
ROLE_EVENTS = frozenset(event for row in ROLES for event in row.events)
#: a role's own event → the cause of death of that role's own night kill, if it has one
KILL_CAUSE_OF = {event: row.cause for row in ROLES if row.cause for event in row.events}


#: gettext's order for the language of messages. Babel alone would look at
#: LC_CTYPE before LANG, and Python sets LC_CTYPE=C.UTF-8 itself where the
#: user's locale is not installed (PEP 538), which would hide LANG=ru_RU.
LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


def default_language() -> str:
    """``ru`` when the system locale (for messages) is Russian, else ``en``."""
    locale = default_locale(LOCALE_VARIABLES) or ""
    return "ru" if locale.split("_")[0] == "ru" else "en"


def _step_lines(root: yaml.Node | None) -> list[int]:
    """The 1-based line of each item of the top-level ``steps`` list, if there is one."""
    if not isinstance(root, yaml.MappingNode):
        return []
    for key, value in root.value:
        if (
            isinstance(key, yaml.ScalarNode)
            and key.value == "steps"
            and isinstance(value, yaml.SequenceNode)
        ):
            return [item.start_mark.line + 1 for item in value.value]
    return []


def load_file(path: Path) -> tuple[Any, list[int]]:
    """Read and parse a scenario file.

    Raises:
        ScenarioError: the file cannot be read, is not valid YAML, or names a
            mapping key twice (with its line).
    """
    try:
        data, root = read_yaml(path)
    except YamlFileError as error:
        raise ScenarioError(str(error)) from None
    return data, _step_lines(root)


def simulate(path: Path, as_json: bool, language: str | None = None) -> str:
    """Play the scenario at ``path``; the JSON object or the transcript as text.

    ``language`` (``ru``/``en``) is the transcript's; None takes
    :func:`default_language`. The JSON does not depend on it.

    Raises:
        ScenarioError: a bad file, naming the problem and the line or step.
    """
    data, lines = load_file(path)
    result = run_scenario(load_scenario(data, lines))
    if as_json:
        return json.dumps(result_json(result), ensure_ascii=False, indent=2)
    return transcript(result, language or default_language())


class _Writer:
    """Lines of a transcript in one language."""

    def __init__(self, result: ScenarioResult, language: str) -> None:
        self.game = result.game
        self.say = partial(t, language)
        self.one_city = len(self.game.cities) == 1
        self.day = 0

    def status(self, status: str) -> str:
        return self.say(f"status.{status}")

    def header(self, event: PhaseStarted) -> str:
        number = event.phase.number
        if event.stage is Stage.NIGHT:
            if self.one_city or event.touring_city is None:
                return self.say("simulate.header.night", number=number)
            return self.say("simulate.header.night_touring", number=number, city=event.touring_city)
        self.day = number
        stage = self.say(f"simulate.stage.{event.stage.value}")
        return self.say("simulate.header.day", number=number, stage=stage)

    def verdict(self, step: StepResult) -> str:
        if not step.ok:
            assert step.error is not None
            reason = self.say(f"simulate.reason.{step.error}")
            return self.say("simulate.refused", code=step.error, reason=reason)
        if step.reply is None:
            return self.say("simulate.ok")
        reply = self.say(f"simulate.reply.{step.reply.replace(' ', '_')}")
        return self.say("simulate.ok_reply", reply=reply)

    def winner(self, code: str) -> str:
        if ":" not in code:
            return self.say(f"simulate.winner.{code}")
        city, side = code.rsplit(":", 1)
        return self.say(f"simulate.winner.{side}", city=city)

    def winners(self, codes: Sequence[str]) -> str:
        return ", ".join(self.winner(code) for code in codes) or self.say("simulate.nobody")

    def death(self, event: PlayerKilled, by_lot: bool) -> str:
        if event.cause is Cause.EXECUTION and event.by_city not in (None, event.city):
            cause = self.say("simulate.cause.execution_by", city=event.by_city)
        else:
            cause = self.say(f"simulate.cause.{event.cause.value}")
        if by_lot:
            cause += self.say("simulate.by_chance")
        return self.say(
            "simulate.death",
            player=event.player,
            city=event.city,
            status=self.status(event.status.value),
            cause=cause,
        )

    def events(self, events: Sequence[Event]) -> list[str]:
        """What happened, indented; phase headers last (they follow the deaths they close)."""
        lines: list[str] = []
        # a role's own kill chosen by lot (for one who said nothing): its victim and cause
        by_lot = {
            (getattr(e, "target", None), KILL_CAUSE_OF.get(type(e)))
            for e in events
            if type(e) in ROLE_EVENTS and getattr(e, "by_chance", False)
        }
        blocked: set[str] = set()
        for event in events:
            if isinstance(event, PlayerKilled):
                lot = event.by_chance or (event.player, event.cause) in by_lot
                lines.append(self.death(event, lot))
            elif isinstance(event, KillPrevented):
                lines.append(self.say(f"simulate.saved.{event.cause.value}", player=event.target))
            elif isinstance(event, MafiaKillBlocked) and event.city not in blocked:
                # the touring city is blocked twice (tour and home): say it once
                blocked.add(event.city)
                lines.append(self.say("simulate.blocked", city=event.city))
            elif isinstance(event, KillVoided):
                lines.append(
                    self.say(f"simulate.void.{event.role}", player=event.player, city=event.city)
                )
            elif isinstance(event, ExecutionAwaitingHost):
                lines.append(self.say("simulate.awaiting", city=event.city))
            elif isinstance(event, PlayerReplaced):
                lines.append(
                    self.say("simulate.replaced", old=event.old, new=event.new, city=event.city)
                )
            elif isinstance(event, CityDecided):
                lines.append(self.say(f"simulate.decided.{event.winner.value}", city=event.city))
            elif isinstance(event, GameOver):
                lines.append(self.say("simulate.game_over", winners=self.winners(event.winners)))
            elif type(event) in ROLE_EVENTS and event.audience.kind is AudienceKind.HOST:
                lines.append(self.role_line(event))
        lines = [f"     {line}" for line in lines]
        lines.extend(self.header(e) for e in events if isinstance(e, PhaseStarted))
        return lines

    def role_line(self, event: Event) -> str:
        """A role's own event the Procurator's log shows: ``simulate.<kind>`` (``.<cause>``
        for one with a cause), its players by name, ``player`` the one it is about."""
        params = {
            f.name: value
            for f in fields(event)
            if isinstance(value := getattr(event, f.name), str) and not isinstance(value, Enum)
        }
        params.setdefault("player", params.get("target", ""))
        cause = getattr(event, "cause", None)
        suffix = f".{cause.value}" if isinstance(cause, Cause) else ""
        return self.say(f"simulate.{event.kind}{suffix}", **params)

    def waiting_header(self) -> str:
        stage = self.say("simulate.stage.execution")
        return self.say("simulate.header.day", number=self.day, stage=stage)

    def result(self) -> list[str]:
        game = self.game
        lines = [self.say("simulate.result")]
        for city in game.cities:
            alive = game.alive(city)
            if alive:
                text = self.say(
                    "simulate.alive", city=city, count=len(alive), players=", ".join(alive)
                )
            else:
                text = self.say("simulate.alive_none", city=city)
            lines.append(f"  {text}")
        if game.over:
            lines.append(
                "  " + self.say("simulate.over_result", winners=self.winners(game.winners()))
            )
            return lines
        if game.phase.kind is PhaseKind.NIGHT:
            lines.append("  " + self.say("simulate.goes_on_night", number=game.phase.number))
        else:
            stage = self.say(f"simulate.stage.{game.stage.value}")
            lines.append(
                "  " + self.say("simulate.goes_on_day", number=game.phase.number, stage=stage)
            )
        if game.stage is Stage.EXECUTION:
            cities = ", ".join(game.pending_executions)
            lines.append("  " + self.say("simulate.still_waiting", cities=cities))
        decided = [
            self.say(f"simulate.decided_item.{game.decided[city].value}", city=city)
            for city in game.cities
            if city in game.decided
        ]
        if decided:
            lines.append("  " + self.say("simulate.decided_so_far", cities=", ".join(decided)))
        else:
            lines.append("  " + self.say("simulate.decided_none"))
        if len(decided) == len(game.cities):
            # the only way the game goes on with every city decided: one who plays alone lives
            lines.extend(
                "  " + self.say(f"simulate.{side}_keeps_going") for side in game.lone_sides_alive()
            )
        return lines


def transcript(result: ScenarioResult, language: str = "en") -> str:
    """A readable account in ``language``: headers, each step's outcome, deaths, saves, result.

    The stage waiting for ``host execute`` is shown when the day enters it
    and while cities still wait; winners only once the game is over (before
    that, the cities decided so far).
    """
    writer = _Writer(result, language)
    game = result.game
    lines = [writer.say("simulate.seed", seed=game.seed)]
    for dealt in game.setup.cities:
        people = ", ".join(
            f"{name} ({writer.status(status.value)})" for name, status in dealt.residents
        )
        lines.append(f"  {dealt.name}: {people}")
    opening = [e for e in result.opening if isinstance(e, PhaseStarted)]
    lines.extend(writer.events(opening))
    stage = opening[0].stage if opening else Stage.DISCUSSION
    waiting: tuple[str, ...] = ()
    for step in result.steps:
        lines.append(f"  {step.step} ... {writer.verdict(step)}")
        lines.extend(writer.events(step.events))
        if step.stage is Stage.EXECUTION:
            if stage is not Stage.EXECUTION:
                lines.append(writer.waiting_header())
            elif step.waiting and step.waiting != waiting:  # none left: the game ended there
                cities = ", ".join(step.waiting)
                lines.append("     " + writer.say("simulate.still_waiting", cities=cities))
        if step.stage is not None:
            stage, waiting = step.stage, step.waiting
    lines.extend(writer.result())
    return "\n".join(lines)
