"""Shards: one process runs every shard Discord recommends, each guild on its own shard's
connection; a process given some shards of a bot hears only its guilds; broken shard settings
are refused with a clear message."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from bot.config import Config, ConfigError, config_from_dict, parse_shards
from tests.fakediscord import FakeDiscord, build_standard_guild
from tests.fakediscord.fixtures import StandardGuild
from tests.harness import NO_TIMERS, bot_on

ROOT = Path(__file__).resolve().parents[2]


def shard_of(guild_id: int, count: int) -> int:
    """Discord's rule: the shard that gets a guild's events."""
    return (guild_id >> 22) % count


async def guilds_on_every_shard(
    fake: FakeDiscord, count: int, players: int = 8
) -> list[StandardGuild]:
    """Guilds (members h0.., each guild its own prefix) until every shard of ``count`` has one."""
    worlds: list[StandardGuild] = []
    covered: set[int] = set()
    while covered != set(range(count)):
        assert len(worlds) < 200, "the fake's snowflakes never covered every shard"
        world = build_standard_guild(fake, players=[f"g{len(worlds)}p{i}" for i in range(players)])
        worlds.append(world)
        covered.add(shard_of(world.guild.id, count))
        await asyncio.sleep(0.002)  # a snowflake's shard is its millisecond's
    return worlds


async def test_one_process_runs_every_recommended_shard_and_each_guild_is_on_its_own(
    tmp_path: Path, caplog
):
    fake = FakeDiscord()
    fake.recommended_shards = 2
    fake.gateway.limits.max_concurrency = 2  # both shards may IDENTIFY at once (identify_pause=0)
    worlds = await guilds_on_every_shard(fake, 2)
    await fake.start()
    try:
        config = replace(Config(timers=NO_TIMERS), database=tmp_path / "bot.sqlite3")
        async with bot_on(fake, worlds[0], config, identify_pause=0) as table:
            bot = table.bot
            assert bot.shard_count == 2 and sorted(bot.shards) == [0, 1]
            for world in worlds:
                guild = bot.get_guild(world.guild.id)
                assert guild is not None and guild.shard_id == shard_of(world.guild.id, 2)
            sessions = sorted(session.shard for session in fake.gateway.sessions.values())
            assert sessions == [(0, 2), (1, 2)]
            # each guild's interaction comes on its own shard's connection and is answered
            for shard in (0, 1):
                world = next(w for w in worlds if shard_of(w.guild.id, 2) == shard)
                session = fake.gateway.interaction_session(world.guild.id)
                assert session is not None and session.shard == (shard, 2)
                opened = await fake.slash(
                    world.guild.id,
                    world.owner.user.id,
                    "mafia new",
                    {},
                    channel_id=world.text_channel.id,
                    locale="ru",
                )
                assert opened.ephemeral and opened.callback_type == 4, opened.describe()
            games = {live.record.guild_id for live in bot.service.games()}
            assert games == {
                next(w for w in worlds if shard_of(w.guild.id, 2) == s).guild.id for s in (0, 1)
            }
            # each shard's connection drops and resumes on its own, and the log names it
            with caplog.at_level(logging.INFO, logger="bot.bot"):
                await fake.gateway.drop(code=4000, resumable=True)
                await fake.wait_until(
                    lambda: fake.gateway.count("resume") >= 2 or None,
                    20.0,
                    "the shards did not resume",
                )
                await fake.wait_until(
                    lambda: (
                        sum("resumed its session" in r.getMessage() for r in caplog.records) >= 2
                        or None
                    ),
                    20.0,
                    caplog.text,
                )
            tagged = {(r.getMessage(), getattr(r, "shard", None)) for r in caplog.records}
            for shard in (0, 1):
                assert (f"shard {shard} disconnected from the gateway", shard) in tagged
                assert (f"shard {shard} resumed its session", shard) in tagged
    finally:
        await fake.close()


def test_shard_settings_are_parsed_and_broken_ones_refused():
    assert parse_shards("shards", "0-3") == (0, 1, 2, 3)
    assert parse_shards("shards", "5, 0-1, 1") == (0, 1, 5)
    assert parse_shards("shards", [2, "4-5"]) == (2, 4, 5)
    assert parse_shards("shards", 7) == (7,)
    config = config_from_dict({"shards": "0-1", "shard_count": 4})
    assert (config.shards, config.shard_count) == ((0, 1), 4)
    refusals = {
        "shards: 'a-b' is not a shard number": {"shards": "a-b", "shard_count": 2},
        "shards: the range '3-1' runs backwards": {"shards": "3-1", "shard_count": 4},
        "shards: needs shard_count": {"shards": "0-1"},
        "shards: shard 2 does not exist with shard_count 2": {"shards": "0-2", "shard_count": 2},
        "shard_count: must be from 1 to": {"shard_count": 0},
        "shards: must be shard numbers": {"shards": True, "shard_count": 2},
    }
    for message, data in refusals.items():
        with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
            config_from_dict(data)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--shards", "1"], "--shards: needs --shard-count"),
        (
            ["--shards", "2", "--shard-count", "2"],
            "--shards: shard 2 does not exist with --shard-count 2",
        ),
        (["--shards", "x", "--shard-count", "2"], "--shards: 'x' is not a shard number"),
        (["--shard-count", "0"], "--shard-count: must be from 1 to"),
    ],
)
def test_mafia_bot_run_refuses_broken_shards_before_connecting(
    tmp_path: Path, arguments: list[str], message: str
):
    env = {**os.environ, "DISCORD_TOKEN": "unused", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "bot", "run", *arguments],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert not (tmp_path / "prokurator.sqlite3").exists()  # refused before anything was opened


async def test_a_process_given_shard_1_of_2_hears_only_its_guilds(tmp_path: Path):
    fake = FakeDiscord()
    worlds = await guilds_on_every_shard(fake, 2)
    await fake.start()
    log = tmp_path / "bot.log"
    (tmp_path / "config.yaml").write_text(
        f"database: {tmp_path / 'bot.sqlite3'}\nlog_level: INFO\n"
        "timers: {discussion: 0, voting: 0, night: 0, reminders: []}\n"
    )
    env = {
        **os.environ,
        "DISCORD_TOKEN": fake.token,
        "DISCORD_API_BASE": fake.api_base,
        "DISCORD_GATEWAY_URL": fake.gateway_url,
        "PYTHONPATH": str(ROOT),
    }
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bot",
                "run",
                "--config",
                str(tmp_path / "config.yaml"),
                "--shards",
                "1",
                "--shard-count",
                "2",
            ],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=out,
        )
    try:
        await fake.wait_until(
            lambda: fake.gateway.events("READY") or None,
            30.0,
            f"the bot did not connect: {log.read_text(errors='replace')[-2000:]}",
        )
        await fake.wait_until(
            lambda: "ready as" in log.read_text(errors="replace") or None,
            30.0,
            f"the bot was never ready: {log.read_text(errors='replace')[-2000:]}",
        )
        (session,) = fake.gateway.sessions.values()
        assert session.shard == (1, 2)
        mine = {w.guild.id for w in worlds if shard_of(w.guild.id, 2) == 1}
        created = {int(event.data["id"]) for event in fake.gateway.events("GUILD_CREATE")}
        assert created == mine
        ours = next(w for w in worlds if shard_of(w.guild.id, 2) == 1)
        theirs = next(w for w in worlds if shard_of(w.guild.id, 2) == 0)
        assert fake.gateway.interaction_session(theirs.guild.id) is None  # nobody serves shard 0
        opened = await fake.slash(
            ours.guild.id,
            ours.owner.user.id,
            "mafia new",
            {},
            channel_id=ours.text_channel.id,
            locale="ru",
        )
        assert opened.ephemeral and opened.callback_type == 4, opened.describe()
        text = log.read_text(errors="replace")
        assert "[shard 1]" in text and "shard 1 connected to the gateway" in text
        assert "running shard(s) 1 of 2" in text
        assert "[shard 0]" not in text
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        await fake.close()


def test_log_lines_name_their_shard():
    from bot.bot import LOG_FORMAT, ShardFilter

    formatter, tag = logging.Formatter(LOG_FORMAT), ShardFilter()

    def line(message: str, *args: object, **extra: object) -> str:
        record = logging.LogRecord(
            "discord.gateway", logging.INFO, __file__, 1, message, args, None
        )
        record.__dict__.update(extra)
        assert tag.filter(record)
        return formatter.format(record).split(None, 3)[3]

    assert (
        line("Shard ID %s has connected to Gateway (Session ID: %s).", 3, "abc")
        == "discord.gateway [shard 3]: Shard ID 3 has connected to Gateway (Session ID: abc)."
    )
    assert line("For Shard ID %s: WebSocket Event: %s", 1, "{}").startswith(
        "discord.gateway [shard 1]:"
    )
    assert line("shard %d ready", 2, shard=2) == "discord.gateway [shard 2]: shard 2 ready"
    assert line("no shard here") == "discord.gateway: no shard here"
