"""The host's controls: confirmations on /host kill and /host end, pause and resume (through a
restart), /host extend, durations in both languages, /host kick, and the absent host's lot."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from bot.config import Config, Timers
from bot.i18n import t
from bot.options import duration_text, parse_duration
from tests.cogs.scenes import (
    accepted,
    assert_unchanged,
    confirmation,
    lobby_message,
    quick_edits,
    run,
    snapshot,
)
from tests.fakediscord import FakeDiscord, build_standard_guild
from tests.harness import Table, bot_on, bot_table
from tests.waits import last_verb, stored_commands

NOW = 1_800_000_000.0
TIMED = Timers(discussion=600, voting=300, night=600, execution=120, reminders=())


def at(seconds: float) -> str:
    return f"<t:{int(seconds)}:R>"


async def press(table: Table, result, custom_id: str, who: str = "host"):
    pressed = await table.fake.click(result.original, custom_id, table.member(who).user.id)
    await pressed.wait_callback()
    if pressed.deferred:
        await pressed.wait_original()
    return pressed


async def test_host_kill_happens_only_on_yes_no_cancels_and_a_stale_yes_is_refused():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.new_game(cities="Верона", mafiosi=2)
        game = table.game
        victim, other = [p for p in game.players if game.status_of(p).value == "citizen"][:2]

        before = await snapshot(table)
        asked = await run(table, "host", "host kill", {"player": victim}, confirm=False)
        assert asked.ephemeral and asked.content.startswith(
            t("ru", "confirm.kill", player=f"<@{victim}>")
        )
        yes = confirmation(asked)
        assert (
            yes is not None
            and yes.startswith(f"mafia:confirm:{table.live().id}:kill:")
            and yes.endswith(victim)
        )
        cancel = f"mafia:cancel:{table.live().id}"
        assert cancel in str(asked.components)
        await assert_unchanged(table, before)  # asking changes nothing

        no = await press(table, asked, cancel)
        assert no.callback_type == 7 and no.content == t("ru", "confirm.cancelled")
        assert no.components == []
        await assert_unchanged(table, before)
        assert game.is_alive(victim)

        # the Yes of a question asked before the stage moved on is refused
        stale = await run(table, "host", "host kill", {"player": other}, confirm=False)
        await accepted(table, "host", "host next")
        moved = await snapshot(table)
        refused = await press(table, stale, confirmation(stale))
        assert refused.content == t("ru", "error.moved_on")
        await assert_unchanged(table, moved)
        assert table.game.is_alive(other)

        # and so is one pressed too late
        late = await run(table, "host", "host kill", {"player": other}, confirm=False)
        real_wall = table.bot.service.wall
        table.bot.service.wall = lambda: real_wall() + 121  # two minutes and a second later
        refused = await press(table, late, confirmation(late))
        assert refused.content == t("ru", "error.confirm_expired")
        await assert_unchanged(table, moved)
        table.bot.service.wall = real_wall

        # a fresh Yes kills, and the question becomes the answer
        asked = await run(table, "host", "host kill", {"player": other}, confirm=False)
        done = await press(table, asked, confirmation(asked))
        killed = t(
            "ru",
            "host.killed",
            player=f"<@{other}>",
            status=t("ru", f"status.{table.game.status_of(other).value}"),
        )
        assert done.content == killed and done.components == []
        assert not table.game.is_alive(other)
        await table.drain()
        death = [
            m
            for m in table.channel_messages(table.city_channel("Верона"))
            if f"<@{other}>" in m and "💀" in m
        ]
        assert death, "the strike was not announced"

        # a bad target is refused at once, with no question
        dead = await snapshot(table)
        refused = await run(table, "host", "host kill", {"player": other}, confirm=False)
        assert refused.ephemeral and confirmation(refused) is None
        assert not refused.content.startswith(t("ru", "confirm.kill", player=f"<@{other}>"))
        await assert_unchanged(table, dead)


async def test_host_end_asks_first_and_its_yes_works_once():
    async with bot_table(players=8) as table:
        quick_edits(table)
        live = await table.new_game(cities="Верона")
        city = table.city_channel("Верона")
        asked = await run(table, "host", "host end", confirm=False)
        assert asked.content.startswith(t("ru", "confirm.end"))
        assert table.live().record.state == "running"
        yes = confirmation(asked)
        done = await press(table, asked, yes)
        assert done.content == t("ru", "host.ended_reply")
        stored = await table.bot.storage.game(live.id)
        assert stored is not None and stored.state == "cancelled"
        await table.drain()
        assert any(t("ru", "host.ended") in m for m in table.channel_messages(city))
        assert done.components == [], "its Yes cannot be pressed twice"
        assert (await run(table, "host", "host end")).content == t("ru", "error.no_game")


async def test_pause_freezes_the_clock_through_a_restart_and_resume_rearms_what_was_left():
    now = [NOW]
    fake = FakeDiscord()
    world = build_standard_guild(fake, players=[f"p{i}" for i in range(8)])
    with tempfile.TemporaryDirectory() as folder:
        config = replace(Config(timers=TIMED), database=Path(folder) / "bot.sqlite3")
        await fake.start()
        try:
            async with bot_on(fake, world, config, clock=lambda: now[0]) as first:
                quick_edits(first)
                live = await first.new_game(cities="Верона")
                city = first.city_channel("Верона")
                assert live.record.deadline == NOW + 600
                now[0] += 200
                paused = await run(first, "host", "host pause")
                assert paused.content.startswith(
                    t("ru", "host.paused", resume="").split("{")[0][:20]
                )
                record = first.live().record
                assert record.deadline is None and record.lobby["paused"] == {
                    "stage": "day 1 discussion",
                    "remaining": 400.0,
                }
                await first.drain()
                assert first.channel_messages(city)[-1].startswith("⏸️")
                status = await run(first, "p0", "mafia status")
                assert t("ru", "deadline.paused") in status.content
                again = await run(first, "host", "host pause")
                assert again.content == t("ru", "error.already_paused")
                # the old deadline passes: nothing fires while the clock stands
                now[0] += 1000
                first.bot.timers.arm(first.live())
                await first.drain()
                assert first.game.stage.value == "discussion"
                # players still play
                citizens = [
                    p for p in first.game.players if first.game.status_of(p).value == "citizen"
                ]
                await accepted(first, first.name(citizens[0]), "nominate", {"player": citizens[1]})

            async with bot_on(fake, world, config, clock=lambda: now[0]) as second:
                quick_edits(second)
                assert second.live().record.lobby["paused"]["remaining"] == 400.0
                assert second.live().record.deadline is None
                now[0] += 50
                resumed = await run(second, "host", "host resume")
                assert resumed.content == t(
                    "ru", "host.resumed", deadline=t("ru", "deadline.at", when=at(now[0] + 400))
                )
                assert second.live().record.deadline == now[0] + 400
                assert second.live().record.deadline_stage == "day 1 discussion"
                await second.drain()
                assert second.channel_messages(city)[-1] == t(
                    "ru",
                    "host.resumed_notice",
                    deadline=t("ru", "deadline.at", when=at(now[0] + 400)),
                )
                assert (await run(second, "host", "host resume")).content == t(
                    "ru", "error.not_paused"
                )
                # and the re-armed deadline fires
                now[0] += 401
                second.bot.timers.arm(second.live())
                await second.fake.wait_until(
                    lambda: second.game.stage.value == "voting", 5.0, "no timer"
                )
        finally:
            await fake.close()


async def test_moving_on_while_paused_keeps_the_new_stage_paused_with_its_whole_length():
    now = [NOW]
    async with bot_table(players=8, config=Config(timers=TIMED), clock=lambda: now[0]) as table:
        quick_edits(table)
        await table.new_game(cities="Верона")
        await run(table, "host", "host pause")
        await accepted(table, "host", "host next")
        record = table.live().record
        assert record.deadline is None
        assert record.lobby["paused"] == {"stage": "day 1 voting", "remaining": 300}
        await run(table, "host", "host resume")
        assert table.live().record.deadline == now[0] + 300


async def test_extend_moves_only_this_stages_deadline_and_timer_changes_the_default():
    now = [NOW]
    async with bot_table(players=8, config=Config(timers=TIMED), clock=lambda: now[0]) as table:
        quick_edits(table)
        await table.new_game(cities="Верона")
        city = table.city_channel("Верона")
        extended = await run(table, "host", "host extend", {"duration": "10м"})
        new_end = NOW + 600 + 600
        assert extended.content == t(
            "ru",
            "host.extended",
            duration=duration_text("ru", 600),
            deadline=t("ru", "deadline.at", when=at(new_end)),
        )
        assert table.live().record.deadline == new_end
        assert "discussion" not in table.live().record.lobby.get("timers", {})
        await table.drain()
        assert table.channel_messages(city)[-1] == t(
            "ru",
            "host.extended_notice",
            duration="10 минут",
            deadline=t("ru", "deadline.at", when=at(new_end)),
        )

        # the next day's discussion has its usual length again
        await accepted(table, "host", "host next")
        await accepted(table, "host", "host next")
        await accepted(table, "host", "host next")
        assert table.game.stage.value == "discussion" and table.game.phase.number == 2
        assert table.live().record.deadline == now[0] + 600

        # /host timer changes the default (and the running stage); durations read in both languages
        timer = await run(table, "host", "host timer", {"stage": "night", "duration": "1ч30м"})
        assert timer.content == t(
            "ru", "host.timer_set", stage=t("ru", "stage.night"), duration="1 час 30 минут"
        )
        assert table.live().record.lobby["timers"]["night"] == 5400
        await run(table, "host", "host timer", {"stage": "discussion", "duration": "90s"})
        assert table.live().record.deadline == now[0] + 90

        before = await snapshot(table)
        bad = await run(table, "host", "host extend", {"duration": "полчаса"})
        assert bad.content == t("ru", "error.bad_duration", value="полчаса", limit=7)
        bad = await run(table, "host", "host timer", {"stage": "night", "duration": "1m1h"})
        assert bad.content == t("ru", "error.bad_duration", value="1m1h", limit=7)
        await assert_unchanged(table, before)

        # no timer, nothing to extend
        await run(table, "host", "host timer", {"stage": "discussion", "duration": "0"})
        before = await snapshot(table)
        refused = await run(table, "host", "host extend", {"duration": "5m"})
        assert refused.content == t("ru", "error.no_deadline")
        await assert_unchanged(table, before)


def test_durations_read_both_languages_and_refuse_the_rest():
    assert [
        parse_duration(text)
        for text in (
            "90",
            "90s",
            "10m",
            "1h",
            "1h30m",
            "10м",
            "1ч",
            "1ч 30 мин",
            "30 сек",
            "2 часа",
            "1H30M",
        )
    ] == [90, 90, 600, 3600, 5400, 600, 3600, 5400, 30, 7200, 5400]
    assert parse_duration("0", allow_zero=True) == 0
    for bad in ("0", "-5", "10x", "m", "1m1h", "1h1h", "1.5h", "", "8d", "99999999", "10 m extra"):
        try:
            parse_duration(bad)
        except Exception as error:
            assert getattr(error, "key", None) == "error.bad_duration", bad
        else:
            raise AssertionError(f"{bad!r} was taken")
    assert duration_text("ru", 5400) == "1 час 30 минут"
    assert duration_text("ru", 125) == "2 минуты 5 секунд"
    assert duration_text("en", 3661) == "1 hour 1 minute 1 second"


async def test_host_kick_takes_a_player_out_of_the_lobby_and_tells_him():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.open_lobby([f"p{i}" for i in range(6)])
        kicked = table.member("p3").user.id
        answer = await run(table, "host", "host kick", {"member": kicked})
        assert answer.content == t("ru", "host.kicked", player=f"<@{kicked}>")
        assert kicked not in [p["id"] for p in table.live().record.lobby["players"]]
        await table.drain()
        lobby = await lobby_message(table)
        assert f"<@{kicked}>" not in lobby.content
        told = [
            m
            for m in table.fake.messages(table.world.text_channel.id)
            if m.content.startswith(f"<@{kicked}>")
        ]
        assert told and told[-1].pinged == {kicked}, "he alone is pinged"
        assert "{" not in told[-1].content

        before = await snapshot(table)
        again = await run(table, "host", "host kick", {"member": kicked})
        assert again.content == t("ru", "error.not_in_lobby", player=f"<@{kicked}>")
        by_player = await run(table, "p0", "host kick", {"member": table.member("p1").user.id})
        assert by_player.content == t("ru", "error.not_host")
        await assert_unchanged(table, before)


async def test_a_day_waiting_for_an_absent_host_executes_by_lot_when_its_wait_is_over():
    now = [NOW]
    async with bot_table(players=8, config=Config(timers=TIMED), clock=lambda: now[0]) as table:
        quick_edits(table)
        await table.new_game(cities="Верона", day_fallback="host")
        await accepted(table, "host", "host next")
        await accepted(table, "host", "host next")  # nobody voted: the city waits for the host
        assert table.game.stage.value == "execution"
        record = table.live().record
        assert record.deadline == now[0] + 120 and record.deadline_stage == "day 1 execution"
        await table.drain()
        log_lines = table.channel_messages(int(record.channels["log"]))
        assert any(t("ru", "log.awaiting_lot", when=at(now[0] + 120)) in line for line in log_lines)
        alive = set(table.game.alive())

        now[0] += 121
        table.bot.timers.arm(table.live())
        await table.fake.wait_until(
            lambda: table.game.stage.value == "night", 5.0, "the lot never came"
        )
        dead = alive - set(table.game.alive())
        assert len(dead) == 1
        commands = await stored_commands(table.bot.storage, table.live().id, last_verb("lot"))
        assert (
            commands[-1].command == {"by": "host", "verb": "lot"} and commands[-1].source == "timer"
        )
        await table.drain()
        (victim,) = dead
        assert any(
            f"<@{victim}>" in m and t("ru", "cause.execution_by_chance", city="Верона") in m
            for m in table.channel_messages(table.city_channel("Верона"))
        )


async def test_the_hosts_wait_is_a_timer_he_can_set():
    now = [NOW]
    async with bot_table(players=8, config=Config(timers=TIMED), clock=lambda: now[0]) as table:
        quick_edits(table)
        await table.new_game(cities="Верона", day_fallback="host")
        await run(table, "host", "host timer", {"stage": "execution", "duration": "0"})
        await accepted(table, "host", "host next")
        await accepted(table, "host", "host next")
        assert table.game.stage.value == "execution" and table.live().record.deadline is None
        citizen = next(p for p in table.game.alive() if table.game.status_of(p).value == "citizen")
        await accepted(table, "host", "host execute", {"player": citizen})
        assert table.game.stage.value == "night"


async def test_a_deadline_that_waited_for_the_lock_while_the_host_paused_does_not_move_the_game():
    from bot.service import MovedOn, Seen
    from rules import StartVoting

    now = [NOW]
    async with bot_table(players=8, config=Config(timers=TIMED), clock=lambda: now[0]) as table:
        quick_edits(table)
        live = await table.new_game(cities="Верона")
        await run(table, "host", "host pause")
        before = await snapshot(table)
        try:
            await table.bot.service.apply(
                live.id, StartVoting(), source="timer", seen=Seen(stage="day 1 discussion")
            )
        except MovedOn:
            pass
        else:
            raise AssertionError("the timer moved a paused game on")
        await assert_unchanged(table, before)
        # the host himself still may
        await accepted(table, "host", "host next")
        assert table.game.stage.value == "voting"
