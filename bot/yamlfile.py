"""Reading a YAML file with one clear line for what is wrong with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class YamlFileError(Exception):
    """The file cannot be read or is not valid YAML; the message names the line."""


def read_yaml(path: Path) -> tuple[Any, str]:
    """The parsed document and the text it came from.

    Raises:
        YamlFileError: ``cannot read ...`` or ``unparsable YAML at line N: problem``.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise YamlFileError(f"cannot read {path}: {error.__class__.__name__}: {error}") from None
    try:
        return yaml.safe_load(text), text
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise YamlFileError(f"unparsable YAML{where}: {problem}") from None
