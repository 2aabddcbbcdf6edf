"""One last-word recording: a nominee's voice, up to the time limit, into a sink.

:class:`Recorder` waits until the nominee is in the bot's voice channel and
the call's end-to-end encryption is settled with him in the MLS group, then
hands his Opus packets to a :class:`~bot.voice.receiver.PacketSink` until one
of the :class:`RecordingOutcome` ends. The caller decides what an outcome
means for the game; :attr:`RecordingOutcome.technical_failure` says which ones
are not the player's doing, so his last word is not used up by them.

The timeline starts when recording starts and counts silence: a packet's
position is the wall-clock delay before the nominee's first packet plus the
RTP time since that packet (gaps in the timestamps included). Packets that
start at or after ``max_seconds`` are not written; the one that crosses it is
(the Ogg writer trims to the exact sample count). Discord clients send nothing
while their user is silent, so the wall clock also ends the recording, a
moment (``wall_grace``) after ``max_seconds``.

With :class:`bot.voice.ogg.OggOpusWriter` the sink makes the writer at the
nominee's first packet, with ``start_timestamp`` set back by the lead-in (the
silence since recording started, which counts towards the limit), feeds it
every packet, and closes it with ``end_timestamp=result.end_timestamp`` so
trailing silence up to the end of recording is kept; the file is then exactly
as long as the recording, at most ``max_seconds`` (cogs/lastword.py does this).
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from .ogg import InvalidOpusPacket, opus_packet_samples
from .receiver import PacketSink, ReceivingVoiceClient, UserStats
from .rtp import timestamp_delta

__all__ = ["Recorder", "RecordingOutcome", "RecordingResult"]

_log = logging.getLogger(__name__)

SAMPLE_RATE = 48_000
_DEFAULT_FRAME_SAMPLES = 960
ProgressCallback = Callable[[float], Awaitable[None] | None]


class RecordingOutcome(enum.Enum):
    """How a last-word recording ended."""

    complete = "complete"
    """The time limit was reached."""
    stopped = "stopped"
    """:meth:`Recorder.stop` was called (the nominee or the host ended it)."""
    left = "left"
    """The nominee left the voice channel while recording."""
    not_joined = "not_joined"
    """The nominee did not come into the voice channel in time."""
    connection_lost = "connection_lost"
    """The bot's voice connection dropped."""
    no_audio = "no_audio"
    """No decryptable audio of the nominee arrived at all."""
    dave_failed = "dave_failed"
    """End-to-end encryption never became ready, or none of his frames decrypted."""

    @property
    def technical_failure(self) -> bool:
        """True when the bot, not the player, is to blame: do not spend his last word."""
        return self in _TECHNICAL


_TECHNICAL = frozenset(
    {RecordingOutcome.connection_lost, RecordingOutcome.no_audio, RecordingOutcome.dave_failed}
)


@dataclass(frozen=True, slots=True)
class RecordingResult:
    """The outcome of a recording and what it was based on."""

    outcome: RecordingOutcome
    detail: str
    """A sentence for the log: why it ended."""
    audio_seconds: float
    """Timeline position of the end of the last packet written (lead-in included)."""
    lead_in_seconds: float
    """Silence from the start of recording to the nominee's first packet."""
    start_timestamp: int | None
    """The start of recording on the nominee's RTP clock (his first packet's
    timestamp less the lead-in), e.g. an Ogg writer's ``start_timestamp``;
    None when no packet was written."""
    end_timestamp: int | None
    """The end of recording on his RTP clock (for an Ogg writer's ``close``:
    trailing silence up to when recording ended, at most ``max_seconds``)."""
    packets_written: int
    stats: UserStats
    """The receiver's counters for the nominee, at the end."""
    unknown_ssrc_packets: int
    """Packets on SSRCs no SPEAKING event named, during the recording."""
    waited_seconds: float
    """From run() to the start of recording (join and DAVE)."""
    recorded_seconds: float
    """Wall-clock length of the recording phase."""


def _packet_samples(packet: bytes) -> int:
    try:
        return opus_packet_samples(packet)
    except InvalidOpusPacket:
        return _DEFAULT_FRAME_SAMPLES


class _TimelineSink:
    """Between the receiver and the real sink: places packets on the timeline, cuts at the limit."""

    def __init__(self, recorder: Recorder, sink: PacketSink) -> None:
        self._recorder = recorder
        self._sink = sink
        self.first_timestamp: int | None = None
        self.lead_in = 0.0
        self.audio_end = 0.0
        self.written = 0
        self.full = False

    def write_packet(self, sequence: int, timestamp: int, opus: bytes) -> None:
        if self.full:
            return
        recorder = self._recorder
        if self.first_timestamp is None:
            self.first_timestamp = timestamp
            self.lead_in = max(0.0, recorder.clock() - recorder.recording_started)
        start = self.lead_in + timestamp_delta(timestamp, self.first_timestamp) / SAMPLE_RATE
        if start < 0:
            # Reordered from before the start of recording.
            return
        if start >= recorder.max_seconds:
            self._fill()
            return
        self._sink.write_packet(sequence, timestamp, opus)
        self.written += 1
        end = start + _packet_samples(opus) / SAMPLE_RATE
        self.audio_end = max(self.audio_end, end)
        if end >= recorder.max_seconds:
            self._fill()

    def _fill(self) -> None:
        self.full = True
        self._recorder._wake.set()


class Recorder:
    """Records one nominee's last word from a connected :class:`ReceivingVoiceClient`.

    Connect first (``await channel.connect(cls=ReceivingVoiceClient)``, not
    self-deafened, or Discord sends the bot no audio): a link that is down
    when :meth:`run` starts ends it as ``connection_lost``.

    ``max_seconds`` bounds the timeline; ``join_timeout`` is how long the
    nominee may take to come into the channel; ``dave_timeout`` how long, once
    he is there, end-to-end encryption may take to include him. ``clock``
    gives the time in seconds for every deadline (waits poll it every
    ``poll_interval``). ``on_progress(elapsed_seconds)``, plain or async, is
    called every ``progress_interval`` seconds while recording. Without any
    decrypted packet after ``no_audio_timeout`` seconds of recording, or once
    ``dave_failure_threshold`` of his frames failed DAVE decryption with none
    succeeding, the recording ends as a technical failure.
    """

    def __init__(
        self,
        voice_client: ReceivingVoiceClient,
        user_id: int,
        sink: PacketSink,
        *,
        max_seconds: float = 180.0,
        join_timeout: float = 60.0,
        dave_timeout: float = 15.0,
        clock: Callable[[], float] = time.monotonic,
        on_progress: ProgressCallback | None = None,
        progress_interval: float = 5.0,
        no_audio_timeout: float = 30.0,
        dave_failure_threshold: int = 100,
        wall_grace: float = 1.0,
        poll_interval: float = 0.05,
    ) -> None:
        if max_seconds <= 0:
            raise ValueError(f"max_seconds must be positive, not {max_seconds}")
        self.voice_client = voice_client
        self.user_id = user_id
        self.sink = sink
        self.max_seconds = max_seconds
        self.join_timeout = join_timeout
        self.dave_timeout = dave_timeout
        self.clock = clock
        self.on_progress = on_progress
        self.progress_interval = progress_interval
        self.no_audio_timeout = no_audio_timeout
        self.dave_failure_threshold = dave_failure_threshold
        self.wall_grace = wall_grace
        self.poll_interval = poll_interval
        self.recording_started = 0.0
        self._stop_requested = False
        self._wake = asyncio.Event()
        self._ran = False

    def stop(self) -> None:
        """End the recording now (outcome ``stopped``); safe to call at any time."""
        self._stop_requested = True
        self._wake.set()

    async def run(self) -> RecordingResult:
        """Wait for the nominee and DAVE, record, and say how it ended.

        Raises RuntimeError when called twice, or while another recording of
        the same user is running on this voice client.
        """
        if self._ran:
            raise RuntimeError("a Recorder runs once")
        self._ran = True
        began = self.clock()
        waited = await self._wait_until_ready(began)
        if isinstance(waited, RecordingResult):
            return waited
        return await self._record(began)

    # Phase one: nominee present and DAVE settled ------------------------------

    async def _wait_until_ready(self, began: float) -> RecordingResult | None:
        present_since: float | None = None
        while True:
            now = self.clock()
            if self._stop_requested:
                return self._early(RecordingOutcome.stopped, "stopped before recording", began)
            if not self.voice_client.link_alive():
                return self._early(
                    RecordingOutcome.connection_lost,
                    "the voice connection was down before recording",
                    began,
                )
            if self._nominee_present():
                if present_since is None:
                    present_since = now
                if self._dave_ready_for_nominee():
                    return None
                if now - present_since >= self.dave_timeout:
                    return self._early(RecordingOutcome.dave_failed, self._dave_problem(), began)
            else:
                present_since = None
                if now - began >= self.join_timeout:
                    return self._early(
                        RecordingOutcome.not_joined,
                        f"user {self.user_id} did not join within {self.join_timeout:g} s",
                        began,
                    )
            await self._sleep()

    def _nominee_present(self) -> bool:
        channel = self.voice_client.channel
        return channel is not None and self.user_id in channel.voice_states

    def _dave_ready_for_nominee(self) -> bool:
        client = self.voice_client
        if not client.dave_ready():
            return False
        if client._connection.dave_protocol_version == 0:
            return True
        return self.user_id in client.dave_members()

    def _dave_problem(self) -> str:
        client = self.voice_client
        connection = client._connection
        session = connection.dave_session
        if session is None:
            return f"no DAVE session after {self.dave_timeout:g} s"
        if not session.ready:
            return (
                f"DAVE session not ready after {self.dave_timeout:g} s (status {session.status}); "
                "the voice websocket poller may have died on a bad MLS message"
            )
        if connection.dave_pending_transitions:
            return f"DAVE transitions {sorted(connection.dave_pending_transitions)} never executed"
        return f"user {self.user_id} never entered the MLS group"

    # Phase two: recording -----------------------------------------------------

    async def _record(self, began: float) -> RecordingResult:
        receiver = self.voice_client.receiver
        if receiver.is_registered(self.user_id):
            raise RuntimeError(f"user {self.user_id} is already being recorded")
        self.recording_started = self.clock()
        timeline = _TimelineSink(self, self.sink)
        unknown_before = receiver.stats.unknown_ssrc
        stats = receiver.register(self.user_id, timeline)
        next_progress = self.recording_started + self.progress_interval
        try:
            while True:
                now = self.clock()
                elapsed = now - self.recording_started
                ended = self._check_recording(timeline, stats, elapsed)
                if ended is not None:
                    outcome, detail = ended
                    break
                if self.on_progress is not None and now >= next_progress:
                    next_progress += self.progress_interval
                    await self._report_progress(
                        min(self.max_seconds, max(elapsed, timeline.audio_end))
                    )
                await self._sleep()
        finally:
            receiver.unregister(self.user_id)
        finished = self.clock()
        recorded = finished - self.recording_started
        start_timestamp = end_timestamp = None
        if timeline.first_timestamp is not None:
            start_timestamp = (
                timeline.first_timestamp - round(timeline.lead_in * SAMPLE_RATE)
            ) & 0xFFFFFFFF
            end_position = min(self.max_seconds, max(timeline.audio_end, recorded))
            end_timestamp = (start_timestamp + round(end_position * SAMPLE_RATE)) & 0xFFFFFFFF
        _log.info(
            "Recording of user %d ended: %s (%s); %d packets, %.2f s of audio",
            self.user_id,
            outcome.value,
            detail,
            timeline.written,
            timeline.audio_end,
        )
        return RecordingResult(
            outcome=outcome,
            detail=detail,
            audio_seconds=min(timeline.audio_end, self.max_seconds),
            lead_in_seconds=timeline.lead_in,
            start_timestamp=start_timestamp,
            end_timestamp=end_timestamp,
            packets_written=timeline.written,
            stats=replace(stats),
            unknown_ssrc_packets=receiver.stats.unknown_ssrc - unknown_before,
            waited_seconds=self.recording_started - began,
            recorded_seconds=recorded,
        )

    def _check_recording(
        self, timeline: _TimelineSink, stats: UserStats, elapsed: float
    ) -> tuple[RecordingOutcome, str] | None:
        if timeline.full:
            return RecordingOutcome.complete, f"{self.max_seconds:g} s of audio recorded"
        if self._stop_requested:
            return RecordingOutcome.stopped, "stopped"
        if not self.voice_client.link_alive():
            return RecordingOutcome.connection_lost, "the voice connection dropped"
        if not self._nominee_present():
            return RecordingOutcome.left, f"user {self.user_id} left the voice channel"
        if stats.delivered == 0:
            failing = stats.dave_errors >= self.dave_failure_threshold
            out_of_time = elapsed >= min(self.no_audio_timeout, self.max_seconds + self.wall_grace)
            if failing or out_of_time:
                return self._no_audio(stats, elapsed)
        if elapsed >= self.max_seconds + self.wall_grace:
            return RecordingOutcome.complete, f"{self.max_seconds:g} s passed"
        return None

    def _no_audio(self, stats: UserStats, elapsed: float) -> tuple[RecordingOutcome, str]:
        if stats.dave_errors:
            return (
                RecordingOutcome.dave_failed,
                f"{stats.packets} packets arrived in {elapsed:.1f} s, "
                f"{stats.dave_errors} failed DAVE decryption, none decrypted",
            )
        if stats.packets:
            return (
                RecordingOutcome.no_audio,
                f"{stats.packets} packets arrived in {elapsed:.1f} s, "
                f"{stats.decrypt_errors} failed transport decryption, none delivered",
            )
        return RecordingOutcome.no_audio, f"no packet from user {self.user_id} in {elapsed:.1f} s"

    async def _report_progress(self, elapsed: float) -> None:
        assert self.on_progress is not None
        try:
            result = self.on_progress(elapsed)
            if inspect.isawaitable(result):
                await result
        except Exception:
            _log.exception("Recording progress callback failed")

    # Helpers -------------------------------------------------------------------

    async def _sleep(self) -> None:
        if self._wake.is_set():
            self._wake.clear()
            return
        try:
            await asyncio.wait_for(self._wake.wait(), self.poll_interval)
        except TimeoutError:
            return
        self._wake.clear()

    def _early(self, outcome: RecordingOutcome, detail: str, began: float) -> RecordingResult:
        _log.info("Recording of user %d not started: %s (%s)", self.user_id, outcome.value, detail)
        return RecordingResult(
            outcome=outcome,
            detail=detail,
            audio_seconds=0.0,
            lead_in_seconds=0.0,
            start_timestamp=None,
            end_timestamp=None,
            packets_written=0,
            stats=UserStats(),
            unknown_ssrc_packets=0,
            waited_seconds=self.clock() - began,
            recorded_seconds=0.0,
        )
