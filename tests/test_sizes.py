"""Rooms of a size one can hold (issue 21): no product file over 600 lines, no function over 60;
the fake Discord (tests/fakediscord) is held to the same sizes (issue 31).

A function's lines run from its ``def`` to its last line (decorators not counted); nested functions
count on their own and within their parent."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("bot", "cogs", "rules")
FAKE = ROOT / "tests" / "fakediscord"
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 60


def product_files() -> list[Path]:
    """Every Python file of the product."""
    return sorted(path for top in PRODUCT for path in (ROOT / top).rglob("*.py"))


def fake_files() -> list[Path]:
    """Every Python file of the fake Discord, its own tests included."""
    return sorted(FAKE.rglob("*.py"))


def long_files(paths: list[Path], limit: int = MAX_FILE_LINES) -> list[str]:
    """``file (n lines)`` of each of ``paths`` longer than ``limit``."""
    big = []
    for path in paths:
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            big.append(f"{where} ({lines} lines)")
    return big


def long_functions(path: Path, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """``file:line name (n lines)`` of each function of ``path`` longer than ``limit``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > limit:
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                found.append(f"{where}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_the_product_is_where_the_test_looks() -> None:
    assert len(product_files()) > 50


def test_no_product_file_is_over_600_lines() -> None:
    assert long_files(product_files()) == []


def test_no_function_is_over_60_lines() -> None:
    assert [line for path in product_files() for line in long_functions(path)] == []


def test_the_fake_discord_is_where_the_test_looks() -> None:
    assert len(fake_files()) > 40


def test_no_fake_discord_file_is_over_600_lines() -> None:
    assert long_files(fake_files()) == []


def test_no_fake_discord_function_is_over_60_lines() -> None:
    assert [line for path in fake_files() for line in long_functions(path)] == []


def test_the_check_sees_a_long_file(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("x = 1\n" * (MAX_FILE_LINES + 1))
    short = tmp_path / "short.py"
    short.write_text("x = 1\n" * MAX_FILE_LINES)
    assert len(long_files([sample, short])) == 1


def test_the_check_sees_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{n} = {n}" for n in range(MAX_FUNCTION_LINES))
    sample = tmp_path / "sample.py"
    sample.write_text(f"def long():\n{body}\n\n\ndef short():\n    return 1\n")
    assert long_functions(sample) != [] and len(long_functions(sample)) == 1


def typed_data_breaches(path: Path) -> list[str]:
    """A game's state compared with a string, or an outbox item built from its kind's name
    (``OutboxItem("send", ...)``) rather than its intent class."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            names_state = any(isinstance(s, ast.Attribute) and s.attr == "state" for s in sides)
            literal = any(
                isinstance(s, ast.Constant)
                and isinstance(s.value, str)
                or isinstance(s, (ast.Tuple, ast.List))
                and any(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in s.elts)
                for s in sides
            )
            if names_state and literal:
                found.append(f"{path.name}:{node.lineno} a state compared with a string")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "OutboxItem"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.append(f"{path.name}:{node.lineno} an outbox item built by its kind's name")
    return found


def test_states_are_an_enum_and_outbox_items_are_built_from_their_intents() -> None:
    allowed = {ROOT / "bot" / "outbox" / "intents.py"}
    breaches = [
        line
        for path in product_files()
        if path not in allowed
        for line in typed_data_breaches(path)
    ]
    assert breaches == []


def test_the_typed_data_check_sees_a_breach(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        'if record.state == "running":\n    item = OutboxItem("send", {}, {})\n'
        "if record.state is GameState.RUNNING:\n    item = Send({}, 1).item()\n"
    )
    assert typed_data_breaches(sample) == [
        "sample.py:1 a state compared with a string",
        "sample.py:2 an outbox item built by its kind's name",
    ]
