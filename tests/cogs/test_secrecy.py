"""Secrecy, from the players' side: what a non-mafioso's Discord client receives names no mafioso.

``fake.client_view(user)`` is everything Discord would let that member's client
know (channels obfuscated per member, threads, roles with their members, the
member list, the audit log if he may read it, the messages he can read). At
the start, after a death by day and a kill by night, and at the end, for every
player who is not a mafioso and whose server permissions do not bypass
overwrites, nothing in it may tell who the mafiosi are: the mafia rooms reach
him obfuscated, every role's members are a public set (a city's living
residents, the dead), and no line he can read pairs a living player with his
status.
"""

from __future__ import annotations

import re

from bot.i18n import t
from rules import Status
from tests.cogs.scenes import SEND, VIEW, quick_edits, run
from tests.fakediscord import Permission
from tests.harness import Table, bot_table

OBFUSCATED = 1 << 17


def public_sets(table: Table) -> list[set[str]]:
    """The member sets a role may have without telling a secret."""
    game = table.game
    sets = [{p for p in game.players if not game.is_alive(p)}]
    sets.extend(set(game.alive(city)) for city in game.cities)
    return sets


def leaks_to(table: Table, user_id: int, *, over: bool = False) -> list[str]:
    """What ``user_id``'s client receives that names a mafioso as such (``over``: the game has
    ended and its summary told every status, as it should; the rooms and roles still tell
    nothing)."""
    game = table.game
    live = table.live() if table.bot.service.games() else None
    view = table.fake.client_view(user_id, table.guild_id)
    assert not view.administrator, "a player who bypasses overwrites sees everything"
    mafiosi = {p for p in game.players if game.status_of(p) is Status.MAFIOSO}
    leaks: list[str] = []
    channels = live.record.channels if live is not None else table.channels
    for city in game.cities:
        room = view.channel(int(channels["cities"][city]["mafia"]))
        if room is None:
            continue  # deleted at the end
        if not int(room.get("flags") or 0) & OBFUSCATED:
            leaks.append(f"the mafia room of {city} reaches him whole")
        if room["name"] != "___hidden___" or len(room.get("permission_overwrites", [])) > 1:
            leaks.append(f"the mafia room of {city} shows its name or overwrites: {room}")
    allowed = public_sets(table)
    for role in view.roles:
        members = set(role["members"])
        if role["name"] == "@everyone" or not members & set(game.players):
            continue
        if members & mafiosi and not any(members <= public for public in allowed):
            leaks.append(f"role {role['name']!r} holds {sorted(members)}, mafiosi among them")
    if view.audit_log:
        leaks.append(f"he reads the audit log ({len(view.audit_log)} entries)")
    for thread in view.threads:
        leaks.append(f"thread {thread['name']!r}")
    statuses = [t(table.live().language if live else "ru", f"status.{s.value}") for s in Status]
    for message in [] if over else view.messages:
        if message.get("flags", 0) & 64:
            continue  # his own private answers
        for line in (message.get("content") or "").splitlines():
            named = set(re.findall(r"<@(\d+)>", line)) & mafiosi
            alive = {p for p in named if game.is_alive(p)}
            if alive and any(re.search(rf"\b{s}\b", line) for s in statuses) and "💀" not in line:
                leaks.append(f"a line names a living mafioso with a status: {line}")
    return leaks


def watchers(table: Table) -> list[int]:
    """The players who are not mafiosi (living or dead)."""
    game = table.game
    return [int(p) for p in game.players if game.status_of(p) is not Status.MAFIOSO]


async def test_no_non_mafioso_client_learns_who_the_mafiosi_are_through_a_game():
    async with bot_table(players=16) as table:
        quick_edits(table)
        # one player is an administrator: he sees every room, and the host is told so
        admins = table.fake.create_role(
            table.guild_id, "Admins", permissions=int(Permission.ADMINISTRATOR)
        )
        admin = table.member("p15").user.id
        table.fake.add_member_role(table.guild_id, admin, admins.id)
        # the mafia rooms stay closed at the end too (by default they open to every player then)
        await table.new_game(cities="Верона, Падуя", maniac=False, reveal_at_end=False)
        table.channels = table.live().record.channels
        others = [uid for uid in watchers(table) if uid != admin]
        assert others

        def check() -> None:
            for uid in others:
                assert leaks_to(table, uid) == [], uid

        check()
        assert table.fake.client_view(admin, table.guild_id).administrator  # he would see it all

        # a day: a mafioso of the first city is executed; a night: a kill by each mafia
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
            living = [
                p for p in table.game.alive(city) if table.game.status_of(p) is Status.MAFIOSO
            ]
            targets = [
                p for p in table.game.alive(city) if table.game.status_of(p) is not Status.MAFIOSO
            ]
            if living and targets:
                await run(table, table.name(living[0]), "kill", {"player": targets[0]})
        await run(table, "host", "host next")
        await table.drain()
        check()

        await run(table, "host", "host end")
        await table.drain()
        for uid in others:
            assert leaks_to(table, uid, over=True) == [], uid


async def test_at_the_end_every_player_reads_the_mafia_rooms_and_the_log_and_nobody_writes():
    async with bot_table(players=16) as table:
        quick_edits(table)
        live = await table.new_game(cities="Верона, Падуя", maniac=False)
        channels = live.record.channels
        rooms = [int(ids["mafia"]) for ids in channels["cities"].values()] + [int(channels["log"])]
        players = [int(p) for p in table.game.players]
        honest = [p for p in players if table.game.status_of(str(p)) is not Status.MAFIOSO]
        assert not any(
            table.fake.permissions_for(table.guild_id, room, honest[0]) & VIEW for room in rooms
        )
        await run(table, "host", "host end")
        await table.drain()
        for room in rooms:
            for player in players:
                allowed = table.fake.permissions_for(table.guild_id, room, player)
                assert allowed & VIEW and not allowed & SEND, (room, player)
        calls = [
            c
            for c in table.fake.calls("PATCH", "/channels/{channel_id}")
            if int(c.params["channel_id"]) in rooms
        ]
        assert len(calls) == len(rooms)  # one edit per channel, through the permissions lane
