"""The project's static checks run with the tests: ruff's lint and format everywhere, mypy --strict
on rules, bot, cogs and the fake Discord (tests/fakediscord). Both run through the interpreter that runs the tests (``python -m``), so
an unactivated virtual environment checks as much as an activated one: the test extra installs
them, and without it the checks fail rather than skip."""

import ast
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


def test_mypy_strict_passes_on_rules_bot_cogs_and_the_fake():
    """pyproject's ``[tool.mypy]`` holds the flags and the files (rules, bot, cogs,
    tests/fakediscord): the check is ``mypy`` alone."""
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


PRODUCT_PACKAGES = ("bot", "cogs", "rules")


def product_imports(path: Path) -> list[str]:
    """``file:line module`` of every import of product code in ``path`` (at any depth, relative
    imports excepted: they stay inside the fake)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        else:
            continue
        for module in modules:
            if module.split(".")[0] in PRODUCT_PACKAGES:
                found.append(f"{path.name}:{node.lineno} {module}")
    return found


def test_the_fake_discord_imports_no_product_code():
    """The fake checks the product from the other side of the wire: sharing the product's code
    (its RTP, its permission lists) would let one mistake pass on both sides."""
    fake = sorted((ROOT / "tests" / "fakediscord").rglob("*.py"))
    assert len(fake) > 20
    assert [line for path in fake for line in product_imports(path)] == []


def test_the_import_check_sees_product_imports(tmp_path: Path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import json\nfrom . import rtp\nfrom bot.voice.rtp import RTPHeader\n"
        "def late():\n    import cogs.host\n    from rules import engine\n"
        "import botany\n"
    )
    assert product_imports(sample) == [
        "sample.py:3 bot.voice.rtp",
        "sample.py:5 cogs.host",
        "sample.py:6 rules",
    ]
