"""The last word when things go wrong: the speaker leaves or never comes, the voice link drops,
DAVE fails, the bot is stopped mid-recording.

Each ends with a clear line in the nominee's city and nothing half-posted. The
player's own doing (leaving, not coming) uses his last word up; a technical
failure does not, and a new ``/lastword speak`` then records him properly.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from bot.config import Config, LastWord
from cogs.lastword import clock_text
from tests.fakediscord import FakeDiscord, build_standard_guild
from tests.fakediscord.voice import FakeSpeaker, FakeVoiceServer
from tests.harness import NO_TIMERS, bot_on
from tests.voice.speech import opus_packets
from tests.voice.tribune import (
    FAST,
    Tribune,
    expected_packets,
    recorded_audio,
    ru,
    start_game,
    tribune,
)


def mention(player: str) -> str:
    return f"<@{player}>"


def technical(tb: Tribune) -> str:
    return ru("lastword.technical", player=mention(tb.nominee))


async def outcome_line(tb: Tribune) -> str:
    return tb.table.fake.message((await tb.calling_message()).id).content


async def speak_and_post(tb: Tribune, speaker: FakeSpeaker, packets: int = 150) -> None:
    """A new ``/lastword speak`` that records properly: he speaks, stops, it is posted."""
    asked = await tb.ask()
    assert asked.ephemeral and asked.content == ru("lastword.queued", ahead=0)
    client = await tb.recording()
    before = client.receiver.stats.delivered
    sent = await speaker.play(opus_packets()[:packets])
    await tb.delivered(client, before + len(sent))
    await tb.stop()
    await tb.finished()
    voice = await tb.voice_message()
    recorded, _ = recorded_audio(voice.attachments[0].data)
    assert recorded[: len(sent)] == expected_packets(sent)
    assert tb.used_up()


def assert_nothing_posted(tb: Tribune) -> None:
    """No recording, and no line announcing one."""
    assert not tb.with_attachments()
    posted = re.escape(ru("lastword.posted", player=mention(tb.nominee), length="\0"))
    pattern = re.compile(posted.replace(re.escape("\0"), r"\d+:\d\d"))
    assert not [m for m in tb.city_messages() if pattern.fullmatch(m.content)]


async def test_a_speaker_who_leaves_and_stays_away_gets_what_he_said_posted() -> None:
    async with tribune() as tb:
        await tb.ask()
        nominee = await tb.join()
        client = await tb.recording()
        started = tb.cog.recording[tb.live.id][1].recording_started
        before = client.receiver.stats.delivered
        sent = await nominee.play(opus_packets()[:250])
        await tb.delivered(client, before + len(sent))

        await tb.leave(nominee)
        left_at = tb.server.clock()
        stepped_out = ru(
            "lastword.stepped_out", player=mention(tb.nominee), seconds=FAST.leave_grace
        )
        await tb.table.fake.wait_until(
            lambda: tb.containing(stepped_out), 5, "nobody was told he left"
        )
        assert not tb.voice_messages(), "he has the grace to come back"
        tb.server.clock.advance(FAST.leave_grace)  # and does not
        await tb.finished()

        voice = await tb.voice_message()
        attachment = voice.attachments[0]
        recorded, _ = recorded_audio(attachment.data)
        assert recorded[: len(sent)] == expected_packets(sent)
        # The file ends where he left, not where the grace ran out.
        assert attachment.duration_secs is not None
        assert 5.0 <= attachment.duration_secs <= left_at - started + 0.2
        assert await outcome_line(tb) == ru(
            "lastword.outcome.left",
            player=mention(tb.nominee),
            length=clock_text(attachment.duration_secs),
        )
        assert len(tb.with_attachments()) == 1
        assert not tb.containing(technical(tb))
        assert tb.used_up()


async def test_a_nominee_who_never_comes_loses_his_last_word() -> None:
    async with tribune(last_word=LastWord(join_timeout=1, dave_timeout=5, progress_every=1)) as tb:
        asked = await tb.ask()
        assert asked.content == ru("lastword.queued", ahead=0)
        await tb.finished()

        assert await outcome_line(tb) == ru(
            "lastword.outcome.not_joined", player=mention(tb.nominee)
        )
        assert (await tb.calling_message()).components == []
        assert_nothing_posted(tb)
        assert not tb.containing(technical(tb))
        assert tb.used_up()
        again = await tb.ask()
        assert again.content == ru("error.last_word_used")
        assert tb.voice_client() is None, "the bot left the tribune"


async def test_a_bot_that_cannot_join_the_tribune_is_technical() -> None:
    quick_timeouts = LastWord(join_timeout=5, dave_timeout=1, progress_every=1)
    async with tribune(last_word=quick_timeouts) as tb:
        tb.table.fake.voice_server = None  # Discord never answers the bot's voice state update
        nominee = await tb.join()
        asked = await tb.ask()
        assert asked.content == ru("lastword.queued", ahead=0)
        await tb.finished()

        assert len(tb.containing(technical(tb))) == 1
        assert tb.city_messages()[-1].content == technical(tb)
        assert not [m for m in tb.city_messages() if "mafia:stop:" in str(m.components)], (
            "no speaker's line without a connection"
        )
        assert_nothing_posted(tb)
        assert not tb.used_up()
        assert tb.voice_client() is None

        tb.table.fake.voice_server = tb.server
        await speak_and_post(tb, nominee)


def connects(tb: Tribune) -> int:
    """The bot's op 4 requests to join the tribune so far."""
    return len(
        [
            r
            for r in tb.table.fake.voice_requests
            if str(r.get("channel_id")) == str(tb.voice_channel)
        ]
    )


async def test_a_voice_server_gone_for_good_after_his_words_posts_what_he_said() -> None:
    async with tribune() as tb:
        tb.cog.reconnect_backoff = 0.05
        await tb.ask()
        nominee = await tb.join()
        client = await tb.recording()
        before = client.receiver.stats.delivered
        sent = await nominee.play(opus_packets()[:150])
        await tb.delivered(client, before + len(sent))
        joined = connects(tb)

        await tb.server.drop_connection()
        await tb.finished(timeout=30)

        # Three fresh connections tried, then what he said is posted: his last word is had.
        assert connects(tb) - joined == LastWord().reconnect_attempts == 3
        voice = await tb.voice_message()
        recorded, _ = recorded_audio(voice.attachments[0].data)
        assert recorded[: len(sent)] == expected_packets(sent)
        duration = voice.attachments[0].duration_secs
        assert duration is not None and duration >= 3.0
        assert await outcome_line(tb) == ru(
            "lastword.outcome.connection_lost_kept",
            player=mention(tb.nominee),
            length=clock_text(duration),
        )
        assert not tb.containing(technical(tb))
        assert tb.used_up()


async def test_a_dropped_voice_connection_before_he_speaks_is_technical_and_he_may_speak_again() -> (
    None
):
    async with tribune() as tb:
        tb.cog.reconnect_backoff = 0.05
        await tb.ask()
        await tb.join()
        await tb.recording()

        await tb.server.drop_connection()
        await tb.finished(timeout=30)

        assert await outcome_line(tb) == ru("lastword.outcome.connection_lost")
        assert len(tb.containing(technical(tb))) == 1
        assert_nothing_posted(tb)
        assert not tb.used_up()
        assert not list(tb.folder.iterdir()), "nothing of the failed recording is kept"

        # Discord gives the next connection another voice server.
        second = FakeVoiceServer()
        await second.start()
        try:
            tb.table.fake.voice_server = second
            tb.server = second
            tb.wire()
            speaker = second.add_speaker(tb.nominee_id, channel_id=tb.voice_channel)
            await speak_and_post(tb, speaker)
        finally:
            await second.close()


async def test_frames_that_fail_dave_decryption_are_technical() -> None:
    async with tribune() as tb:
        await tb.ask()
        nominee = await tb.join()
        await tb.recording()
        await nominee.play(opus_packets()[:150], corrupt_dave=True)
        await tb.finished()

        assert await outcome_line(tb) == ru("lastword.outcome.dave_failed")
        assert len(tb.containing(technical(tb))) == 1
        assert_nothing_posted(tb)
        assert not tb.used_up()

        await speak_and_post(tb, nominee)


async def test_dave_that_never_becomes_ready_is_technical() -> None:
    slow_dave = LastWord(join_timeout=5, dave_timeout=1, progress_every=1)
    async with tribune(
        last_word=slow_dave, bad_proposal_signature=True, response_timeout=0.5
    ) as tb:
        await tb.ask()
        # Once the bot holds the channel's MLS group, it must commit the nominee's
        # Add proposal: the proposal's signature is bad and its websocket poller dies on it.
        founded = f"{tb.table.fake.bot_user.id} founds the group"
        await tb.table.fake.wait_until(
            lambda: any(founded in e for e in tb.server.dave_log),
            5,
            "the bot never founded the MLS group",
        )
        await tb.join()
        await tb.finished()

        assert await outcome_line(tb) == ru("lastword.outcome.dave_failed")
        assert len(tb.containing(technical(tb))) == 1
        assert_nothing_posted(tb)
        assert not tb.used_up()
        assert tb.voice_client() is None, "the broken connection was dropped"
        again = await tb.ask()
        assert again.content == ru("lastword.queued", ahead=0)
        await tb.finished()


async def test_a_recording_cut_by_a_restart_is_reported_once_and_not_used_up(
    tmp_path: Path,
) -> None:
    server = FakeVoiceServer()
    await server.start()
    fake = FakeDiscord()
    world = build_standard_guild(fake, players=[f"p{i}" for i in range(8)], preferred_locale="ru")
    await fake.start()
    fake.voice_server = server
    config = Config(database=tmp_path / "bot.sqlite3", timers=NO_TIMERS, last_word=FAST)
    try:
        async with bot_on(fake, world, config) as table:
            live, nominee_id, nominator = await start_game(table)
            tb = Tribune(table, server, live, nominee_id, nominator)
            await tb.ask()
            nominee = await tb.join()
            client = await tb.recording()
            before = client.receiver.stats.delivered
            sent = await nominee.play(opus_packets()[:200])
            await tb.delivered(client, before + len(sent))
            await tb.progress_shown()

            # The process is stopped mid-sentence: its tasks are cancelled.
            worker = tb.cog.workers[live.id]
            worker.cancel()
            await asyncio.gather(worker, return_exceptions=True)
            parts = list(tb.folder.glob("*.part"))
            assert len(parts) == 1 and parts[0].stat().st_size > 0, (
                "the .part stays for the next start"
            )
            folder = tb.folder
            calling = await tb.calling_message()
            await table.drain()

        async with bot_on(fake, world, config) as table:
            tb = Tribune(table, server, table.live(), nominee_id, nominator)
            interrupted = ru("lastword.interrupted", player=mention(nominee_id))
            await fake.wait_until(lambda: tb.containing(interrupted), 5, "the city was not told")
            await fake.wait_until(lambda: not list(folder.glob("*.part")), 5, "the .part was kept")
            await table.drain()

            assert len(tb.containing(interrupted)) == 1
            line = fake.message(calling.id)
            assert line.content == ru("lastword.outcome.interrupted", player=mention(nominee_id))
            assert line.components == [], "no Stop button left on the cut recording"
            assert_nothing_posted(tb)
            assert not tb.used_up()

            await speak_and_post(tb, nominee)
            assert len(tb.containing(interrupted)) == 1
    finally:
        await fake.close()
        await server.close()
