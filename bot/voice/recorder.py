"""One last-word recording: a nominee's voice, up to the time limit, into a sink.

:class:`Recorder` waits until the nominee is in the bot's voice channel and
the call's end-to-end encryption is settled with him in the MLS group, then
places his Opus packets on the recording's timeline and hands them to a
:class:`RecordingSink` until one of the :class:`RecordingOutcome` ends. The
caller decides what an outcome means for the game;
:attr:`RecordingOutcome.technical_failure` says which ones are not the
player's doing, so his last word is not used up by them.

The timeline (:class:`bot.voice.timeline.Timeline`) starts when recording
starts and counts silence: a packet's position is where it arrived, followed
by RTP time, re-anchored on the arrival clock whenever the nominee's client
reconnects (new SSRC, new random timestamps) or its RTP time jumps. The limit
is measured in audio written: the sink says when it holds ``max_seconds``
(:class:`OggSink`'s writer cuts at the exact sample), and nothing an RTP
clock claims ends a recording early. Discord clients send nothing while their
user is silent, so the wall clock also ends the recording, a moment
(``wall_grace``) after ``max_seconds``; ``result.end_position`` then tells the
sink where the recording ended, so trailing silence is kept and the file is
exactly as long as the recording, at most ``max_seconds``.

The nominee leaving the voice channel (the main gateway's voice state) does
not end the recording at once: he has ``leave_grace`` seconds to come back,
and the same recording goes on, the time he was away as silence (his client
comes back with a new SSRC: the timeline re-anchors it where it arrives).
Only once the grace has passed does his leaving end it (outcome ``left``,
the file ending where he left). His client dropping off the voice server and
coming back (op 13, then a new SSRC) is the same, without the grace.

The bot's own voice connection may drop too: Discord moves a call to another
voice server (VOICE_SERVER_UPDATE with a new endpoint: discord.py closes the
websocket with 4014 and connects to the new one), a voice server crashes
(4015), a websocket just closes. The recording outlives it: the receiver's
sink and the timeline stay, the time away is silence in the file, the wall
clock goes on counting the limit. discord.py is given ``reconnect_wait``
seconds to follow a server move by itself; any other drop, or a move it did
not finish, is handed to ``reconnect`` (a fresh connection to the channel),
up to ``reconnect_attempts`` times in a row, and all of it within
``reconnect_give_up`` seconds of the drop (a voice server that never answers
is not waited for: an attempt still under way then is cancelled). Only then
does the recording end as ``connection_lost``, with what it holds so far: the
file ends with the last audio heard, not with the time spent failing.

:meth:`Recorder.stop` ends a recording at once, whatever it is waiting for;
``cut=True`` (the game no longer lets him speak) ends the file with his last
audio too.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from .ogg import InvalidOpusPacket, opus_packet_samples
from .outcome import RecordingOutcome, RecordingResult
from .receiver import ReceivedPacket, ReceivingVoiceClient, UserStats, VoiceReceiver
from .reconnects import Attempts
from .sink import OggSink, RecordingSink
from .timeline import Timeline

__all__ = [
    "OggSink",
    "Recorder",
    "RecordingOutcome",
    "RecordingResult",
    "RecordingSink",
]

_log = logging.getLogger(__name__)

SAMPLE_RATE = 48_000
_DEFAULT_FRAME_SAMPLES = 960
ProgressCallback = Callable[[float], Awaitable[None] | None]
AbsenceCallback = Callable[[bool], Awaitable[None] | None]
"""Called with True when the nominee steps out of the voice channel, False when he is back."""
Reconnect = Callable[[], Awaitable[ReceivingVoiceClient]]
"""Gives a freshly connected voice client in the same channel (the old one is done with)."""
#: discord.py's close code after a VOICE_SERVER_UPDATE (it reconnects by itself then).
_CLOSE_SERVER_MOVED = 4014


def _packet_samples(packet: bytes) -> int:
    try:
        return opus_packet_samples(packet)
    except InvalidOpusPacket:
        return _DEFAULT_FRAME_SAMPLES


class _TimelineSink:
    """Between the receiver and the real sink: places packets on the timeline, stops when full."""

    def __init__(self, recorder: Recorder, sink: RecordingSink) -> None:
        self._recorder = recorder
        self._sink = sink
        self.timeline = Timeline(recorder.recording_started)
        self.first_position: int | None = None
        self.audio_end = 0
        self.written = 0
        self.full = False

    def write_packet(self, packet: ReceivedPacket) -> None:
        if self.full:
            return
        samples = _packet_samples(packet.opus)
        placed = self.timeline.place(
            packet.ssrc, packet.sequence, packet.timestamp, packet.arrival, samples
        )
        if placed is None:
            # Reordered from before the start of recording.
            return
        if self.first_position is None:
            self.first_position = placed.position
        accepting = self._sink.write(placed.sequence, placed.position, packet.opus)
        self.written += 1
        self.audio_end = max(self.audio_end, placed.position + samples)
        if not accepting:
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
    ``poll_interval``); it defaults to, and must be, the receiver's clock,
    which stamps every packet's arrival. ``on_progress(elapsed_seconds)``, plain or async, is
    called every ``progress_interval`` seconds while recording. Without any
    decrypted packet after ``no_audio_timeout`` seconds of recording, or once
    ``dave_failure_threshold`` of his frames failed DAVE decryption with none
    succeeding, the recording ends as a technical failure.

    ``leave_grace`` is how long the nominee may be out of the voice channel
    and come back to the same recording; ``on_absence(away)`` is told when he
    steps out and when he is back. ``reconnect`` (see the module's text) gives
    a new connection when the bot's own drops, ``reconnect_attempts`` failed
    calls in a row end the recording, ``reconnect_backoff`` times the attempt
    number is the wait between them, and ``reconnect_give_up`` seconds after
    the drop the link is given up whatever is under way.
    """

    def __init__(
        self,
        voice_client: ReceivingVoiceClient,
        user_id: int,
        sink: RecordingSink,
        *,
        max_seconds: float = 180.0,
        join_timeout: float = 60.0,
        dave_timeout: float = 15.0,
        clock: Callable[[], float] | None = None,
        on_progress: ProgressCallback | None = None,
        progress_interval: float = 5.0,
        no_audio_timeout: float = 30.0,
        dave_failure_threshold: int = 100,
        wall_grace: float = 1.0,
        poll_interval: float = 0.05,
        leave_grace: float = 30.0,
        on_absence: AbsenceCallback | None = None,
        reconnect: Reconnect | None = None,
        reconnect_attempts: int = 3,
        reconnect_wait: float = 5.0,
        reconnect_backoff: float = 1.0,
        reconnect_give_up: float = 20.0,
    ) -> None:
        if max_seconds <= 0:
            raise ValueError(f"max_seconds must be positive, not {max_seconds}")
        self.voice_client = voice_client
        self.user_id = user_id
        self.sink = sink
        self.max_seconds = max_seconds
        self.join_timeout = join_timeout
        self.dave_timeout = dave_timeout
        self.clock = clock if clock is not None else voice_client.receiver.clock
        self.on_progress = on_progress
        self.progress_interval = progress_interval
        self.no_audio_timeout = no_audio_timeout
        self.dave_failure_threshold = dave_failure_threshold
        self.wall_grace = wall_grace
        self.poll_interval = poll_interval
        self.leave_grace = leave_grace
        self.on_absence = on_absence
        self.reconnect = reconnect
        self.reconnect_attempts = reconnect_attempts
        self.reconnect_wait = reconnect_wait
        self.reconnect_backoff = reconnect_backoff
        self.reconnect_give_up = reconnect_give_up
        self.recording_started = 0.0
        self.down_since: float | None = None
        """When (the clock) the bot's voice link dropped, while it is being got back."""
        self.away_since: float | None = None
        """When (the clock) the nominee stepped out, while he is out."""
        self.reconnects = 0
        """Voice sessions the bot began while recording (known once it ended)."""
        self.absences = 0
        self._stop_requested = False
        self._cut = False
        self._wake = asyncio.Event()
        self._ran = False

    def stop(self, *, cut: bool = False) -> None:
        """End the recording now (outcome ``stopped``); safe to call at any time.

        ``cut``: the file ends with the nominee's last audio, not where it was stopped.
        """
        self._stop_requested = True
        self._cut = self._cut or cut
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
        self._unknown = -receiver.stats.unknown_ssrc
        self._sessions = -self.voice_client.voice_sessions
        stats = receiver.register(self.user_id, timeline)
        try:
            outcome, detail, ended_at = await self._record_until_ended(timeline, stats)
        finally:
            receiver = self.voice_client.receiver
            receiver.unregister(self.user_id)
            self._unknown += receiver.stats.unknown_ssrc
            self._sessions += self.voice_client.voice_sessions
            self.reconnects = self._sessions
        return self._result(timeline, stats, outcome, detail, ended_at, began)

    async def _record_until_ended(
        self, timeline: _TimelineSink, stats: UserStats
    ) -> tuple[RecordingOutcome, str, float | None]:
        """Record until an outcome ends it: the outcome, its detail, and when the nominee
        stepped out if his leaving ended it."""
        next_progress = self.recording_started + self.progress_interval
        while True:
            now = self.clock()
            elapsed = now - self.recording_started
            if not self.voice_client.link_alive():
                ended = await self._reconnect(timeline, stats)
            else:
                ended = await self._check_recording(timeline, stats, elapsed, now)
            if ended is not None:
                outcome, detail = ended
                left = outcome is RecordingOutcome.left
                return outcome, detail, self.away_since if left else None
            if self.on_progress is not None and now >= next_progress:
                # Once per interval, never a backlog of them after a stall.
                while next_progress <= now:
                    next_progress += self.progress_interval
                audio = timeline.audio_end / SAMPLE_RATE
                await self._report_progress(min(self.max_seconds, max(elapsed, audio)))
            await self._sleep()

    def _result(
        self,
        timeline: _TimelineSink,
        stats: UserStats,
        outcome: RecordingOutcome,
        detail: str,
        ended_at: float | None,
        began: float,
    ) -> RecordingResult:
        """What a recording that ended says of itself (and tells the log)."""
        finished = self.clock()
        recorded = (finished if ended_at is None else ended_at) - self.recording_started
        audio_end = timeline.audio_end / SAMPLE_RATE
        end_position = None
        # a cut recording, or a link lost for good, ends with the last audio heard
        kept = 0.0 if self._cut or outcome is RecordingOutcome.connection_lost else recorded
        if timeline.first_position is not None:
            end_position = round(min(self.max_seconds, max(audio_end, kept)) * SAMPLE_RATE)
        lead_in = (timeline.first_position or 0) / SAMPLE_RATE
        _log.info(
            "Recording of user %d ended: %s (%s); %d packets, %.2f s of audio, "
            "%d streams, %d re-anchored, %d late packets discarded, %d reconnects, %d absences",
            self.user_id,
            outcome.value,
            detail,
            timeline.written,
            audio_end,
            timeline.timeline.streams,
            timeline.timeline.reanchors,
            timeline.timeline.discarded,
            self.reconnects,
            self.absences,
        )
        return RecordingResult(
            outcome=outcome,
            detail=detail,
            audio_seconds=min(audio_end, self.max_seconds),
            lead_in_seconds=lead_in,
            end_position=end_position,
            packets_written=timeline.written,
            stats=replace(stats),
            unknown_ssrc_packets=self._unknown,
            waited_seconds=self.recording_started - began,
            recorded_seconds=recorded,
            streams=timeline.timeline.streams,
            reanchors=timeline.timeline.reanchors,
            reconnects=self.reconnects,
            absences=self.absences,
        )

    def _time_is_up(
        self, timeline: _TimelineSink, elapsed: float
    ) -> tuple[RecordingOutcome, str] | None:
        if timeline.full:
            return RecordingOutcome.complete, f"{self.max_seconds:g} s of audio recorded"
        if self._stop_requested:
            return RecordingOutcome.stopped, "stopped"
        if elapsed >= self.max_seconds + self.wall_grace:
            return RecordingOutcome.complete, f"{self.max_seconds:g} s passed"
        return None

    async def _check_recording(
        self, timeline: _TimelineSink, stats: UserStats, elapsed: float, now: float
    ) -> tuple[RecordingOutcome, str] | None:
        up = self._time_is_up(timeline, elapsed)
        if up is not None:
            return up
        if not self._nominee_present():
            if self.away_since is None:
                self.away_since = now
                _log.info(
                    "User %d stepped out of the voice channel; %g s to come back",
                    self.user_id,
                    self.leave_grace,
                )
                await self._report(self.on_absence, True)
            if now - self.away_since >= self.leave_grace:
                return (
                    RecordingOutcome.left,
                    f"user {self.user_id} left the voice channel "
                    f"and was not back within {self.leave_grace:g} s",
                )
            return None
        if self.away_since is not None:
            _log.info("User %d is back after %.1f s", self.user_id, now - self.away_since)
            self.away_since = None
            self.absences += 1
            await self._report(self.on_absence, False)
        if stats.delivered == 0:
            failing = stats.dave_errors >= self.dave_failure_threshold
            out_of_time = elapsed >= min(self.no_audio_timeout, self.max_seconds + self.wall_grace)
            if failing or out_of_time:
                return self._no_audio(stats, elapsed)
        return None

    async def _reconnect(
        self, timeline: _TimelineSink, stats: UserStats
    ) -> tuple[RecordingOutcome, str] | None:
        """The bot's voice link is down: get it back, or say how the recording ends.

        None once a link is alive again (discord.py's own, or a new one). Each
        attempt runs beside this loop, so that a stop, the limit or the
        give-up (``reconnect_give_up`` seconds of the clock after the drop)
        ends it at once, however long a voice server takes not to answer.
        """
        down_since = self.down_since = self.clock()
        _log.warning(
            "Voice connection dropped while recording user %d (close code %s); reconnecting",
            self.user_id,
            self.voice_client.close_code(),
        )
        tries = Attempts(self.clock(), self.reconnect_attempts)
        try:
            while True:
                now = self.clock()
                up = self._time_is_up(timeline, now - self.recording_started)
                if up is not None:
                    return up
                # a new link is moved to inside its attempt, as it comes (not a packet lost)
                tries.finished(self.clock() + self.reconnect_backoff * tries.made)
                if self.voice_client.link_alive():
                    _log.info(
                        "Voice connection back after %.2f s (%d attempts of ours); recording "
                        "user %d goes on",
                        now - down_since,
                        tries.made,
                        self.user_id,
                    )
                    return None
                if now - down_since >= self.reconnect_give_up:
                    return RecordingOutcome.connection_lost, tries.failure(
                        f"not back within {self.reconnect_give_up:g} s"
                    )
                client = self.voice_client
                library_moves = (
                    client.close_code() == _CLOSE_SERVER_MOVED and client.is_connecting()
                )
                waiting = library_moves and now - down_since < self.reconnect_wait
                if not waiting and tries.idle(now):
                    if self.reconnect is None or tries.made >= self.reconnect_attempts:
                        return RecordingOutcome.connection_lost, tries.failure("")
                    tries.start(self._reconnected(timeline, stats))
                await self._sleep()
        finally:
            tries.cancel()
            self.down_since = None

    async def _reconnected(self, timeline: _TimelineSink, stats: UserStats) -> ReceivingVoiceClient:
        """One reconnect attempt: the new link, moved to the moment it is made (nothing runs
        between, so no packet it receives meanwhile is lost)."""
        assert self.reconnect is not None
        fresh = await self.reconnect()
        self._move_to(fresh, timeline, stats)
        return fresh

    def _move_to(
        self, fresh: ReceivingVoiceClient, timeline: _TimelineSink, stats: UserStats
    ) -> None:
        """Record on a new voice client: the same sink, timeline and counters."""
        old: VoiceReceiver = self.voice_client.receiver
        if fresh is self.voice_client:
            return
        old.unregister(self.user_id)
        self._unknown += old.stats.unknown_ssrc
        self._sessions += self.voice_client.voice_sessions
        fresh.receiver.clock = self.clock
        self._unknown -= fresh.receiver.stats.unknown_ssrc
        fresh.receiver.register(self.user_id, timeline, stats=stats)
        self.voice_client = fresh

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
        await self._report(self.on_progress, elapsed)

    @staticmethod
    async def _report(callback: Callable[[Any], Awaitable[None] | None] | None, value: Any) -> None:
        if callback is None:
            return
        try:
            result = callback(value)
            if inspect.isawaitable(result):
                await result
        except Exception:
            _log.exception("Recording callback %r failed", callback)

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
            end_position=None,
            packets_written=0,
            stats=UserStats(),
            unknown_ssrc_packets=0,
            waited_seconds=self.clock() - began,
            recorded_seconds=0.0,
        )
