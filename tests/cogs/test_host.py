"""The Procurator's tools: /host idle, /host timer, /host end (keep or delete the channels), and
/host start without the permissions it needs."""

from __future__ import annotations

import copy

from bot.config import Channels, Config, Timers
from bot.i18n import t
from tests.cogs.scenes import (
    CONNECT,
    MANAGE_CHANNELS,
    SEND,
    SPEAK,
    VIEW,
    accepted,
    announcement,
    assert_unchanged,
    ballot_message,
    deliver_again,
    lobby_message,
    posted,
    quick_edits,
    run,
    snapshot,
)
from tests.fakediscord import DEFAULT_BOT_PERMISSIONS, Permission
from tests.harness import NO_TIMERS, Table, bot_table


def idle_rows(table: Table, content: str) -> dict[str, int]:
    """The rows of a /host idle answer: player id → days in a row without a move."""
    lines = content.splitlines()
    assert lines[0] == t("ru", "host.idle.title"), content
    assert lines[-1] == t("ru", "host.idle.off"), content  # no strike-out set up
    rows = {}
    for line in lines[1:-1]:
        for pid in table.game.players:
            for days in range(10):
                if line == t("ru", "host.idle.row", player=f"<@{pid}>", days=days):
                    rows[pid] = days
    if lines[1:-1] == [t("ru", "host.idle.none")]:
        return rows
    assert len(rows) == len(lines) - 2, f"unreadable rows in {content}"
    return rows


async def idle(table: Table) -> dict[str, int]:
    before = await snapshot(table)
    answer = await run(table, "host", "host idle")
    assert answer.ephemeral
    await assert_unchanged(table, before)
    return idle_rows(table, answer.content)


async def test_host_idle_counts_the_days_each_living_player_let_pass_without_a_public_move():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.new_game(
            cities="Верона", mafiosi=2, doctor=False, journalist=False, maniac=False
        )
        citizens = [table.pid(n) for n in table.players_of("citizen")]
        mafioso = table.pid(table.players_of("mafioso")[0])
        nominator, voter, victim = citizens[0], citizens[1], citizens[2]

        # day 1 under way: no day has ended yet, so nobody let one go by
        assert await idle(table) == {}
        await accepted(table, table.name(nominator), "nominate", {"player": victim})
        await accepted(table, "host", "host next")
        await accepted(table, table.name(voter), "vote", {"player": victim})
        assert await idle(table) == {}

        # night 1 (the victim executed): day 1 ended, a day for everyone who made no move in it;
        # the mafioso's night kill is no public move and changes nothing
        await accepted(table, "host", "host next")
        assert not table.game.is_alive(victim) and table.game.stage.value == "night"
        expected = {pid: 1 for pid in table.game.alive() if pid not in (nominator, voter)}
        assert await idle(table) == expected
        await accepted(table, table.name(mafioso), "kill", {"player": nominator})
        assert await idle(table) == {p: n for p, n in expected.items() if table.game.is_alive(p)}


async def test_host_timer_moves_the_deadline_and_says_so():
    now = [1_800_000_000.0]
    config = Config(timers=Timers(discussion=600, voting=300, night=600, reminders=()))
    async with bot_table(players=8, config=config, clock=lambda: now[0]) as table:
        quick_edits(table)
        live = await table.new_game(cities="Верона")
        old = f"<t:{int(now[0] + 600)}:R>"
        text = table.city_channel("Верона")
        assert live.record.deadline == now[0] + 600
        assert old in (await run(table, "p0", "mafia status")).content

        now[0] += 30
        answer = await run(table, "host", "host timer", {"stage": "discussion", "duration": "120"})
        assert answer.ephemeral
        assert answer.content == t(
            "ru", "host.timer_set", stage=t("ru", "stage.discussion"), duration="2 минуты"
        )
        new = f"<t:{int(now[0] + 120)}:R>"
        stored = await table.bot.storage.game(live.id)
        assert stored is not None and stored.deadline == now[0] + 120
        assert stored.deadline_stage == "day 1 discussion"
        await table.drain()
        told = t("ru", "host.timer_changed", deadline=t("ru", "deadline.at", when=new))
        assert table.channel_messages(text)[-1] == told
        status = await run(table, "p0", "mafia status")
        assert new in status.content and old not in status.content

        # another stage's length is only remembered for later
        await run(table, "host", "host timer", {"stage": "voting", "duration": "45"})
        assert (await table.bot.storage.game(live.id)).deadline == now[0] + 120
        assert table.channel_messages(text)[-1] == told

        # the timer keeps the new deadline: past it (and before the old one) voting starts
        now[0] += 121
        table.bot.timers.arm(table.live())
        await table.fake.wait_until(
            lambda: table.game.stage.value == "voting", 5.0, "the timer did not fire"
        )
        assert table.live().record.deadline == now[0] + 45
        await table.drain()
        ballot = ballot_message(table, "Верона")
        assert f"<t:{int(now[0] + 45)}:R>" in ballot.content

        # while voting, the ballot shows the new end as well
        await run(table, "host", "host timer", {"stage": "voting", "duration": "200"})
        await table.drain()
        later = f"<t:{int(now[0] + 200)}:R>"
        assert later in table.fake.message(ballot.id).content
        assert table.channel_messages(text)[-1] == t(
            "ru", "host.timer_changed", deadline=t("ru", "deadline.at", when=later)
        )


async def test_the_first_announcement_shows_the_first_deadline():
    now = [1_800_000_000.0]
    config = Config(timers=Timers(discussion=600, voting=300, night=600, reminders=()))
    async with bot_table(players=8, config=config, clock=lambda: now[0]) as table:
        quick_edits(table)
        await table.new_game(cities="Верона")
        opening = announcement(
            "ru",
            "phase.day",
            day=1,
            deadline=t("ru", "deadline.at", when=f"<t:{int(now[0] + 600)}:R>"),
        )
        assert any(opening in text for text in table.channel_messages(table.city_channel("Верона")))


def city_and_mafia_channels(channels: dict) -> list[int]:
    return [ids[key] for ids in channels["cities"].values() for key in ("text", "mafia")]


async def test_host_end_posts_the_summary_and_makes_every_channel_read_only():
    async with bot_table(players=16) as table:
        quick_edits(table)
        live = await table.new_game(cities="Верона, Падуя", maniac=False)
        channels = live.record.channels
        game = table.game
        dead = table.name(game.alive("Верона")[0])
        await accepted(table, "host", "host kill", {"player": table.pid(dead)})
        players = [table.name(p) for p in game.players]

        ended = await run(table, "host", "host end")
        assert ended.ephemeral and ended.content == t("ru", "host.ended_reply")
        await table.drain()
        summary_title = t("ru", "summary.title")
        for city in game.cities:
            lines = "\n".join(table.channel_messages(channels["cities"][city]["text"])).splitlines()
            assert t("ru", "host.ended") in lines and summary_title in lines
            for pid in game.players:
                row = [line for line in lines if line.startswith(f"• <@{pid}> — ")]
                assert row, f"{pid} is missing from the summary in {city}"
        assert t("ru", "lobby.state_cancelled") in (await lobby_message(table)).content

        def perms(channel_id: int, name: str) -> int:
            return table.fake.permissions_for(
                table.guild_id, channel_id, table.member(name).user.id
            )

        for channel_id in city_and_mafia_channels(channels) + [channels["dead"]]:
            for name in players:
                assert not perms(channel_id, name) & SEND, f"{name} may still write in {channel_id}"
        for city in game.cities:
            for name in players:
                assert perms(channels["cities"][city]["text"], name) & VIEW, (
                    f"{name} cannot read {city}"
                )
        for name in players:
            assert not perms(channels["voice"], name) & SPEAK, f"{name} may still speak"
            assert perms(channels["voice"], name) & CONNECT or name == dead
        assert perms(channels["dead"], dead) & VIEW
        assert perms(channels["cities"]["Верона"]["text"], "host") & SEND

        refused = await run(table, "p0", "nominate", {"player": table.pid("p1")})
        assert refused.content == t("ru", "error.no_game")
        assert await table.bot.storage.open_game(table.guild_id) is None


async def test_with_at_end_delete_the_channels_go_and_the_summary_stays_in_the_lobby_channel():
    config = Config(timers=NO_TIMERS, channels=Channels(at_end="delete"))
    async with bot_table(players=8, config=config) as table:
        quick_edits(table)
        live = await table.new_game(cities="Верона")
        channels = live.record.channels
        game = table.game
        ids = city_and_mafia_channels(channels) + [
            channels[k] for k in ("voice", "dead", "log", "category")
        ]
        await run(table, "host", "host end")
        await table.drain()
        for channel_id in ids:
            assert table.fake.state.channels[channel_id].deleted, f"channel {channel_id} is left"
        deleted = {
            call.params["channel_id"]
            for call in table.fake.calls("DELETE", "/channels/{channel_id}")
        }
        assert deleted == {str(channel_id) for channel_id in ids}
        general = "\n".join(table.channel_messages(table.world.text_channel.id))
        assert t("ru", "summary.title") in general
        for pid in game.players:
            assert f"• <@{pid}> — " in general


async def test_host_start_without_manage_channels_answers_once_with_what_is_missing():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.open_lobby()
        lacking = DEFAULT_BOT_PERMISSIONS & ~MANAGE_CHANNELS & ~int(Permission.MENTION_EVERYONE)
        table.fake.set_bot_permissions(table.guild_id, lacking)
        await table.fake.wait_until(
            lambda: not table.bot.get_guild(table.guild_id).me.guild_permissions.manage_channels
        )
        before = await snapshot(table)
        channels_before = {c.id for c in table.fake.state.guild_channels(table.guild_id)}

        started = await run(table, "host", "host start")
        assert started.ephemeral and started.deferred
        assert started.content == t(
            "ru",
            "error.missing_permissions",
            permissions=", ".join(
                [t("ru", "permission.manage_channels"), t("ru", "permission.mention_everyone")]
            ),
        )
        assert started.followups == [] and len(started.attempts) == 1
        await assert_unchanged(table, before)
        assert {c.id for c in table.fake.state.guild_channels(table.guild_id)} == channels_before
        assert table.fake.calls("POST", "/guilds/{guild_id}/channels") == []
        assert table.live().record.state == "lobby" and table.live().game is None

        # given the permissions back, the same lobby starts
        table.fake.set_bot_permissions(table.guild_id, DEFAULT_BOT_PERMISSIONS)
        await table.fake.wait_until(
            lambda: table.bot.get_guild(table.guild_id).me.guild_permissions.manage_channels
        )
        again = await run(table, "host", "host start")
        assert again.content == t("ru", "host.started")
        assert table.live().record.state == "running"
        await table.drain()
        assert posted(table)


async def test_host_start_refused_by_discord_mid_way_removes_what_it_made():
    """Guild permissions look fine, but Discord refuses the second channel (403): one answer, the
    category made before it is removed, the lobby stays a lobby."""
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.open_lobby()
        before = await snapshot(table)
        lobby_before = copy.deepcopy(table.live().record.lobby)
        route = r"/guilds/\d+/channels"
        first = table.fake.hang("POST", route, count=1)
        started = await table.slash("host", "host start")
        await table.fake.wait_until(lambda: first.hits == 1)
        refusal = table.fake.fail(
            "POST", route, status=403, count=1, code=50013, message="Missing Permissions"
        )
        first.release()
        await started.wait_original()
        assert refusal.hits == 1
        assert started.ephemeral and len(started.messages) == 1
        assert started.content == t(
            "ru", "error.missing_permissions", permissions=t("ru", "permission.manage_channels")
        )
        created = [
            int(c.response["id"])
            for c in table.fake.calls("POST", "/guilds/{guild_id}/channels")
            if c.ok
        ]
        assert len(created) == 1
        assert all(table.fake.state.channels[channel_id].deleted for channel_id in created)
        roles = [
            int(c.response["id"])
            for c in table.fake.calls("POST", "/guilds/{guild_id}/roles")
            if c.ok
        ]
        assert len(roles) == 2  # the city's living residents, the dead
        assert not set(roles) & set(table.fake.state.guild(table.guild_id).roles)
        assert table.fake.calls("PUT", "/guilds/{guild_id}/members/{user_id}/roles/{role_id}") == []
        after = await snapshot(table)
        assert (after.state, after.commands, after.messages) == (
            before.state,
            before.commands,
            before.messages,
        )
        assert after.lobby is not None and before.lobby is not None
        assert after.lobby[0] == before.lobby[0]  # "starting", then the lobby as it was
        assert {**after.record, "lobby": ""} == {**before.record, "lobby": ""}
        assert table.live().record.lobby == {**lobby_before, "attempts": 1}
        assert table.live().record.state == "lobby" and table.live().game is None


async def test_a_game_won_with_at_end_delete_tells_the_result_where_the_lobby_was():
    config = Config(timers=NO_TIMERS, channels=Channels(at_end="delete"))
    async with bot_table(players=4, config=config) as table:
        quick_edits(table)
        live = await table.new_game(cities="Верона")
        channels = live.record.channels
        game = table.game
        mafioso = table.players_of("mafioso")[0]
        honest = [table.name(p) for p in game.alive() if table.name(p) != mafioso]
        await accepted(table, honest[0], "nominate", {"player": table.pid(mafioso)})
        await accepted(table, "host", "host next")
        for voter in honest:
            await accepted(table, voter, "vote", {"player": table.pid(mafioso)})
        await accepted(table, "host", "host next")
        await table.drain()
        assert game.over
        assert all(
            table.fake.state.channels[ids["text"]].deleted for ids in channels["cities"].values()
        )
        general = table.channel_messages(table.world.text_channel.id)
        told = [m for m in general if t("ru", "summary.title") in m]
        assert len(told) == 1
        assert t("ru", "game_over", winners=t("ru", "winner.honest", city="Верона")) in told[0]
        for pid in game.players:
            assert f"• <@{pid}> — " in told[0]


async def test_a_host_timer_delivered_twice_moves_the_deadline_once():
    now = [1_800_000_000.0]
    config = Config(timers=Timers(discussion=600, voting=300, night=600, reminders=()))
    async with bot_table(players=8, config=config, clock=lambda: now[0]) as table:
        quick_edits(table)
        live = await table.new_game(cities="Верона")
        answer = await run(table, "host", "host timer", {"stage": "discussion", "duration": "120"})
        await table.drain()
        moved = now[0] + 120
        told = len(table.channel_messages(table.city_channel("Верона")))
        now[0] += 50
        await deliver_again(table, answer)
        await table.drain()
        assert (await table.bot.storage.game(live.id)).deadline == moved
        assert len(table.channel_messages(table.city_channel("Верона"))) == told
        assert len(answer.attempts) == 1, "the duplicate was answered again"
