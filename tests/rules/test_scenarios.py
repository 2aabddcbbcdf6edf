"""Scenario files played through the real command line (RULES.md, "Scenario files").

Every ``tests/scenarios/<name>.yaml`` with a ``<name>.expected.json`` beside it
is played with ``mafia-bot simulate FILE --json`` (``bot.cli.main``) and the
printed JSON must equal the expected file exactly. The expected files were
derived by hand from RULES.md and docs/rules-readings.md, not by running the
engine; each scenario says in its opening comment which rule it pins down.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
CASES = sorted(
    path for path in SCENARIOS.glob("*.yaml") if path.with_suffix(".expected.json").exists()
)


def _simulate(path: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    capsys.readouterr()
    code = main(["simulate", str(path), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, f"mafia-bot simulate {path.name} exited {code}: {err}"
    return json.loads(out)


def _outcome(step: Any) -> str:
    if step is None:
        return "(missing)"
    if step["ok"]:
        return "ok" + (f" {step['reply']}" if step["reply"] else "")
    return f"refused {step['error']}"


def _step_table(expected: Any, actual: Any) -> list[str]:
    """One line per step whose outcome differs: the quickest thing to read."""
    lines = []
    exp_steps = expected.get("steps", [])
    act_steps = actual.get("steps", [])
    for index in range(max(len(exp_steps), len(act_steps))):
        exp = exp_steps[index] if index < len(exp_steps) else None
        act = act_steps[index] if index < len(act_steps) else None
        if exp != act:
            name = (exp or act or {}).get("step")
            code_only = (
                exp is not None
                and act is not None
                and not exp["ok"]
                and not act["ok"]
                and exp["step"] == act["step"]
            )
            lines.append(
                f"  step {index + 1} {name!r}: expected {_outcome(exp)}, got {_outcome(act)}"
                + (" [only the refusal code differs]" if code_only else "")
            )
    return lines


def _explain(expected: Any, actual: Any) -> str:
    parts = []
    steps = _step_table(expected, actual)
    if steps:
        parts.append("steps that differ:")
        parts.extend(steps)
    for key in ("deaths", "alive", "winners", "over"):
        if expected.get(key) != actual.get(key):
            parts.append(f"{key}: expected {expected.get(key)!r}")
            parts.append(f"{' ' * len(key)}  got      {actual.get(key)!r}")
    diff = difflib.unified_diff(
        json.dumps(expected, indent=2, ensure_ascii=False).splitlines(),
        json.dumps(actual, indent=2, ensure_ascii=False).splitlines(),
        "expected",
        "simulator",
        lineterm="",
    )
    parts.append("full diff:")
    parts.extend(diff)
    return "\n".join(parts)


def test_scenarios_are_found() -> None:
    assert len(CASES) >= 20, [path.name for path in CASES]


@pytest.mark.parametrize("path", CASES, ids=[path.stem for path in CASES])
def test_scenario(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected = json.loads(path.with_suffix(".expected.json").read_text(encoding="utf-8"))
    actual = _simulate(path, capsys)
    assert actual == expected, f"{path.name} differs from its expected file\n" + _explain(
        expected, actual
    )


@pytest.mark.parametrize("path", CASES, ids=[path.stem for path in CASES])
def test_scenario_output_is_its_expected_file_byte_for_byte(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``mafia-bot simulate --json`` prints each expected file exactly, byte for byte: a
    change of the engine's inside (the roles' declarations) leaves every output as it was."""
    capsys.readouterr()
    assert main(["simulate", str(path), "--json"]) == 0
    out, _ = capsys.readouterr()
    assert out == path.with_suffix(".expected.json").read_text(encoding="utf-8")


_VERONA = (
    "cities: {Verona: {romeo: citizen, mercutio: citizen, tybalt: mafioso, escalus: commissar}}\n"
)

#: Setups RULES.md refuses ("A bad setup is refused with a reason"; the rule
#: option table), with the refusal code expected in the simulator's message.
BAD_SETUPS = {
    "last_word_seconds_zero": (
        "rules: {last_word_seconds: 0}\n"
        "cities: {Verona: {romeo: citizen, mercutio: citizen, tybalt: mafioso, escalus: commissar}}\n",
        "bad_option",
    ),
    "last_word_seconds_too_long": (
        "rules: {last_word_seconds: 181}\n"
        "cities: {Verona: {romeo: citizen, mercutio: citizen, tybalt: mafioso, escalus: commissar}}\n",
        "bad_option",
    ),
    "mafia_not_outnumbered": (
        "cities: {Verona: {romeo: citizen, tybalt: mafioso, sampson: mafioso, escalus: commissar}}\n",
        "mafia_majority",
    ),
    "first_phase_dusk": (
        "rules: {first_phase: dusk}\n" + _VERONA,
        "bad_option",
    ),
    "day_fallback_vote": (
        "rules: {day_fallback: vote}\n" + _VERONA,
        "bad_option",
    ),
    "maniac_idle_other": (
        "rules: {maniac_idle: nearest}\n" + _VERONA,
        "bad_option",
    ),
    "touring_order_unknown_city": (
        "touring_order: [Mantua]\n" + _VERONA,
        "unknown_city",
    ),
    "touring_order_empty": (
        "touring_order: []\n" + _VERONA,
        "bad_option",
    ),
    "no_mafioso": (
        "cities: {Verona: {romeo: citizen, mercutio: citizen, escalus: commissar}}\n",
        "no_mafioso",
    ),
    "two_commissars": (
        "cities: {Verona: {romeo: citizen, tybalt: mafioso, escalus: commissar, paris: commissar}}\n",
        "commissar_count",
    ),
    "same_name_in_two_cities": (
        "cities:\n"
        "  Verona: {romeo: citizen, mercutio: citizen, tybalt: mafioso, escalus: commissar}\n"
        "  Padua: {romeo: citizen, gremio: citizen, lucentio: mafioso, baptista: commissar}\n",
        "duplicate_player",
    ),
    "two_doctors": (
        "cities:\n"
        "  Verona: {romeo: citizen, tybalt: mafioso, escalus: commissar, laurence: doctor}\n"
        "  Padua: {bianca: citizen, lucentio: mafioso, baptista: commissar, nurse: doctor}\n",
        "too_many",
    ),
    "two_maniacs": (
        "cities:\n"
        "  Verona: {romeo: citizen, tybalt: mafioso, escalus: commissar, rosaline: maniac}\n"
        "  Padua: {bianca: citizen, lucentio: mafioso, baptista: commissar, kate: maniac}\n",
        "too_many",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_SETUPS))
def test_bad_setup_is_refused(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """RULES.md: "A bad setup is refused with a reason" (the option table bounds too)."""
    text, code = BAD_SETUPS[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(text + "steps: []\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["simulate", str(path), "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert code in err, err


def _comment_expectations(text: str) -> dict[str, Any]:
    """What a scenario's comments say it gives: each step's ``# => ok [reply]`` or ``# => code``
    (before any ``;``), and the ``# death: PLAYER CAUSE PHASE``, ``# winners:`` and ``# over:``
    lines."""
    steps: list[tuple[int, str]] = []
    deaths: list[list[str]] = []
    said: dict[str, Any] = {"steps": steps, "deaths": deaths}
    index = -1
    for line in text.splitlines():
        if line.lstrip().startswith("- "):
            index += 1
            if "# =>" in line:
                steps.append((index, line.split("# =>", 1)[1].split(";", 1)[0].strip()))
        elif line.startswith("# death:"):
            deaths.append(line.removeprefix("# death:").split("#")[0].split())
        elif line.startswith("# winners:"):
            names = line.removeprefix("# winners:").split(",")
            said["winners"] = [name.strip() for name in names if name.strip()]
        elif line.startswith("# over:"):
            said["over"] = line.removeprefix("# over:").strip() == "true"
    return said


@pytest.mark.parametrize("path", CASES, ids=[path.stem for path in CASES])
def test_expected_file_says_what_the_scenarios_comments_say(path: Path) -> None:
    """Each expected file agrees with its scenario's ``# =>``, ``# death:``, ``# winners:`` and
    ``# over:`` comments (the reading written beside each step, by hand)."""
    said = _comment_expectations(path.read_text(encoding="utf-8"))
    expected = json.loads(path.with_suffix(".expected.json").read_text(encoding="utf-8"))
    for index, outcome in said["steps"]:
        step = expected["steps"][index]
        word = outcome.removeprefix("refused ").split()
        if word[0] == "ok":
            assert step["ok"] and step["reply"] == (" ".join(word[1:]) or None), (index, step)
        else:
            assert not step["ok"] and step["error"] == word[0], (index, step)
    if said["deaths"] or "over" in said:
        deaths = [[d["player"], d["cause"], d["phase"]] for d in expected["deaths"]]
        assert deaths == [[d[0], d[1], " ".join(d[2:4])] for d in said["deaths"]]
    if "winners" in said:
        assert expected["winners"] == said["winners"]
    if "over" in said:
        assert expected["over"] == said["over"]
