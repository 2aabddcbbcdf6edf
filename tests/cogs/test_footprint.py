"""A running game's footprint kept true against people, end to end against the strict fake.

A member with Manage Roles and Manage Channels acts during the game (the
fake plays him and sends the gateway events Discord sends): he deletes a
city channel, the category, the dead role; drags a game role above the bot's
role; leaves the server and comes back; gains Administrator or Manage Roles.
What each member may then do is asserted by Discord's own algorithm
(``fake.permissions_for``): the dead never write or speak, a living player
always sees his city, the host is told what he must do.
"""

from __future__ import annotations

import asyncio
from typing import Any

from bot.i18n import t
from tests.cogs.scenes import CONNECT, SEND, SPEAK, VIEW, accepted, quick_edits
from tests.cogs.test_provision import restartable
from tests.fakediscord.permissions import OVERWRITE_ROLE, Overwrite
from tests.harness import Table, bot_on, bot_table

#: Discord's Manage Roles and Administrator bits
MANAGE_ROLES, ADMINISTRATOR = 1 << 28, 1 << 3
SET_VOICE_CHANNEL_STATUS, CREATE_EVENTS = 1 << 48, 1 << 44
REPAIR = 30.0


def may(table: Table, channel_id: int, who: str | int) -> int:
    """What Discord lets a member do in a channel."""
    return table.fake.permissions_for(table.guild_id, channel_id, table.member(who).user.id)


def log_lines(table: Table) -> list[str]:
    return table.channel_messages(int(table.live().record.channels["log"]))


async def logged(table: Table, key: str, **params: Any) -> str:
    """Wait for the host's log to carry this text (in the guild's language, Russian here)."""
    text = t("ru", key, **params)
    return await table.fake.wait_until(
        lambda: next((line for line in log_lines(table) if line == text), None),
        REPAIR,
        f"the log never said {text!r}: {log_lines(table)[-3:]}",
    )


def citizen(table: Table, city: str) -> str:
    return next(p for p in table.game.alive(city) if table.game.status_of(p).value == "citizen")


async def one_city(table: Table) -> None:
    """A one-city game started, messages edited at once."""
    quick_edits(table)
    await table.new_game(cities="Верона", maniac=False)


async def killed(table: Table) -> str:
    """The host kills a citizen of Верона; his death carried out on Discord."""
    victim = citizen(table, "Верона")
    await accepted(table, "host", "host kill", {"player": victim})
    await table.drain()
    return victim


async def test_a_deleted_city_channel_is_made_again_and_says_its_history_is_gone():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.new_game(cities="Верона, Падуя", maniac=False)
        old = table.city_channel("Верона")
        residents = table.game.alive("Верона")
        table.fake.delete_channel(old)  # a person, in the client
        new = await table.fake.wait_until(
            lambda: table.city_channel("Верона") != old and table.city_channel("Верона"),
            REPAIR,
            "the city channel was not made again",
        )
        notice = t("ru", "footprint.channel_again")
        await table.fake.wait_until(
            lambda: notice in table.channel_messages(new) or None,
            REPAIR,
            "the new channel does not say its history is gone",
        )
        channel = table.fake.channel(new)
        assert channel.parent_id == int(table.live().record.channels["category"])
        for player in residents:
            assert may(table, new, player) & VIEW and may(table, new, player) & SEND
        assert not may(table, new, table.game.alive("Падуя")[0]) & SEND
        await accepted(table, "host", "host kill", {"player": residents[0]})
        await table.drain()
        assert may(table, new, residents[0]) & VIEW and not may(table, new, residents[0]) & SEND


async def test_a_channel_discord_refuses_to_make_again_for_its_cap_is_told_once_and_not_tried_blindly():
    async with bot_table(players=8) as table:
        await one_city(table)
        reconciler = host_cog(table).footprint
        table.fake.fail(
            "POST",
            r"/guilds/\d+/channels",
            status=400,
            count=None,
            code=30013,
            message="Maximum number of guild channels reached (500)",
        )
        table.fake.delete_channel(table.mafia_channel("Верона"))
        # the bot saw room, Discord refused for its cap: tried again only once room is freed
        # (tests/cogs/test_caps.py)
        await logged(
            table,
            "footprint.no_room.channel",
            name=t("ru", "channel.mafia", city="Верона"),
            reason=t("ru", "failure.max_channels", limit=500),
        )
        await table.drain()
        tries = len(table.fake.calls("POST", "/guilds/{guild_id}/channels"))
        passes = reconciler.passes
        table.fake.create_role(table.guild_id, "Гости")  # any event: the reconciler looks again
        await table.fake.wait_until(
            lambda: reconciler.passes > passes or None, REPAIR, "no pass after the event"
        )
        await table.drain()
        assert len(table.fake.calls("POST", "/guilds/{guild_id}/channels")) == tries
        assert sum(line.startswith("⚠️") for line in log_lines(table)) == 1


async def test_a_deleted_category_is_made_again_and_takes_its_channels_back():
    async with bot_table(players=8) as table:
        await one_city(table)
        channels = table.live().record.channels
        old = int(channels["category"])
        table.fake.delete_channel(old)
        new = await table.fake.wait_until(
            lambda: (
                int(table.live().record.channels["category"]) != old
                and int(table.live().record.channels["category"])
            ),
            REPAIR,
            "the category was not made again",
        )
        children = [
            table.city_channel("Верона"),
            table.mafia_channel("Верона"),
            *(int(channels[key]) for key in ("voice", "dead", "log")),
        ]
        await table.fake.wait_until(
            lambda: all(table.fake.channel(c).parent_id == new for c in children) or None,
            REPAIR,
            "the channels did not go back into the category",
        )
        assert not may(table, new, "p0") & VIEW  # @everyone is still kept out


async def test_a_deleted_dead_role_is_made_again_and_the_next_dead_see_the_dead_channel():
    async with bot_table(players=8) as table:
        await one_city(table)
        first = await killed(table)
        dead_channel = int(table.live().record.channels["dead"])
        old = int(table.live().record.channels["roles"]["dead"])
        table.fake.delete_role(table.guild_id, old)
        assert not may(table, dead_channel, first) & VIEW  # what the person did
        new = await table.fake.wait_until(
            lambda: (
                int(table.live().record.channels["roles"]["dead"]) != old
                and int(table.live().record.channels["roles"]["dead"])
            ),
            REPAIR,
            "the dead role was not made again",
        )
        await table.fake.wait_until(
            lambda: new in table.member(first).roles or None,
            REPAIR,
            "the dead did not get the new dead role",
        )
        await table.drain()
        assert may(table, dead_channel, first) & SEND
        assert may(table, table.city_channel("Верона"), first) & VIEW
        assert not may(table, table.city_channel("Верона"), first) & SEND
        second = await killed(table)
        assert may(table, dead_channel, second) & SEND
        assert not may(table, int(table.live().record.channels["voice"]), second) & SPEAK


async def test_a_player_who_leaves_the_server_and_comes_back_gets_his_role_back():
    async with bot_table(players=8) as table:
        await one_city(table)
        player = citizen(table, "Верона")
        member = table.member(player)
        role = int(table.live().record.channels["roles"]["cities"]["Верона"]["living"])
        user = member.user
        table.fake.remove_member(table.guild_id, user.id)
        table.fake.add_member(table.guild_id, user)  # Discord gives him no role back
        await table.fake.wait_until(
            lambda: role in table.member(player).roles or None,
            REPAIR,
            "the returning player did not get his city role back",
        )
        assert may(table, table.city_channel("Верона"), player) & SEND
        assert may(table, int(table.live().record.channels["voice"]), player) & CONNECT


async def test_game_roles_a_person_gives_or_takes_are_put_right():
    async with bot_table(players=8) as table:
        await one_city(table)
        roles = table.live().record.channels["roles"]
        living, dead = int(roles["cities"]["Верона"]["living"]), int(roles["dead"])
        alive = citizen(table, "Верона")
        user = table.member(alive).user.id
        table.fake.remove_member_role(table.guild_id, user, living)  # he no longer sees his city
        table.fake.add_member_role(table.guild_id, user, dead)
        await table.fake.wait_until(
            lambda: (
                living in table.member(alive).roles
                and dead not in table.member(alive).roles
                or None
            ),
            REPAIR,
            "the living player's roles were not put right",
        )
        assert may(table, table.city_channel("Верона"), alive) & SEND


async def test_a_game_role_overwrite_a_person_edits_is_put_back():
    async with bot_table(players=8) as table:
        await one_city(table)
        victim = await killed(table)
        text = table.city_channel("Верона")
        dead = int(table.live().record.channels["roles"]["dead"])
        table.fake.set_overwrite(
            text, Overwrite(dead, OVERWRITE_ROLE, allow=VIEW | SEND)
        )  # "let them talk"
        assert may(table, text, victim) & SEND
        await table.fake.wait_until(
            lambda: not may(table, text, victim) & SEND or None,
            REPAIR,
            "the dead write in the city",
        )
        assert may(table, text, victim) & VIEW
        outsider = table.fake.add_member(table.guild_id, "outsider")
        table.fake.set_overwrite(
            text, Overwrite(table.guild_id, OVERWRITE_ROLE)
        )  # @everyone let in
        assert table.fake.permissions_for(table.guild_id, text, outsider.user.id) & VIEW
        await table.fake.wait_until(
            lambda: (
                not table.fake.permissions_for(table.guild_id, text, outsider.user.id) & VIEW
                or None
            ),
            REPAIR,
            "@everyone reads the city",
        )


async def test_what_a_person_changed_while_the_bot_was_down_is_repaired_after_the_restart():
    async with restartable(8) as (fake, world, config):
        async with bot_on(fake, world, config) as first:
            quick_edits(first)
            await first.new_game(cities="Верона", maniac=False)
            victim = citizen(first, "Верона")
            await accepted(first, "host", "host kill", {"player": victim})
            await first.drain()
            channels = first.live().record.channels
            text, dead_role = first.city_channel("Верона"), int(channels["roles"]["dead"])
            alive = citizen(first, "Верона")
            living = int(channels["roles"]["cities"]["Верона"]["living"])
        guild_id = world.guild.id
        fake.delete_channel(text)
        fake.delete_role(guild_id, dead_role)
        returning = fake.member(guild_id, int(alive)).user
        fake.remove_member(guild_id, returning.id)
        fake.add_member(guild_id, returning)
        async with bot_on(fake, world, config) as second:
            await fake.wait_until(
                lambda: (
                    second.city_channel("Верона") != text
                    and int(second.live().record.channels["roles"]["dead"]) != dead_role
                    or None
                ),
                REPAIR,
                "nothing was made again after the restart",
            )
            await fake.wait_until(
                lambda: living in second.member(alive).roles or None,
                REPAIR,
                "the returning player got no role after the restart",
            )
            await second.drain()
            new_text, new_dead = (
                second.city_channel("Верона"),
                int(second.live().record.channels["roles"]["dead"]),
            )
            assert new_dead in second.member(victim).roles
            assert may(second, new_text, alive) & SEND
            assert may(second, new_text, victim) & VIEW and not may(second, new_text, victim) & SEND
            assert t("ru", "footprint.channel_again") in second.channel_messages(new_text)


async def test_a_game_role_dragged_above_the_bot_is_worked_around_and_the_host_told_what_to_drag():
    async with bot_table(players=8, refusals=True) as table:
        await one_city(table)
        channels = table.live().record.channels
        living = int(channels["roles"]["cities"]["Верона"]["living"])
        guild = table.fake.state.guild(table.guild_id)
        bot_role = table.fake.state.bot_role(table.guild_id)
        assert bot_role is not None
        table.fake.move_role(table.guild_id, living, bot_role.position + 1)  # a person drags it
        living_name = guild.roles[living].name
        await logged(table, "footprint.role_above", role=living_name, bot_role=bot_role.name)
        victim = await killed(table)
        refused = [
            c
            for c in table.fake.calls(
                "DELETE", "/guilds/{guild_id}/members/{user_id}/roles/{role_id}"
            )
            if c.status == 403
        ]
        assert len(refused) == 1  # Discord's hierarchy: the bot cannot take that role
        assert living in table.member(victim).roles  # he holds it still
        voice, text, dead = (
            int(channels["voice"]),
            table.city_channel("Верона"),
            int(channels["dead"]),
        )
        await table.fake.wait_until(
            lambda: (
                not may(table, text, victim) & SEND
                and not may(table, voice, victim) & SPEAK
                or None
            ),
            REPAIR,
            "the dead writes in his city or speaks on the tribune",
        )
        await table.drain()
        assert may(table, text, victim) & VIEW
        assert not may(table, voice, victim) & SPEAK and may(table, voice, victim) & CONNECT
        assert may(table, dead, victim) & SEND
        for player in table.game.alive("Верона"):  # the living keep their city
            assert may(table, text, player) & SEND
        # the host drags the bot's role back above it: the roles are put right, the stand-ins go
        table.fake.move_role(table.guild_id, bot_role.id, guild.roles[living].position + 1)
        await table.fake.wait_until(
            lambda: living not in table.member(victim).roles or None,
            REPAIR,
            "the dead kept his city role",
        )
        await table.fake.wait_until(
            lambda: (
                all(
                    o.id != table.member(victim).user.id
                    for c in (text, voice, dead)
                    for o in table.fake.channel(c).overwrites
                )
                or None
            ),
            REPAIR,
            "the stand-in overwrites stayed",
        )
        await table.drain()
        assert not may(table, text, victim) & SEND and may(table, text, victim) & VIEW
        assert not may(table, voice, victim) & SPEAK
        assert [c.status for c in table.fake.calls() if c.status >= 400 and c.fault is None] == [
            403
        ]


async def test_a_member_who_gains_manage_roles_or_administrator_mid_game_is_reported():
    async with bot_table(players=8) as table:
        await one_city(table)
        await table.fake.wait_until(
            lambda: "powers" in table.live().record.channels.get("footprint", {}) or None,
            REPAIR,
            "the reconciler never noted who holds powers",
        )
        lines = len(log_lines(table))
        moderators = table.fake.create_role(table.guild_id, "Модераторы", permissions=MANAGE_ROLES)
        player, other = list(table.game.players)[:2]
        table.fake.add_member_role(table.guild_id, int(player), moderators.id)
        await logged(
            table,
            "footprint.powers",
            member=f"<@{player}>",
            permissions=t("ru", "permission.manage_roles"),
        )
        admins = table.fake.create_role(table.guild_id, "Админы")
        table.fake.add_member_role(table.guild_id, table.member("host").user.id, admins.id)
        table.fake.update_role(
            table.guild_id, admins.id, permissions=ADMINISTRATOR
        )  # the host: no report
        table.fake.add_member_role(table.guild_id, int(other), admins.id)
        await logged(  # he sees the hidden rooms: told with the exact fix (footprint.effective)
            table, "footprint.effective.administrator", member=f"<@{other}>", roles="«Админы»"
        )
        await table.drain()
        new = log_lines(table)[lines:]
        assert len(new) == 2, new  # once each, never the host


async def test_manage_roles_granted_as_the_game_starts_before_any_pass_is_reported():
    """The grant reaches the bot before the reconciler's first pass over the new game (which
    waits for the burst of events and for the lanes): it is a grant after the start all the same,
    while a member who held Manage Roles before the start is not reported."""
    async with bot_table(players=8) as table:
        moderators = table.fake.create_role(table.guild_id, "Модераторы", permissions=MANAGE_ROLES)
        before, player = (
            table.fake.add_member(table.guild_id, "moderator").user.id,
            str(table.member("p1").user.id),
        )
        table.fake.add_member_role(table.guild_id, before, moderators.id)
        await table.fake.wait_until(
            lambda: (
                table.bot.guilds[0].get_member(before) is not None
                and table.bot.guilds[0].get_member(before).guild_permissions.manage_roles
                or None
            ),
            REPAIR,
            "the bot never saw the moderator",
        )
        reconciler = table.bot.get_cog("HostCog").footprint
        passes: list[int] = []

        def grant_at_start(live: Any) -> None:  # runs right after the reconciler's own hook
            if live.record.state == "running" and not passes:
                passes.append(reconciler.passes)
                table.fake.add_member_role(table.guild_id, int(player), moderators.id)

        table.bot.service.after_commit.append(grant_at_start)
        await one_city(table)
        await logged(
            table,
            "footprint.powers",
            member=f"<@{player}>",
            permissions=t("ru", "permission.manage_roles"),
        )
        await table.drain()
        assert passes == [0]  # no pass had looked at the game when the role was given
        assert not any(f"<@{before}>" in line for line in log_lines(table)), log_lines(table)


async def test_the_dead_may_not_set_the_tribune_status_nor_create_events_there():
    async with bot_table(players=8) as table:
        await one_city(table)
        victim = await killed(table)
        voice = int(table.live().record.channels["voice"])
        assert not may(table, voice, victim) & SET_VOICE_CHANNEL_STATUS
        assert not may(table, voice, victim) & CREATE_EVENTS
        living = table.game.alive("Верона")[0]
        assert may(table, voice, living) & SPEAK


# ------------------------------------------------------------------ the start's answer


def host_cog(table: Table) -> Any:
    return table.bot.get_cog("HostCog")


async def test_a_start_that_outlives_the_interaction_token_says_in_the_log_that_it_started():
    async with bot_table(players=8) as table:
        await table.open_lobby()
        host_cog(table).start_wait = 0.0  # the answer's wait, test-sized: "still starting" at once
        held = table.fake.hang("POST", r"/guilds/\d+/channels", count=1)
        started = await table.slash("host", "host start")
        answer = await started.wait_original(30.0)
        assert answer.content == t("ru", "host.still_starting")
        # the token is gone (15 minutes, test-sized to nothing): Discord takes no edit any more
        table.fake.interaction_token_lifetime = 0.0
        host_cog(table).token_lifetime = 0.0
        held.release()
        await table.fake.wait_until(
            lambda: table.live().record.state == "running" or None, 30.0, "never started"
        )
        await table.drain()
        assert log_lines(table)[-1] == t("ru", "host.started")
        assert started.original is not None and started.original.content == t(
            "ru", "host.still_starting"
        )


async def test_a_start_that_outlives_its_wait_but_not_the_token_replaces_still_starting():
    async with bot_table(players=8) as table:
        await table.open_lobby()
        host_cog(table).start_wait = 0.0
        held = table.fake.hang("POST", r"/guilds/\d+/channels", count=1)
        started = await table.slash("host", "host start")
        assert (await started.wait_original(30.0)).content == t("ru", "host.still_starting")
        held.release()
        await table.fake.wait_until(
            lambda: (
                started.original is not None
                and started.original.content == t("ru", "host.started")
                or None
            ),
            30.0,
            "the answer still says the game is starting",
        )
        await table.drain()
        assert t("ru", "host.started") not in log_lines(table)  # said once, where the host asked


async def test_a_start_cut_off_by_a_restart_is_answered_by_the_next_process():
    await _cut_off_then_answered(token_gone=False)


async def test_a_start_cut_off_by_a_restart_past_the_token_says_in_the_log_that_it_started():
    await _cut_off_then_answered(token_gone=True)


async def _cut_off_then_answered(*, token_gone: bool) -> None:
    async with restartable(8) as (fake, world, config):
        async with bot_on(fake, world, config) as first:
            await first.open_lobby()
            held = fake.hang("POST", r"/guilds/\d+/channels", count=1)
            started = await first.slash("host", "host start", wait=False)
            await fake.wait_until(lambda: held.hits or None, 10.0, "nothing was created")
        held.release()
        if token_gone:
            fake.interaction_token_lifetime = 0.0
        async with bot_on(fake, world, config) as second:
            if token_gone:
                host_cog(second).token_lifetime = 0.0
            await fake.wait_until(
                lambda: second.live().record.state == "running" or None,
                30.0,
                "the start was not resumed",
            )
            await second.drain()
            if token_gone:
                assert log_lines(second)[-1] == t("ru", "host.started")
                assert started.original is None or started.original.loading  # Discord took no edit
            else:
                original = await started.wait_original(30.0)
                assert original.content == t("ru", "host.started")
                assert t("ru", "host.started") not in log_lines(second)


def role_changes(table: Table, player: str, mark: int) -> list[Any]:
    """The calls that gave or took a player's roles since the fake's call ``mark``."""
    user = table.member(player).user.id
    return [
        call
        for call in table.fake.calls()[mark:]
        if call.method in ("PUT", "DELETE") and f"/members/{user}/roles/" in call.path
    ]


async def test_a_pass_while_a_death_is_being_carried_out_repairs_nothing_and_doubles_no_call():
    """Found under load: a pass that looked while a death's role changes were still on their way
    saw the dead player with his living role and gave and took the roles a second time. A pass
    meets the game's own changes in flight: it repairs nothing and looks again once they are made."""
    async with bot_table(players=8) as table:
        await one_city(table)
        reconciler = host_cog(table).footprint
        game_id = table.live().id
        victim = citizen(table, "Верона")
        route = r"/guilds/\d+/members/\d+/roles/\d+"
        mark = len(table.fake.calls())
        held = table.fake.hang("DELETE", route, count=1)
        await accepted(table, "host", "host kill", {"player": victim})
        await table.fake.wait_until(
            lambda: held.hits or None, REPAIR, "the death's role change was not made"
        )
        assert await reconciler.reconcile(game_id) is None
        held.release()
        await table.drain()
        changes = role_changes(table, victim, mark)
        assert sorted(call.method for call in changes) == [
            "DELETE",
            "PUT",
        ]  # the death's own, once each
        assert may(table, table.city_channel("Верона"), victim) & VIEW
        assert not may(table, table.city_channel("Верона"), victim) & SEND


async def test_a_pass_while_a_death_is_being_committed_repairs_nothing_and_doubles_no_call():
    """Found under load (the 200-player start gave and took every death's roles twice): a pass
    that read the game while a death was applied in memory and not yet stored declared the dead
    player dead before the death's own role changes were queued, and repaired them itself. A
    pass never reads the game while a command holds its lock; it looks again after."""
    async with bot_table(players=8) as table:
        await one_city(table)
        reconciler = host_cog(table).footprint
        game_id = table.live().id
        victim = citizen(table, "Верона")
        storage = table.bot.storage
        storing, release = asyncio.Event(), asyncio.Event()
        append_command = storage.append_command

        async def held_commit(*args: Any, **kwargs: Any) -> Any:
            storing.set()
            await release.wait()
            return await append_command(*args, **kwargs)

        storage.append_command = held_commit  # type: ignore[method-assign]
        mark = len(table.fake.calls())
        kill = asyncio.ensure_future(accepted(table, "host", "host kill", {"player": victim}))
        await asyncio.wait_for(storing.wait(), 60)
        assert not table.game.is_alive(victim)  # applied in memory, not stored yet
        lock = table.bot.service.lock(game_id)
        looked = asyncio.ensure_future(reconciler.reconcile(game_id))
        await table.fake.wait_until(
            lambda: looked.done() or len(lock._waiters or ()) > 0, REPAIR, "the pass never ended"
        )
        storage.append_command = append_command  # type: ignore[method-assign]
        release.set()
        await kill
        assert await looked is None
        await table.drain()
        changes = role_changes(table, victim, mark)
        assert sorted(call.method for call in changes) == ["DELETE", "PUT"]  # the death's own
