"""Configuration: embedded defaults, the example file, one clear line for a bad key."""

import subprocess
import sys
from pathlib import Path

import pytest

from bot.config import Config, ConfigError, config_from_dict, load_config

ROOT = Path(__file__).resolve().parents[2]


def test_no_file_means_the_defaults():
    assert load_config(None) == Config()


def test_the_example_documents_every_key_with_its_default():
    assert load_config(ROOT / "config.example.yaml") == Config()
    text = (ROOT / "config.example.yaml").read_text(encoding="utf-8")
    for key in (
        "database",
        "language",
        "log_level",
        "host_role",
        "snapshot_every",
        "discussion",
        "voting",
        "night",
        "reminders",
        "join_timeout",
        "dave_timeout",
        "progress_every",
        "max_upload_mib",
        "leave_grace",
        "reconnect_attempts",
        "reconnect_give_up",
        "everyone_reads",
        "at_end",
        "first_phase",
        "day_fallback",
        "doctor_self_protect",
        "maniac_idle",
        "maniac_wins_if_survives",
        "touring_order",
        "last_word_seconds",
        "call_timeout",
    ):
        assert f"{key}:" in text, key


def test_values_override_the_defaults():
    config = config_from_dict(
        {
            "language": "en",
            "timers": {"voting": 60, "reminders": [30, 300]},
            "rules": {"day_fallback": "host"},
            "channels": {"at_end": "delete"},
            "call_timeout": 5,
        }
    )
    assert config.language == "en"
    assert config.call_timeout == 5
    assert config.timers.voting == 60 and config.timers.night == Config().timers.night
    assert config.timers.reminders == (300, 30)
    assert config.rules.day_fallback.value == "host"
    assert config.channels.at_end == "delete"
    fair = config_from_dict(
        {"fairness": {"burst": 5, "per_minute": 10, "stage_settle": 0.5}}
    ).fairness
    assert (fair.burst, fair.per_minute, fair.stage_settle) == (5, 10, 0.5)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"langauge": "en"}, "langauge: unknown key"),
        ({"language": "de"}, "language: must be one of ru, en"),
        ({"timers": {"voting": "5 parsecs"}}, "timers.voting: must be seconds or a duration"),
        ({"timers": {"voting": -1}}, "timers.voting: must be seconds or a duration"),
        ({"timers": {"voting": 604801}}, "from 0 to 604800 seconds"),
        ({"timers": {"dawn": 5}}, "timers.dawn: unknown key"),
        ({"timers": []}, "timers: must be a mapping"),
        ({"last_word": {"max_upload_mib": 100}}, "last_word.max_upload_mib: must be from 1 to 25"),
        ({"last_word": {"leave_grace": 600}}, "last_word.leave_grace: must be from 0 to 170"),
        (
            {"last_word": {"reconnect_attempts": -1}},
            "last_word.reconnect_attempts: must be from 0 to 10",
        ),
        (
            {"last_word": {"reconnect_give_up": 0}},
            "last_word.reconnect_give_up: must be from 1 to 120",
        ),
        ({"channels": {"at_end": "burn"}}, "channels.at_end: must be keep or delete"),
        ({"rules": {"last_word_seconds": 500}}, "rules.last_word_seconds: bad value"),
        ({"rules": {"first_phase": "dusk"}}, "rules.first_phase: bad value"),
        ({"log_level": "LOUD"}, "log_level: must be one of"),
        ({"fairness": {"burst": -1}}, "fairness.burst: must be from 0"),
        (
            {"fairness": {"stage_settle": "soon"}},
            "fairness.stage_settle: must be a number of seconds",
        ),
        ({"fairness": {"stage_settle": 61}}, "fairness.stage_settle: must be from 0 to 60"),
        ({"fairness": {"per_minute": 0}}, "fairness.per_minute: must be at least 1"),
        ({"fairness": {"speed": 1}}, "fairness.speed: unknown key"),
        ({"call_timeout": 0}, "call_timeout: must be from 1 to 120"),
        ({"call_timeout": 2.5}, "call_timeout: must be a whole number"),
        ("just text", "config: must be a mapping"),
    ],
)
def test_a_bad_config_names_the_key_and_the_problem(data, message):
    with pytest.raises(ConfigError) as refused:
        config_from_dict(data)
    assert message in str(refused.value)


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=ROOT,
    )


def test_check_config_says_ok_or_names_the_problem(tmp_path):
    good = cli("check-config", str(ROOT / "config.example.yaml"))
    assert good.returncode == 0 and "ok" in good.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("timers:\n  voting: [1\n")
    broken = cli("check-config", str(bad))
    assert broken.returncode == 2
    assert broken.stderr.strip().count("\n") == 0 and "unparsable YAML at line" in broken.stderr
    missing = cli("check-config", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    # the README's line, before any copy: one line that says how to make the file, no traceback
    assert missing.stderr.strip().count("\n") == 0 and "Traceback" not in missing.stderr
    assert (
        "no such file" in missing.stderr
        and f"cp config.example.yaml {tmp_path / 'nope.yaml'}" in missing.stderr
    )
    folder = cli("check-config", str(tmp_path))
    assert folder.returncode == 2 and folder.stderr.strip().count("\n") == 0
    assert "a folder, not a file" in folder.stderr and "Error" not in folder.stderr


def test_run_without_a_token_prints_one_line_and_exits(tmp_path):
    import os

    env = {k: v for k, v in os.environ.items() if k != "DISCORD_TOKEN"}
    result = cli("run", env=env)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "mafia-bot run: DISCORD_TOKEN is not set: put the bot's token in the environment "
        "(it is never read from the config file)"
    ]
    bad = tmp_path / "bad.yaml"
    bad.write_text("language: xx\n")
    result = cli("run", "--config", str(bad), env={**env, "DISCORD_TOKEN": "t"})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == "mafia-bot run: language: must be one of ru, en, got 'xx'"


def _quiet_config(tmp_path, database) -> str:
    config = tmp_path / "config.yaml"
    config.write_text(f"database: {database}\nlog_level: CRITICAL\n")
    return str(config)


def _unreachable_env(api_base: str = "http://127.0.0.1:9/api/v10") -> dict[str, str]:
    import os

    return {
        **os.environ,
        "DISCORD_TOKEN": "x",
        "DISCORD_API_BASE": api_base,
        "DISCORD_GATEWAY_URL": "ws://127.0.0.1:9/gateway",
    }


@pytest.mark.parametrize(
    "api_base", ["http://127.0.0.1:9/api/v10", "http://nosuch.invalid/api/v10"]
)
def test_run_with_discord_unreachable_says_so_in_one_line_and_exits_non_zero(tmp_path, api_base):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bot",
            "run",
            "--config",
            _quiet_config(tmp_path, tmp_path / "b.sqlite3"),
        ],
        capture_output=True,
        text=True,
        check=False,
        env=_unreachable_env(api_base),
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mafia-bot run: cannot reach Discord at "), lines
    assert api_base.split("/")[2] in lines[0]


def _damaged(tmp_path, kind: str):
    import sqlite3

    good = tmp_path / "good.sqlite3"
    connection = sqlite3.connect(good)
    connection.execute("CREATE TABLE filler (text TEXT)")
    connection.executemany("INSERT INTO filler VALUES (?)", [("x" * 500,)] * 2000)
    connection.commit()
    connection.close()
    data = good.read_bytes()
    damaged = tmp_path / f"{kind}.sqlite3"
    damaged.write_bytes(
        {
            "truncated": data[: len(data) // 2],
            "zeroed": b"\0" * len(data),
            "garbage": bytes(range(256)) * 40,
        }[kind]
    )
    return damaged


@pytest.mark.parametrize("kind", ["truncated", "zeroed", "garbage"])
def test_a_damaged_database_stops_run_with_one_line_and_exit_2(tmp_path, kind):
    database = _damaged(tmp_path, kind)
    before = database.read_bytes()
    result = subprocess.run(
        [sys.executable, "-m", "bot", "run", "--config", _quiet_config(tmp_path, database)],
        capture_output=True,
        text=True,
        check=False,
        env=_unreachable_env(),
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"mafia-bot run: {database}: the database is damaged"
    )
    assert database.read_bytes() == before, "the damaged file was changed"
