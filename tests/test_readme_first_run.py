"""The owner's first hour, followed as the README's first screen says: the token in
``DISCORD_TOKEN``, then ``mafia-bot run`` with no config in an empty folder. Against the local
fake Discord (its address given the way the tests give it, ``DISCORD_API_BASE`` and
``DISCORD_GATEWAY_URL``), the bot logs in, says which database it made and the invite link,
syncs its commands, and answers a member's ``/help`` and the owner's ``/admin language`` in
their languages."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from bot.i18n import t
from tests.fakediscord import FakeDiscord
from tests.fakediscord.fixtures import build_standard_guild

ROOT = Path(__file__).resolve().parents[1]


def first_screen() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split("\n## ", 1)[0]


def test_the_first_screen_gives_the_run_step_this_test_follows():
    screen = first_screen()
    assert "export DISCORD_TOKEN=" in screen and "mafia-bot run" in screen
    assert "pip install ." in screen and "/admin language" in screen


async def test_a_fresh_folder_and_the_readme_s_run_reach_a_bot_that_answers(tmp_path: Path):
    fake = FakeDiscord()
    world = build_standard_guild(fake, preferred_locale="en-US")
    await fake.start()
    script = shutil.which("mafia-bot")
    command = [script, "run"] if script else [sys.executable, "-m", "bot", "run"]
    log = tmp_path / "run.log"
    env = {
        **os.environ,
        "DISCORD_TOKEN": fake.token,
        "DISCORD_API_BASE": fake.api_base,
        "DISCORD_GATEWAY_URL": fake.gateway_url,
        "PYTHONPATH": str(ROOT),
    }
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=out, stderr=out)
    try:
        await fake.wait_until(
            lambda: "ready as" in log.read_text(errors="replace") or None,
            60.0,
            f"the bot never became ready:\n{log.read_text(errors='replace')[-3000:]}",
        )
        said = log.read_text(errors="replace")
        assert re.search(r"invite link: https://discord\.com/oauth2/authorize\?\S+", said)
        database = tmp_path / "prokurator.sqlite3"
        assert str(database.resolve()) in said and database.exists(), said[-2000:]
        await fake.wait_until(
            lambda: fake.last_call("PUT", "/applications/{application_id}/commands") or None,
            30.0,
            "the commands were never synced",
        )
        helped = await fake.slash(
            world.guild.id, world.players[0].user.id, "help", channel_id=world.text_channel.id
        )
        await helped.wait_final()
        assert helped.ephemeral and t("en", "help.no_game").split("{")[0] in helped.content
        russian = await fake.slash(
            world.guild.id,
            world.players[1].user.id,
            "help",
            channel_id=world.text_channel.id,
            locale="ru",
        )
        await russian.wait_final()
        assert t("ru", "help.no_game").split("{")[0] in russian.content
        language = await fake.slash(
            world.guild.id,
            world.owner.user.id,
            "admin language",
            {"language": "ru"},
            channel_id=world.text_channel.id,
        )
        await language.wait_final()
        assert language.content == t("en", "admin.language") or language.content == t(
            "ru", "admin.language"
        )
    finally:
        process.terminate()
        process.wait(30)
        await fake.close()
    assert process.returncode in (0, -15), log.read_text(errors="replace")[-3000:]
