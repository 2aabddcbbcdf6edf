"""How a last-word recording ended (:class:`RecordingOutcome`) and what it was based on
(:class:`RecordingResult`)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .receiver import UserStats

__all__ = ["RecordingOutcome", "RecordingResult"]


class RecordingOutcome(enum.Enum):
    """How a last-word recording ended."""

    complete = "complete"
    """The time limit was reached."""
    stopped = "stopped"
    """:meth:`bot.voice.recorder.Recorder.stop` was called (the nominee or the host ended it)."""
    left = "left"
    """The nominee left the voice channel while recording."""
    not_joined = "not_joined"
    """The nominee did not come into the voice channel in time."""
    connection_lost = "connection_lost"
    """The bot's voice connection dropped and every reconnect failed."""
    no_audio = "no_audio"
    """No decryptable audio of the nominee arrived at all."""
    dave_failed = "dave_failed"
    """End-to-end encryption never became ready, or none of his frames decrypted."""

    @property
    def technical_failure(self) -> bool:
        """True when the bot, not the player, is to blame: do not spend his last word
        (unless the recording holds audio, see :attr:`RecordingResult.technical_failure`)."""
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
    end_position: int | None
    """Where the recording ended on its timeline, in samples (for the sink's
    close: trailing silence up to it, at most ``max_seconds``); None when no
    packet was written."""
    packets_written: int
    stats: UserStats
    """The receiver's counters for the nominee, at the end."""
    unknown_ssrc_packets: int
    """Packets on SSRCs no SPEAKING event named, during the recording."""
    waited_seconds: float
    """From run() to the start of recording (join and DAVE)."""
    recorded_seconds: float
    """Wall-clock length of the recording phase."""
    streams: int = 0
    """RTP streams the nominee's audio came in: one, plus one per reconnect."""
    reanchors: int = 0
    """Times his RTP time jumped away from the arrival clock and was re-anchored."""
    reconnects: int = 0
    """Times the bot's voice connection dropped and came back while recording."""
    absences: int = 0
    """Times the nominee stepped out of the voice channel and came back in time."""

    @property
    def technical_failure(self) -> bool:
        """Nothing to post, and the bot to blame: his last word is not used up.

        A connection lost for good after he had spoken is not: what he said is
        posted, as when he stops.
        """
        if self.outcome is RecordingOutcome.connection_lost:
            return self.packets_written == 0
        return self.outcome.technical_failure
