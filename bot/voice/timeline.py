"""Where each received packet of one speaker belongs in his recording.

Pure code, no I/O: :class:`Timeline` turns ``(SSRC, RTP sequence, RTP
timestamp, arrival time)`` into a place on the recording's own timeline: a
position in 48 kHz samples since recording started and a sequence number that
only grows, which an :class:`~bot.voice.ogg.OggOpusWriter` takes as one
continuous RTP stream.

RTP time alone is not to be trusted. A Discord client that reconnects comes
back with a new SSRC, a new random sequence number and a new random timestamp
base; a client whose clock or encoder restarts jumps its timestamps on the
same SSRC; some senders do not advance the timestamp while they are silent.
The arrival clock is coarse (network jitter, tens of milliseconds) but never
wrong by seconds. So the timeline follows RTP time between anchors and
re-anchors on the arrival clock:

* when a new SSRC (or a sequence restart on the same SSRC) begins: its first
  packet is placed where it arrived, never before the end of what is already
  placed;
* when the place RTP time gives a packet (from the last anchor) and the place
  it arrived disagree by more than ``tolerance`` (a second by default): the
  packet that shows it is placed where it arrived (never before the end of
  what is placed), and its stream follows RTP time from there.

Late, reordered packets keep the anchor they were sent under (anchors are
kept per range of sequence numbers), so a re-anchor never misplaces the
packets around it; one whose place by RTP time disagrees with its arrival by
more than the tolerance is discarded (seconds late, or a timestamp that fits
nothing, it could only push silence into the file). Otherwise nothing is
dropped here but packets before the start of recording; duplicates and
packets too late for the file are the writer's to drop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from .rtp import sequence_delta, timestamp_delta

__all__ = ["Placement", "Timeline"]

SAMPLE_RATE: Final = 48_000
#: Sequence numbers left free between two streams, for packets of the new one
#: that arrive before its first (reordering).
_STREAM_GAP: Final = 64
#: A sequence number this far behind the highest seen is a restart, not a late packet.
_RESTART_BEHIND: Final = 512
#: Anchors kept per stream, for late packets sent under an older one.
_KEPT_ANCHORS: Final = 4


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a packet goes: its recording sequence number and position in samples."""

    sequence: int
    """Grows across streams; an Ogg writer may take it modulo 2**16."""
    position: int
    """Samples from the start of recording to the start of the packet."""


@dataclass(slots=True)
class _Anchor:
    first_sequence: int
    """Extended sequence number of the stream from which this anchor holds."""
    timestamp: int
    """Extended RTP timestamp of the anchoring packet."""
    position: int
    """Where the anchoring packet was placed (samples)."""
    arrival: int
    """When it arrived (samples since recording started)."""


@dataclass(slots=True)
class _Stream:
    """One RTP stream: counters unwrapped relative to the first packet, and its anchors."""

    raw_sequence: int
    raw_timestamp: int
    sequence_offset: int
    """Added to the extended sequence number to give the recording's."""
    highest: int = 0
    highest_timestamp: int = 0
    anchors: list[_Anchor] = field(default_factory=list)

    def extend(self, sequence: int, timestamp: int) -> tuple[int, int]:
        """Unwrap 16-bit sequence and 32-bit timestamp around the newest packet."""
        ext_sequence = self.highest + sequence_delta(sequence, self.raw_sequence)
        ext_timestamp = self.highest_timestamp + timestamp_delta(timestamp, self.raw_timestamp)
        return ext_sequence, ext_timestamp

    def anchor_for(self, ext_sequence: int) -> _Anchor:
        for anchor in reversed(self.anchors):
            if ext_sequence >= anchor.first_sequence:
                return anchor
        return self.anchors[0]


class Timeline:
    """Places one speaker's packets on his recording's timeline.

    ``started`` is the arrival clock's reading when recording began;
    ``tolerance`` the disagreement (seconds) between RTP and arrival time
    beyond which a stream is re-anchored. Not thread-safe.
    """

    def __init__(self, started: float, *, tolerance: float = 1.0) -> None:
        if tolerance <= 0:
            raise ValueError(f"tolerance must be positive, not {tolerance}")
        self.started = started
        self.tolerance = round(tolerance * SAMPLE_RATE)
        self.end = 0
        """End (samples) of the furthest packet placed so far."""
        self.streams = 0
        """RTP streams seen: SSRCs, and sequence restarts on one SSRC."""
        self.reanchors = 0
        """Times RTP and arrival time disagreed and a stream was re-anchored."""
        self.discarded = 0
        """Late packets whose RTP time fits neither their anchor nor their arrival."""
        self._streams: dict[int, _Stream] = {}
        self._next_sequence = 0

    def _arrival(self, arrival: float) -> int:
        return round((arrival - self.started) * SAMPLE_RATE)

    def place(
        self, ssrc: int, sequence: int, timestamp: int, arrival: float, samples: int
    ) -> Placement | None:
        """Place a packet of ``samples`` samples.

        None if it belongs before the recording, or is a late packet whose
        RTP time is off by more than the tolerance.
        """
        arrived = self._arrival(arrival)
        stream = self._streams.get(ssrc)
        if stream is None:
            return self._begin(ssrc, sequence, timestamp, arrived, samples)
        ext_sequence, ext_timestamp = stream.extend(sequence, timestamp)
        if ext_sequence < stream.highest - _RESTART_BEHIND:
            return self._begin(ssrc, sequence, timestamp, arrived, samples)
        if ext_sequence > stream.highest:
            stream.highest, stream.raw_sequence = ext_sequence, sequence & 0xFFFF
            stream.highest_timestamp, stream.raw_timestamp = ext_timestamp, timestamp & 0xFFFFFFFF
            anchor = stream.anchors[-1]
            if abs(self._drift(anchor, ext_timestamp, arrived)) > self.tolerance:
                self.reanchors += 1
                anchor = _Anchor(ext_sequence, ext_timestamp, max(arrived, self.end), arrived)
                stream.anchors.append(anchor)
                del stream.anchors[:-_KEPT_ANCHORS]
        else:
            anchor = stream.anchor_for(ext_sequence)
            if abs(self._drift(anchor, ext_timestamp, arrived)) > self.tolerance:
                # Seconds late, or a timestamp that fits nothing: of no use to the file.
                self.discarded += 1
                return None
        return self._placed(stream, ext_sequence, anchor, ext_timestamp, samples)

    @staticmethod
    def _drift(anchor: _Anchor, ext_timestamp: int, arrived: int) -> int:
        """How far (samples) RTP time from ``anchor`` would place a packet from where it arrived.

        Measured from the place, not from the anchor's arrival: an anchor put after the end of
        what was placed (so as not to overlap it) lies ahead of the clock, and a stream following
        RTP time from it would stay that far ahead for good, each such anchor adding to it
        (found by the property test: a stream begun behind another one, then a packet seconds
        later, placed seconds after it arrived). Measured so, once the clock has caught up with
        the end, the stream is back where its packets arrive.
        """
        return anchor.position + ext_timestamp - anchor.timestamp - arrived

    def _begin(
        self, ssrc: int, sequence: int, timestamp: int, arrived: int, samples: int
    ) -> Placement | None:
        self.streams += 1
        stream = _Stream(
            raw_sequence=sequence & 0xFFFF,
            raw_timestamp=timestamp & 0xFFFFFFFF,
            sequence_offset=self._next_sequence + _STREAM_GAP,
        )
        stream.anchors.append(_Anchor(0, 0, max(arrived, self.end), arrived))
        self._streams[ssrc] = stream
        return self._placed(stream, 0, stream.anchors[0], 0, samples)

    def _placed(
        self, stream: _Stream, ext_sequence: int, anchor: _Anchor, ext_timestamp: int, samples: int
    ) -> Placement | None:
        position = anchor.position + ext_timestamp - anchor.timestamp
        sequence = stream.sequence_offset + ext_sequence
        self._next_sequence = max(self._next_sequence, sequence + 1)
        if position < 0:
            return None
        self.end = max(self.end, position + samples)
        return Placement(sequence, position)
