"""``mafia-bot simulate FILE [--json]``: read a scenario file and play it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from bot.yamlfile import YamlFileError, read_yaml
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
        data, text = read_yaml(path)
    except YamlFileError as error:
        raise ScenarioError(str(error)) from None
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
