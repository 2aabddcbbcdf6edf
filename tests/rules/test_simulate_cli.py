"""``mafia-bot simulate``: the transcript, the JSON, and one clear line for a bad file."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import main

EXAMPLE = Path(__file__).parent.parent / "scenarios" / "rules_example.yaml"


def test_rules_example_prints_a_transcript(capsys):
    assert main(["simulate", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "== Day 1: discussion ==" in out
    assert "romeo nominate tybalt ... ok" in out
    assert "† tybalt (Verona, mafioso): execution" in out
    assert "== Night 1 (touring: Padua) ==" in out
    assert "† romeo (Verona, citizen): touring" in out
    assert "winners: Verona:honest" in out


def test_rules_example_json_has_the_documented_keys(capsys):
    assert main(["simulate", str(EXAMPLE), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) == {"steps", "deaths", "alive", "winners", "over"}
    assert result["steps"][0] == {
        "step": "romeo nominate tybalt", "ok": True, "error": None, "reply": None
    }
    assert {"player": "romeo", "city": "Verona", "status": "citizen", "cause": "touring",
            "phase": "night 1"} in result["deaths"]
    assert result["alive"]["Verona"] == ["escalus"]
    assert result["over"] is False


def test_refusals_and_replies_in_json(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(
        "seed: 1\nrules: {first_phase: night}\n"
        "cities:\n  V: {a: citizen, b: mafioso, c: commissar, d: journalist}\n"
        "steps:\n  - c check b\n  - c check a\n  - a nominate b\n  - host day\n"
        "  - d compare a c\n"
    )
    assert main(["simulate", str(path), "--json"]) == 0
    steps = json.loads(capsys.readouterr().out)["steps"]
    assert [(s["ok"], s["error"], s["reply"]) for s in steps] == [
        (True, None, "mafia"),
        (False, "already_checked_tonight", None),
        (False, "wrong_phase", None),
        (True, None, None),
        (True, None, "different"),
    ]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("cities: {V: {a: citizen\nsteps: [", "unparsable YAML at line"),
        ("cities:\n  V: {a: citizen, b: mafioso, c: commissar}\nsteps:\n  - a dance b\n",
         "step 1 (line 4): unknown verb 'dance'"),
        ("cities:\n  V: {a: citizen, b: mafioso, c: commissar}\nsteps:\n  - host voting\n"
         "  - a vote zed\n", "step 2 (line 5): unknown player 'zed'"),
        ("cities:\n  V: {a: citizen, b: mafioso, c: commissar}\nsteps:\n  - a vote\n",
         "step 1 (line 4): 'vote' takes 1 argument(s), got 0"),
        ("cities:\n  V: {a: citizen, b: mafioso}\nsteps: []\n", "bad setup: commissar_count"),
        ("cities:\n  V: {a: citizen, b: mafioso, c: sheriff}\n", "bad setup: bad_status"),
        ("seed: seven\ncities:\n  V: {a: citizen, b: mafioso, c: commissar}\n", "'seed'"),
        ("- just a list\n", "must be a mapping"),
    ],
)
def test_a_bad_file_exits_non_zero_with_one_clear_line(tmp_path, text, needle):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    run = subprocess.run(
        [sys.executable, "-m", "bot", "simulate", str(path), "--json"],
        capture_output=True, text=True, check=False,
    )
    assert run.returncode != 0
    assert run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert needle in lines[0]
    assert "Traceback" not in run.stderr


def test_a_missing_file_is_a_clear_error(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "bot", "simulate", str(tmp_path / "nope.yaml")],
        capture_output=True, text=True, check=False,
    )
    assert run.returncode != 0 and "cannot read" in run.stderr
