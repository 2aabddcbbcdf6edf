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

from bot.config import Config, Fairness, Timers
from bot.i18n import t
from tests.cogs.scenes import assert_unchanged, quick_edits, run, snapshot
from tests.fakediscord.interactions import INTERACTION_APPLICATION_COMMAND
from tests.harness import Table, bot_table, refused_calls

TIMED = Timers(discussion=600, voting=300, night=600, reminders=())


def created_at(
    table: Table,
    who: str,
    command: str,
    when: float,
    options: dict[str, Any] | None = None,
    locale: str | None = None,
) -> dict[str, Any]:
    """A slash command whose snowflake says Discord created it at ``when`` (unix time)."""
    fake = table.fake
    moment = datetime.datetime.fromtimestamp(when, datetime.UTC)
    snowflake = discord.utils.time_snowflake(moment) + random.randrange(1, 1 << 22)
    payload = fake.builder.envelope(
        INTERACTION_APPLICATION_COMMAND,
        guild_id=table.guild_id,
        channel_id=table.world.text_channel.id,
        user_id=table.member(who).user.id,
        locale=locale,
        guild_locale=None,
        interaction_id=snowflake,
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
async def test_a_host_next_sent_just_after_the_timer_began_voting_is_refused_and_voting_stays(
    language,
):
    now = [1_800_000_000.0]
    locale = "en-US" if language == "en" else "ru"  # an English server: its members read English
    async with bot_table(
        players=8, config=Config(timers=TIMED), clock=lambda: now[0], guild_locale=locale
    ) as table:
        quick_edits(table)
        if language == "en":
            assert (await run(table, "host", "admin language", {"language": "en"})).ephemeral
        live = await table.new_game(cities="Верона", maniac=False)
        now[0] += 601
        table.bot.timers.arm(live)
        await table.fake.wait_until(
            lambda: table.game.stage.value == "voting", 5.0, "the timer did not fire"
        )
        began = table.live().record.stage_since
        assert began is not None and table.live().record.lobby["timer_began"] == began
        before = await snapshot(table)
        # created 40 ms after the timer's move: the ballot had not reached the host yet
        text = await final_text(table, created_at(table, "host", "host next", began + 0.04))
        moment = t(
            language,
            "moment.day",
            phase=t(language, "phase_name.day", number=1),
            stage=t(language, "stage.voting"),
        )
        assert text in {
            t(language, "error.just_began", ms=ms, moment=moment) for ms in (39, 40, 41)
        }
        assert ("голосование" if language == "ru" else "voting") in text
        await assert_unchanged(table, before)
        assert table.game.stage.value == "voting"
        assert [
            (row.command["verb"], row.source) for row in await table.bot.storage.commands(live.id)
        ] == [("voting", "timer")]
        # naming the stage he sees, the host moves on at once
        named = await final_text(
            table, created_at(table, "host", "host next", began + 0.5, {"from": "day 1 voting"})
        )
        assert began_text(named, language, t(language, "phase_name.night", number=1))
        assert table.game.stage.value == "night"


def began_text(text: str, language: str, moment: str) -> bool:
    """The answer to a /host next that moved on: it names the stage that began (its deadline follows)."""
    return text.startswith(t(language, "host.began", moment=moment, deadline="").strip())


async def test_a_host_next_sent_once_the_new_stage_could_be_seen_moves_on():
    now = [1_800_000_000.0]
    async with bot_table(players=8, config=Config(timers=TIMED), clock=lambda: now[0]) as table:
        quick_edits(table)
        live = await table.new_game(cities="Верона", maniac=False)
        now[0] += 601
        table.bot.timers.arm(live)
        await table.fake.wait_until(
            lambda: table.game.stage.value == "voting", 5.0, "the timer did not fire"
        )
        began = table.live().record.stage_since
        settle = table.config.fairness.stage_settle
        assert began_text(
            await final_text(table, created_at(table, "host", "host next", began + settle + 0.01)),
            "ru",
            t("ru", "phase_name.night", number=1),
        )
        assert table.game.stage.value == "night"
        # a stage the host began himself: his next "next" is not held back
        night = table.live().record.stage_since
        day_two = t(
            "ru",
            "moment.day",
            phase=t("ru", "phase_name.day", number=2),
            stage=t("ru", "stage.discussion"),
        )
        assert began_text(
            await final_text(table, created_at(table, "host", "host next", night + 0.05)),
            "ru",
            day_two,
        )
        assert table.game.stage.value == "discussion" and table.game.phase.number == 2


def mafia_of(table: Table, city: str) -> list[str]:
    game = table.game
    return [table.name(p) for p in game.living_mafiosi(city)]


def posts_in(table: Table, channel_id: int) -> list[str]:
    return [
        c.json["content"]
        for c in table.fake.calls("POST", "/channels/{channel_id}/messages")
        if c.path == f"/channels/{channel_id}/messages" and c.status == 200
    ]


@pytest.mark.parametrize("language", ["ru", "en"])
async def test_a_flood_of_elect_is_refused_past_the_burst_with_when_to_try_again_and_a_repeat_posts_nothing(
    language,
):
    config = Config(
        timers=Timers(discussion=0, voting=0, night=0, execution=0, reminders=()),
        fairness=Fairness(burst=5, per_minute=12),
    )
    locale = "en-US" if language == "en" else "ru"  # an English server: its members read English
    async with bot_table(players=8, config=config, guild_locale=locale) as table:
        quick_edits(table)
        frozen = [1000.0]
        table.bot.limit.clock = lambda: frozen[0]
        if language == "en":
            assert (await run(table, "host", "admin language", {"language": "en"})).ephemeral
        live = await table.new_game(cities="Верона", mafiosi=2, maniac=False)
        first, second = mafia_of(table, "Верона")
        room = table.mafia_channel("Верона")
        await table.drain()
        posted_before = len(posts_in(table, room))
        frozen[0] += 60  # his press of Join is long refilled
        answers = []
        for index in range(12):
            target = table.pid(second if index % 2 == 0 else first)
            answers.append((await run(table, first, "elect", {"player": target})).content)
        accepted = [a for a in answers if a.startswith(t(language, "reply.elect", target="")[:8])]
        assert len(accepted) == 5, answers
        # 12 a minute: the next one in 5 s, said with the plural of the language
        refusal = t(language, "error.too_fast", count=5)
        assert refusal.endswith("5 секунд." if language == "ru" else "5 seconds.")
        assert answers[5:] == [refusal] * 7
        rows = [
            r for r in await table.bot.storage.commands(live.id) if r.command["verb"] == "elect"
        ]
        assert len(rows) == 5
        await table.drain()
        assert len(posts_in(table, room)) - posted_before == 5
        # another member's share is his own
        mine = await run(table, second, "elect", {"player": table.pid(second)})
        assert mine.content == t(language, "reply.elect", target=f"<@{table.pid(second)}>")
        # the bucket refills: one more after 5 s ...
        frozen[0] += 5
        standing = table.game.elect_votes["Верона"][table.pid(first)]
        other = table.pid(first) if standing == table.pid(second) else table.pid(second)
        assert (await run(table, first, "elect", {"player": other})).content == t(
            language, "reply.elect", target=f"<@{other}>"
        )
        # ... and the same choice again changes nothing and posts nothing
        frozen[0] += 60
        await table.drain()
        before = await snapshot(table)
        again = await run(table, first, "elect", {"player": other})
        assert again.content == t(language, "reply.repeated", target=f"<@{other}>")
        await assert_unchanged(table, before)


async def test_one_mafiosos_flood_does_not_put_another_citys_announcement_behind_it():
    # a busy machine may answer some of the flood past Discord's 3 s (refused then): only those
    async with bot_table(players=16, refusals=True) as table:
        quick_edits(table)
        frozen = [1000.0]
        table.bot.limit.clock = lambda: frozen[0]
        burst = table.config.fairness.burst
        live = await table.new_game(cities="Верона, Падуя", mafiosi=2, maniac=False)
        frozen[0] += 60  # a full bucket, and no refill while the flood lasts
        flooder, other = mafia_of(table, "Верона")
        await table.drain()
        start = len(table.fake.calls())
        flood = [
            await table.slash(
                flooder,
                "elect",
                {"player": table.pid(other if i % 2 == 0 else flooder)},
                wait=False,
            )
            for i in range(3 * burst)
        ]
        for result in flood:
            await result.wait_answered(30.0)
        game = table.game
        nominator, nominee = [
            table.name(p) for p in game.alive("Падуя") if game.status_of(p).value == "citizen"
        ][:2]
        nominated = await run(table, nominator, "nominate", {"player": table.pid(nominee)})
        assert nominated.ephemeral
        await table.drain()
        elects = [
            r for r in await table.bot.storage.commands(live.id) if r.command["verb"] == "elect"
        ]
        assert 0 < len(elects) <= burst, "past the burst nothing was stored"
        refused = sum(1 for result in flood if result.content == t("ru", "error.too_fast", count=1))
        unanswered = sum(1 for result in flood if result.callback is None)
        assert refused > 0 and refused + unanswered >= 2 * burst, "the rest was told to wait"
        padua = table.city_channel("Падуя")
        posts = [
            c
            for c in table.fake.calls()[start:]
            if c.method == "POST"
            and c.route == "/channels/{channel_id}/messages"
            and c.status == 200
        ]
        nomination = next(i for i, c in enumerate(posts) if c.path == f"/channels/{padua}/messages")
        flood_posts = [c for c in posts[:nomination] if c.path != f"/channels/{padua}/messages"]
        # each accepted /elect posts twice (the mafia room, the host's log): the whole flood would
        # have made 6 × burst
        assert len(flood_posts) <= 2 * burst, len(flood_posts)
        assert len(posts) - 1 <= 2 * burst
        late = {f"/interactions/{r.id}/{r.token}/callback" for r in flood}
        assert [c for c in refused_calls(table.fake) if c.split()[1] not in late] == []
