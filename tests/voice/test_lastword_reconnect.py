"""The last word outlives the bot's own voice reconnects and the nominee stepping out (issue 22).

End to end: the real bot records through the fake Discord and the fake voice
server while Discord moves the call to another voice server (a
VOICE_SERVER_UPDATE with a new endpoint), while the voice server closes the
bot's websocket (4015, or the TCP connection just ends), while SPEAKING comes
late to the new connection, and while the nominee leaves the voice channel
and comes back. What is checked is the one posted file: every packet he sent
in it once, each where it was sent, the time away as silence.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from bot.config import LastWord
from bot.voice.recorder import Recorder
from tests.fakediscord.voice import FakeSpeaker, SentPacket
from tests.voice.test_lastword_network import (
    TOLERANCE,
    assert_segments_where_sent,
    mention,
    posted,
    recorder_of,
    speech,
)
from tests.voice.tribune import RATE, Tribune, decode, ru, tribune

AWAY = 1.5
"""Seconds (the call's clock) the bot is away from the call while it reconnects."""


async def back_in_the_call(tb: Tribune, nominee: FakeSpeaker, connections: int) -> None:
    """Wait until the bot has its ``connections``-th voice connection, with DAVE and him in it."""

    def ready() -> bool:
        client = tb.voice_client()
        return (
            len(tb.server.connections) >= connections
            and client is not None
            and client.link_alive()
            and client.dave_ready()
            and tb.nominee_id in client.dave_members()
        )

    await tb.table.fake.wait_until(ready, 15, "the bot never came back into the call")
    await nominee.wait_in_group()


def assert_one_recording_of(ogg: bytes, segments: list[list[SentPacket]], started: float) -> None:
    """Every packet of every segment in the file once, in order; each segment where it was
    sent; the file as long as the recording."""
    assert_segments_where_sent(ogg, segments, started)
    duration = len(decode(ogg)) / RATE
    assert duration > segments[-1][-1].sent_at + 0.02 - started - TOLERANCE


async def nominee_recorded(tb: Tribune) -> tuple[FakeSpeaker, Recorder]:
    """He asks, comes into the tribune and is being recorded."""
    await tb.ask()
    nominee = await tb.join()
    await tb.recording()
    return nominee, recorder_of(tb)


def moving(tb: Tribune, nominee: FakeSpeaker, away: float = AWAY) -> Callable[[], Awaitable[None]]:
    """A hook for play(): Discord moves the call to another voice server, the bot follows;
    ``away`` more seconds pass on the call's clock before he goes on."""

    async def moved() -> None:
        await tb.server.move_endpoint()
        tb.table.fake.move_voice_server(tb.table.guild_id)
        await back_in_the_call(tb, nominee, 2)
        tb.server.clock.advance(away)

    return moved


async def test_a_call_moved_to_another_voice_server_mid_speech_goes_on_in_the_same_file() -> None:
    async with tribune() as tb:
        nominee, recorder = await nominee_recorded(tb)
        client = tb.voice_client()
        started = recorder.recording_started
        server = tb.server
        first_endpoint = server.endpoint

        first = await nominee.play(speech(500))
        second = await nominee.play(speech(700, offset=500), at={0: moving(tb, nominee)})
        ogg = await posted(tb)

        assert (
            server.endpoints == [first_endpoint, server.endpoint] and len(server.connections) >= 2
        )
        assert tb.voice_client() is None or tb.voice_client() is client, (
            "discord.py followed the move itself"
        )
        # one reconnect for the move (a loaded machine may time out an attempt and try again)
        assert 1 <= recorder.reconnects <= len(server.connections) - 1
        assert_one_recording_of(ogg, [first, second], started)
        gap = second[0].sent_at - (first[-1].sent_at + 0.02)
        assert gap >= AWAY
        line = tb.table.fake.message((await tb.calling_message()).id)
        assert line.content.startswith(
            ru("lastword.outcome.stopped", player=mention(tb.nominee), length="")[:-3]
        )


@pytest.mark.parametrize(
    "code", [4015, None], ids=["voice-server-crash-4015", "tcp-connection-ends"]
)
async def test_a_closed_voice_websocket_reconnects_and_the_recording_goes_on(
    code: int | None,
) -> None:
    async with tribune() as tb:
        nominee, recorder = await nominee_recorded(tb)
        started = recorder.recording_started
        server = tb.server

        async def closed() -> None:
            await server.close_bot_websocket(code)
            await back_in_the_call(tb, nominee, 2)
            server.clock.advance(AWAY)

        first = await nominee.play(speech(400))
        second = await nominee.play(speech(600, offset=400), at={0: closed})
        ogg = await posted(tb)

        assert recorder.reconnects == 1
        assert_one_recording_of(ogg, [first, second], started)
        assert not tb.containing(ru("lastword.technical", player=mention(tb.nominee)))


async def test_speaking_seconds_late_on_the_new_connection_loses_nothing() -> None:
    async with tribune(speaking_delay=2.0) as tb:
        nominee, recorder = await nominee_recorded(tb)
        started = recorder.recording_started

        first = await nominee.play(speech(300))
        # Two seconds (100 packets) arrive on an SSRC the new connection has not been told of.
        second = await nominee.play(
            speech(400, offset=300), at={0: moving(tb, nominee)}, announce=False
        )
        client = tb.voice_client()
        assert client is not None and client.receiver.stats.unknown_ssrc >= 100
        ogg = await posted(tb)

        assert_one_recording_of(ogg, [first, second], started)


async def test_a_nominee_who_steps_out_and_comes_back_in_time_goes_on_in_the_same_file() -> None:
    async with tribune(
        last_word=LastWord(join_timeout=5, dave_timeout=5, progress_every=1, leave_grace=20)
    ) as tb:
        await tb.ask()
        nominee = await tb.join()
        client = await tb.recording()
        recorder = recorder_of(tb)
        started = recorder.recording_started
        first = await nominee.play(speech(300))
        await tb.delivered(client, len(first))

        await tb.leave(nominee)
        stepped_out = ru("lastword.stepped_out", player=mention(tb.nominee), seconds=20)
        await tb.table.fake.wait_until(
            lambda: tb.containing(stepped_out), 5, "nobody was told he stepped out"
        )
        tb.server.clock.advance(15.0)
        returned = await tb.join()
        back = ru("lastword.back", player=mention(tb.nominee))
        await tb.table.fake.wait_until(lambda: tb.containing(back), 5, "nobody was told he is back")
        await returned.wait_in_group()
        second = await returned.play(speech(300, offset=300))
        ogg = await posted(tb)

        assert len(tb.containing(stepped_out)) == 1 and len(tb.containing(back)) == 1
        assert recorder.absences == 1
        assert_one_recording_of(ogg, [first, second], started)
        assert second[0].sent_at - first[-1].sent_at > 15.0
        line = tb.table.fake.message((await tb.calling_message()).id)
        assert line.content.startswith(
            ru("lastword.outcome.stopped", player=mention(tb.nominee), length="")[:-3]
        )
