"""``mafia-bot simulate``: the transcript, the JSON, and one clear line for a bad file."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import main

EXAMPLE = Path(__file__).parent.parent / "scenarios" / "rules_example.yaml"


def test_rules_example_prints_a_transcript(capsys):
    assert main(["simulate", str(EXAMPLE), "--lang", "en"]) == 0
    out = capsys.readouterr().out
    assert "== Day 1: discussion ==" in out
    assert "romeo nominate tybalt ... ok" in out
    assert "† tybalt (Verona, mafioso): execution" in out
    assert "† nurse (Padua, doctor): execution (chosen by lot)" in out
    assert "== Night 1 (touring: Padua) ==" in out
    assert "† romeo (Verona, citizen): the touring kill" in out
    # the game goes on: decided cities are named as such, no winners yet
    assert out.splitlines()[-4:] == [
        "  Verona — 1 player alive: escalus",
        "  Padua — 3 players alive: bianca, lucentio, baptista",
        "  The game goes on: day 2, discussion.",
        "  Decided so far: Verona (won by its honest residents).",
    ]
    assert "Winners" not in out


def test_rules_example_json_has_the_documented_keys(capsys):
    assert main(["simulate", str(EXAMPLE), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) == {"steps", "deaths", "alive", "winners", "over"}
    assert result["steps"][0] == {
        "step": "romeo nominate tybalt",
        "ok": True,
        "error": None,
        "reply": None,
    }
    assert {
        "player": "romeo",
        "city": "Verona",
        "status": "citizen",
        "cause": "touring",
        "phase": "night 1",
    } in result["deaths"]
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
        (
            "cities:\n  V: {a: citizen, b: mafioso, c: commissar}\nsteps:\n  - a dance b\n",
            "step 1 (line 4): unknown verb 'dance'",
        ),
        (
            "cities:\n  V: {a: citizen, b: mafioso, c: commissar}\nsteps:\n  - host voting\n"
            "  - a vote zed\n",
            "step 2 (line 5): unknown player 'zed'",
        ),
        (
            "cities:\n  V: {a: citizen, b: mafioso, c: commissar}\nsteps:\n  - a vote\n",
            "step 1 (line 4): 'vote' takes 1 argument(s), got 0",
        ),
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
        capture_output=True,
        text=True,
        check=False,
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
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode != 0 and "cannot read" in run.stderr


SCENARIOS = EXAMPLE.parent


def transcript_of(path, capsys, *args):
    capsys.readouterr()
    assert main(["simulate", str(path), *args]) == 0
    return capsys.readouterr().out


def test_the_rules_example_in_russian(capsys):
    out = transcript_of(EXAMPLE, capsys, "--lang", "ru")
    lines = out.splitlines()
    assert lines[:3] == [
        "Ключ жеребьёвки 7; города:",
        "  Verona: romeo (гражданин), tybalt (мафиози), escalus (комиссар)",
        "  Padua: bianca (гражданин), lucentio (мафиози), baptista (комиссар), nurse (врач)",
    ]
    assert "== День 1: обсуждение ==" in lines
    assert "  romeo nominate tybalt ... принято" in lines
    assert "     † tybalt (Verona, мафиози): казнь" in lines
    assert "     † nurse (Padua, врач): казнь (по жребию)" in lines
    assert "     * Исход города Verona решён: в городе победили честные жители." in lines
    assert "== Ночь 1 (гастроли: Padua) ==" in lines
    assert "     † romeo (Verona, гражданин): убийство на гастролях" in lines
    assert lines[-5:] == [
        "Итог:",
        "  Verona — в живых 1 игрок: escalus",
        "  Padua — в живых 3 игрока: bianca, lucentio, baptista",
        "  Игра продолжается: день 2, обсуждение.",
        "  Уже решено: Verona (победа честных жителей).",
    ]
    assert "Победители" not in out


def test_the_stage_waiting_for_host_execute_is_shown(capsys):
    out = transcript_of(SCENARIOS / "fallback_host_two_cities.yaml", capsys, "--lang", "en")
    lines = out.splitlines()
    start = lines.index("  host night ... ok")
    assert lines[start + 1 : start + 7] == [
        "     ⚖ Verona chose nobody by vote: the day waits for the Procurator (host execute PLAYER).",
        "     ⚖ Padua chose nobody by vote: the day waits for the Procurator (host execute PLAYER).",
        "== Day 1: waiting for the Procurator (host execute) ==",
        "  host execute bianca ... ok",
        "     † bianca (Padua, citizen): execution by Verona",
        "     ⚖ Still waiting for the Procurator (host execute): Padua.",
    ]
    assert (
        "  tybalt kill romeo ... refused: wrong_phase (not possible at this stage of the game)"
        in lines
    )


def test_a_game_left_waiting_says_so_in_the_result(tmp_path, capsys):
    path = tmp_path / "waiting.yaml"
    path.write_text(
        "rules: {day_fallback: host}\n"
        "cities:\n  V: {a: citizen, b: citizen, c: mafioso, d: commissar}\n"
        "steps:\n  - host voting\n  - host night\n"
    )
    ru = transcript_of(path, capsys, "--lang", "ru").splitlines()
    assert ru[-7:] == [
        "     ⚖ Город V никого не выбрал голосованием: день ждёт решения Прокуратора"
        " (host execute ИГРОК).",
        "== День 1: ждём решения Прокуратора (host execute) ==",
        "Итог:",
        "  V — в живых 4 игрока: a, b, c, d",
        "  Игра продолжается: день 1, ждём решения Прокуратора (host execute).",
        "  ⚖ Решения Прокуратора (host execute) ещё ждут: V.",
        "  Исход ни одного города ещё не решён.",
    ]
    en = transcript_of(path, capsys, "--lang", "en").splitlines()
    assert "== Day 1: waiting for the Procurator (host execute) ==" in en
    assert "  The game goes on: day 1, waiting for the Procurator (host execute)." in en
    assert "  ⚖ Still waiting for the Procurator (host execute): V." in en


def test_doctor_saves_are_shown(capsys):
    lines = transcript_of(SCENARIOS / "dawn_protected_survives_all.yaml", capsys, "--lang", "en")
    lines = lines.splitlines()
    start = lines.index("  lucentio tour romeo ... ok") + 2
    assert lines[start : start + 3] == [
        "     🛡 romeo is protected by the doctor and survives the maniac's attack.",
        "     🛡 romeo is protected by the doctor and survives the touring mafia's attack.",
        "     🛡 romeo is protected by the doctor and survives the mafia's attack.",
    ]
    ru = transcript_of(SCENARIOS / "dawn_protected_survives_all.yaml", capsys, "--lang", "ru")
    assert "     🛡 romeo под защитой врача и переживает нападение маньяка." in ru.splitlines()


def test_a_blocked_kill_is_shown_once_per_city(capsys):
    out = transcript_of(SCENARIOS / "dawn_maniac_kills_godfather.yaml", capsys, "--lang", "en")
    assert out.count("× The Godfather of Verona died this night: its mafia kills nobody.") == 1


def test_winners_only_once_the_game_is_over(capsys):
    lines = transcript_of(SCENARIOS / "maniac_wins_if_survives.yaml", capsys, "--lang", "en")
    lines = lines.splitlines()
    assert "     * The game is over. Winners: the honest residents of Verona, the maniac." in lines
    assert lines[-1] == "  The game is over. Winners: the honest residents of Verona, the maniac."
    assert "The game goes on" not in "\n".join(lines)


def test_every_city_decided_with_the_maniac_alive_is_explained(tmp_path, capsys):
    path = tmp_path / "maniac.yaml"
    path.write_text(
        "cities:\n  V: {a: citizen, b: citizen, c: mafioso, d: commissar, m: maniac}\n"
        "steps:\n  - a nominate c\n  - host voting\n  - a vote c\n  - host night\n"
    )
    lines = transcript_of(path, capsys, "--lang", "en").splitlines()
    assert lines[-3:] == [
        "  The game goes on: night 1.",
        "  Decided so far: V (won by its honest residents).",
        "  Every city is decided, but the maniac is alive: the game goes on until the maniac dies"
        " or outlives everyone else.",
    ]
    # one city: no touring in the night's header
    assert "== Night 1 ==" in lines


def test_a_maniacs_victim_by_lot_is_marked(capsys):
    out = transcript_of(SCENARIOS / "maniac_outlives_everyone.yaml", capsys, "--lang", "ru")
    assert "     † escalus (Verona, комиссар): жертва маньяка (по жребию)" in out.splitlines()


def test_russian_plural_forms_of_the_living(tmp_path, capsys):
    names = [f"c{i}" for i in range(1, 21)]
    residents = ", ".join(f"{name}: citizen" for name in names)
    path = tmp_path / "big.yaml"
    path.write_text(
        "cities:\n"
        f"  V: {{{residents}, m: mafioso, k: commissar}}\n"
        "  W: {w1: citizen, w2: citizen, w3: mafioso, w4: commissar}\n"
        "  Z: {z1: citizen, z2: citizen, z3: citizen, z4: mafioso, z5: commissar}\n"
        "steps: []\n"
    )
    out = transcript_of(path, capsys, "--lang", "ru")
    assert "  V — в живых 22 игрока: " in out
    assert "  W — в живых 4 игрока: w1, w2, w3, w4" in out
    assert "  Z — в живых 5 игроков: z1, z2, z3, z4, z5" in out
    en = transcript_of(path, capsys, "--lang", "en")
    assert "  Z — 5 players alive: z1, z2, z3, z4, z5" in en


def test_the_default_language_follows_the_locale(monkeypatch, capsys):
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG", "LC_CTYPE"):
        monkeypatch.delenv(name, raising=False)
    assert transcript_of(EXAMPLE, capsys).startswith("Seed 7; cities:")
    monkeypatch.setenv("LANG", "ru_RU.UTF-8")
    # Python's own C-locale coercion may set LC_CTYPE; the messages order wins
    monkeypatch.setenv("LC_CTYPE", "C.UTF-8")
    assert transcript_of(EXAMPLE, capsys).startswith("Ключ жеребьёвки 7; города:")
    assert transcript_of(EXAMPLE, capsys, "--lang", "en").startswith("Seed 7; cities:")
    monkeypatch.setenv("LC_MESSAGES", "en_GB.UTF-8")
    assert transcript_of(EXAMPLE, capsys).startswith("Seed 7; cities:")
    monkeypatch.setenv("LANGUAGE", "ru:en")
    assert transcript_of(EXAMPLE, capsys).startswith("Ключ жеребьёвки 7; города:")


def test_the_json_does_not_depend_on_the_language(capsys):
    outputs = {
        lang: transcript_of(EXAMPLE, capsys, "--json", "--lang", lang) for lang in ("ru", "en")
    }
    assert outputs["ru"] == outputs["en"]
    assert json.loads(outputs["ru"])["winners"] == ["Verona:honest"]


def test_every_transcript_text_exists_in_both_languages():
    from bot.i18n import catalogue
    from rules import CODES, Cause, Stage, Status, Winner

    keys = {f"simulate.reason.{code}" for code in CODES}
    keys |= {f"simulate.stage.{s.value}" for s in Stage if s is not Stage.NIGHT}
    keys |= {f"simulate.cause.{c.value}" for c in Cause}
    keys |= {f"simulate.saved.{c}" for c in ("maniac", "mafia", "touring")}
    keys |= {
        f"simulate.{kind}.{w.value}"
        for w in Winner
        for kind in ("decided", "decided_item", "winner")
    }
    keys |= {"simulate.winner.maniac"} | {f"status.{s.value}" for s in Status}
    keys |= {f"simulate.reply.{r}" for r in ("same", "different", "mafia", "not_mafia")}
    for language in ("ru", "en"):
        assert sorted(keys - set(catalogue(language))) == [], language


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "cities:\n  V: {a: citizen, b: mafioso, c: commissar}\n"
            "  V: {d: citizen, e: mafioso, f: commissar}\nsteps: []\n",
            "duplicate key 'V' at line 3 (first at line 2)",
        ),
        (
            "cities:\n  V:\n    a: citizen\n    b: mafioso\n    c: commissar\n    a: doctor\n",
            "duplicate key 'a' at line 6 (first at line 3)",
        ),
        (
            "seed: 1\ncities:\n  V: {a: citizen, b: mafioso, c: commissar}\nseed: 2\n",
            "duplicate key 'seed' at line 4 (first at line 1)",
        ),
        (
            "rules: {first_phase: night, first_phase: day}\n"
            "cities:\n  V: {a: citizen, b: mafioso, c: commissar}\n",
            "duplicate key 'first_phase' at line 1 (first at line 1)",
        ),
    ],
    ids=["city", "player", "top_level", "rule_option"],
)
def test_a_duplicate_key_is_refused_with_its_line(tmp_path, capsys, text, message):
    path = tmp_path / "dup.yaml"
    path.write_text(text)
    capsys.readouterr()
    assert main(["simulate", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"mafia-bot simulate: {path}: {message}\n"


def test_a_duplicate_city_is_refused_by_the_command(tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text(
        "cities:\n  Verona: {a: citizen, b: mafioso, c: commissar}\n"
        "  Padua: {d: citizen, e: mafioso, f: commissar}\n"
        "  Verona: {g: citizen, h: mafioso, i: commissar}\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "bot", "simulate", str(path), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.strip().splitlines() == [
        f"mafia-bot simulate: {path}: duplicate key 'Verona' at line 4 (first at line 2)"
    ]


def test_yaml_merge_keys_are_not_duplicates(tmp_path, capsys):
    path = tmp_path / "merge.yaml"
    # a merged mapping's keys may be overridden: that is what "<<" is for
    path.write_text(
        "cities:\n  V: {a: citizen, b: mafioso, c: commissar, d: citizen}\n"
        "rules: {<<: {first_phase: day}, first_phase: night}\n"
        "steps: [c check b]\n"
    )
    capsys.readouterr()
    assert main(["simulate", str(path), "--json"]) == 0
    steps = json.loads(capsys.readouterr().out)["steps"]
    assert steps == [{"step": "c check b", "ok": True, "error": None, "reply": "mafia"}]


def test_simulate_imports_no_discord():
    """The simulator is a host's tool: discord.py and aiohttp would be most of its start-up."""
    script = (
        "import sys\n"
        "from bot.cli import main\n"
        f"assert main(['simulate', {str(EXAMPLE)!r}, '--json']) == 0\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('discord', 'aiohttp')), "
        "file=sys.stderr)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert json.loads(run.stdout)["steps"][0]["step"] == "romeo nominate tybalt"
    assert run.stderr.strip() == "[]"
