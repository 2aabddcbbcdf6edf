"""One invariant, end to end against the strict fake: in every channel of a running game, its
category included, no member may do more than the rules let him, as Discord computes it.

A moderator (the fake plays him, and sends the gateway events Discord sends) lets people in
beside the game's own overwrites: a member overwrite on a mafia room, a new server role with
View Channel there, an overwrite on the category, Send Messages for a dead player, a game role
given to an outsider, Administrator. What each member may do is read from the fake's own
computation (``fake.permissions_for``, Discord's documented algorithm) and compared with what the
declared footprint allows (the same algorithm over the declared overwrites, the member's seat
alone): :func:`breaches` must come out empty once the reconciler passed, save what the bot
cannot change, which the host is told once.
"""

from __future__ import annotations

from typing import Any

from bot.channels import Layout, resolved
from bot.footprint import declared
from bot.footprint.effective import GOVERNED
from bot.i18n import t
from tests.cogs.scenes import SEND, VIEW, accepted, quick_edits
from tests.cogs.test_footprint import (
    ADMINISTRATOR,
    REPAIR,
    citizen,
    host_cog,
    killed,
    log_lines,
    one_city,
)
from tests.fakediscord.permissions import (
    ALL_PERMISSIONS,
    DEFAULT_BOT_PERMISSIONS,
    OVERWRITE_MEMBER,
    OVERWRITE_ROLE,
    Overwrite,
    Permission,
    apply_overwrites,
)
from tests.harness import Table, bot_table

Breach = tuple[int, int, int, int]
"""(member, channel, the governed bits he has, those the rules allow him), where they differ."""


def rules_now(table: Table) -> Any:
    """The footprint the rules declare for the running game now (once started, the record holds
    every id)."""
    live = table.live()
    return declared(live, live.game, resolved(Layout.from_channels(live.record.channels), {}))


def breaches(table: Table) -> list[Breach]:
    """Every member's governed permissions in every game channel where they differ from what the
    rules allow, both computed by the fake's algorithm (the bot itself aside)."""
    footprint = rules_now(table)
    seats: dict[int, int] = {}
    for seat in footprint.seats:
        seats.setdefault(seat.user, int(seat.role))
    guild = table.fake.guild(table.guild_id)
    found = []
    for place in footprint.places:
        channel = table.fake.channel(int(place.id))
        overwrites = [
            Overwrite(int(o.target), o.type, allow=o.allow, deny=o.deny) for o in place.overwrites
        ]
        declared_members = {int(o.target) for o in place.overwrites if o.type == OVERWRITE_MEMBER}
        allowed: dict[tuple[int | None, int], int] = {}
        for user in guild.members:
            if user == table.fake.bot_user.id:
                continue
            has = table.fake.permissions_for(table.guild_id, channel.id, user) & GOVERNED
            seat = seats.get(user)
            key = (seat, user if user in declared_members else 0)
            if key not in allowed:  # the same for every member of a seat without his own
                allowed[key] = GOVERNED & apply_overwrites(
                    ALL_PERMISSIONS & ~Permission.ADMINISTRATOR,
                    guild_id=table.guild_id,
                    member_id=key[1],
                    member_role_ids=[] if seat is None else [seat],
                    overwrites=overwrites,
                    is_text_channel=channel.type in (0, 2),
                    is_voice_channel=channel.type == 2,
                )
            if has != allowed[key]:
                found.append((user, channel.id, has, allowed[key]))
    return found


async def held(table: Table) -> None:
    """The outbox drained and the invariant holds (everyone may do exactly what the rules allow,
    of what the game governs)."""
    await table.drain()
    assert breaches(table) == []


def may(table: Table, channel_id: int, user: int) -> int:
    return table.fake.permissions_for(table.guild_id, channel_id, user)


def mafioso(table: Table, city: str) -> str:
    return next(p for p in table.game.alive(city) if table.game.status_of(p).value == "mafioso")


def overwrite_calls(table: Table, mark: int, channel: int, target: int) -> list[str]:
    """The bot's calls that changed this overwrite since the fake's call ``mark``."""
    path = f"/channels/{channel}/permissions/{target}"
    return [call.method for call in table.fake.calls()[mark:] if call.path == path]


async def gone(table: Table, channel: int, user: int, bits: int, what: str) -> None:
    await table.fake.wait_until(
        lambda: not may(table, channel, user) & bits or None, REPAIR, f"{what} stays"
    )


async def test_a_member_overwrite_letting_a_citizen_into_the_mafia_room_is_deleted_in_one_pass():
    async with bot_table(players=8) as table:
        await one_city(table)
        await held(table)
        room, spy = table.mafia_channel("Верона"), int(citizen(table, "Верона"))
        mark = len(table.fake.calls())
        table.fake.set_overwrite(
            room, Overwrite(spy, OVERWRITE_MEMBER, allow=VIEW | SEND)
        )  # "come and see"
        assert may(table, room, spy) & VIEW
        await gone(table, room, spy, VIEW, "the citizen reads the mafia room")
        await held(table)
        assert overwrite_calls(table, mark, room, spy) == ["DELETE"]  # one change, no retries
        boss = int(mafioso(table, "Верона"))
        assert may(table, room, boss) & VIEW and may(table, room, boss) & SEND


async def test_a_new_role_with_view_on_the_mafia_room_lets_neither_an_outsider_nor_a_citizen_in():
    async with bot_table(players=8) as table:
        await one_city(table)
        room, spy = table.mafia_channel("Верона"), int(citizen(table, "Верона"))
        outsider = table.fake.add_member(table.guild_id, "outsider").user.id
        friends = table.fake.create_role(table.guild_id, "Друзья")
        table.fake.set_overwrite(room, Overwrite(friends.id, OVERWRITE_ROLE, allow=VIEW))
        mark = len(table.fake.calls())
        table.fake.add_member_role(table.guild_id, outsider, friends.id)
        table.fake.add_member_role(table.guild_id, spy, friends.id)
        assert may(table, room, outsider) & VIEW and may(table, room, spy) & VIEW
        await gone(table, room, outsider, VIEW, "the outsider reads the mafia room")
        await gone(table, room, spy, VIEW, "the citizen reads the mafia room")
        await held(table)
        assert overwrite_calls(table, mark, room, friends.id) == ["DELETE"]
        assert friends.id in table.fake.member(table.guild_id, spy).roles  # his server role kept


async def test_a_role_overwrite_allowing_more_than_view_keeps_what_it_denies():
    async with bot_table(players=8) as table:
        await one_city(table)
        room = table.mafia_channel("Верона")
        outsider = table.fake.add_member(table.guild_id, "outsider").user.id
        react = int(Permission.ADD_REACTIONS)
        guests = table.fake.create_role(table.guild_id, "Гости")
        table.fake.set_overwrite(
            room, Overwrite(guests.id, OVERWRITE_ROLE, allow=VIEW | SEND, deny=react)
        )
        table.fake.add_member_role(table.guild_id, outsider, guests.id)
        await gone(table, room, outsider, VIEW, "the outsider reads the mafia room")
        await held(table)
        left = next(o for o in table.fake.channel(room).overwrites if o.id == guests.id)
        assert (left.allow, left.deny) == (0, react)  # the grant went, the rest stays


async def test_an_overwrite_on_the_category_for_an_outsider_is_taken_away():
    async with bot_table(players=8) as table:
        await one_city(table)
        category = int(table.live().record.channels["category"])
        outsider = table.fake.add_member(table.guild_id, "outsider").user.id
        table.fake.set_overwrite(category, Overwrite(outsider, OVERWRITE_MEMBER, allow=VIEW))
        assert may(table, category, outsider) & VIEW
        await gone(table, category, outsider, VIEW, "the outsider sees the category")
        await held(table)


async def test_a_dead_player_given_send_by_an_overwrite_writes_no_more_but_still_reads():
    async with bot_table(players=8) as table:
        await one_city(table)
        victim = int(await killed(table))
        text = table.city_channel("Верона")
        table.fake.set_overwrite(text, Overwrite(victim, OVERWRITE_MEMBER, allow=SEND))
        assert may(table, text, victim) & SEND
        await gone(table, text, victim, SEND, "the dead writes in the city")
        await held(table)
        assert may(table, text, victim) & VIEW


async def test_a_member_overwrite_beyond_a_server_grant_is_denied_where_deleting_is_not_enough():
    """An outsider's own overwrite allows View and denies Add Reactions: the bot keeps his deny
    and drops only the grant."""
    async with bot_table(players=8) as table:
        await one_city(table)
        room = table.mafia_channel("Верона")
        outsider = table.fake.add_member(table.guild_id, "outsider").user.id
        react = int(Permission.ADD_REACTIONS)
        table.fake.set_overwrite(
            room, Overwrite(outsider, OVERWRITE_MEMBER, allow=VIEW | SEND, deny=react)
        )
        await gone(table, room, outsider, VIEW, "the outsider reads the mafia room")
        await held(table)
        own = next(o for o in table.fake.channel(room).overwrites if o.id == outsider)
        assert (own.allow, own.deny) == (0, react)


async def test_a_game_role_given_to_an_outsider_is_taken_back():
    async with bot_table(players=8) as table:
        await one_city(table)
        text = table.city_channel("Верона")
        living = int(table.live().record.channels["roles"]["cities"]["Верона"]["living"])
        outsider = table.fake.add_member(table.guild_id, "outsider").user.id
        table.fake.add_member_role(table.guild_id, outsider, living)
        assert may(table, text, outsider) & SEND
        await gone(table, text, outsider, VIEW, "the outsider reads the city")
        await held(table)
        assert living not in table.fake.member(table.guild_id, outsider).roles


async def test_an_administrator_outsider_is_reported_to_the_host_once_with_the_fix():
    async with bot_table(players=8) as table:
        await one_city(table)
        await held(table)
        admins = table.fake.create_role(table.guild_id, "Админы", permissions=ADMINISTRATOR)
        outsider = table.fake.add_member(table.guild_id, "outsider").user.id
        table.fake.add_member_role(table.guild_id, outsider, admins.id)
        text = t(
            "ru",
            "footprint.effective.administrator",
            member=f"<@{outsider}>",
            roles="«Админы»",
        )
        await table.fake.wait_until(
            lambda: text in log_lines(table) or None, REPAIR, "the host was not told"
        )
        reconciler = host_cog(table).footprint
        passes = reconciler.passes
        table.fake.create_role(table.guild_id, "Ещё")  # any event: the reconciler looks again
        await table.fake.wait_until(
            lambda: reconciler.passes > passes or None, REPAIR, "no pass after the event"
        )
        await table.drain()
        assert log_lines(table).count(text) == 1
        assert {user for user, *_ in breaches(table)} == {outsider}  # nothing else


async def test_the_living_keep_what_the_rules_give_them_through_a_night_and_a_death():
    """No false alarm: after the game's own changes the invariant holds with nothing removed."""
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.new_game(cities="Верона, Падуя", maniac=False)
        await held(table)
        mark = len(table.fake.calls())
        victim = citizen(table, "Верона")
        await accepted(table, "host", "host kill", {"player": victim})
        await held(table)
        foreign = [
            call
            for call in table.fake.calls()[mark:]
            if "/permissions/" in call.path and call.method == "DELETE"
        ]
        assert len(foreign) <= 1  # at most the death's own (a mafioso's room overwrite)


async def test_a_mafia_room_synced_with_its_category_gives_the_mafiosi_their_room_back():
    """A "Sync Now" replaces the room's overwrites with the category's: the mafiosi's own are
    gone; they are put back, and nobody else gets in."""
    async with bot_table(players=8) as table:
        await one_city(table)
        room = table.mafia_channel("Верона")
        boss = int(mafioso(table, "Верона"))
        category = int(table.live().record.channels["category"])
        table.fake.update_channel(room, overwrites=list(table.fake.channel(category).overwrites))
        assert not may(table, room, boss) & VIEW
        await table.fake.wait_until(
            lambda: may(table, room, boss) & VIEW or None, REPAIR, "the mafioso lost his room"
        )
        await held(table)
        assert may(table, room, boss) & SEND


async def test_a_grant_of_a_permission_the_bot_lacks_itself_is_told_to_the_host_once():
    """Discord lets the bot set in an overwrite only what it holds: once its role and @everyone
    lost Create Polls, it can neither change a dead player's overwrite allowing polls and denying
    reactions in the city nor delete it (his deny would go); the host is told which permission to
    give the bot's role, once."""
    async with bot_table(players=8) as table:
        await one_city(table)
        victim = int(await killed(table))
        await held(table)
        polls = int(Permission.SEND_POLLS)
        table.fake.set_bot_permissions(table.guild_id, DEFAULT_BOT_PERMISSIONS & ~polls)
        everyone = table.fake.guild(table.guild_id).everyone
        table.fake.update_role(
            table.guild_id, everyone.id, permissions=everyone.permissions & ~polls
        )
        text = table.city_channel("Верона")
        react = int(Permission.ADD_REACTIONS)
        table.fake.set_overwrite(text, Overwrite(victim, OVERWRITE_MEMBER, allow=polls, deny=react))
        bot_role = table.fake.state.bot_role(table.guild_id)
        assert bot_role is not None
        told = t(
            "ru",
            "footprint.effective.reach",
            member=f"<@{victim}>",
            channel=f"<#{text}>",
            permissions=t("ru", "permission.send_polls"),
            bot_role=bot_role.name,
        )
        await table.fake.wait_until(
            lambda: told in log_lines(table) or None, REPAIR, "the host was not told"
        )
        table.fake.create_role(table.guild_id, "Ещё")  # another pass
        await table.drain()
        assert log_lines(table).count(told) == 1
        beyond = [(user, has & ~rules) for user, _, has, rules in breaches(table) if has & ~rules]
        assert beyond == [(victim, polls)]  # what the bot could not take, and nothing else


async def test_a_grant_the_bot_may_not_edit_is_deleted_when_it_denies_nothing():
    """The same grant alone in the dead player's overwrite: the bot may not edit its bits, but
    Discord checks none on a delete, and the overwrite holds nothing else."""
    async with bot_table(players=8) as table:
        await one_city(table)
        victim = int(await killed(table))
        await held(table)
        polls = int(Permission.SEND_POLLS)
        table.fake.set_bot_permissions(table.guild_id, DEFAULT_BOT_PERMISSIONS & ~polls)
        everyone = table.fake.guild(table.guild_id).everyone
        table.fake.update_role(
            table.guild_id, everyone.id, permissions=everyone.permissions & ~polls
        )
        text = table.city_channel("Верона")
        table.fake.set_overwrite(text, Overwrite(victim, OVERWRITE_MEMBER, allow=polls))
        await gone(table, text, victim, polls, "the dead makes polls in the city")
        await table.drain()
        assert all(o.id != victim for o in table.fake.channel(text).overwrites)


async def test_an_overwrite_for_a_member_the_bot_never_met_is_looked_at_all_the_same():
    """The bot asks for no member list at startup: a member overwrite on the mafia room for
    someone its cache does not hold makes it read him by REST, then take the grant."""
    async with bot_table(players=8) as table:
        await one_city(table)
        room = table.mafia_channel("Верона")
        stranger = table.fake.add_member(table.guild_id, "stranger").user.id
        guild = table.bot.get_guild(table.guild_id)
        assert guild is not None
        await table.fake.wait_until(lambda: guild.get_member(stranger), REPAIR, "never met")
        guild._remove_member(guild.get_member(stranger))  # as if the bot had never met him
        table.fake.set_overwrite(room, Overwrite(stranger, OVERWRITE_MEMBER, allow=VIEW | SEND))
        await gone(table, room, stranger, VIEW, "the stranger reads the mafia room")
        await held(table)


async def test_a_server_role_let_into_the_mafia_room_loses_the_grant_whoever_holds_it():
    """Its holders may be unknown to the bot (it asks for no member list): the role's grant goes
    all the same."""
    async with bot_table(players=8) as table:
        await one_city(table)
        room = table.mafia_channel("Верона")
        stranger = table.fake.add_member(table.guild_id, "stranger").user.id
        friends = table.fake.create_role(table.guild_id, "Друзья")
        table.fake.add_member_role(table.guild_id, stranger, friends.id)
        guild = table.bot.get_guild(table.guild_id)
        assert guild is not None
        await table.fake.wait_until(lambda: guild.get_member(stranger), REPAIR, "never met")
        guild._remove_member(guild.get_member(stranger))  # as if the bot had never met him
        table.fake.set_overwrite(room, Overwrite(friends.id, OVERWRITE_ROLE, allow=VIEW | SEND))
        await gone(table, room, stranger, VIEW, "the stranger reads the mafia room")
        await held(table)
