"""The footprint's pass reads a channel's role overwrites as Discord holds them (the raw bits):
a bit both allowed and denied is granted by Discord (the allow is applied last), and the pass
sees it so, where discord.py's ``PermissionOverwrite`` showed it denied."""

from __future__ import annotations

from tests.cogs.scenes import SEND, VIEW, quick_edits
from tests.cogs.test_footprint import REPAIR, killed, may, one_city
from tests.fakediscord.permissions import OVERWRITE_ROLE, Overwrite
from tests.harness import bot_table


async def test_a_bit_both_allowed_and_denied_in_a_game_roles_overwrite_is_put_back():
    async with bot_table(players=8) as table:
        await one_city(table)
        quick_edits(table)
        victim = await killed(table)
        text = table.city_channel("Верона")
        dead = int(table.live().record.channels["roles"]["dead"])
        declared = next(o for o in table.fake.state.channel(text).overwrites if o.id == dead)
        assert declared.deny & SEND and not may(table, text, victim) & SEND
        table.fake.set_overwrite(
            text, Overwrite(dead, OVERWRITE_ROLE, allow=declared.allow | SEND, deny=declared.deny)
        )  # "let them talk", the deny left as it was
        assert may(table, text, victim) & SEND  # Discord applies the allow last
        await table.fake.wait_until(
            lambda: not may(table, text, victim) & SEND or None,
            REPAIR,
            "the dead write in the city",
        )
        now = next(o for o in table.fake.state.channel(text).overwrites if o.id == dead)
        assert (now.allow, now.deny) == (declared.allow, declared.deny)
        assert may(table, text, victim) & VIEW
