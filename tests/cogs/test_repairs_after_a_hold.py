"""What the bot repairs once its power is given back is decided on what Discord shows then, and
what takes a grant away goes before what gives access: never a moment beyond the rules.

An admin takes Manage Roles from the bot's role mid-game. Meanwhile a moderator takes a living
citizen's city role away (the bot cannot give it back yet) and gives the citizen his own
overwrite on the city's text channel allowing Connect and Speak, but not View Channel: it does
nothing while he sees no channel. Then Manage Roles is given back. The bot gives the city role
back, and with it View Channel: the overwrite's Connect would then reach him, which the rules
deny everyone in a text channel (@everyone's overwrite denies it). The bot must take the grant
away before it gives the role, not after (the random moderator's seed 3800261703: a pass made
while the bot lacked the power planned the role alone, the outbox held it, and carried it out
once the power was back, before the next pass saw the overwrite). Within one pass the same
order holds: :func:`test_a_pass_takes_access_away_before_it_gives_it` (seeds 11 and 4054815755
showed that @everyone's overwrite put back must come before it: what the bot may set in a
channel is computed from it).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from bot.footprint.diff import Repairs
from bot.footprint.effective import Fixes, items
from bot.footprint.repair import repair_items
from bot.storage import OutboxItem
from tests.cogs.scenes import VIEW
from tests.cogs.test_bot_powers import MANAGE_ROLES, citizens, lose, regain
from tests.cogs.test_effective_permissions import held, rules_now
from tests.cogs.test_footprint import REPAIR, one_city
from tests.fakediscord.permissions import OVERWRITE_MEMBER, Overwrite, Permission
from tests.harness import bot_table

CONNECT, SPEAK = int(Permission.CONNECT), int(Permission.SPEAK)


async def test_a_grant_made_while_the_bot_lacked_manage_roles_never_reaches_the_member() -> None:
    async with bot_table(players=8) as table:
        await one_city(table)
        await table.drain()
        fake, guild = table.fake, table.guild_id
        text = table.city_channel("Верона")
        user = table.member(citizens(table)[0]).user.id
        game_roles = {int(role) for role in rules_now(table).role_ids}
        city_role = next(role for role in fake.member(guild, user).roles if role in game_roles)
        seen: list[int] = []
        notify = fake.notify

        def watched() -> None:  # after every REST call and gateway frame: what he may do now
            seen.append(fake.permissions_for(guild, text, user))
            notify()

        fake.notify = watched  # type: ignore[method-assign]
        await lose(table, MANAGE_ROLES)
        fake.remove_member_role(guild, user, city_role)
        await table.drain()
        fake.set_overwrite(text, Overwrite(user, OVERWRITE_MEMBER, allow=CONNECT | SPEAK))
        await table.drain()
        assert not fake.permissions_for(guild, text, user) & VIEW  # the grant does nothing yet
        mark = len(seen)
        await regain(table)
        await fake.wait_until(
            lambda: city_role in fake.member(guild, user).roles or None,
            REPAIR,
            "the city role was never given back",
        )
        await held(table)  # the outbox drained, everyone exactly as the rules allow
        assert fake.permissions_for(guild, text, user) & VIEW
        leaks = [bits for bits in seen[mark:] if bits & VIEW and bits & CONNECT]
        assert leaks == [], "the role was given while the overwrite still granted Connect"
        assert fake.calls(status=403) == []


def described(item: OutboxItem) -> tuple[Any, ...]:
    t = item.target
    if item.kind == "member_role":
        return ("role", "add" if item.payload["add"] else "take", t["user_id"])
    return ("overwrite", t["channel_id"], t["id"])


def test_a_pass_takes_access_away_before_it_gives_it() -> None:
    """The bot's own overwrites and @everyone's first (what the bot may set in a channel is
    computed from them), then the grants beyond the rules taken away, then roles taken, then
    given, then the game roles' overwrites put back."""
    guild, bot, category, room, city_role, outsider, player = 1, 2, 10, 11, 20, 30, 31
    found = Repairs(
        adds=((player, city_role),),
        removals=((outsider, city_role),),
        overwrites=((room, city_role, 1024, 0), (category, guild, 0, 1024)),
        own=((category, bot, 1024, 0),),
    )
    fixes = Fixes(overwrites=((room, 1, player, None),))
    live: Any = SimpleNamespace(record=SimpleNamespace(channels={}))
    footprint: Any = SimpleNamespace(guild=guild, roles=())
    made = repair_items(live, footprint, found, {}, None, items(guild, fixes))
    assert [described(item) for item in made] == [
        ("overwrite", category, bot),
        ("overwrite", category, guild),
        ("overwrite", room, player),
        ("role", "take", outsider),
        ("role", "add", player),
        ("overwrite", room, city_role),
    ]
