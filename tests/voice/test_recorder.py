"""Last-word recordings end the right way (bot/voice/recorder.py), against the fake voice server."""

from __future__ import annotations

import asyncio

import pytest

from bot.voice.receiver import ReceivingVoiceClient
from bot.voice.recorder import Recorder, RecordingOutcome, RecordingResult
from tests.fakediscord.voice import FakeSpeaker, SentPacket
from tests.voice.speech import opus_packets
from tests.voice.test_fake_voice import (
    VoiceWorld,
    connected_with_dave,
    voice_world,
    wait_until,
)


class ListSink:
    """Keeps every packet it is given."""

    def __init__(self) -> None:
        self.packets: list[tuple[int, int, bytes]] = []

    def write_packet(self, sequence: int, timestamp: int, opus: bytes) -> None:
        self.packets.append((sequence, timestamp, opus))


def as_written(sent: list[SentPacket]) -> list[tuple[int, int, bytes]]:
    return [(packet.sequence, packet.timestamp, packet.opus) for packet in sent]


def start_recording(
    world: VoiceWorld, voice_client: ReceivingVoiceClient, sink: ListSink, **options: float
) -> tuple[Recorder, asyncio.Task[RecordingResult]]:
    settings: dict[str, float] = {"max_seconds": 2.0, "join_timeout": 2.0, "dave_timeout": 2.0}
    settings.update(options)
    recorder = Recorder(voice_client, world.nominee_id, sink, **settings)  # type: ignore[arg-type]
    return recorder, asyncio.create_task(recorder.run())


async def recording_started(world: VoiceWorld, voice_client: ReceivingVoiceClient) -> None:
    await wait_until(lambda: voice_client.receiver.is_registered(world.nominee_id))


async def nominee_in_channel(
    world: VoiceWorld,
) -> tuple[ReceivingVoiceClient, FakeSpeaker, ListSink]:
    speaker = await world.join(world.nominee_id)
    voice_client = await connected_with_dave(world)
    await speaker.wait_in_group()
    return voice_client, speaker, ListSink()


def test_technical_failures_are_the_bots_not_the_players() -> None:
    technical = {outcome for outcome in RecordingOutcome if outcome.technical_failure}
    assert technical == {
        RecordingOutcome.connection_lost,
        RecordingOutcome.no_audio,
        RecordingOutcome.dave_failed,
    }


async def test_fast_speaker_is_cut_at_exactly_max_seconds_of_audio() -> None:
    async with voice_world() as world:
        voice_client, speaker, sink = await nominee_in_channel(world)
        _, running = start_recording(world, voice_client, sink, max_seconds=2.0)
        await recording_started(world, voice_client)

        # 3 s of speech sent about 20 times faster than real time, across both wrap-arounds.
        sent = await speaker.play(opus_packets()[:150], start_seq=65_500, start_ts=2**32 - 48_000)
        result = await asyncio.wait_for(running, 5)

        assert result.outcome is RecordingOutcome.complete
        assert not result.outcome.technical_failure
        written = len(sink.packets)
        assert sink.packets == as_written(sent)[:written]
        # Every packet that starts before 2 s on the timeline (lead-in included), no other.
        lead_in = result.lead_in_seconds
        assert lead_in + (written - 1) * 0.02 < 2.0 <= lead_in + written * 0.02 + 1e-9
        assert result.audio_seconds == 2.0
        assert result.packets_written == written
        assert result.recorded_seconds < 1.5
        assert result.start_timestamp == (sent[0].timestamp - round(lead_in * 48_000)) % 2**32
        assert result.end_timestamp == (result.start_timestamp + 2 * 48_000) % 2**32


async def test_silence_counts_towards_the_limit() -> None:
    async with voice_world() as world:
        voice_client, speaker, sink = await nominee_in_channel(world)
        _, running = start_recording(world, voice_client, sink, max_seconds=2.0)
        await recording_started(world, voice_client)

        sent = await speaker.play(opus_packets()[:100], gaps={10: 1.0}, lose={3, 4})
        result = await asyncio.wait_for(running, 5)

        assert result.outcome is RecordingOutcome.complete
        first = sent[0].timestamp
        on_time = [
            packet
            for packet in sent
            if result.lead_in_seconds + (packet.timestamp - first) / 48_000 < 2.0
        ]
        assert sink.packets == as_written(on_time)
        # 10 packets (2 of them lost), a second of silence, then speech up to the limit.
        assert 8 + 35 <= len(on_time) <= 8 + 40


async def test_realtime_recording_reports_progress_and_ends_on_time() -> None:
    async with voice_world() as world:
        voice_client, speaker, sink = await nominee_in_channel(world)
        progress: list[float] = []

        async def on_progress(elapsed: float) -> None:
            progress.append(elapsed)

        recorder = Recorder(
            voice_client,
            world.nominee_id,
            sink,
            max_seconds=1.0,
            join_timeout=2.0,
            dave_timeout=2.0,
            on_progress=on_progress,
            progress_interval=0.2,
        )
        running = asyncio.create_task(recorder.run())
        await recording_started(world, voice_client)
        playing = asyncio.create_task(speaker.play(opus_packets()[:75], realtime=True))
        result = await asyncio.wait_for(running, 5)
        await playing

        assert result.outcome is RecordingOutcome.complete
        assert 0.95 <= result.recorded_seconds < 1.5
        assert len(progress) >= 3
        assert progress == sorted(progress)
        assert all(0 < value <= 1.0 for value in progress)
        assert 45 <= len(sink.packets) <= 50


async def test_nominee_who_never_joins() -> None:
    async with voice_world() as world:
        await world.join(world.neighbour_id)
        voice_client = await connected_with_dave(world)
        sink = ListSink()
        _, running = start_recording(world, voice_client, sink, join_timeout=0.3)

        result = await asyncio.wait_for(running, 5)

        assert result.outcome is RecordingOutcome.not_joined
        assert not result.outcome.technical_failure
        assert result.waited_seconds >= 0.3
        assert sink.packets == []


async def test_nominee_who_leaves_while_speaking() -> None:
    async with voice_world() as world:
        voice_client, speaker, sink = await nominee_in_channel(world)
        _, running = start_recording(world, voice_client, sink, max_seconds=10.0)
        await recording_started(world, voice_client)

        await speaker.play(opus_packets()[:20])
        await wait_until(lambda: len(sink.packets) == 20)
        await world.leave(speaker)
        result = await asyncio.wait_for(running, 5)

        assert result.outcome is RecordingOutcome.left
        assert not result.outcome.technical_failure
        assert result.packets_written == 20


async def test_connection_drop_is_a_technical_failure() -> None:
    async with voice_world() as world:
        voice_client, speaker, sink = await nominee_in_channel(world)
        _, running = start_recording(world, voice_client, sink, max_seconds=10.0)
        await recording_started(world, voice_client)

        await speaker.play(opus_packets()[:10])
        await wait_until(lambda: len(sink.packets) == 10)
        await world.server.drop_connection()
        result = await asyncio.wait_for(running, 5)

        assert result.outcome is RecordingOutcome.connection_lost
        assert result.outcome.technical_failure


async def test_frames_that_fail_dave_decryption() -> None:
    async with voice_world() as world:
        voice_client, speaker, sink = await nominee_in_channel(world)
        _, running = start_recording(
            world, voice_client, sink, max_seconds=10.0, dave_failure_threshold=30
        )
        await recording_started(world, voice_client)

        await speaker.play(opus_packets()[:60], corrupt_dave=True)
        result = await asyncio.wait_for(running, 5)

        assert result.outcome is RecordingOutcome.dave_failed
        assert result.outcome.technical_failure
        assert result.stats.dave_errors >= 30
        assert result.stats.delivered == 0
        assert result.stats.decrypt_errors == 0
        assert "failed DAVE decryption" in result.detail
        assert sink.packets == []


async def test_dave_that_never_becomes_ready() -> None:
    async with voice_world(bad_proposal_signature=True, response_timeout=0.3) as world:
        voice_client = await world.connect()
        await wait_until(lambda: voice_client._connection.dave_session is not None)
        await world.join(world.nominee_id)
        sink = ListSink()
        _, running = start_recording(world, voice_client, sink, dave_timeout=0.4)

        result = await asyncio.wait_for(running, 5)

        assert result.outcome is RecordingOutcome.dave_failed
        assert result.outcome.technical_failure
        assert "not ready" in result.detail
        assert voice_client.is_connected()
        # VOICE_FACTS item 7: discord.py's websocket poller died on the proposal.
        runner = voice_client._connection._runner
        assert runner is not None and runner.done()
        assert "InvalidSignature" in str(runner.exception())


async def test_stop_ends_the_recording() -> None:
    async with voice_world() as world:
        voice_client, speaker, sink = await nominee_in_channel(world)
        recorder, running = start_recording(world, voice_client, sink, max_seconds=10.0)
        await recording_started(world, voice_client)

        await speaker.play(opus_packets()[:5])
        await wait_until(lambda: len(sink.packets) == 5)
        recorder.stop()
        result = await asyncio.wait_for(running, 5)

        assert result.outcome is RecordingOutcome.stopped
        assert result.packets_written == 5
        assert not voice_client.receiver.is_registered(world.nominee_id)


async def test_stop_while_waiting_for_the_nominee() -> None:
    async with voice_world() as world:
        await world.join(world.neighbour_id)
        voice_client = await connected_with_dave(world)
        recorder, running = start_recording(world, voice_client, ListSink(), join_timeout=30.0)
        await asyncio.sleep(0)

        recorder.stop()
        result = await asyncio.wait_for(running, 5)

        assert result.outcome is RecordingOutcome.stopped


async def test_silent_nominee_gives_no_audio() -> None:
    async with voice_world() as world:
        voice_client, _, sink = await nominee_in_channel(world)
        _, running = start_recording(world, voice_client, sink, no_audio_timeout=0.3)

        result = await asyncio.wait_for(running, 5)

        assert result.outcome is RecordingOutcome.no_audio
        assert result.outcome.technical_failure
        assert result.stats.packets == 0


async def test_a_second_recorder_for_the_same_nominee_is_refused() -> None:
    async with voice_world() as world:
        voice_client, _, sink = await nominee_in_channel(world)
        first, running = start_recording(world, voice_client, sink, max_seconds=10.0)
        await recording_started(world, voice_client)

        second = Recorder(voice_client, world.nominee_id, ListSink(), join_timeout=1.0)
        with pytest.raises(RuntimeError, match="already being recorded"):
            await second.run()
        first.stop()
        assert (await running).outcome is RecordingOutcome.stopped
