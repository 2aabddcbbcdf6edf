"""Last-word recordings end the right way (bot/voice/recorder.py), against the fake voice server."""

from __future__ import annotations

import asyncio
import io
import itertools

import pytest

from bot.voice.receiver import ReceivingVoiceClient
from bot.voice.recorder import OggSink, Recorder, RecordingOutcome, RecordingResult, RecordingSink
from tests.fakediscord.voice import FakeSpeaker, SentPacket
from tests.voice.speech import opus_packets
from tests.voice.test_fake_voice import (
    VoiceWorld,
    connected_with_dave,
    voice_world,
    wait_until,
)
from tests.voice.tribune import FRAME, PRE_SKIP, RATE, recorded_audio


class ListSink:
    """Keeps every placed packet; full once ``max_seconds`` of audio are placed."""

    def __init__(self, max_seconds: float = 3600.0) -> None:
        self.placed: list[tuple[int, int, bytes]] = []
        self.limit = round(max_seconds * RATE)

    @property
    def packets(self) -> list[bytes]:
        return [opus for _, _, opus in self.placed]

    @property
    def positions(self) -> list[int]:
        return [position for _, position, _ in self.placed]

    def write(self, sequence: int, position: int, opus: bytes) -> bool:
        self.placed.append((sequence, position, opus))
        return position + FRAME < self.limit


def opus_of(sent: list[SentPacket]) -> list[bytes]:
    return [packet.opus for packet in sent]


def start_recording(
    world: VoiceWorld, voice_client: ReceivingVoiceClient, sink: RecordingSink, **options: float
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


def seconds_after_start(recorder: Recorder, packet: SentPacket) -> float:
    """When a packet was sent, on the recording's clock."""
    return packet.sent_at - recorder.recording_started


def test_technical_failures_are_the_bots_not_the_players() -> None:
    technical = {outcome for outcome in RecordingOutcome if outcome.technical_failure}
    assert technical == {
        RecordingOutcome.connection_lost,
        RecordingOutcome.no_audio,
        RecordingOutcome.dave_failed,
    }


async def test_fast_speaker_is_cut_at_exactly_max_seconds_of_audio() -> None:
    async with voice_world() as world:
        voice_client, speaker, _ = await nominee_in_channel(world)
        handle = io.BytesIO()
        sink = OggSink(handle, 2.0)
        recorder, running = start_recording(world, voice_client, sink, max_seconds=2.0)
        await recording_started(world, voice_client)

        # 3 s of speech (received as in real time, sent faster), across both wrap-arounds.
        sent = await speaker.play(opus_packets()[:150], start_seq=65_500, start_ts=2**32 - 48_000)
        result = await asyncio.wait_for(running, 5)
        info = sink.close(result.end_position)

        assert result.outcome is RecordingOutcome.complete
        assert not result.outcome.technical_failure
        assert info is not None and info.duration_secs == 2.0 and info.truncated
        packets, lead = recorded_audio(handle.getvalue())
        assert packets == opus_of(sent)[: len(packets)]
        # Every packet that starts before 2 s on the timeline (lead-in included), no other.
        assert lead / RATE + (len(packets) - 1) * 0.02 < 2.0 + PRE_SKIP / RATE
        assert len(packets) < len(sent)
        assert result.lead_in_seconds == pytest.approx(
            seconds_after_start(recorder, sent[0]), abs=0.005
        )
        assert result.audio_seconds == 2.0
        assert result.streams == 1 and result.reanchors == 0
        assert result.recorded_seconds >= 2.0
        assert result.end_position == 2 * RATE


async def test_silence_counts_towards_the_limit() -> None:
    async with voice_world() as world:
        voice_client, speaker, _ = await nominee_in_channel(world)
        sink = ListSink(2.0)
        _, running = start_recording(world, voice_client, sink, max_seconds=2.0)
        await recording_started(world, voice_client)

        sent = await speaker.play(opus_packets()[:100], gaps={10: 1.0}, lose={3, 4})
        result = await asyncio.wait_for(running, 5)

        assert result.outcome is RecordingOutcome.complete
        first = sent[0].timestamp
        assert sink.packets == opus_of(sent)[: len(sink.packets)]
        # Placed by RTP time after the first: the lost ones and a second of silence are gaps.
        assert [p - sink.positions[0] for p in sink.positions] == [
            packet.timestamp - first for packet in sent[: len(sink.positions)]
        ]
        # 10 packets (2 of them lost), a second of silence, then speech up to the limit.
        assert 8 + 35 <= len(sink.packets) <= 8 + 40


async def test_a_reconnecting_speaker_is_one_recording_placed_by_arrival() -> None:
    async with voice_world() as world:
        voice_client, speaker, sink = await nominee_in_channel(world)
        recorder, running = start_recording(world, voice_client, sink, max_seconds=30.0)
        await recording_started(world, voice_client)

        first = await speaker.play(opus_packets()[:200])
        old_ssrc = speaker.ssrc
        await speaker.reconnect(away=1.5)
        await speaker.wait_in_group()
        second = await speaker.play(opus_packets()[200:400])
        await wait_until(lambda: len(sink.placed) == 400)
        recorder.stop()
        result = await asyncio.wait_for(running, 5)

        assert speaker.ssrc != old_ssrc
        assert result.outcome is RecordingOutcome.stopped
        assert result.streams == 2
        assert sink.packets == opus_of(first + second)
        # The second stream starts where it arrived (his new timestamps say nothing).
        start = sink.positions[200] / RATE
        assert start == pytest.approx(seconds_after_start(recorder, second[0]), abs=0.005)
        # He was away 1.5 s (and the handshake); arrival stamps may be a few ms late.
        assert start - (sink.positions[199] + FRAME) / RATE > 1.5 - 0.02
        sequences = [sequence for sequence, _, _ in sink.placed]
        assert sequences == sorted(sequences) and len(set(sequences)) == 400


@pytest.mark.parametrize("jump", [-10.0, 60.0])
async def test_a_timestamp_jump_on_the_same_ssrc_loses_nothing(jump: float) -> None:
    async with voice_world() as world:
        voice_client, speaker, sink = await nominee_in_channel(world)
        recorder, running = start_recording(world, voice_client, sink, max_seconds=10.0)
        await recording_started(world, voice_client)

        before = await speaker.play(opus_packets()[:150])
        after = await speaker.play(
            opus_packets()[150:300], start_ts=speaker.next_timestamp + round(jump * RATE)
        )
        await wait_until(lambda: len(sink.placed) == 300)
        recorder.stop()
        result = await asyncio.wait_for(running, 5)

        assert result.outcome is RecordingOutcome.stopped, result.detail
        assert result.streams == 1 and result.reanchors == 1
        assert sink.packets == opus_of(before + after)
        gaps = [b - a for a, b in itertools.pairwise(sink.positions)]
        assert gaps == [FRAME] * 299, "the jump is undone: the speech goes on where it arrived"
        assert sink.positions[150] / RATE == pytest.approx(
            seconds_after_start(recorder, after[0]), abs=0.025
        )


async def test_realtime_recording_reports_progress_and_ends_on_time() -> None:
    async with voice_world() as world:
        voice_client, speaker, _ = await nominee_in_channel(world)
        sink = ListSink(1.0)
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
        assert 45 <= len(sink.placed) <= 50


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
        assert sink.placed == []


async def test_nominee_who_leaves_while_speaking_and_stays_away() -> None:
    async with voice_world() as world:
        voice_client, speaker, sink = await nominee_in_channel(world)
        voice_client.receiver.clock = world.server.clock
        recorder, running = start_recording(
            world, voice_client, sink, max_seconds=60.0, leave_grace=20.0
        )
        await recording_started(world, voice_client)

        await speaker.play(opus_packets()[:20])
        await wait_until(lambda: len(sink.placed) == 20)
        await world.leave(speaker)
        await wait_until(lambda: recorder.away_since is not None)
        assert not running.done(), "he may come back"
        world.server.clock.advance(20.0)
        result = await asyncio.wait_for(running, 5)

        assert result.outcome is RecordingOutcome.left
        assert not result.technical_failure
        assert result.packets_written == 20
        assert result.recorded_seconds < 2.0, "it ends where he left, not where the grace ran out"
        assert result.absences == 0


async def test_nominee_who_steps_out_and_comes_back_within_the_grace() -> None:
    async with voice_world() as world:
        voice_client, speaker, sink = await nominee_in_channel(world)
        voice_client.receiver.clock = world.server.clock
        told: list[bool] = []
        recorder, running = start_recording(
            world, voice_client, sink, max_seconds=60.0, leave_grace=20.0, on_absence=told.append
        )  # type: ignore[arg-type]
        await recording_started(world, voice_client)

        first = await speaker.play(opus_packets()[:20])
        await wait_until(lambda: len(sink.placed) == 20)
        await world.leave(speaker)
        await wait_until(lambda: told == [True])
        world.server.clock.advance(12.0)
        back = await world.join(world.nominee_id)
        await wait_until(lambda: told == [True, False])
        await back.wait_in_group()
        second = await back.play(opus_packets()[20:40])
        await wait_until(lambda: len(sink.placed) == 40)
        recorder.stop()
        result = await asyncio.wait_for(running, 5)

        assert result.outcome is RecordingOutcome.stopped
        assert result.absences == 1 and result.streams == 2
        assert [opus for _, _, opus in sink.placed] == opus_of(first) + opus_of(second)
        gap = (sink.placed[20][1] - sink.placed[19][1]) / 48_000
        assert gap >= 12.0, "the time he was away is in the recording"


async def test_connection_drop_without_a_way_back_ends_with_what_it_holds() -> None:
    async with voice_world() as world:
        voice_client, speaker, sink = await nominee_in_channel(world)
        _, running = start_recording(world, voice_client, sink, max_seconds=10.0)
        await recording_started(world, voice_client)

        await speaker.play(opus_packets()[:10])
        await wait_until(lambda: len(sink.placed) == 10)
        await world.server.drop_connection()
        result = await asyncio.wait_for(running, 5)

        assert result.outcome is RecordingOutcome.connection_lost
        assert result.outcome.technical_failure and not result.technical_failure, (
            "he spoke: it is posted"
        )
        assert result.packets_written == 10


async def test_reconnects_are_bounded() -> None:
    async with voice_world() as world:
        voice_client, speaker, sink = await nominee_in_channel(world)
        attempts: list[float] = []

        async def reconnect() -> ReceivingVoiceClient:
            attempts.append(world.server.clock())
            raise ConnectionError("no voice server answers")

        _, running = start_recording(
            world,
            voice_client,
            sink,
            max_seconds=10.0,
            reconnect=reconnect,
            reconnect_attempts=3,
            reconnect_backoff=0.01,
        )  # type: ignore[arg-type]
        await recording_started(world, voice_client)
        await world.server.drop_connection()
        result = await asyncio.wait_for(running, 5)

        assert len(attempts) == 3
        assert result.outcome is RecordingOutcome.connection_lost and result.technical_failure
        assert "3 reconnects failed" in result.detail and "no voice server answers" in result.detail


async def test_a_reconnect_that_never_answers_is_given_up_at_the_bound_unpadded() -> None:
    async with voice_world() as world:
        voice_client, speaker, sink = await nominee_in_channel(world)
        trying, cancelled = asyncio.Event(), asyncio.Event()

        async def reconnect() -> ReceivingVoiceClient:
            trying.set()
            try:
                await asyncio.Event().wait()  # a voice server that never answers
            except asyncio.CancelledError:
                cancelled.set()
                raise
            raise AssertionError("never answered")

        recorder, running = start_recording(
            world,
            voice_client,
            sink,
            max_seconds=100.0,
            no_audio_timeout=1000.0,
            reconnect=reconnect,  # type: ignore[arg-type]
            reconnect_give_up=20.0,
        )
        await recording_started(world, voice_client)
        await speaker.play(opus_packets()[:10])
        await wait_until(lambda: len(sink.placed) == 10)
        await world.server.drop_connection()
        await asyncio.wait_for(trying.wait(), 5)
        assert recorder.down_since is not None and not running.done()

        world.server.clock.advance(20.0)  # the call's clock: the recorder's and its receiver's
        result = await asyncio.wait_for(running, 5)

        await asyncio.wait_for(cancelled.wait(), 5)  # the hung attempt is not left running
        assert result.outcome is RecordingOutcome.connection_lost
        assert "not back within 20 s" in result.detail
        assert not result.technical_failure, "he spoke: it is posted"
        # the file ends with his last packet, not 20 s of failing later
        last = sink.placed[-1][1] + 960
        assert result.end_position == last and result.recorded_seconds >= 20.0


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
        assert sink.placed == []


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
        await wait_until(lambda: len(sink.placed) == 5)
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
