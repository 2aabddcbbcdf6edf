"""What a game makes mid-game or at its end is part of its declared footprint, and kept true.

A quiet twin, the spectators' role with its overwrite on each city channel,
and the end's lock are derived from the game (who is quiet, who watches,
whether it has ended) like everything it made at its start: a member with
Manage Roles and Manage Channels (the fake plays him, with the gateway
events Discord sends) who removes the spectators' overwrite, takes a
spectator's role, edits the quiet twin's overwrite or unlocks a finished
game's channel sees it put back. What each member may then do is asserted
by Discord's own algorithm (``fake.permissions_for``).
"""

from __future__ import annotations

from typing import Any

from bot.i18n import t
from tests.cogs.scenes import SEND, VIEW, accepted, quick_edits, run
from tests.cogs.test_provision import restartable
from tests.fakediscord.permissions import OVERWRITE_ROLE, Overwrite
from tests.harness import Table, bot_on, bot_table

PLAYERS = [f"p{i}" for i in range(10)]
REPAIR = 30.0


def may(table: Table, channel_id: int, user_id: int) -> int:
    """What Discord lets a member do in a channel."""
    return table.fake.permissions_for(table.guild_id, channel_id, user_id)


def spectators_role(table: Table, game: int) -> int:
    """The id of the game's spectators' role on Discord."""
    return next(
        r.id
        for r in table.fake.state.guild(table.guild_id).roles.values()
        if r.name == t("ru", "game_role.spectators", game=game)
    )


async def watched(table: Table, game: int, who: str) -> tuple[int, int]:
    """``who`` watches the game: his id and the spectators' role, once made and his."""
    assert (await run(table, who, "mafia spectate")).content == t(
        "ru", "spectate.started", game=game
    )
    await table.drain()
    role = spectators_role(table, game)
    assert role in table.member(who).roles
    return table.member(who).user.id, role


async def test_the_spectators_overwrite_or_role_a_person_removes_is_put_back():
    async with bot_table(players=10) as table:
        quick_edits(table)
        await table.new_game(players=PLAYERS[:8], cities="Верона", maniac=False)
        user, role = await watched(table, table.live().id, "p8")
        city = table.city_channel("Верона")
        assert may(table, city, user) & VIEW

        table.fake.delete_overwrite(city, role)  # "who are these people reading us"
        assert not may(table, city, user) & VIEW
        await table.fake.wait_until(
            lambda: may(table, city, user) & VIEW or None,
            REPAIR,
            "the spectators' overwrite was not put back",
        )
        assert not may(table, city, user) & SEND

        table.fake.remove_member_role(table.guild_id, user, role)
        await table.fake.wait_until(
            lambda: role in table.member("p8").roles or None,
            REPAIR,
            "the spectator did not get his role back",
        )
        assert may(table, city, user) & VIEW and not may(table, city, user) & SEND


async def test_the_quiet_twins_overwrite_a_person_edits_is_put_back():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.new_game(cities="Верона", maniac=False)
        quiet = next(
            p for p in table.game.alive("Верона") if table.game.status_of(p).value == "citizen"
        )
        assert (
            t("ru", "notify.off")
            in (await run(table, quiet, "mafia notify", {"state": "off"})).content
        )
        await table.drain()
        living = int(table.live().record.channels["roles"]["cities"]["Верона"]["living"])
        twin = next(
            r.id
            for r in table.fake.state.guild(table.guild_id).roles.values()
            if r.name == t("ru", "game_role.quiet", game=table.live().id, city="Верона")
        )
        user = int(quiet)
        assert twin in table.member(quiet).roles and living not in table.member(quiet).roles
        city = table.city_channel("Верона")
        assert may(table, city, user) & SEND

        table.fake.delete_overwrite(city, twin)  # the quiet resident no longer sees his city
        assert not may(table, city, user) & VIEW
        await table.fake.wait_until(
            lambda: may(table, city, user) & SEND or None,
            REPAIR,
            "the quiet twin's overwrite was not put back",
        )


async def ended(table: Table) -> dict[str, Any]:
    """A one-city game played to its end by the host (``/host end``), its lock on; its channels."""
    quick_edits(table)
    await table.new_game(players=PLAYERS[:8], cities="Верона", maniac=False)
    channels = dict(table.live().record.channels)
    players = list(table.game.players)
    victim = next(
        p for p in table.game.alive("Верона") if table.game.status_of(p).value == "citizen"
    )
    await accepted(table, "host", "host kill", {"player": victim})
    assert (await run(table, "host", "host end")).content == t("ru", "host.ended_reply")
    await table.drain()
    channels["players"], channels["victim"] = players, victim
    for player in players:
        assert not may(table, int(channels["cities"]["Верона"]["text"]), int(player)) & SEND
    return channels


async def test_a_finished_games_channel_a_person_unlocks_is_locked_again():
    async with bot_table(players=10) as table:
        channels = await ended(table)
        city, dead_channel = int(channels["cities"]["Верона"]["text"]), int(channels["dead"])
        living = int(channels["roles"]["cities"]["Верона"]["living"])
        dead = int(channels["roles"]["dead"])
        alive = next(p for p in channels["players"] if p != channels["victim"])
        allow = VIEW | SEND
        table.fake.set_overwrite(
            city, Overwrite(living, OVERWRITE_ROLE, allow=allow)
        )  # "let us chat on"
        table.fake.set_overwrite(dead_channel, Overwrite(dead, OVERWRITE_ROLE, allow=allow))
        assert may(table, city, int(alive)) & SEND
        await table.fake.wait_until(
            lambda: (
                not may(table, city, int(alive)) & SEND
                and not may(table, dead_channel, int(channels["victim"])) & SEND
                or None
            ),
            REPAIR,
            "the finished game's channels stayed unlocked",
        )
        assert (
            may(table, city, int(alive)) & VIEW
            and may(table, dead_channel, int(channels["victim"])) & VIEW
        )


async def test_a_spectator_of_a_finished_game_keeps_reading_what_a_person_takes_away():
    async with bot_table(players=10) as table:
        quick_edits(table)
        await table.new_game(players=PLAYERS[:8], cities="Верона", maniac=False, spectators="after")
        game = table.live().id
        await run(table, "host", "host end")
        await table.drain()
        user, role = await watched(table, game, "p8")
        city = int((await table.bot.storage.game(game)).channels["cities"]["Верона"]["text"])
        assert may(table, city, user) & VIEW

        table.fake.delete_overwrite(city, role)
        await table.fake.wait_until(
            lambda: may(table, city, user) & VIEW or None,
            REPAIR,
            "the spectators' overwrite of the finished game was not put back",
        )
        assert not may(table, city, user) & SEND


async def test_a_finished_games_channel_unlocked_while_the_bot_was_down_is_locked_after_the_restart():
    async with restartable(8) as (fake, world, config):
        async with bot_on(fake, world, config) as first:
            quick_edits(first)
            await first.new_game(cities="Верона", maniac=False)
            channels = first.live().record.channels
            city = first.city_channel("Верона")
            living = int(channels["roles"]["cities"]["Верона"]["living"])
            player = int(next(iter(first.game.players)))
            assert (await run(first, "host", "host end")).content == t("ru", "host.ended_reply")
            await first.drain()
            assert not fake.permissions_for(world.guild.id, city, player) & SEND
        fake.set_overwrite(city, Overwrite(living, OVERWRITE_ROLE, allow=VIEW | SEND))
        assert fake.permissions_for(world.guild.id, city, player) & SEND
        async with bot_on(fake, world, config):
            await fake.wait_until(
                lambda: not fake.permissions_for(world.guild.id, city, player) & SEND or None,
                REPAIR,
                "the finished game's channel stayed unlocked after the restart",
            )
