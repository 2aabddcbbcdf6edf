"""The last word while the bot lacks a power its game needs (issue 28): nothing moves the game.

A nominee may not begin his last word while the game stands still (``/lastword speak`` is
refused with the reason); one already under way when Manage Roles is taken is kept and
posted (it moves no stage), but the day's end that waited for it waits on, and comes only
once the power is given back. End to end against the fake Discord and the fake voice server.
"""

from __future__ import annotations

from bot.i18n import mention
from tests.cogs.scenes import accepted, run
from tests.cogs.test_bot_powers import bot_role
from tests.cogs.test_held_players import given_back, held, refused
from tests.voice.test_lastword_follows import speaking
from tests.voice.tribune import ru, tribune


async def test_a_last_word_that_ends_while_held_does_not_end_the_day() -> None:
    async with tribune() as tb:
        table = tb.table
        await accepted(table, "host", "host next")
        assert table.game.stage.value == "voting"
        await held(table)
        await refused(table, tb.nominee, "lastword speak")
        assert not tb.used_up() and tb.cog.workers.get(tb.live.id) is None
        await given_back(table)

        await speaking(tb, 100)
        ended = await run(table, "host", "host next")
        assert ended.content == ru("host.deferred"), ended.content
        await held(table)
        await tb.stop()
        await tb.finished(timeout=10)
        # what he said is his last word, posted; the day's end that waited for it waits on
        assert tb.used_up()
        await tb.voice_message()
        assert table.game.stage.value == "voting" and table.game.deaths == []
        assert table.live().deferred, "the day's end is still waiting"

        await given_back(table)
        await table.fake.wait_until(
            lambda: table.game.stage.value != "voting" or None, 30, "the day never ended"
        )
        assert not table.live().deferred


async def test_a_last_word_queued_before_the_power_went_does_not_begin_while_held() -> None:
    async with tribune() as tb:
        table = tb.table
        nominator, second = tb.others()[:2]
        await accepted(table, nominator, "nominate", {"player": second})
        await speaking(tb, 50)
        queued = await run(table, second, "lastword speak")
        assert queued.content == ru("lastword.queued", ahead=1), queued.content
        await held(table)
        await tb.stop()
        await tb.finished(timeout=10)
        assert tb.used_up()
        # his turn came while the game stood still: told in public, in the third person, his
        # last word not used up, and nothing recorded
        line = ru(
            "lastword.held",
            player=mention(second),
            permissions=ru("permission.manage_roles"),
            role=bot_role(table),
        )
        assert line in [m.content for m in tb.city_messages()]
        assert second not in table.game.last_words and not tb.is_recording()
        await given_back(table)
        again = await run(table, second, "lastword speak")
        assert again.content == ru("lastword.queued", ahead=0), again.content
