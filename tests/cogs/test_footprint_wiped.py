"""Every overwrite of a game's channels wiped while the bot was down (a person's "Sync
permissions" on the category and its channels, a botched template): the next process puts the
footprint back without ever shutting itself out. Discord lets the bot change a channel only while
it sees it, and allow or deny in a channel only what it holds in the category: so its own
overwrite goes first, the category's before the channels', and no call of the repair is refused."""

from __future__ import annotations

from tests.cogs.scenes import VIEW, quick_edits
from tests.cogs.test_footprint import REPAIR, citizen, may
from tests.cogs.test_provision import restartable
from tests.harness import bot_on


async def test_a_game_whose_every_overwrite_was_wiped_is_put_back_with_no_call_refused() -> None:
    async with restartable(8) as (fake, world, config):
        async with bot_on(fake, world, config) as first:
            quick_edits(first)
            await first.new_game(cities="Верона", maniac=False)
            await first.drain()
            channels = first.live().record.channels
            alive = citizen(first, "Верона")
            mafioso = next(
                p for p in first.game.alive("Верона") if first.game.status_of(p).value == "mafioso"
            )
        category = int(channels["category"])
        text, room = (int(channels["cities"]["Верона"][key]) for key in ("text", "mafia"))
        wiped = [c for c in fake.state.channels.values() if category in (c.id, c.parent_id)]
        assert {text, room} <= {c.id for c in wiped}
        for channel in wiped:
            channel.overwrites = []  # while the bot is down: no event, the next process must see it
        outsider = fake.add_member(world.guild.id, "outsider").user.id
        assert fake.permissions_for(world.guild.id, room, outsider) & VIEW
        refused = len(fake.calls(status=403))
        async with bot_on(fake, world, config) as second:

            def footprint_back() -> bool | None:
                sees = fake.permissions_for
                return (
                    not sees(world.guild.id, room, outsider) & VIEW
                    and not sees(world.guild.id, text, outsider) & VIEW
                    and may(second, room, mafioso) & VIEW
                    and not may(second, room, alive) & VIEW
                    and may(second, text, alive) & VIEW
                ) or None

            await fake.wait_until(footprint_back, REPAIR, "the wiped footprint was not put back")
            await second.drain()
            bot_id = fake.state.bot_user.id
            for channel in wiped:
                assert fake.permissions_for(world.guild.id, channel.id, bot_id) & VIEW, channel.name
        assert [(c.method, c.path, c.response) for c in fake.calls(status=403)[refused:]] == []
