"""Races: commands that meet each other or the timer, each applied for what its sender saw.

Two ``/host next`` at once move the game on once; one sent as the discussion
timer fired is refused rather than ending the day nobody voted in; a lobby
join that meets another is counted once; ``/host timer`` on the running stage
is one commit; a ballot of an earlier day is no longer active; two
``/admin`` settings at once both hold.
"""

from __future__ import annotations

import asyncio
import copy
import datetime
import random
from typing import Any

import discord

from bot.config import Config, Timers
from bot.i18n import t
from tests.cogs.scenes import (
    accepted,
    assert_unchanged,
    ballot_message,
    lobby_message,
    quick_edits,
    run,
    snapshot,
)
from tests.fakediscord import InteractionResult
from tests.fakediscord.interactions import INTERACTION_APPLICATION_COMMAND
from tests.harness import Table, bot_table


def moved_on() -> str:
    """The refusal of a command sent for an earlier stage (worked out once the bot has its commands
    mentions)."""
    return t("ru", "error.moved_on")


async def finished(result: InteractionResult) -> str:
    """The final text of an answer, deferred or not."""
    await result.wait_callback()
    if result.deferred:
        await result.wait_original()
    return result.content


def written(
    table: Table, who: str, command: str, options: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A slash command as Discord creates it now (its snowflake carries this moment, to the
    millisecond, as Discord's do), to be delivered later with ``fake.send_interaction``: the
    gateway's delay made explicit."""
    fake = table.fake
    created = datetime.datetime.now(datetime.UTC) - datetime.timedelta(milliseconds=1)
    snowflake = discord.utils.time_snowflake(created) + random.randrange(1, 1 << 22)
    payload = fake.builder.envelope(
        INTERACTION_APPLICATION_COMMAND,
        guild_id=table.guild_id,
        channel_id=table.world.text_channel.id,
        user_id=table.member(who).user.id,
        locale="ru",
        guild_locale=None,
        interaction_id=snowflake,
    )
    payload["data"] = fake.builder.command_data(payload, command, options or {})
    return payload


async def commands_of(table: Table) -> list[tuple[str, str]]:
    return [
        (row.command["verb"], row.source)
        for row in await table.bot.storage.commands(table.live().id)
    ]


async def test_two_host_next_at_once_move_the_game_on_once():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.new_game(cities="Верона", maniac=False)
        # both pressed a moment before either reached the bot (as over a real gateway)
        pressed = [written(table, "host", "host next") for _ in range(2)]
        first, second = [
            await table.fake.send_interaction(payload, wait=False) for payload in pressed
        ]
        answers = sorted([await finished(first), await finished(second)])
        began = t(
            "ru", "host.began", moment="день 1, голосование", deadline=t("ru", "deadline.host")
        )
        assert answers == sorted([began, moved_on()])
        assert table.game.stage.value == "voting" and table.game.phase.number == 1
        assert await commands_of(table) == [("voting", "host")]


async def test_a_host_next_sent_as_the_discussion_timer_fired_does_not_end_the_day():
    now = [1_800_000_000.0]
    config = Config(timers=Timers(discussion=600, voting=300, night=600, reminders=()))
    async with bot_table(players=8, config=config, clock=lambda: now[0]) as table:
        quick_edits(table)
        live = await table.new_game(cities="Верона", maniac=False)
        now[0] += 600.005  # the deadline passed 5 ms ago ...
        late = written(table, "host", "host next")  # ... and the host pressed "next" now
        table.bot.timers.arm(live)  # the timer's commit comes first
        await table.fake.wait_until(
            lambda: table.game.stage.value == "voting", 5.0, "the timer did not fire"
        )
        before = await snapshot(table)
        result = await table.fake.send_interaction(late)
        assert await finished(result) == moved_on() and result.ephemeral
        await assert_unchanged(table, before)
        assert await commands_of(table) == [("voting", "timer")]
        assert table.game.stage.value == "voting" and table.live().record.deadline == now[0] + 300


async def test_a_host_next_naming_the_stage_it_saw_is_refused_once_the_timer_moved_on():
    now = [1_800_000_000.0]
    config = Config(timers=Timers(discussion=600, voting=300, night=600, reminders=()))
    async with bot_table(players=8, config=config, clock=lambda: now[0]) as table:
        quick_edits(table)
        live = await table.new_game(cities="Верона", maniac=False)
        offered = await table.fake.autocomplete(
            table.guild_id, table.host.user.id, "host next", "from", "", locale="ru"
        )
        assert [c["value"] for c in offered.choices] == ["day 1 discussion"]
        assert offered.choices[0]["name"] == t("ru", "host.next_choice.discussion", phase="день 1")
        now[0] += 601
        table.bot.timers.arm(live)
        await table.fake.wait_until(
            lambda: table.game.stage.value == "voting", 5.0, "the timer did not fire"
        )
        before = await snapshot(table)
        refused = await run(table, "host", "host next", {"from": "day 1 discussion"})
        assert refused.content == moved_on()
        await assert_unchanged(table, before)
        unknown = await run(table, "host", "host next", {"from": "завтра"})
        assert unknown.content == t("ru", "error.bad_stage")
        await assert_unchanged(table, before)
        # naming the stage the game is in moves it on
        moved = await run(table, "host", "host next", {"from": "day 1 voting"})
        began = t("ru", "host.began", moment="ночь 1", deadline="").rstrip()
        assert moved.content.startswith(began) and table.game.stage.value != "voting"
        assert await commands_of(table) == [("voting", "timer"), ("night", "host")]


async def test_two_lobby_joins_at_once_as_the_lobby_appears_are_both_counted_and_shown():
    """Players press Join the moment the lobby appears (and one presses twice): each is in
    the lobby once, and the lobby message, once settled, lists both."""
    async with bot_table(players=4) as table:
        quick_edits(table)
        # Discord is slow to tell the bot which message answered /mafia new
        table.fake.delay("GET", r"/webhooks/.*/messages/@original", 0.5)
        opened = await table.slash("host", "mafia new", wait=False)
        lobby = await table.fake.wait_until(
            lambda: next(
                (m for m in table.fake.messages(table.world.text_channel.id) if m.custom_ids()),
                None,
            ),
            5.0,
            "the lobby never appeared",
        )
        game = table.live().id
        p0, p1 = table.member("p0").user.id, table.member("p1").user.id
        clicks = [
            await table.fake.click(lobby, f"mafia:join:{game}", user, wait=False)
            for user in (p0, p0, p1)
        ]
        answers = [await finished(click) for click in clicks]
        await finished(opened)
        assert sorted(answers) == sorted(
            [t("ru", "lobby.joined")] * 2 + [t("ru", "error.already_joined")]
        )
        assert all(click.ephemeral for click in clicks)
        assert [p["id"] for p in table.live().record.lobby["players"]] == [p0, p1]
        stored = await table.bot.storage.game(game)
        assert [p["id"] for p in stored.lobby["players"]] == [p0, p1]
        settled = await lobby_message(table)
        await table.drain()
        both = f"<@{p0}>, <@{p1}>"
        assert settled.id == lobby.id
        assert (
            t("ru", "lobby.players", count=2, players=both) in table.fake.message(lobby.id).content
        )


async def test_a_join_that_meets_a_start_is_refused_rather_than_left_out_of_the_deal():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.open_lobby([f"p{i}" for i in range(7)])
        lobby = await lobby_message(table)
        live = table.live()
        lock = table.bot.service.lock(live.id)
        async with lock:  # a command of the lobby is being stored: both wait behind it
            started = await table.slash("host", "host start", wait=False)
            await table.fake.wait_until(
                lambda: len(lock._waiters or ()) == 1, 5.0, "the start never waited"
            )
            late = await table.fake.click(
                lobby, f"mafia:join:{live.id}", table.member("p7").user.id, wait=False
            )
            await table.fake.wait_until(
                lambda: len(lock._waiters or ()) == 2, 5.0, "the join never waited"
            )
        assert await finished(late) == t("ru", "error.not_lobby") and late.ephemeral
        await started.wait_original(15.0)
        assert started.content == t("ru", "host.started"), started.content
        assert table.pid("p7") not in table.game.players
        assert table.member("p7").user.id not in [
            p["id"] for p in table.live().record.lobby["players"]
        ]


async def test_host_timer_on_the_running_stage_is_one_commit():
    """The stage's new length, its new deadline and the cities' notice are one transaction:
    a failure of the database after the first write leaves none of them half-done."""
    now = [1_800_000_000.0]
    config = Config(timers=Timers(discussion=600, voting=300, night=600, reminders=()))
    async with bot_table(players=8, config=config, clock=lambda: now[0]) as table:
        quick_edits(table)
        live = await table.new_game(cities="Верона", maniac=False)
        storage = table.bot.storage
        writes: list[str] = []
        save_game = storage.save_game

        async def save_once(record: Any, **kwargs: Any) -> None:
            writes.append(record.deadline_stage)
            if len(writes) > 1:
                raise OSError(28, "No space left on device")
            await save_game(record, **kwargs)

        storage.save_game = save_once  # type: ignore[method-assign]
        try:
            answer = await run(
                table, "host", "host timer", {"stage": "discussion", "duration": "120"}
            )
        finally:
            storage.save_game = save_game  # type: ignore[method-assign]
        assert answer.content == t(
            "ru", "host.timer_set", stage=t("ru", "stage.discussion"), duration="2 минуты"
        )
        assert len(writes) == 1
        stored = await storage.game(live.id)
        assert stored.lobby["timers"] == {"discussion": 120} and stored.deadline == now[0] + 120
        await table.drain()
        told = t(
            "ru",
            "host.timer_changed",
            deadline=t("ru", "deadline.at", when=f"<t:{int(now[0] + 120)}:R>"),
        )
        assert table.channel_messages(table.city_channel("Верона"))[-1] == told


async def test_a_ballot_of_an_earlier_day_is_no_longer_active():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.new_game(cities="Верона", maniac=False, doctor=False, journalist=False)
        city = table.game.cities[0]
        r = [table.name(p) for p in table.game.alive(city)]
        await accepted(table, r[0], "nominate", {"player": table.pid(r[1])})
        await accepted(table, r[3], "nominate", {"player": table.pid(r[2])})
        await accepted(table, "host", "host next")
        await accepted(table, r[4], "vote", {"player": table.pid(r[1])})
        await table.drain()
        day_one = ballot_message(table, city)
        as_posted = copy.deepcopy(day_one.components)
        await accepted(table, "host", "host next")  # day 1 ends: r[1] is executed
        await accepted(table, "host", "host next")  # night 1 ends
        await accepted(table, r[0], "nominate", {"player": table.pid(r[2])})
        await accepted(table, "host", "host next")
        await table.drain()
        assert (table.game.phase.number, table.game.stage.value) == (2, "voting")
        # day 1's ballot still shows its menu (its closing edit never reached Discord, say)
        table.fake.message(day_one.id).components = as_posted
        before = await snapshot(table)
        picked = await table.fake.select(
            day_one.id,
            f"mafia:vote:{table.live().id}:0",
            [table.pid(r[2])],
            table.member(r[5]).user.id,
        )
        assert await finished(picked) == moved_on() and picked.ephemeral
        await assert_unchanged(table, before)
        # today's ballot takes the same vote
        today = await table.fake.select(
            ballot_message(table, city),
            f"mafia:vote:{table.live().id}:0",
            [table.pid(r[2])],
            table.member(r[5]).user.id,
        )
        assert await finished(today) == t("ru", "reply.vote", target=f"<@{table.pid(r[2])}>")


async def test_admin_language_and_host_role_at_once_both_hold():
    async with bot_table(players=4) as table:
        hosts = table.fake.create_role(table.guild_id, "Ведущие")
        for _ in range(3):
            language = await table.slash("host", "admin language", {"language": "en"}, wait=False)
            role = await table.slash("host", "admin hostrole", {"role": hosts.id}, wait=False)
            await asyncio.gather(finished(language), finished(role))
            assert await table.bot.storage.guild_language(table.guild_id) == "en"
            assert await table.bot.storage.guild_host_role(table.guild_id) == hosts.id
            again = await table.slash("host", "admin language", {"language": "ru"}, wait=False)
            cleared = await table.slash("host", "admin hostrole", {}, wait=False)
            await asyncio.gather(finished(again), finished(cleared))
            assert await table.bot.storage.guild_language(table.guild_id) == "ru"
            assert await table.bot.storage.guild_host_role(table.guild_id) is None
