"""The contributors' documents stay true: the files they name exist, their commands run
scripts and tests that exist with options those scripts take, and every benchmark is listed."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = ("docs/ARCHITECTURE.md", "CONTRIBUTING.md", "docs/benchmarks.md")

#: a path inside the repository as the documents write it: a top-level folder and what follows,
#: or a top-level file; ``::name`` names a test in the file
PATH = re.compile(
    r"(?<![\w./-])((?:rules|bot|cogs|tests|benchmarks|docs)/[\w.*/<>{}-]*(?:::\w+)?"
    r"|(?:README|CONTRIBUTING)\.md|pyproject\.toml|config\.example\.yaml)"
)
#: a migration named by its file alone
MIGRATION = re.compile(r"(?<![\w/])(V\d+__\w+\.sql)")
#: a command the documents tell you to run
COMMAND = re.compile(r"python (?:-m pytest|benchmarks/)[^`\n]*")


def text(document: str) -> str:
    return (ROOT / document).read_text(encoding="utf-8")


def paths_in(source: str) -> set[str]:
    """Every repository path named in ``source``, the placeholders (``<role>``) left out."""
    found = {match.rstrip(".,:;") for match in PATH.findall(source)}
    found |= {f"bot/migrations/{name}" for name in MIGRATION.findall(source)}
    return {path for path in found if "<" not in path and "{" not in path}


def missing_paths(source: str) -> list[str]:
    """The paths named in ``source`` that the repository does not have (a glob matches at least
    one file; ``file::name`` needs ``def name`` in the file)."""
    missing = []
    for path in sorted(paths_in(source)):
        if not exists(path):
            missing.append(path)
    return missing


def exists(path: str) -> bool:
    """Whether the repository has ``path``: a file or folder, a glob's match, a test in a file."""
    file, _, test = path.partition("::")
    if "*" in file:
        return bool(list(ROOT.glob(file)))
    if not (ROOT / file).exists():
        return False
    return not test or f"def {test}(" in (ROOT / file).read_text(encoding="utf-8")


def commands_in(source: str) -> list[str]:
    return [command.strip() for command in COMMAND.findall(source)]


def command_problems(command: str) -> list[str]:
    """What is wrong with one command: a test path or a script that does not exist, an option
    the script does not declare."""
    words = shlex.split(command)
    problems = []
    if words[1:3] == ["-m", "pytest"]:
        for word in words[3:]:
            if not word.startswith("-") and ("/" in word or word.endswith(".py")):
                problems += [f"{command}: {path}" for path in missing_paths(f" {word} ")]
                if not paths_in(f" {word} "):
                    problems.append(f"{command}: {word} is not a path of the repository")
        return problems
    script = ROOT / words[1]
    if not script.is_file():
        return [f"{command}: no {words[1]}"]
    source = script.read_text(encoding="utf-8")
    for word in words[2:]:
        option = word.split("=")[0]
        if option.startswith("--") and f'"{option}"' not in source:
            problems.append(f"{command}: {words[1]} has no option {option}")
    return problems


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_file_a_document_names_exists(document):
    assert len(paths_in(text(document))) >= 10, "the check finds the document's paths"
    assert missing_paths(text(document)) == []


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_command_a_document_gives_runs_what_exists(document):
    problems = [
        problem for command in commands_in(text(document)) for problem in command_problems(command)
    ]
    assert problems == []


def test_the_documents_give_commands_to_check():
    assert len(commands_in(text("CONTRIBUTING.md"))) >= 3
    assert len(commands_in(text("docs/benchmarks.md"))) >= 28


def test_every_benchmark_is_described_with_its_command():
    page = text("docs/benchmarks.md")
    scripts = sorted(
        path.name for path in (ROOT / "benchmarks").glob("*.py") if path.name != "__init__.py"
    )
    assert len(scripts) >= 10
    undescribed = [name for name in scripts if f"### `benchmarks/{name}`" not in page]
    uncommanded = [name for name in scripts if f"python benchmarks/{name}" not in page]
    assert undescribed == [] and uncommanded == []


def test_the_checks_see_what_is_wrong():
    assert missing_paths("see `bot/nowhere.py` and `cogs/play.py`") == ["bot/nowhere.py"]
    assert missing_paths("`tests/test_quality.py::test_no_such_test`") == [
        "tests/test_quality.py::test_no_such_test"
    ]
    assert missing_paths("`docs/rules.*.md` and `bot/locales/<lang>.json`") == []
    assert missing_paths("`docs/nothing.*.txt`") == ["docs/nothing.*.txt"]
    assert missing_paths("`V1__init.sql` to `V6__none.sql`") == ["bot/migrations/V6__none.sql"]
    assert command_problems("python benchmarks/rules_bench.py") == []
    assert command_problems("python benchmarks/no_bench.py") == [
        "python benchmarks/no_bench.py: no benchmarks/no_bench.py"
    ]
    assert command_problems("python benchmarks/chaos.py --kills 5 --no-such-flag") == [
        "python benchmarks/chaos.py --kills 5 --no-such-flag: benchmarks/chaos.py has no option --no-such-flag"
    ]
    assert command_problems("python -m pytest tests/rules/test_nothing.py -q") == [
        "python -m pytest tests/rules/test_nothing.py -q: tests/rules/test_nothing.py"
    ]
    assert command_problems('python -m pytest tests/rules -k "not large"') == []


def test_the_rules_exist_once():
    """``/rules`` reads ``bot/texts/rules.*.md`` from the package; they are links to ``docs/``,
    not copies that could drift apart."""
    for language in ("ru", "en"):
        shipped = ROOT / "bot" / "texts" / f"rules.{language}.md"
        assert shipped.is_symlink(), shipped
        assert shipped.resolve() == (ROOT / "docs" / f"rules.{language}.md").resolve()
