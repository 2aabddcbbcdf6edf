"""The project's static checks run with the tests: ruff's lint and format everywhere, mypy --strict
on rules, bot and cogs. Both run through the interpreter that runs the tests (``python -m``), so
an unactivated virtual environment checks as much as an activated one: the test extra installs
them, and without it the checks fail rather than skip."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff_finds_nothing():
    result = run(sys.executable, "-m", "ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_leaves_every_file_as_it_is():
    result = run(sys.executable, "-m", "ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_passes_on_rules_bot_and_cogs():
    """pyproject's ``[tool.mypy]`` holds the flags and the files (rules, bot, cogs): the check is
    ``mypy`` alone."""
    result = run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_rules_stay_pure():
    forbidden = ("discord", "aiosqlite", "asyncio", "aiohttp", "time", "datetime", "os", "yaml")
    for path in (ROOT / "rules").glob("*.py"):
        for line in path.read_text().splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] in ("import", "from"):
                module = words[1].split(".")[0]
                assert module not in forbidden, f"{path.name} imports {module}"
