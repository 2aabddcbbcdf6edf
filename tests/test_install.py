"""The owner's first hour: a runtime install without the test tools or matplotlib, the font in
the package, and a README whose first screen takes him from the clone to a running bot."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
README = (ROOT / "README.md").read_text(encoding="utf-8")
TEST_TOOLS = ("pytest", "mypy", "ruff", "hypothesis", "jsonschema")


def names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\[<>=;~! ]", line, maxsplit=1)[0].casefold() for line in requirements}


def test_the_runtime_install_has_no_test_tools_and_no_matplotlib():
    runtime = names(PROJECT["project"]["dependencies"])
    assert not runtime & {*TEST_TOOLS, "matplotlib", "numpy"}
    assert set(TEST_TOOLS) <= names(PROJECT["project"]["optional-dependencies"]["test"])


def test_the_picture_font_ships_in_the_package_with_its_licence():
    data = PROJECT["tool"]["setuptools"]["package-data"]["bot"]
    fonts = ROOT / "bot" / "picture" / "fonts"
    for name in ("DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "LICENSE_DEJAVU"):
        assert (fonts / name).is_file(), name
        assert any(Path(f"picture/fonts/{name}").match(pattern) for pattern in data), name
    assert "Bitstream Vera" in (fonts / "LICENSE_DEJAVU").read_text(encoding="utf-8")


def test_the_first_screen_goes_from_the_clone_to_a_running_bot():
    first = README[: README.index("**Host a game in five lines**")]
    for needed in (
        "python3 -m venv .venv",
        "pip install .",
        'pip install -e ".[test]"',
        "python -m pytest",
        "New Application",
        "Reset Token",
        "Server Members Intent",
        "invite link",
        "DISCORD_TOKEN",
        "mafia-bot run",
        "/admin language",
    ):
        assert needed in first, needed
    sizes = re.findall(r"\b\d+ MB\b", first)
    assert len(sizes) == 2, "the two installs' sizes"


def test_ci_runs_the_readmes_install_then_its_test_command():
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    install = re.search(r"```bash\n(pip install[^\n]*)\n```", README)
    test = re.search(r"```bash\n(python -m pytest[^\n]*)\n```", README)
    assert install and test
    commands = [line.strip() for line in run if line.strip() and not line.startswith("#")]
    assert commands.index(install.group(1)) < commands.index(test.group(1))
