"""``mafia-bot simulate FILE [--json]``: read a scenario file and play it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from rules.scenario import ScenarioError, load_scenario, result_json, run_scenario, transcript


def _step_lines(text: str) -> list[int]:
    """The 1-based line of each item of the top-level ``steps`` list, if there is one."""
    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        return []
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
        ScenarioError: the file cannot be read or is not valid YAML (with its line).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ScenarioError(f"cannot read {path}: {error}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ScenarioError(f"unparsable YAML{where}: {problem}") from None
    return data, _step_lines(text)


def simulate(path: Path, as_json: bool) -> str:
    """Play the scenario at ``path``; the JSON object or the transcript as text.

    Raises:
        ScenarioError: a bad file, naming the problem and the line or step.
    """
    data, lines = load_file(path)
    result = run_scenario(load_scenario(data, lines))
    if as_json:
        return json.dumps(result_json(result), ensure_ascii=False, indent=2)
    return transcript(result)
