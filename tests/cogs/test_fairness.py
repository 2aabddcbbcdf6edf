"""Fair play under races and floods (issue 20, items 4 and 5).

A ``/host next`` sent moments after the timer began a stage is refused, naming that stage,
rather than skipping it; one member's commands are limited per game (told when to try again)
and a choice repeated as it stands posts nothing; a mafioso's flood does not put another
city's announcement behind it.
"""

from __future__ import annotations

import datetime
import random
from typing import Any

import discord
import pytest

from bot.config import Config, Timers
from bot.i18n import t
from tests.cogs.scenes import assert_unchanged, quick_edits, run, snapshot
from tests.fakediscord.interactions import INTERACTION_APPLICATION_COMMAND
from tests.harness import Table, bot_table

TIMED = Timers(discussion=600, voting=300, night=600, reminders=())


def created_at(table: Table, who: str, command: str, when: float, options: dict[str, Any] | None = None,
               locale: str = "ru") -> dict[str, Any]:
    """A slash command whose snowflake says Discord created it at ``when`` (unix time)."""
    fake = table.fake
    moment = datetime.datetime.fromtimestamp(when, datetime.UTC)
    snowflake = discord.utils.time_snowflake(moment) + random.randrange(1, 1 << 22)
    payload = fake.builder.envelope(
        INTERACTION_APPLICATION_COMMAND, guild_id=table.guild_id, channel_id=table.world.text_channel.id,
        user_id=table.member(who).user.id, locale=locale, guild_locale=None, interaction_id=snowflake,
    )
    payload["data"] = fake.builder.command_data(payload, command, options or {})
    return payload


async def final_text(table: Table, payload: dict[str, Any]) -> str:
    result = await table.fake.send_interaction(payload)
    await result.wait_callback()
    if result.deferred:
        await result.wait_original()
    assert result.ephemeral
    return result.content


@pytest.mark.parametrize("language", ["ru", "en"])
async def test_a_host_next_sent_just_after_the_timer_began_voting_is_refused_and_voting_stays(language):
    now = [1_800_000_000.0]
    async with bot_table(players=8, config=Config(timers=TIMED), clock=lambda: now[0]) as table:
        quick_edits(table)
        if language == "en":
            assert (await run(table, "host", "admin language", {"language": "en"})).ephemeral
        live = await table.new_game(cities="Верона", maniac=False)
        now[0] += 601
        table.bot.timers.arm(live)
        await table.fake.wait_until(lambda: table.game.stage.value == "voting", 5.0, "the timer did not fire")
        began = table.live().record.stage_since
        assert began is not None and table.live().record.lobby["timer_began"] == began
        before = await snapshot(table)
        # created 40 ms after the timer's move: the ballot had not reached the host yet
        text = await final_text(table, created_at(table, "host", "host next", began + 0.04))
        phase = t(language, "phase_name.day", number=1)
        stage = t(language, "stage.voting")
        assert text in {t(language, "error.just_began", ms=ms, phase=phase, stage=stage) for ms in (39, 40, 41)}
        assert ("голосование" if language == "ru" else "voting") in text
        await assert_unchanged(table, before)
        assert table.game.stage.value == "voting"
        assert [(row.command["verb"], row.source) for row in await table.bot.storage.commands(live.id)] == [
            ("voting", "timer")]
        # naming the stage he sees, the host moves on at once
        named = await final_text(table, created_at(table, "host", "host next", began + 0.5, {"from": "day 1 voting"}))
        assert named == t(language, "host.done") and table.game.stage.value == "night"


async def test_a_host_next_sent_once_the_new_stage_could_be_seen_moves_on():
    now = [1_800_000_000.0]
    async with bot_table(players=8, config=Config(timers=TIMED), clock=lambda: now[0]) as table:
        quick_edits(table)
        live = await table.new_game(cities="Верона", maniac=False)
        now[0] += 601
        table.bot.timers.arm(live)
        await table.fake.wait_until(lambda: table.game.stage.value == "voting", 5.0, "the timer did not fire")
        began = table.live().record.stage_since
        settle = table.config.fairness.stage_settle
        assert await final_text(table, created_at(table, "host", "host next", began + settle + 0.01)) == t(
            "ru", "host.done")
        assert table.game.stage.value == "night"
        # a stage the host began himself: his next "next" is not held back
        night = table.live().record.stage_since
        assert await final_text(table, created_at(table, "host", "host next", night + 0.05)) == t("ru", "host.done")
        assert table.game.stage.value == "discussion" and table.game.phase.number == 2
