"""Game roles, channels and their permissions, made durably, against the fake Discord.

What Discord computes for each member (``fake.permissions_for``) is asserted,
and the REST calls the bot made: every request within Discord's 100
overwrites, a handful of calls per death whatever the size of the game, the
dead silent everywhere, everything read-only at the end; a start interrupted
by a restart resumes (adopting what Discord made unheard) or rolls back with
nothing left behind; a hanging message never holds up a permission change; a
message posted just before a restart is not posted again after Discord's
nonce memory ran out.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from bot.config import Config
from bot.i18n import t
from bot.permissions import SILENCE, bits, invite_url
from tests.cogs.scenes import (
    CONNECT,
    SEND,
    SPEAK,
    VIEW,
    accepted,
    announcement,
    lobby_message,
    quick_edits,
    run,
)
from tests.fakediscord import (
    ChannelType,
    FakeDiscord,
    Permission,
    StandardGuild,
    build_standard_guild,
)
from tests.harness import NO_TIMERS, Table, bot_on, bot_table

CREATE_CHANNEL = "/guilds/{guild_id}/channels"
CREATE_ROLE = "/guilds/{guild_id}/roles"
MEMBER_ROLE = "/guilds/{guild_id}/members/{user_id}/roles/{role_id}"
OVERWRITE = "/channels/{channel_id}/permissions/{overwrite_id}"
EDIT_CHANNEL = "/channels/{channel_id}"


def may(table: Table, channel_id: int, who: str | int) -> int:
    """What Discord lets a member do in a channel."""
    return table.fake.permissions_for(table.guild_id, channel_id, table.member(who).user.id)


def game_channels(channels: dict[str, Any]) -> list[int]:
    """Every channel of a game but its category."""
    ids = [int(ids[kind]) for ids in channels["cities"].values() for kind in ("text", "mafia")]
    return ids + [int(channels[key]) for key in ("voice", "dead", "log")]


def overwrite_counts(table: Table) -> list[int]:
    """How many overwrites each request the bot made carried (channel creations and edits)."""
    counts = [
        len(call.json.get("permission_overwrites") or [])
        for call in table.fake.calls("POST", CREATE_CHANNEL)
    ]
    counts += [
        len(call.json["permission_overwrites"])
        for call in table.fake.calls("PATCH", EDIT_CHANNEL)
        if isinstance(call.json, dict) and "permission_overwrites" in call.json
    ]
    return counts


def silenced_bits(permissions: int) -> list[str]:
    """The bits of SILENCE a member still has."""
    return [Permission(bit).name or str(bit) for bit in bits(SILENCE) if permissions & bit]


def calls_by_route(table: Table, since: int = 0) -> Counter[str]:
    """The bot's REST calls (not interaction answers) since call number ``since``, by route."""
    return Counter(
        f"{call.method} {call.route}"
        for call in table.fake.calls()[since:]
        if not call.route.startswith(("/interactions/", "/webhooks/"))
    )


async def open_with(table: Table, cities: list[str], **setup: Any) -> None:
    """A lobby every member joined, set up with these cities by ``/host setup``."""
    await table.open_lobby()
    answer = await run(table, "host", "host setup", {"cities": ", ".join(cities), **setup})
    assert answer.ephemeral and table.live().record.lobby["setup"]["cities"] == cities, (
        answer.content
    )


# ------------------------------------------------------------------ the model, at scale


async def test_200_players_in_4_cities_start_and_play_a_day_and_a_night():
    async with bot_table(players=200) as table:
        quick_edits(table)
        await open_with(table, ["Верона", "Падуя", "Мантуя", "Милан"], maniac=False)
        before = len(table.fake.calls())
        started = await run(table, "host", "host start")
        assert started.content.startswith(t("ru", "host.started")), started.content
        await table.drain()
        live, game = table.live(), table.game
        channels = live.record.channels
        at_start = calls_by_route(table, before)
        assert at_start[f"POST {CREATE_ROLE}"] == 4 + 1  # nobody turned pings off: no quiet twins
        assert at_start[f"POST {CREATE_CHANNEL}"] == 1 + 2 * 4 + 3
        assert at_start[f"PUT {MEMBER_ROLE}"] == 200
        assert max(overwrite_counts(table)) <= 100
        created = {
            int(call.response["id"]): len(call.json["permission_overwrites"])
            for call in table.fake.calls("POST", CREATE_CHANNEL)
        }
        for city in game.cities:  # the base three, the four cities' living roles, the dead role
            assert created[table.city_channel(city)] == 3 + 4 + 1
            assert created[table.mafia_channel(city)] == 3 + len(game.living_mafiosi(city))
        assert created[int(channels["voice"])] == 3 + 4 + 1

        # every resident writes at home and reads abroad; only the mafia see their room
        for city in game.cities:
            text, mafia = table.city_channel(city), table.mafia_channel(city)
            for pid in game.players:
                home = game.city_of(pid) == city
                assert bool(may(table, text, pid) & SEND) == home
                assert may(table, text, pid) & VIEW
                assert bool(may(table, mafia, pid) & VIEW) == (
                    home and game.status_of(pid).value == "mafioso"
                )
            assert may(table, int(channels["voice"]), game.residents[city][0]) & SPEAK

        # day 1: one nominee per city, a few votes, the executions
        for city in game.cities:
            residents = [table.name(p) for p in game.alive(city)]
            await accepted(table, residents[0], "nominate", {"player": table.pid(residents[1])})
        await accepted(table, "host", "host next")
        for city in game.cities:
            residents = [table.name(p) for p in game.alive(city)]
            for voter in residents[2:5]:
                await accepted(table, voter, "vote", {"player": table.pid(residents[1])})
        mark = len(table.fake.calls())
        await accepted(table, "host", "host next")
        await table.drain()
        executed = [d.player for d in game.deaths]
        assert len(executed) == 4
        per_death = calls_by_route(table, mark)
        mafiosi = sum(1 for p in executed if game.status_of(p).value == "mafioso")
        assert per_death[f"DELETE {MEMBER_ROLE}"] == 4 and per_death[f"PUT {MEMBER_ROLE}"] == 4
        assert per_death[f"DELETE {OVERWRITE}"] == mafiosi
        assert per_death[f"POST {CREATE_CHANNEL}"] == 0 and per_death[f"PUT {OVERWRITE}"] == 0

        # night 1: the host strikes one out; the night ends; day 2
        assert game.stage.value == "night"
        victim = next(p for p in game.alive() if game.status_of(p).value == "citizen")
        mark = len(table.fake.calls())
        await accepted(table, "host", "host kill", {"player": victim})
        await table.drain()
        one = calls_by_route(table, mark)
        assert one[f"DELETE {MEMBER_ROLE}"] == 1 and one[f"PUT {MEMBER_ROLE}"] == 1
        # what changed on Discord: the two role changes (a reconciler's pass that read the member's
        # roles from the REST API to confirm its cache, a GET, changes nothing)
        changes = {
            route: n
            for route, n in one.items()
            if "/messages" not in route and not route.startswith("GET ")
        }
        assert sum(changes.values()) == 2, one
        await accepted(table, "host", "host next")
        await table.drain()
        assert game.stage.value == "discussion" and game.phase.number == 2
        for dead in [d.player for d in game.deaths]:
            for channel_id in set(game_channels(channels)) - {int(channels["dead"])}:
                assert silenced_bits(may(table, channel_id, dead)) == [], (dead, channel_id)
            assert may(table, int(channels["dead"]), dead) & SEND
        assert max(overwrite_counts(table)) <= 100


async def test_200_players_in_one_city_start():
    async with bot_table(players=200) as table:
        quick_edits(table)
        await open_with(table, ["Верона"], maniac=False)
        started = await run(table, "host", "host start")
        assert started.content.startswith(t("ru", "host.started")), started.content
        await table.drain()
        live, game = table.live(), table.game
        counts = overwrite_counts(table)
        assert max(counts) <= 100
        mafia_room = next(
            call
            for call in table.fake.calls("POST", CREATE_CHANNEL)
            if int(call.response["id"]) == table.mafia_channel("Верона")
        )
        assert len(mafia_room.json["permission_overwrites"]) == 3 + len(
            game.living_mafiosi("Верона")
        )
        text = table.city_channel("Верона")
        assert all(may(table, text, pid) & SEND for pid in game.players)
        assert live.record.state == "running"


# ------------------------------------------------------------------ the dead and the end


async def test_the_dead_lose_every_voice_everywhere_and_at_the_end_all_is_read_only():
    async with bot_table(players=16) as table:
        quick_edits(table)
        live = await table.new_game(cities="Верона, Падуя", maniac=False)
        game, channels = table.game, live.record.channels
        citizen = next(p for p in game.alive("Верона") if game.status_of(p).value == "citizen")
        mafioso = next(p for p in game.alive("Падуя") if game.status_of(p).value == "mafioso")
        mafia_room = table.mafia_channel("Падуя")
        assert may(table, mafia_room, mafioso) & SEND
        for victim in (citizen, mafioso):
            await accepted(table, "host", "host kill", {"player": victim})
        await table.drain()
        for victim in (citizen, mafioso):
            for channel_id in set(game_channels(channels)) - {
                int(channels["dead"])
            }:  # where he now writes
                assert silenced_bits(may(table, channel_id, victim)) == [], (victim, channel_id)
            for city in game.cities:
                assert may(table, table.city_channel(city), victim) & VIEW
            assert may(table, int(channels["voice"]), victim) & CONNECT  # he listens
            assert may(table, int(channels["dead"]), victim) & SEND
            assert not may(table, int(channels["log"]), victim) & VIEW
        assert not may(table, mafia_room, mafioso) & VIEW
        game_roles = {channels["roles"]["dead"]} | {
            role for ids in channels["roles"]["cities"].values() for role in ids.values()
        }
        for victim in (citizen, mafioso):  # one game role at a time
            assert set(table.member(int(victim)).roles) & game_roles == {channels["roles"]["dead"]}

        mark = len(table.fake.calls())
        await run(table, "host", "host end")
        await table.drain()
        edits = calls_by_route(table, mark)
        assert edits[f"PATCH {EDIT_CHANNEL}"] == len(
            game_channels(channels)
        )  # one edit per channel
        for pid in game.players:
            for channel_id in game_channels(channels):
                assert silenced_bits(may(table, channel_id, pid)) == [], (pid, channel_id)
            for city in game.cities:
                assert may(table, int(channels["cities"][city]["text"]), pid) & VIEW
            assert not may(table, int(channels["voice"]), pid) & SPEAK
        for pid in game.living_mafiosi("Верона"):
            assert may(table, int(channels["cities"]["Верона"]["mafia"]), pid) & VIEW
        assert may(table, int(channels["cities"]["Верона"]["text"]), "host") & SEND


# ------------------------------------------------------------------ races and faults


async def test_two_host_starts_at_once_deal_once():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.open_lobby()
        first = await table.slash("host", "host start", wait=False)
        second = await table.slash("host", "host start", wait=False)
        await first.wait_original(30.0)
        await second.wait_original(30.0)
        answers = sorted([first.content, second.content])
        assert answers == sorted([t("ru", "host.started"), t("ru", "error.already_starting")])
        await table.drain()
        categories = [
            c
            for c in table.fake.state.guild_channels(table.guild_id)
            if c.type == ChannelType.GUILD_CATEGORY
        ]
        assert len(categories) == 1
        assert len(table.fake.calls("POST", CREATE_CHANNEL)) == 1 + 2 + 3
        assert len(table.fake.calls("PUT", MEMBER_ROLE)) == 8
        welcome = [
            m
            for m in table.fake.messages(table.city_channel("Верона"))
            if "mafia:role:" in str(m.components)
        ]
        assert len(welcome) == 1


async def test_a_hanging_message_does_not_hold_up_a_death():
    async with bot_table(players=16) as table:
        quick_edits(table)
        table.bot.outbox.call_timeout = 0.3
        live = await table.new_game(cities="Верона, Падуя", maniac=False)
        game = table.game
        victim = game.alive("Верона")[0]
        text = table.city_channel("Верона")
        held = table.fake.hang("POST", rf"/channels/{text}/messages", count=None)
        assert may(table, text, victim) & SEND
        await accepted(table, "host", "host kill", {"player": victim})
        await table.fake.wait_until(
            lambda: held.hits >= 1 or None, 5.0, "the death's message was not sent"
        )
        # the message hangs; the death's permissions are carried out all the same
        await table.fake.wait_until(
            lambda: (
                (
                    not may(table, text, victim) & SEND
                    and may(table, int(live.record.channels["dead"]), victim) & SEND
                )
                or None
            ),
            5.0,
            "the death's permissions waited for the message",
        )
        assert held.hits >= 1

        def deaths() -> int:
            return sum("💀" in m and f"<@{victim}>" in m for m in table.channel_messages(text))

        assert deaths() == 0
        held.release()
        table.fake.clear_faults()
        await table.fake.wait_until(lambda: deaths() or None, 15.0, "the death was never told")
        await table.drain()
        assert deaths() == 1


async def test_a_message_posted_just_before_a_restart_is_not_posted_again_after_the_nonce_memory():
    async with restartable(8) as (fake, world, config):
        async with bot_on(fake, world, config) as first:
            quick_edits(first)
            live = await first.new_game(cities="Верона", maniac=False)
            text = first.city_channel("Верона")
            held = fake.hang("POST", rf"/channels/{text}/messages", count=1)
            await accepted(first, "host", "host next")
            await fake.wait_until(lambda: held.hits or None, 5.0, "the announcement was never sent")
        voting = announcement("ru", "phase.voting", day=1, deadline=t("ru", "deadline.host"))
        held.release()  # Discord carries it out; the bot that sent it is gone
        await fake.wait_until(
            lambda: any(voting in m for m in [x.content for x in fake.messages(text)]) or None
        )
        fake.forget_nonces()  # the restart took longer than Discord remembers nonces
        async with bot_on(fake, world, config) as second:
            await second.drain()
            assert sum(voting in m.content for m in fake.messages(text)) == 1
            posted = next(m for m in fake.messages(text) if voting in m.content)
            rows = await second.bot.storage.outbox_items(live.id, "messages")
            sent = [
                row
                for row in rows
                if row.kind == "send" and voting in row.payload.get("content", "")
            ]
            assert len(sent) == 1
            assert posted.id in await second.bot.storage.claimed([posted.id])
            history = fake.calls("GET", "/channels/{channel_id}/messages")
            assert history and all(call.params["channel_id"] == str(text) for call in history[:1])


@contextlib.asynccontextmanager
async def restartable(players: int) -> AsyncIterator[tuple[FakeDiscord, StandardGuild, Config]]:
    """A started fake with a guild of ``players`` members, and a config whose database outlives
    each bot run in it (for a test that stops the bot and starts another)."""
    fake = FakeDiscord()
    world = build_standard_guild(fake, players=[f"p{i}" for i in range(players)])
    with tempfile.TemporaryDirectory() as folder:
        config = replace(Config(timers=NO_TIMERS), database=Path(folder) / "bot.sqlite3")
        await fake.start()
        try:
            yield fake, world, config
        finally:
            await fake.close()


def _made(fake: FakeDiscord, guild_id: int) -> tuple[list[Any], list[Any]]:
    """The channels and roles the bot created that still exist."""
    channels = [int(c.response["id"]) for c in fake.calls("POST", CREATE_CHANNEL) if c.ok]
    roles = [int(c.response["id"]) for c in fake.calls("POST", CREATE_ROLE) if c.ok]
    guild = fake.state.guild(guild_id)
    return (
        [fake.state.channels[i] for i in channels if not fake.state.channels[i].deleted],
        [guild.roles[i] for i in roles if i in guild.roles],
    )


async def test_a_start_cut_off_by_a_restart_resumes_adopting_what_discord_made_unheard():
    for route in (r"/guilds/\d+/roles", r"/guilds/\d+/channels"):
        await _cut_off_and_resumed(route)


async def _cut_off_and_resumed(route: str) -> None:
    async with restartable(8) as (fake, world, config):
        async with bot_on(fake, world, config) as first:
            await first.open_lobby()
            held = fake.hang("POST", route, count=1)
            started = await first.slash("host", "host start", wait=False)
            await fake.wait_until(lambda: held.hits or None, 5.0, "nothing was created")
        made_before = len(_made(fake, world.guild.id)[0]) + len(_made(fake, world.guild.id)[1])
        held.release()  # Discord makes it; nobody hears the answer
        await fake.wait_until(
            lambda: (
                len(_made(fake, world.guild.id)[0]) + len(_made(fake, world.guild.id)[1])
                > made_before
                or None
            )
        )
        async with bot_on(fake, world, config) as second:
            quick_edits(second)
            await fake.wait_until(
                lambda: second.live().record.state == "running" or None,
                30.0,
                "the start was not resumed",
            )
            await second.drain()
            live = second.live()
            channels, roles = _made(fake, world.guild.id)
            assert sorted(c.id for c in channels) == sorted(
                game_channels(live.record.channels) + [live.record.channels["category"]]
            ), route
            names = Counter(role.name for role in roles)
            assert all(n == 1 for n in names.values()) and len(roles) == 2, names
            assert len([c for c in channels if c.type == ChannelType.GUILD_CATEGORY]) == 1
            for pid in second.game.players:
                assert may(second, second.city_channel("Верона"), pid) & SEND
            assert started.callback is not None  # deferred by the first process


async def test_host_end_during_a_start_begins_no_create_after_it():
    """/host end while the first role is being made: the provisioning's other creates, already
    fetched by the lane's worker, are given up, not made and then removed again."""
    async with bot_table(players=8) as table:
        await table.open_lobby()
        held = table.fake.hang("POST", r"/guilds/\d+/roles", count=1)
        await table.slash("host", "host start", wait=False)
        await table.fake.wait_until(lambda: held.hits or None, 5.0, "no role was being made")
        game = table.live().id
        ended = await run(table, "host", "host end")
        assert ended.content == t("ru", "host.ended_reply")
        creates = len(table.fake.calls("POST", CREATE_ROLE)) + len(
            table.fake.calls("POST", CREATE_CHANNEL)
        )
        held.release()
        await table.fake.wait_until(
            lambda: table.bot.service.find(game) is None or None, 30.0, "the rollback did not end"
        )
        await table.drain()
        assert (
            len(table.fake.calls("POST", CREATE_ROLE))
            + len(table.fake.calls("POST", CREATE_CHANNEL))
            == creates
        )
        assert (await table.bot.storage.game(game)).state == "cancelled"
        assert _made(table.fake, table.guild_id) == ([], [])


#: a slow answer of Discord that outlives a process (it stops, and the next one starts, before it
#: lands), and a call timeout it is within: the call is under way, not given up
SLOW_ANSWER = 6.0
SLOW_CALL_TIMEOUT = 8


async def test_a_rollback_after_a_restart_waits_for_a_role_still_being_made_then_removes_it():
    """/host end comes while a role is being made (a slow answer), and the process stops with
    the role's POST still at Discord. The next process finds the rollback planned, and the role
    lands after it has started. Its sweep of the plan's names looks only once the earlier
    process's call would have timed out: it finds the late role and removes it (swept at once, the
    role would have outlived the game: the chaos test's orphan at Discord's pace)."""
    async with restartable(8) as (fake, world, config):
        config = replace(config, call_timeout=SLOW_CALL_TIMEOUT)
        async with bot_on(fake, world, config) as first:
            await first.open_lobby()
            slow = fake.delay("POST", r"/guilds/\d+/roles", SLOW_ANSWER, count=1)
            await first.slash("host", "host start", wait=False)
            await fake.wait_until(lambda: slow.hits or None, 5.0, "no role was being made")
            ended = await run(first, "host", "host end")
            assert ended.content == t("ru", "host.ended_reply")
            game = first.live().id
        assert _made(fake, world.guild.id)[1] == []  # still being made
        async with bot_on(fake, world, config) as second:
            await fake.wait_until(
                lambda: _made(fake, world.guild.id)[1] or None,
                10.0,
                "the first process's role never landed",
            )
            await fake.wait_until(
                lambda: second.bot.service.find(game) is None or None,
                30.0,
                "the rollback did not end",
            )
            await second.drain()
            assert (await second.bot.storage.game(game)).state == "cancelled"
            assert _made(fake, world.guild.id) == ([], [])


async def test_a_role_still_being_made_when_the_next_process_starts_is_adopted_not_made_twice():
    """Found by the chaos test: the process stops while Discord is still making the spectators'
    role (a slow answer), and the next one is up before Discord has made it. It looks for the role
    only once the earlier process's call would have timed out, so it adopts the one that landed
    late: one role, the game's, held by the spectator."""
    async with restartable(9) as (fake, world, config):
        config = replace(config, call_timeout=SLOW_CALL_TIMEOUT)
        async with bot_on(fake, world, config) as first:
            quick_edits(first)
            await first.new_game(players=[f"p{i}" for i in range(8)], cities="Верона", maniac=False)
            game = first.live().id
            slow = fake.delay("POST", r"/guilds/\d+/roles", SLOW_ANSWER, count=1)
            watching = await run(first, "p8", "mafia spectate")
            assert watching.content == t("ru", "spectate.started", game=game)
            await fake.wait_until(lambda: slow.hits or None, 5.0, "the role was not being made")
        name = t("ru", "game_role.spectators", game=game)
        watcher = world.players[8].user.id
        guild = fake.state.guild(world.guild.id)
        assert not [r for r in guild.roles.values() if r.name == name]  # still being made
        async with bot_on(fake, world, config) as second:
            await fake.wait_until(
                lambda: (
                    any(
                        guild.roles[r].name == name
                        for r in guild.members[watcher].roles
                        if r in guild.roles
                    )
                    or None
                ),
                30.0,
                "the spectator never got the role",
            )
            # the slow call of the first process has been answered by now: its role is made
            await fake.wait_until(
                lambda: (
                    all(c.status for c in fake.calls("POST", "/guilds/{guild_id}/roles")) or None
                ),
                10.0,
                "the first process's call was never answered",
            )
            await second.drain()
            roles = [r.id for r in guild.roles.values() if r.name == name]
            assert len(roles) == 1, f"{len(roles)} spectator roles"
            assert roles[0] in guild.members[watcher].roles
            made = [c for c in fake.calls("POST", "/guilds/{guild_id}/roles") if c.ok]
            assert [int(c.response["id"]) for c in made if c.json.get("name") == name] == roles


async def test_a_start_cut_off_then_refused_after_the_restart_leaves_nothing_behind():
    async with restartable(8) as (fake, world, config):
        async with bot_on(fake, world, config) as first:
            await first.open_lobby()
            held = fake.hang("POST", r"/guilds/\d+/channels", count=1)
            await first.slash("host", "host start", wait=False)
            await fake.wait_until(lambda: held.hits or None, 5.0, "no channel was created")
        held.release()
        await fake.wait_until(lambda: _made(fake, world.guild.id)[0] or None)
        refusing = fake.fail(
            "POST",
            r"/guilds/\d+/channels",
            status=403,
            code=50013,
            message="Missing Permissions",
            count=None,
        )
        async with bot_on(fake, world, config) as second:
            await fake.wait_until(
                lambda: second.live().record.state == "lobby" or None,
                30.0,
                "the start was not rolled back",
            )
            await second.drain()
            assert refusing.hits >= 1
            assert _made(fake, world.guild.id) == ([], [])
            said = t(
                "ru", "error.missing_permissions", permissions=t("ru", "permission.manage_channels")
            )
            assert said in second.channel_messages(world.text_channel.id)
            lobby = (await lobby_message(second)).content
            assert t("ru", "lobby.howto") in lobby and t("ru", "lobby.state_starting") not in lobby
            fake.clear_faults()
            again = await run(second, "host", "host start")
            assert again.content == t("ru", "host.started")
            categories = [
                c
                for c in fake.state.guild_channels(world.guild.id)
                if c.type == ChannelType.GUILD_CATEGORY
            ]
            assert len(categories) == 1


async def test_host_end_while_starting_removes_what_was_made():
    async with bot_table(players=8) as table:
        await table.open_lobby()
        held = table.fake.hang("PUT", r"/guilds/\d+/members/\d+/roles/\d+", count=1)
        started = await table.slash("host", "host start", wait=False)
        await table.fake.wait_until(lambda: held.hits or None, 10.0)
        ended = await run(table, "host", "host end")
        assert ended.content == t("ru", "host.ended_reply")
        held.release()
        await started.wait_original(30.0)
        await table.drain()
        assert started.content == t("ru", "host.ended_reply")
        assert _made(table.fake, table.guild_id) == ([], [])
        assert await table.bot.storage.open_game(table.guild_id) is None


# ------------------------------------------------------------------ what a client can learn


async def test_the_host_is_told_who_sees_hidden_rooms_or_the_audit_log():
    async with bot_table(players=8) as table:
        fake = table.fake
        admins = fake.create_role(
            table.guild_id, "Admins", permissions=int(Permission.ADMINISTRATOR)
        )
        auditors = fake.create_role(
            table.guild_id, "Auditors", permissions=int(Permission.VIEW_AUDIT_LOG)
        )
        fake.add_member_role(table.guild_id, table.member("p1").user.id, admins.id)
        fake.add_member_role(table.guild_id, table.member("p2").user.id, auditors.id)
        await table.open_lobby()
        await table.drain()
        p1, p2 = f"<@{table.pid('p1')}>", f"<@{table.pid('p2')}>"
        lobby = (await lobby_message(table)).content
        hidden = t("ru", "exposed.hidden", count=1, players=p1)
        audit = t("ru", "exposed.audit", count=2, players=f"{p1}, {p2}")
        assert hidden in lobby and audit in lobby
        started = await run(table, "host", "host start")
        assert started.ephemeral
        assert started.content.splitlines() == [t("ru", "host.started"), hidden, audit]
        await table.drain()
        names = [
            c.name
            for c in fake.state.guild_channels(table.guild_id)
            if c.id in game_channels(table.live().record.channels)
        ]
        topics = [c.topic or "" for c in fake.state.guild_channels(table.guild_id)]
        mafiosi = table.players_of("mafioso")
        statuses = [
            t("ru", f"status.{s}") for s in ("mafioso", "commissar", "doctor", "journalist")
        ]
        for text in (
            names + topics + [r.name for r in fake.state.guild(table.guild_id).roles.values()]
        ):
            assert not any(s in text.lower() for s in statuses), text
            assert not any(table.pid(m) in text or m in text for m in mafiosi), text
        reasons = [call.headers.get("X-Audit-Log-Reason", "") for call in fake.calls()]
        assert all(not any(s in reason for s in statuses) for reason in reasons)


async def test_the_invite_link_is_logged_once_at_startup(caplog: Any) -> None:
    caplog.set_level("INFO", logger="bot.bot")
    async with bot_table(players=1) as table:
        lines = [r.getMessage() for r in caplog.records if "invite" in r.getMessage()]
        assert lines == [f"invite link: {invite_url(table.fake.application_id)}"]


async def test_a_create_that_timed_out_and_reached_discord_later_leaves_no_duplicate():
    """The first role's POST hangs past the call timeout, so it is made again; then Discord carries
    out the first one too. The provisioning's last intent finds the duplicate and removes it."""
    async with bot_table(players=8) as table:
        table.bot.outbox.call_timeout = 0.3
        await table.open_lobby()
        held = table.fake.hang("POST", r"/guilds/\d+/roles", count=1)
        table.fake.delay("GET", r"/guilds/\d+/channels", 1.0, count=1)  # the sweep waits a little
        started = await table.slash("host", "host start", wait=False)
        await table.fake.wait_until(
            lambda: table.fake.calls("GET", "/guilds/{guild_id}/channels") or None, 10.0
        )
        held.release()
        await started.wait_original(30.0)
        await table.drain()
        made = [int(c.response["id"]) for c in table.fake.calls("POST", CREATE_ROLE) if c.ok]
        assert len(made) == 3  # the city's role twice (the first answer lost), the dead role
        names = Counter(role.name for role in table.fake.state.guild(table.guild_id).roles.values())
        assert max(names.values()) == 1, names
        living = table.live().record.channels["roles"]["cities"]["Верона"]["living"]
        assert all(living in table.member(int(p)).roles for p in table.game.players)


async def test_players_who_turned_pings_off_hold_the_quiet_twin_and_are_never_pinged():
    async with bot_table(players=16) as table:
        quick_edits(table)
        quiet = [table.member("p0").user.id, table.member("p1").user.id]
        for user in quiet:
            await table.bot.storage.set_pings(user, False)
        assert not await table.bot.service.wants_pings(quiet[0])
        assert await table.bot.service.wants_pings(table.member("p2").user.id)
        live = await table.new_game(cities="Верона, Падуя", maniac=False)
        game, roles = table.game, live.record.channels["roles"]["cities"]
        quiet_cities = {game.city_of(str(user)) for user in quiet}
        assert set(roles) == {"Верона", "Падуя"}
        assert {city for city, ids in roles.items() if "quiet" in ids} == quiet_cities
        assert len(table.fake.calls("POST", CREATE_ROLE)) == 2 + len(quiet_cities) + 1
        for pid in game.players:
            ids = roles[game.city_of(pid)]
            held = set(table.member(int(pid)).roles)
            assert held & set(ids.values()) == {
                ids["quiet"] if int(pid) in quiet else ids["living"]
            }
            assert may(table, table.city_channel(game.city_of(pid)), pid) & SEND
        for city in game.cities:
            welcome = next(
                call.json
                for call in table.fake.calls("POST", "/channels/{channel_id}/messages")
                if call.params["channel_id"] == str(table.city_channel(city))
            )
            assert welcome["content"].startswith(f"<@&{roles[city]['living']}>")
            assert welcome["allowed_mentions"]["roles"] == [str(roles[city]["living"])]
        victim = str(quiet[0])
        await accepted(table, "host", "host kill", {"player": victim})
        await table.drain()
        assert (
            set(table.member(int(victim)).roles)
            & {r for ids in roles.values() for r in ids.values()}
            == set()
        )
        assert not may(table, table.city_channel(game.city_of(victim)), victim) & SEND


async def _rolled_back_after_the_restart(
    fake: FakeDiscord, world: StandardGuild, config: Config, game: int
) -> None:
    """The next process ends the rollback: the game cancelled, nothing it made left."""
    async with bot_on(fake, world, config) as second:
        await fake.wait_until(
            lambda: second.bot.service.find(game) is None or None, 30.0, "the rollback did not end"
        )
        await second.drain()
        assert (await second.bot.storage.game(game)).state == "cancelled"
        assert _made(fake, world.guild.id) == ([], [])


async def test_host_end_while_a_create_is_under_way_then_a_restart_leaves_no_orphan():
    """Found by the chaos test: /host end comes while a role is being made; the process dies
    before Discord's answer, which Discord carries out. The rollback planned removes only what
    was known to be made; the role made unheard must go too, and the game is cancelled."""
    async with restartable(8) as (fake, world, config):
        async with bot_on(fake, world, config) as first:
            await first.open_lobby()
            held = fake.hang("POST", r"/guilds/\d+/roles", count=1)
            await first.slash("host", "host start", wait=False)
            await fake.wait_until(lambda: held.hits or None, 5.0, "no role was being made")
            ended = await run(first, "host", "host end")
            assert ended.content == t("ru", "host.ended_reply")
            game = first.live().id
        held.release()  # Discord makes the role; the process that asked is gone
        await fake.wait_until(
            lambda: _made(fake, world.guild.id)[1] or None, 5.0, "the role was not made"
        )
        await _rolled_back_after_the_restart(fake, world, config, game)


async def test_host_end_while_a_channel_is_made_in_the_category_then_a_restart_leaves_no_orphan():
    """Found by the chaos test under PostgreSQL crashes: a channel of the game's category is under
    way when the start is called off and the process dies before Discord's answer. Deleting the
    category leaves its children without a parent (as Discord does), where the rollback's sweep,
    which looks in the category, would no longer find the channel made unheard: the sweep runs
    while the category is still there."""
    async with restartable(8) as (fake, world, config):
        async with bot_on(fake, world, config) as first:
            await first.open_lobby()
            category = fake.hang("POST", CREATE_CHANNEL, count=1)
            child = fake.hang("POST", CREATE_CHANNEL, count=1)
            await first.slash("host", "host start", wait=False)
            await fake.wait_until(lambda: category.hits or None, 5.0, "no category was being made")
            category.release()
            await fake.wait_until(
                lambda: child.hits or None, 5.0, "no channel was being made in it"
            )
            ended = await run(first, "host", "host end")
            assert ended.content == t("ru", "host.ended_reply")
            game = first.live().id
        child.release()  # Discord makes the channel in the category; the process that asked is gone
        await fake.wait_until(
            lambda: len(_made(fake, world.guild.id)[0]) == 2 or None,
            5.0,
            "the channel was not made",
        )
        [parent] = [
            c for c in _made(fake, world.guild.id)[0] if c.type == ChannelType.GUILD_CATEGORY
        ]
        assert [c.parent_id for c in _made(fake, world.guild.id)[0] if c.id != parent.id] == [
            parent.id
        ]
        await _rolled_back_after_the_restart(fake, world, config, game)
