"""The last word follows the game (issue 28): a nominee who is out of the game (killed, struck
out, replaced), the game's end or the host's skip stop his recording at once, the bot leaves
the tribune, and what is posted agrees with the one public line about it, in the third
person; a voice link that does not come back is given up within
``last_word.reconnect_give_up`` and the file ends with the last audio heard.

End to end against the fake Discord and the fake voice server. The recordings run on the
call's clock (tests/fakediscord/voice.py, MediaClock): a bound is crossed by jumping that
clock, and every wait is on an event or a condition, never on wall time.
"""

from __future__ import annotations

import pytest

from bot.config import LastWord
from bot.i18n import mention, t
from bot.storage import OutboxItem
from bot.voice.recorder import Recorder
from cogs.lastword import clock_text
from rules import ProcuratorKill
from tests.cogs.scenes import run
from tests.voice.test_lastword_network import speech
from tests.voice.test_lastword_reconnect import nominee_recorded
from tests.voice.tribune import Tribune, decoded_length, ru, tribune

RATE = 48_000
GIVE_UP = LastWord().reconnect_give_up


def bot_in_voice(tb: Tribune) -> bool:
    """Whether the fake Discord has the bot in a voice channel of the guild (its voice state)."""
    guild = tb.table.fake.state.guild(tb.table.guild_id)
    return tb.table.fake.bot_user.id in guild.voice_states


async def test_a_voice_server_silent_after_a_move_is_given_up_within_the_bound_unpadded() -> None:
    async with tribune() as tb:
        nominee, recorder = await nominee_recorded(tb)
        client = tb.voice_client()
        assert client is not None
        sent = await nominee.play(speech(250))  # 5 s
        await tb.delivered(client, len(sent))
        spoken = sent[-1].sent_at + 0.02 - recorder.recording_started

        server = tb.server
        server.silent = True
        await server.move_endpoint()
        tb.table.fake.move_voice_server(tb.table.guild_id)
        await tb.table.fake.wait_until(
            lambda: server.unanswered >= 1 and recorder.down_since is not None,
            10,
            "the bot never tried the new voice server",
        )
        assert tb.is_recording(), "still trying while the bound is not reached"
        server.clock.advance(GIVE_UP)
        # given up on the clock's bound: at once, not after the attempts' own timeouts
        await tb.table.fake.wait_until(
            lambda: not tb.is_recording(), 4, "the link was not given up at the bound"
        )
        await tb.finished(timeout=30)

        voice = await tb.voice_message()
        ogg = voice.attachments[0].data
        duration = voice.attachments[0].duration_secs
        assert duration is not None and abs(duration - spoken) < 0.1, (duration, spoken)
        assert abs(decoded_length(ogg) / RATE - spoken) < 0.1
        line = tb.table.fake.message((await tb.calling_message()).id).content
        assert line == ru(
            "lastword.outcome.connection_lost_kept",
            player=mention(tb.nominee),
            length=clock_text(duration),
        )
        assert tb.used_up()
        await tb.table.fake.wait_until(
            lambda: not bot_in_voice(tb), 5, "the bot stayed in the tribune"
        )


def told(tb: Tribune, language: str, reason: str, duration: float) -> str:
    return t(
        language,
        "lastword.outcome.cut_short",
        player=mention(tb.nominee),
        reason=t(language, f"lastword.reason.{reason}"),
        length=clock_text(duration),
    )


async def speaking(tb: Tribune, packets: int) -> tuple[Recorder, float]:
    """He asks, comes, and says ``packets`` packets; the recorder and how long (the file's
    timeline) what he said lasts."""
    nominee, recorder = await nominee_recorded(tb)
    client = tb.voice_client()
    assert client is not None
    sent = await nominee.play(speech(packets))
    await tb.delivered(client, len(sent))
    return recorder, sent[-1].sent_at + 0.02 - recorder.recording_started


async def assert_cut_short(
    tb: Tribune, recorder: Recorder, spoken: float, reason: str, language: str = "ru"
) -> None:
    """His recording stopped at once (the worker done long before the limit), the bot out of
    the tribune, what he said posted as it was said, one line about it in the third person."""
    # the limit is 3 minutes of the call's clock, which runs at real speed while nobody speaks
    await tb.finished(timeout=10)
    assert recorder.clock() - recorder.recording_started < 60
    await tb.table.fake.wait_until(
        lambda: not bot_in_voice(tb), 10, "the bot stayed in the tribune"
    )
    await tb.table.drain()
    voice = await tb.voice_message()
    assert len(tb.voice_messages()) == 1
    duration = voice.attachments[0].duration_secs
    assert duration is not None and abs(duration - spoken) < 0.1, (duration, spoken)
    assert abs(decoded_length(voice.attachments[0].data) / RATE - spoken) < 0.1
    line = told(tb, language, reason, duration)
    assert tb.table.fake.message((await tb.calling_message()).id).content == line
    about = [m for m in tb.city_messages() if mention(tb.nominee) in m.content]
    after_call = about[about.index(tb.table.fake.message((await tb.calling_message()).id)) :]
    assert [m.content for m in after_call if "🎙️" in m.content] == [line], (
        "one line about it: no other outcome, no 'posted' line"
    )
    second_person = [
        t(language, key).split("{")[0][:25]
        for key in ("error.not_alive", "error.no_game", "error.game_over")
    ]
    for message in tb.city_messages():
        assert not any(text in message.content for text in second_person), message.content
    assert not list(tb.folder.iterdir()), "the file is removed once posted"


@pytest.mark.parametrize("language", ["ru", "en"])
async def test_the_nominee_killed_while_he_speaks_is_cut_short_and_what_he_said_posted(
    language: str,
) -> None:
    async with tribune(language=language) as tb:
        recorder, spoken = await speaking(tb, 150)

        killed = await run(tb.table, "host", "host kill", {"player": tb.nominee})
        assert killed.ephemeral, killed.content

        await assert_cut_short(tb, recorder, spoken, "out", language)
        assert not tb.table.game.is_alive(tb.nominee)


async def test_the_game_ended_while_he_speaks_cuts_his_last_word_short() -> None:
    async with tribune() as tb:
        recorder, spoken = await speaking(tb, 200)

        await run(tb.table, "host", "host end")

        await assert_cut_short(tb, recorder, spoken, "ended")


async def test_the_nominee_struck_out_while_he_speaks_is_cut_short() -> None:
    async with tribune() as tb:
        recorder, spoken = await speaking(tb, 100)
        left = await run(tb.table, tb.nominee_id, "mafia leave")
        assert left.ephemeral
        assert tb.is_recording(), "leaving the game alone does not stop him"

        # his grace is over: the Procurator's strike (as after leave_strike)
        live = tb.table.live()
        live.record.lobby["leaving"][tb.nominee] = 0.0
        tb.table.bot.get_cog("HostCog").strikes.arm(live)  # type: ignore[attr-defined]

        await assert_cut_short(tb, recorder, spoken, "out")
        assert tb.table.game.deaths[-1].player == tb.nominee


async def test_the_nominee_replaced_while_he_speaks_is_cut_short() -> None:
    async with tribune() as tb:
        recorder, spoken = await speaking(tb, 100)
        newcomer = tb.table.fake.add_member(tb.table.guild_id, "newcomer").user.id
        await tb.table.drain()

        await run(tb.table, "host", "host replace", {"player": tb.nominee, "newcomer": newcomer})

        await assert_cut_short(tb, recorder, spoken, "replaced")
        assert tb.nominee not in tb.table.game.players


async def test_the_hosts_skip_stops_the_recording_at_once_and_the_bot_leaves() -> None:
    async with tribune() as tb:
        recorder, spoken = await speaking(tb, 100)

        skipped = await run(tb.table, "host", "host skip")
        assert skipped.ephemeral and skipped.content == ru("lastword.skipped")

        await tb.finished(timeout=10)
        assert recorder.clock() - recorder.recording_started < 60
        await tb.table.fake.wait_until(
            lambda: not bot_in_voice(tb), 10, "the bot stayed in the tribune"
        )
        await tb.table.drain()
        voice = await tb.voice_message()
        duration = voice.attachments[0].duration_secs
        assert duration is not None and spoken - 0.1 < duration < 60
        line = ru(
            "lastword.outcome.stopped", player=mention(tb.nominee), length=clock_text(duration)
        )
        assert tb.table.fake.message((await tb.calling_message()).id).content == line
        posted = ru("lastword.posted", player=mention(tb.nominee), length=clock_text(duration))
        assert len(tb.containing(posted)) == 1
        assert tb.used_up(), "a skipped last word is had: what he said is it"


async def test_skip_without_a_recording_is_refused() -> None:
    async with tribune() as tb:
        refused = await run(tb.table, "host", "host skip")
        assert refused.ephemeral and refused.content == ru("error.no_recording")


async def test_the_nominee_killed_before_he_comes_to_the_tribune_is_told_in_the_third_person() -> (
    None
):
    async with tribune() as tb:
        await tb.ask()
        await tb.calling_message()  # called; the bot waits for him in the tribune

        await run(tb.table, "host", "host kill", {"player": tb.nominee})

        await tb.finished(timeout=10)
        await tb.table.fake.wait_until(
            lambda: not bot_in_voice(tb), 10, "the bot stayed in the tribune"
        )
        await tb.table.drain()
        line = told(tb, "ru", "out", 0.0)
        assert tb.table.fake.message((await tb.calling_message()).id).content == line
        assert not tb.voice_messages() and not tb.with_attachments(), "he said nothing"
        assert not tb.containing(t("ru", "error.not_alive")[:20])
        assert not list(tb.folder.iterdir())


async def test_the_game_ended_with_its_channels_deleted_posts_nothing_of_the_cut_recording() -> (
    None
):
    async with tribune() as tb:  # at its end, every request must be one Discord accepts
        await speaking(tb, 100)
        tb.live.record.lobby["at_end"] = "delete"  # as the host set it up
        calling = await tb.calling_message()

        await run(tb.table, "host", "host end")

        await tb.finished(timeout=30)
        await tb.table.fake.wait_until(
            lambda: not bot_in_voice(tb), 10, "the bot stayed in the tribune"
        )
        await tb.table.drain()
        assert tb.table.fake.state.channels[tb.city_channel].deleted
        cut = told(tb, "ru", "ended", 0.0).split("(")[0]
        line = tb.table.fake.message(calling.id)
        assert cut not in line.content and cut not in str(line.edits), "no edit of a deleted line"
        assert not tb.voice_messages()
        assert not list(tb.folder.iterdir()), "nothing of the recording is kept"


async def test_a_kill_between_the_recordings_end_and_its_commit_cuts_it_short_after_all() -> None:
    async with tribune() as tb:
        _, spoken = await speaking(tb, 100)
        storage = tb.table.bot.storage
        add_outbox = storage.add_outbox
        stopped = ru("lastword.outcome.stopped", player=mention(tb.nominee), length="")[:-3]

        async def killing_first(game_id: int, items: list[OutboxItem]) -> None:
            # his outcome line is stored: the Procurator strikes before the last word's commit
            if any(stopped in str(item.payload) for item in items) and tb.nominee in (
                tb.table.game.alive()
            ):
                await tb.table.bot.service.apply(game_id, ProcuratorKill(tb.nominee), source="host")
            await add_outbox(game_id, items)

        storage.add_outbox = killing_first  # type: ignore[method-assign]
        await tb.stop()

        await tb.finished(timeout=10)
        await tb.table.drain()
        assert not tb.table.game.is_alive(tb.nominee) and not tb.used_up()
        voice = await tb.voice_message()
        duration = voice.attachments[0].duration_secs
        assert duration is not None and duration >= spoken - 0.1
        line = told(tb, "ru", "out", duration)
        assert tb.table.fake.message((await tb.calling_message()).id).content == line
        assert not tb.containing(t("ru", "error.not_alive")[:20])
        cancelled = ru("lastword.cancelled", player=mention(tb.nominee), reason="|").split("|")[0]
        assert not tb.containing(cancelled), "no second line contradicting the first"
