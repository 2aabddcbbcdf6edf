"""Where a recording's packets go: the :class:`RecordingSink` that
:class:`bot.voice.recorder.Recorder` writes to, and :class:`OggSink`, which makes an Ogg Opus
file of them."""

from __future__ import annotations

from typing import BinaryIO, Protocol

from .ogg import OggOpusWriter, RecordingInfo

__all__ = ["OGG_START", "OggSink", "RecordingSink"]


class RecordingSink(Protocol):
    """Where a recording's packets go, already placed on its timeline."""

    def write(self, sequence: int, position: int, opus: bytes) -> bool:
        """Take one packet: an ever-growing sequence number, its position in samples.

        Returns False once the sink holds ``max_seconds`` of audio (the
        recording is then complete).
        """


#: Where the recording's start sits on an Ogg writer's RTP clock: past the
#: pre-skip (312 samples) and a whole 2.5 ms frame more, because the writer
#: fills gaps in whole frames rounded down. Audio thus plays at most 3.5 ms
#: after its place on the recording's timeline and never before it, and
#: silence filled up to the end of recording always reaches the limit.
OGG_START: int = 480


class OggSink:
    """A :class:`RecordingSink` writing an Ogg Opus file, 48 kHz mono like Discord's voice messages.

    Discord's clients send stereo Opus; the file announces one output channel
    (RFC 7845 allows packets of either kind in a stream, the decoder mixes
    them down), so the received packets are kept bit for bit. The writer is
    made at the first packet: :meth:`close` returns None when none came.
    """

    def __init__(self, handle: BinaryIO, max_seconds: float) -> None:
        self.handle = handle
        self.max_seconds = max_seconds
        self.writer: OggOpusWriter | None = None

    def write(self, sequence: int, position: int, opus: bytes) -> bool:
        """Feed the packet to the writer; False once the file is full."""
        if self.writer is None:
            self.writer = OggOpusWriter(
                self.handle, max_seconds=self.max_seconds, start_timestamp=0, channels=1
            )
        return self.writer.feed(sequence & 0xFFFF, (OGG_START + position) & 0xFFFFFFFF, opus)

    def close(self, end_position: int | None) -> RecordingInfo | None:
        """Finish the file, with silence up to ``end_position`` (samples); None if empty."""
        if self.writer is None:
            return None
        end = None if end_position is None else (OGG_START + end_position) & 0xFFFFFFFF
        return self.writer.close(end_timestamp=end)
