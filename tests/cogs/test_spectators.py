"""Spectators: ``/mafia spectate`` lets a member who does not play read the city channels.

Secrecy first, from the spectator's own client (``fake.client_view``) through
a whole game, the end's reveal included: he reads every city channel and
writes in none, and never reaches a mafia room, the host's log, the dead's
channel, the tribune, or a line pairing a living player with his status. Then
who may watch (not a player, not the host, not a co-host), how it stops (the
command again, ``/mafia leave``), the host's setting (off, on, after the
game), that a spectator does not take a seat unless the host seats him with
``/host replace`` (then he stops watching), and that he cannot be a co-host.
"""

from __future__ import annotations

import asyncio
from typing import Any

from bot.footprint import SPECTATORS_KEY
from bot.i18n import t
from bot.storage import OutboxItem
from rules import Status
from tests.cogs.scenes import SEND, VIEW, assert_unchanged, quick_edits, run, snapshot
from tests.cogs.test_secrecy import leaks_to
from tests.fakediscord import Permission
from tests.harness import Table, bot_table

PLAYERS = [f"p{i}" for i in range(16)]
READS = int(Permission.VIEW_CHANNEL | Permission.READ_MESSAGE_HISTORY)
WRITES = int(
    Permission.SEND_MESSAGES
    | Permission.ADD_REACTIONS
    | Permission.ATTACH_FILES
    | Permission.SPEAK
    | Permission.SEND_MESSAGES_IN_THREADS
    | Permission.USE_APPLICATION_COMMANDS
)


def places(table: Table) -> tuple[list[int], list[int]]:
    """The game's city channels, and every other channel of it."""
    channels = table.channels
    cities = [int(ids["text"]) for ids in channels["cities"].values()]
    others = [int(ids["mafia"]) for ids in channels["cities"].values()] + [
        int(channels["log"]),
        int(channels["dead"]),
        int(channels["voice"]),
    ]
    return cities, others


def sees(table: Table, user_id: int) -> tuple[list[int], list[int]]:
    """Of the game's channels: those he reads (and writes in none), those he reaches at all."""
    cities, others = places(table)
    read = [
        c
        for c in cities + others
        if table.fake.permissions_for(table.guild_id, c, user_id) & READS == READS
    ]
    for channel in cities + others:
        assert not table.fake.permissions_for(table.guild_id, channel, user_id) & WRITES, channel
    return read, [
        c for c in cities + others if table.fake.client_view(user_id, table.guild_id).sees(c)
    ]


async def test_a_spectator_reads_the_city_channels_and_no_secret_through_a_whole_game():
    async with bot_table(players=17) as table:
        quick_edits(table)
        await table.new_game(players=PLAYERS, cities="Верона, Падуя", maniac=False)
        table.channels = table.live().record.channels
        watcher = table.member("p16").user.id
        game_id = table.live().id
        started = await run(table, "p16", "mafia spectate")
        assert started.ephemeral and started.content == t("ru", "spectate.started", game=game_id)
        await table.drain()
        cities, _ = places(table)

        def check(*, over: bool = False) -> None:
            read, reached = sees(table, watcher)
            assert sorted(read) == sorted(cities) and sorted(reached) == sorted(cities)
            assert leaks_to(table, watcher, over=over) == []

        check()
        # a day: a mafioso of the first city is executed; a night: each mafia kills, the commissar checks
        game = table.game
        city = game.cities[0]
        mafioso = next(p for p in game.alive(city) if game.status_of(p) is Status.MAFIOSO)
        voters = [p for p in game.alive(city) if p != mafioso]
        await run(table, table.name(voters[0]), "nominate", {"player": mafioso})
        await run(table, "host", "host next")
        for voter in voters:
            await run(table, table.name(voter), "vote", {"player": mafioso})
        await run(table, "host", "host next")
        await table.drain()
        assert not table.game.is_alive(mafioso)
        check()
        for city in table.game.cities:
            alive = table.game.alive(city)
            living = [p for p in alive if table.game.status_of(p) is Status.MAFIOSO]
            targets = [p for p in alive if table.game.status_of(p) is not Status.MAFIOSO]
            commissar = next(
                (p for p in alive if table.game.status_of(p) is Status.COMMISSAR), None
            )
            if living and targets:
                await run(table, table.name(living[0]), "kill", {"player": targets[-1]})
            if commissar is not None and living:
                await run(table, table.name(commissar), "check", {"player": living[0]})
        await run(table, "host", "host next")
        await table.drain()
        check()
        # the end opens the mafia rooms and the log to every player (the reveal): not to him
        await run(table, "host", "host end")
        await table.drain()
        check(over=True)
        for (
            player
        ) in table.game.players:  # the players do read the rooms now: the reveal took place
            assert (
                table.fake.permissions_for(table.guild_id, places(table)[1][0], int(player)) & VIEW
            )
        role = next(
            r
            for r in table.fake.state.guild(table.guild_id).roles.values()
            if r.name == t("ru", "game_role.spectators", game=game_id)
        )
        assert role.permissions == 0 and not role.mentionable
        assert [
            m.user.id
            for m in table.fake.state.guild(table.guild_id).members.values()
            if role.id in m.roles
        ] == [watcher]


async def test_who_may_watch_and_how_it_stops():
    async with bot_table(players=10) as table:
        quick_edits(table)
        players = PLAYERS[:8]
        await table.open_lobby(players)
        lobby = await run(table, "p8", "mafia spectate")
        assert lobby.content == t("ru", "error.spectate_not_started")
        await run(table, "host", "host setup", {"cities": "Верона", "maniac": False})
        started = await run(table, "host", "host start")
        await started.wait_original(60.0)
        await table.drain()
        table.channels = table.live().record.channels
        city = places(table)[0][0]
        assert (await run(table, "p0", "mafia spectate")).content == t(
            "ru", "error.spectate_player"
        )
        assert (await run(table, "host", "mafia spectate")).content == t(
            "ru", "error.spectate_host"
        )
        watcher = table.member("p8").user.id
        assert not table.fake.permissions_for(table.guild_id, city, watcher) & VIEW

        assert (await run(table, "p8", "mafia spectate")).content == t(
            "ru", "spectate.started", game=table.live().id
        )
        await table.drain()
        assert table.fake.permissions_for(table.guild_id, city, watcher) & VIEW
        assert not table.fake.permissions_for(table.guild_id, city, watcher) & SEND
        stopped = await run(table, "p8", "mafia spectate")  # the same command again: stop
        assert stopped.content == t("ru", "spectate.stopped", game=table.live().id)
        await table.drain()
        assert not table.fake.permissions_for(table.guild_id, city, watcher) & VIEW

        await run(table, "p9", "mafia spectate")
        await table.drain()
        left = await run(table, "p9", "mafia leave")
        assert left.content == t("ru", "spectate.stopped", game=table.live().id)
        await table.drain()
        assert (
            not table.fake.permissions_for(table.guild_id, city, table.member("p9").user.id) & VIEW
        )
        assert table.live().record.channels["watching"] == []
        # one role for all of them, one overwrite on the city channel
        role = next(
            r
            for r in table.fake.state.guild(table.guild_id).roles.values()
            if r.name == t("ru", "game_role.spectators", game=table.live().id)
        )
        assert sum(1 for o in table.fake.state.channels[city].overwrites if o.id == role.id) == 1


async def test_the_host_lets_no_spectators_in_or_only_after_the_game():
    async with bot_table(players=10) as table:
        quick_edits(table)
        await table.new_game(players=PLAYERS[:8], cities="Верона", maniac=False, spectators="off")
        assert (await run(table, "p8", "mafia spectate")).content == t("ru", "error.spectators_off")
        await run(table, "host", "host end")
        await table.drain()

        await table.new_game(players=PLAYERS[:8], cities="Верона", maniac=False, spectators="after")
        game = table.live().id
        assert (
            t("ru", "lobby.spectators", mode=t("ru", "lobby.spectators_after"))
            in (await table.lobby_message()).content
        )
        table.channels = table.live().record.channels
        city = places(table)[0][0]
        assert (await run(table, "p8", "mafia spectate")).content == t(
            "ru", "error.spectators_after"
        )
        await run(table, "host", "host end")
        await table.drain()
        watcher = table.member("p8").user.id
        assert not table.fake.permissions_for(table.guild_id, city, watcher) & VIEW
        after = await run(table, "p8", "mafia spectate")
        assert after.content == t("ru", "spectate.started", game=game)
        await table.drain()
        allowed = table.fake.permissions_for(table.guild_id, city, watcher)
        assert allowed & VIEW and not allowed & SEND
        mafia = int(table.channels["cities"]["Верона"]["mafia"])
        assert not table.fake.permissions_for(table.guild_id, mafia, watcher) & VIEW
        assert (await table.bot.storage.game(game)).channels["watching"] == [watcher]


async def test_the_end_while_the_spectators_role_is_being_made_locks_the_channels_once_it_is():
    """Found by the chaos test: a first spectator asks just before the end, and the role is still
    being made when the end locks the channels. The lock waits for the role, and then every
    player's pen is gone and the spectator reads.

    The race made certain: whoever next asks what the provisioning lane has pending once the
    lock is stored (the lock looking whether the role is still being made) finds the role's
    making just done: the call is let go then, and its mark stored, before that look."""
    async with bot_table(players=10) as table:
        quick_edits(table)
        await table.new_game(players=PLAYERS[:8], cities="Верона", maniac=False)
        table.channels = table.live().record.channels
        game = table.live().id
        players = [int(p) for p in table.game.players]
        city = places(table)[0][0]
        storage = table.bot.storage
        pending, sent = storage.pending_outbox, storage.outbox_sent
        made = asyncio.Event()

        async def marked(item: OutboxItem, *args: Any, **kwargs: Any) -> None:
            await sent(item, *args, **kwargs)
            if item.kind == "create_role" and item.target.get("key") == SPECTATORS_KEY:
                made.set()

        async def looked(
            game_id: int | None = None, limit: int = 100, *, lane: str | None = None
        ) -> list[OutboxItem]:
            if (
                lane == "provision"
                and held.hits
                and not made.is_set()
                and any(item.kind == "edit_channel" for item in await pending(game_id, 1000))
            ):
                held.release()
                await made.wait()
            return await pending(game_id, limit, lane=lane)

        storage.pending_outbox, storage.outbox_sent = looked, marked  # type: ignore[method-assign]
        held = table.fake.hang("POST", r"/guilds/\d+/roles", count=1)
        assert (await run(table, "p8", "mafia spectate")).content == t(
            "ru", "spectate.started", game=game
        )
        await table.fake.wait_until(lambda: held.hits or None, 5.0, "the role was not being made")
        ended = await run(table, "host", "host end")
        assert ended.content == t("ru", "host.ended_reply")
        held.release()
        await table.drain()
        async with (
            table.bot.storage.transaction() as db,
            db.execute(
                "SELECT kind, state, last_error FROM outbox WHERE game_id = ? AND state != 'sent'",
                (game,),
            ) as cursor,
        ):
            assert [tuple(row) async for row in cursor] == []
        for player in players:
            assert not table.fake.permissions_for(table.guild_id, city, player) & SEND
        allowed = table.fake.permissions_for(table.guild_id, city, table.member("p8").user.id)
        assert allowed & VIEW and not allowed & SEND


def spectators_role(table: Table, game_id: int) -> int:
    """The id of the game's spectator role on Discord."""
    return next(
        r.id
        for r in table.fake.state.guild(table.guild_id).roles.values()
        if r.name == t("ru", "game_role.spectators", game=game_id)
    )


async def test_a_spectator_seated_by_host_replace_stops_watching_and_holds_only_his_city_role():
    async with bot_table(players=10) as table:
        quick_edits(table)
        await table.new_game(players=PLAYERS[:8], cities="Верона", maniac=False)
        table.channels = table.live().record.channels
        game_id = table.live().id
        watcher = table.member("p8").user.id
        assert (await run(table, "p8", "mafia spectate")).content == t(
            "ru", "spectate.started", game=game_id
        )
        await table.drain()
        spectators = spectators_role(table, game_id)
        assert spectators in table.fake.state.guild(table.guild_id).members[watcher].roles
        old = next(p for p in table.game.alive() if table.game.status_of(p) is Status.CITIZEN)

        replaced = await run(table, "host", "host replace", {"player": old, "newcomer": watcher})
        assert replaced.content == t("ru", "host.replaced", old=f"<@{old}>", new=f"<@{watcher}>")
        await table.drain()
        assert table.live().record.channels["watching"] == []
        assert table.game.city_of(str(watcher)) == "Верона"
        # one game role: the city's living residents' (the spectators' is taken back)
        living = int(table.channels["roles"]["cities"]["Верона"]["living"])
        game_roles = {
            spectators,
            living,
            *(int(r) for r in [table.channels["roles"].get("dead")] if r),
        }
        held = set(table.fake.state.guild(table.guild_id).members[watcher].roles) & game_roles
        assert held == {living}
        assert f"/guilds/{table.guild_id}/members/{watcher}/roles/{spectators}" in [
            c.path for c in table.fake.calls("DELETE")
        ]
        city = places(table)[0][0]
        assert table.fake.permissions_for(table.guild_id, city, watcher) & SEND  # a resident writes
        # a player now: he may not watch again
        assert (await run(table, "p8", "mafia spectate")).content == t(
            "ru", "error.spectate_player"
        )


async def test_a_co_host_does_not_watch_and_a_spectator_is_not_made_co_host():
    async with bot_table(players=10) as table:
        quick_edits(table)
        await table.new_game(players=PLAYERS[:8], cities="Верона", maniac=False)
        game_id = table.live().id
        cohost, watcher = table.member("p8").user.id, table.member("p9").user.id
        added = await run(table, "host", "host cohost add", {"member": cohost})
        assert added.content == t("ru", "host.cohost_added", member=f"<@{cohost}>")
        await table.drain()
        before = await snapshot(table)
        assert (await run(table, "p8", "mafia spectate")).content == t("ru", "error.spectate_host")
        await assert_unchanged(table, before)

        assert (await run(table, "p9", "mafia spectate")).content == t(
            "ru", "spectate.started", game=game_id
        )
        await table.drain()
        before = await snapshot(table)
        refused = await run(table, "host", "host cohost add", {"member": watcher})
        assert refused.content == t("ru", "error.cohost_spectates", member=f"<@{watcher}>")
        await assert_unchanged(table, before)
        assert table.live().record.lobby.get("cohosts") == [cohost]
        assert table.live().record.channels["watching"] == [watcher]
        # once he stops watching, he may be made co-host
        await run(table, "p9", "mafia leave")
        await table.drain()
        again = await run(table, "host", "host cohost add", {"member": watcher})
        assert again.content == t("ru", "host.cohost_added", member=f"<@{watcher}>")


async def test_a_spectator_who_leaves_the_server_no_longer_watches():
    async with bot_table(players=10) as table:
        quick_edits(table)
        await table.new_game(players=PLAYERS[:8], cities="Верона", maniac=False)
        game_id = table.live().id
        watcher = table.member("p8").user.id
        assert (await run(table, "p8", "mafia spectate")).content == t(
            "ru", "spectate.started", game=game_id
        )
        await table.drain()
        calls = len(table.fake.calls())
        table.fake.remove_member(table.guild_id, watcher)
        await table.fake.wait_until(
            lambda: table.live().record.channels["watching"] == [] or None, 5.0, "he still watches"
        )
        async with table.bot.service.lock(game_id):
            pass  # the record changes in memory before its commit, which holds the game's lock
        await table.drain()
        # nothing to take back on Discord: his roles went with him (a call for him would be refused)
        assert [
            f"{c.method} {c.path}" for c in table.fake.calls()[calls:] if str(watcher) in c.path
        ] == []
        assert (await table.bot.storage.game(game_id)).channels["watching"] == []
