"""A running game at Discord's caps fails closed, end to end against the strict fake.

The fake refuses a 251st role (30005) and a 501st channel (30013) as Discord does. What the
game makes after its start is made before what it replaces is taken away: at the role cap a
player who turns pings off keeps his city role and is told so, a member who asks to watch is
told he cannot, and nothing is promised that is not there. When Discord refuses anyway (the
cap reached after the bot counted), the player keeps what he had and he and the host are told.
A channel a person deleted at the channel cap is made again once room is freed, and the host
is told both times.
"""

from __future__ import annotations

from typing import Any

import pytest

from bot.channels import Layout
from bot.footprint import declared
from bot.footprint.room import CHANNEL_CAP, ROLE_CAP
from bot.i18n import t
from tests.cogs.scenes import SEND, VIEW, quick_edits, run
from tests.harness import Table, bot_table

WAIT = 60.0
ROLES_ROUTE = r"/guilds/\d+/roles"


async def fill_roles(table: Table, total: int) -> list[int]:
    """Roles made by a human until the guild holds ``total``; the bot has seen them."""
    guild = table.fake.state.guild(table.guild_id)
    made = []
    while len(guild.roles) < total:
        made.append(table.fake.create_role(table.guild_id, f"role {len(guild.roles)}").id)
    await table.fake.wait_until(
        lambda: len(table.bot.get_guild(table.guild_id).roles) == total or None,
        WAIT,
        "the bot never saw the roles",
    )
    return made


async def fill_channels(table: Table, total: int) -> list[int]:
    """Channels made by a human until the guild holds ``total``; the bot has seen them."""

    def count() -> int:
        return len([c for c in table.fake.state.guild_channels(table.guild_id) if not c.is_thread])

    made = []
    while count() < total:
        made.append(table.fake.create_channel(table.guild_id, f"chat {count()}").id)
    await table.fake.wait_until(
        lambda: len(table.bot.get_guild(table.guild_id).channels) == total or None,
        WAIT,
        "the bot never saw the channels",
    )
    return made


def may(table: Table, channel_id: int, who: str | int) -> int:
    """What Discord lets a member do in a channel."""
    return table.fake.permissions_for(table.guild_id, channel_id, table.member(who).user.id)


def log_lines(table: Table) -> list[str]:
    return table.channel_messages(int(table.live().record.channels["log"]))


def dms(table: Table, who: str | int) -> list[str]:
    """What the bot wrote to a member in private messages."""
    channel = table.fake.state.dm_channel(table.member(who).user.id)
    return [] if channel is None else table.channel_messages(channel.id)


async def logged(table: Table, text: str) -> None:
    await table.fake.wait_until(
        lambda: text in log_lines(table) or None,
        WAIT,
        f"the log never said {text!r}: {log_lines(table)[-3:]}",
    )


def citizen(table: Table, city: str) -> str:
    return next(p for p in table.game.alive(city) if table.game.status_of(p).value == "citizen")


def living_role(table: Table, city: str) -> int:
    return int(table.live().record.channels["roles"]["cities"][city]["living"])


def place_name(table: Table, channel_id: int) -> str:
    """A game channel's name as the game declares it (the host's log names it so)."""
    live = table.live()
    footprint = declared(live, live.game, Layout.from_channels(live.record.channels))
    return next(place.name for place in footprint.places if int(place.id) == channel_id)


def role_creates(table: Table) -> int:
    return len(table.fake.calls("POST", "/guilds/{guild_id}/roles"))


async def one_city(table: Table, language: str = "ru") -> None:
    """A one-city game of p0..p7 started (members past p7 do not play)."""
    quick_edits(table)
    if language != "ru":
        await run(table, "host", "admin language", {"language": language})
    await table.new_game(players=[f"p{i}" for i in range(8)], cities="Верона", maniac=False)


def still_in_his_city(table: Table, player: str) -> None:
    """The player holds his city role and reads and writes his city channel."""
    city = table.city_channel("Верона")
    assert living_role(table, "Верона") in table.member(player).roles
    assert may(table, city, player) & VIEW and may(table, city, player) & SEND
    assert player not in table.live().record.channels.get("quiet", [])


async def on_his_quiet_twin(table: Table, player: str, language: str = "ru") -> None:
    """Room was freed: the quiet twin is made by itself and the player moved onto it (his city
    role taken only after), he is told privately and the host in his log, once each."""
    told = t(language, "room.quiet_made")
    await table.fake.wait_until(lambda: told in dms(table, player) or None, WAIT, "not told")
    user = table.member(player).user.id
    await logged(table, t(language, "room.quiet_made_log", members=f"<@{user}>"))
    await table.drain()
    quiet = t(language, "game_role.quiet", game=table.live().id, city="Верона")
    roles = table.fake.state.guild(table.guild_id).roles.values()
    assert [r.id for r in roles if r.name == quiet and r.id in table.member(player).roles]
    assert living_role(table, "Верона") not in table.member(player).roles
    city = table.city_channel("Верона")
    assert may(table, city, player) & VIEW and may(table, city, player) & SEND
    assert player in table.live().record.channels["quiet"]
    assert dms(table, player).count(told) == 1


@pytest.mark.parametrize("language", ["ru", "en"])
async def test_notify_off_at_the_role_cap_keeps_the_city_role_then_is_done_once_room_is_freed(
    language: str,
):
    async with bot_table(players=8) as table:
        await one_city(table, language)
        player = citizen(table, "Верона")
        fillers = await fill_roles(table, ROLE_CAP)
        creates = role_creates(table)
        answer = await run(table, player, "mafia notify", {"state": "off"}, locale=language)
        assert answer.ephemeral
        assert answer.content == t(language, "notify.off_no_room", limit=ROLE_CAP)
        assert t(language, "notify.off") != answer.content
        await table.drain()
        still_in_his_city(table, player)
        assert role_creates(table) == creates  # nothing Discord would refuse was asked
        assert "quiet" not in table.live().record.channels["roles"]["cities"]["Верона"]
        # the setting is kept for his next games
        assert not await table.bot.service.wants_pings(table.member(player).user.id)

        table.fake.delete_role(table.guild_id, fillers[0])  # room freed: GUILD_ROLE_DELETE
        await on_his_quiet_twin(table, player, language)
        assert role_creates(table) == creates + 1


async def test_notify_on_again_before_room_is_freed_drops_the_wish():
    async with bot_table(players=8) as table:
        await one_city(table)
        changed_his_mind, still_wants = [
            p for p in table.game.alive("Верона") if table.game.status_of(p).value == "citizen"
        ][:2]
        fillers = await fill_roles(table, ROLE_CAP)
        for player in (changed_his_mind, still_wants):
            await run(table, player, "mafia notify", {"state": "off"})
        assert (await run(table, changed_his_mind, "mafia notify", {"state": "on"})).content == t(
            "ru", "notify.on"
        )
        table.fake.delete_role(table.guild_id, fillers[0])
        await on_his_quiet_twin(table, still_wants)
        still_in_his_city(table, changed_his_mind)
        assert t("ru", "room.quiet_made") not in dms(table, changed_his_mind)


async def test_notify_off_that_discord_refuses_leaves_the_player_where_he_was_and_tells_him():
    async with bot_table(players=8, refusals=True) as table:
        await one_city(table)
        player = citizen(table, "Верона")
        table.fake.fail(
            "POST",
            ROLES_ROUTE,
            status=400,
            count=1,
            code=30005,
            message="Maximum number of guild roles reached (250)",
        )
        await run(table, player, "mafia notify", {"state": "off"})
        reason = t("ru", "failure.max_roles", limit=ROLE_CAP)
        told = t("ru", "room.refused.notify", reason=reason)
        await table.fake.wait_until(
            lambda: told in dms(table, player) or None, WAIT, "the player was not told"
        )
        user = table.member(player).user.id
        await logged(table, t("ru", "room.refused_log.notify", members=f"<@{user}>", reason=reason))
        await table.drain()
        still_in_his_city(table, player)
        assert "quiet" not in table.live().record.channels["roles"]["cities"]["Верона"]
        removals = table.fake.calls(
            "DELETE", "/guilds/{guild_id}/members/{user_id}/roles/{role_id}"
        )
        assert [c for c in removals if c.params.get("user_id") == str(user)] == []
        # room freed (a role deleted): he is moved onto the quiet twin by himself
        table.fake.delete_role(table.guild_id, table.fake.create_role(table.guild_id, "x").id)
        await on_his_quiet_twin(table, player)


async def test_spectate_at_the_role_cap_is_refused_truthfully_and_makes_nothing():
    async with bot_table(players=10) as table:
        await one_city(table)
        outsider = "p9"
        assert table.game_status(table.member(outsider).user.id) is None
        await fill_roles(table, ROLE_CAP)
        creates = role_creates(table)
        answer = await run(table, outsider, "mafia spectate")
        assert answer.ephemeral
        assert answer.content == t("ru", "error.spectate_no_room", limit=ROLE_CAP)
        assert answer.content != t("ru", "spectate.started", game=table.live().id)
        await table.drain()
        assert table.live().record.channels.get("watching", []) == []
        assert role_creates(table) == creates
        assert not may(table, table.city_channel("Верона"), outsider) & VIEW


async def test_spectate_that_discord_refuses_is_taken_back_and_told():
    async with bot_table(players=10, refusals=True) as table:
        await one_city(table)
        outsider = "p9"
        table.fake.fail(
            "POST",
            ROLES_ROUTE,
            status=400,
            count=1,
            code=30005,
            message="Maximum number of guild roles reached (250)",
        )
        await run(table, outsider, "mafia spectate")
        reason = t("ru", "failure.max_roles", limit=ROLE_CAP)
        told = t("ru", "room.refused.spectate", reason=reason)
        await table.fake.wait_until(
            lambda: told in dms(table, outsider) or None, WAIT, "the member was not told"
        )
        await table.drain()
        record = table.live().record.channels
        assert record.get("watching", []) == [] and record.get("spectators") is None
        assert not may(table, table.city_channel("Верона"), outsider) & VIEW
        # asked again with room: he watches
        again = await run(table, outsider, "mafia spectate")
        assert again.content == t("ru", "spectate.started", game=table.live().id)
        await table.drain()
        assert may(table, table.city_channel("Верона"), outsider) & VIEW


@pytest.mark.parametrize("language", ["ru", "en"])
async def test_a_city_channel_deleted_at_the_channel_cap_is_made_again_once_room_is_freed(
    language: str,
):
    async with bot_table(players=8) as table:
        await one_city(table, language)
        fillers = await fill_channels(table, CHANNEL_CAP)
        old = table.city_channel("Верона")
        name = place_name(table, old)
        creates = len(table.fake.calls("POST", "/guilds/{guild_id}/channels"))
        # a person deletes the city channel and fills its place at once
        table.fake.delete_channel(old)
        fillers.append(table.fake.create_channel(table.guild_id, "flood").id)
        reason = t(language, "failure.max_channels", limit=CHANNEL_CAP)
        await logged(table, t(language, "footprint.no_room.channel", name=name, reason=reason))
        await table.drain()
        assert len(table.fake.calls("POST", "/guilds/{guild_id}/channels")) == creates
        assert table.city_channel("Верона") == old  # not made: the record keeps what it had

        table.fake.delete_channel(fillers[0])  # room freed
        new = await table.fake.wait_until(
            lambda: table.city_channel("Верона") != old and table.city_channel("Верона"),
            WAIT,
            "the city channel was not made again",
        )
        await logged(table, t(language, "footprint.room_again.channel", name=name))
        await table.drain()
        for player in table.game.alive("Верона"):
            assert may(table, new, player) & VIEW and may(table, new, player) & SEND
        said: list[Any] = [
            line
            for line in log_lines(table)
            if line.startswith(("⚠️", "✅")) and name in line and "Discord" not in line[:12]
        ]
        assert len(said) == 2, said  # told when it could not be made, and when it was


async def test_a_city_role_deleted_at_the_role_cap_is_made_again_and_given_back_once_room_is_freed():
    async with bot_table(players=8) as table:
        await one_city(table)
        fillers = await fill_roles(table, ROLE_CAP)
        old = living_role(table, "Верона")
        live = table.live()
        footprint = declared(live, live.game, Layout.from_channels(live.record.channels))
        name = next(role.name for role in footprint.roles if int(role.id) == old)
        residents = table.game.alive("Верона")
        creates = role_creates(table)
        table.fake.delete_role(table.guild_id, old)  # a person deletes it and fills its place
        fillers.append(table.fake.create_role(table.guild_id, "flood").id)
        reason = t("ru", "failure.max_roles", limit=ROLE_CAP)
        await logged(table, t("ru", "footprint.no_room.role", name=name, reason=reason))
        await table.drain()
        assert role_creates(table) == creates and living_role(table, "Верона") == old

        table.fake.delete_role(table.guild_id, fillers[0])  # room freed
        await logged(table, t("ru", "footprint.room_again.role", name=name))
        await table.drain()
        new = living_role(table, "Верона")
        assert new != old
        city = table.city_channel("Верона")
        for player in residents:
            assert new in table.member(player).roles
            assert may(table, city, player) & VIEW and may(table, city, player) & SEND


async def test_spectate_after_the_end_that_discord_refuses_is_taken_back_and_told():
    async with bot_table(players=10, refusals=True) as table:
        quick_edits(table)
        players = [f"p{i}" for i in range(8)]
        await table.new_game(players=players, cities="Верона", maniac=False, spectators="after")
        game = table.live().id
        city = table.city_channel("Верона")
        await run(table, "host", "host end")
        await table.drain()
        table.fake.fail(
            "POST",
            ROLES_ROUTE,
            status=400,
            count=1,
            code=30005,
            message="Maximum number of guild roles reached (250)",
        )
        await run(table, "p8", "mafia spectate")
        told = t("ru", "room.refused.spectate", reason=t("ru", "failure.max_roles", limit=ROLE_CAP))
        await table.fake.wait_until(
            lambda: told in dms(table, "p8") or None, WAIT, "the member was not told"
        )
        await table.drain()
        record = await table.bot.storage.game(game)
        assert record is not None
        assert record.channels.get("watching", []) == [] and not record.channels.get("spectators")
        assert not may(table, city, "p8") & VIEW
        again = await run(table, "p8", "mafia spectate")  # with room: he reads
        assert again.content == t("ru", "spectate.started", game=game)
        await table.drain()
        assert may(table, city, "p8") & VIEW and not may(table, city, "p8") & SEND


async def test_the_spectators_role_deleted_at_the_role_cap_waits_and_nobody_is_promised_a_seat():
    async with bot_table(players=11) as table:
        await one_city(table)
        assert (await run(table, "p8", "mafia spectate")).content == t(
            "ru", "spectate.started", game=table.live().id
        )
        await table.drain()
        city = table.city_channel("Верона")
        assert may(table, city, "p8") & VIEW
        fillers = await fill_roles(table, ROLE_CAP)
        name = t("ru", "game_role.spectators", game=table.live().id)
        roles = table.fake.state.guild(table.guild_id).roles.values()
        old = next(role.id for role in roles if role.name == name)
        table.fake.delete_role(table.guild_id, old)  # deleted, its place filled at once
        fillers.append(table.fake.create_role(table.guild_id, "flood").id)
        reason = t("ru", "failure.max_roles", limit=ROLE_CAP)
        await logged(table, t("ru", "footprint.no_room.role", name=name, reason=reason))
        await table.drain()
        # a new member is not told the cities are open to him while the role waits
        refused = await run(table, "p9", "mafia spectate")
        assert refused.content == t("ru", "error.spectate_no_room", limit=ROLE_CAP)
        assert table.member("p9").user.id not in table.live().record.channels["watching"]

        table.fake.delete_role(table.guild_id, fillers[0])  # room freed
        await logged(table, t("ru", "footprint.room_again.role", name=name))
        await table.drain()
        assert may(table, city, "p8") & VIEW and not may(table, city, "p8") & SEND
        again = await run(table, "p9", "mafia spectate")
        assert again.content == t("ru", "spectate.started", game=table.live().id)
        await table.drain()
        assert may(table, city, "p9") & VIEW


async def test_pings_on_while_the_city_role_waits_for_room_keep_the_quiet_twin():
    async with bot_table(players=8) as table:
        await one_city(table)
        player = citizen(table, "Верона")
        await run(table, player, "mafia notify", {"state": "off"})
        await table.drain()
        quiet = t("ru", "game_role.quiet", game=table.live().id, city="Верона")
        twin = next(
            r.id for r in table.fake.state.guild(table.guild_id).roles.values() if r.name == quiet
        )
        assert twin in table.member(player).roles
        fillers = await fill_roles(table, ROLE_CAP)
        table.fake.delete_role(table.guild_id, living_role(table, "Верона"))
        fillers.append(table.fake.create_role(table.guild_id, "flood").id)
        await table.fake.wait_until(
            lambda: any(line.startswith("⚠️") for line in log_lines(table)) or None,
            WAIT,
            "the host was not told the city role waits for room",
        )
        await table.drain()
        answer = await run(table, player, "mafia notify", {"state": "on"})
        assert answer.content == t("ru", "notify.on_no_room", limit=ROLE_CAP)
        await table.drain()
        assert twin in table.member(player).roles
        city = table.city_channel("Верона")
        assert may(table, city, player) & VIEW and may(table, city, player) & SEND


async def test_the_end_while_the_spectators_role_is_refused_still_locks_every_channel():
    """The first spectator asks, the role's making is under way, the end's lock is stored naming
    it; then the guild fills up and Discord refuses the role. The lock holds all the same."""
    async with bot_table(players=10, refusals=True) as table:
        await one_city(table)
        held = table.fake.hang("POST", ROLES_ROUTE, count=1)
        await run(table, "p8", "mafia spectate")
        await table.fake.wait_until(lambda: held.hits or None, WAIT, "the role was not asked for")
        living = table.game.alive("Верона")
        game = table.live().id
        city = table.city_channel("Верона")
        await run(table, "host", "host end")
        await fill_roles(table, ROLE_CAP)
        held.release()  # Discord now has no room: 30005
        told = t("ru", "room.refused.spectate", reason=t("ru", "failure.max_roles", limit=ROLE_CAP))
        await table.fake.wait_until(
            lambda: told in dms(table, "p8") or None, WAIT, "the member was not told"
        )
        await table.drain()
        await table.fake.wait_until(
            lambda: not any(may(table, city, p) & SEND for p in living) or None,
            WAIT,
            "the living still write after the end",
        )
        record = await table.bot.storage.game(game)
        assert record is not None and not record.channels.get("spectators")
        assert not may(table, city, "p8") & VIEW
