"""The waveform of a Discord voice message, computed while the audio arrives.

Discord shows a voice message as bars: the attachment's ``waveform`` is the
base64 of at most 256 one-byte amplitudes spread over the whole duration.
While recording we keep one loudness value per 20 ms of the timeline (one
byte each: 9,000 bytes for three minutes); :meth:`WaveformBuilder.finish`
averages them into at most 256 points on a decibel scale.

Loudness of received Opus packets is measured by decoding them with libopus
in mono at 16 kHz (about 30 µs a packet here, the bulk of the receive path's
cost); silence filled in by the writer is never decoded and gives 0.
"""

from __future__ import annotations

import base64
import math
import warnings
from typing import Final

from bot.voice.opuslib import OpusDecoder

with warnings.catch_warnings():
    # audioop is deprecated in 3.11-3.12 and comes from audioop-lts on 3.13+
    # (the same C code pydub relies on); it is the fast RMS we need.
    warnings.simplefilter("ignore", DeprecationWarning)
    import audioop

#: Samples (at 48 kHz) per loudness slot: 20 ms.
SLOT_SAMPLES: Final = 960
#: Most amplitudes Discord accepts in a waveform.
MAX_POINTS: Final = 256
#: Rate and channels at which packets are decoded only to measure them.
LEVEL_DECODE_RATE: Final = 16000

#: The loudest point is drawn at 255 unless the whole recording is quieter.
_QUIET_TOP_DB: Final = -30.0
#: Decibels shown between an empty bar and a full one.
_RANGE_DB: Final = 45.0
#: Nothing quieter than this is drawn above zero.
_FLOOR_DB: Final = -65.0

_FULL_SCALE: Final = 32768.0


def _level_code(rms: float) -> int:
    """Quantise an RMS (of 16-bit samples) to a byte: 0 is silence, 2 steps per dB."""
    if rms <= 0.0:
        return 0
    db = 20.0 * math.log10(rms / _FULL_SCALE)
    return max(1, min(255, round((db + 100.0) * 2.0)))


#: Mean power of each level code, relative to full scale.
_CODE_POWER: Final = tuple(
    0.0 if code == 0 else 10.0 ** ((code / 2.0 - 100.0) / 10.0) for code in range(256)
)


def to_base64(amplitudes: bytes) -> str:
    """Return the waveform as Discord wants it in an attachment's ``waveform``."""
    return base64.b64encode(amplitudes).decode("ascii")


#: a packet is decoded for its level when it is at least 1/SAMPLING_RATIO of the
#: recording so far after the last decoded one (every packet in the first 7.7 s)
SAMPLING_RATIO = 384


class WaveformBuilder:
    """Loudness per 20 ms slot of a timeline in 48 kHz samples.

    Positions are sample offsets on the recording's timeline (the Ogg
    stream's granule scale). Packets may be added in any order; a slot
    touched twice keeps the louder value.
    """

    def __init__(self) -> None:
        """Start with an empty timeline; the decoder is made on first use."""
        self._codes = bytearray()
        self._decoder: OpusDecoder | None = None
        self._decoded_at: int | None = None
        self._held_code = 0

    @property
    def slots(self) -> int:
        """Number of 20 ms slots recorded so far (silent ones included)."""
        return len(self._codes)

    def _put(self, position: int, samples: int, code: int) -> None:
        if samples <= 0 or position < 0:
            return
        first = position // SLOT_SAMPLES
        last = (position + samples - 1) // SLOT_SAMPLES
        codes = self._codes
        if len(codes) <= last:
            codes.extend(bytes(last + 1 - len(codes)))
        if code == 0:
            return
        for slot in range(first, last + 1):
            if codes[slot] < code:
                codes[slot] = code

    def add_silence(self, position: int, samples: int) -> None:
        """Record ``samples`` of silence at ``position``."""
        self._put(position, samples, 0)

    def add_rms(self, position: int, samples: int, rms: float) -> None:
        """Record a measured RMS (16-bit scale) for ``samples`` at ``position``."""
        self._put(position, samples, _level_code(rms))

    def add_pcm(self, position: int, pcm: bytes | bytearray | memoryview, channels: int) -> None:
        """Measure interleaved signed 16-bit PCM at 48 kHz starting at ``position``.

        Each 20 ms slot the PCM covers gets the RMS of its own part of the PCM.
        """
        frame_bytes = 2 * channels
        view = memoryview(pcm).cast("B")
        usable = len(view) - len(view) % frame_bytes
        offset = 0
        slot_start = position
        while offset < usable:
            samples = SLOT_SAMPLES - slot_start % SLOT_SAMPLES
            chunk = view[offset : min(usable, offset + samples * frame_bytes)]
            samples = len(chunk) // frame_bytes
            self._put(slot_start, samples, _level_code(audioop.rms(chunk, 2)))
            offset += len(chunk)
            slot_start += samples

    def add_packet(self, position: int, samples: int, packet: bytes) -> None:
        """Decode one Opus packet (in stream order) and record its loudness.

        A packet libopus rejects counts as silence. Not every packet is
        decoded: once the recording is long, a packet closer than
        ``position / SAMPLING_RATIO`` samples to the last decoded one takes
        that one's level (a point of the final waveform still rests on a
        dozen decoded packets), which keeps a 3-minute recording to about
        1,500 decodes instead of 9,000.

        Raises:
            OpusLibraryError: libopus is missing.
        """
        decoded_at = self._decoded_at
        if decoded_at is not None and 0 <= position - decoded_at < max(
            SLOT_SAMPLES, position // SAMPLING_RATIO
        ):
            self._put(position, samples, self._held_code)
            return
        self._decoded_at = position
        decoder = self._decoder
        if decoder is None:
            decoder = self._decoder = OpusDecoder(LEVEL_DECODE_RATE, 1)
        try:
            pcm = decoder.decode(packet)
        except ValueError:
            self._held_code = 0
            self._put(position, samples, 0)
            return
        self._held_code = _level_code(audioop.rms(pcm, 2))
        self._put(position, samples, self._held_code)

    def close(self) -> None:
        """Free the decoder, if one was made."""
        if self._decoder is not None:
            self._decoder.close()
            self._decoder = None

    def finish(self, start: int, end: int) -> bytes:
        """Return at most 256 amplitudes (0-255) for the samples ``[start, end)``.

        Each point is the mean power of its slots on a decibel scale: the
        loudest point is 255 (unless everything is quieter than -30 dBFS),
        45 dB below it is 0, and pure silence is exactly 0. An empty range
        gives a single 0, since Discord wants at least one value.
        """
        first = max(0, start // SLOT_SAMPLES)
        stop = max(first, -(-end // SLOT_SAMPLES))
        codes = bytes(self._codes[first:stop]).ljust(stop - first, b"\x00")
        count = len(codes)
        if count == 0:
            return b"\x00"
        points = min(MAX_POINTS, count)
        powers: list[float] = []
        for index in range(points):
            lo = index * count // points
            hi = (index + 1) * count // points
            chunk = codes[lo:hi]
            powers.append(sum(_CODE_POWER[code] for code in chunk) / len(chunk))
        loudest = max(powers)
        if loudest <= 0.0:
            return bytes(points)
        top = max(10.0 * math.log10(loudest), _QUIET_TOP_DB)
        floor = max(top - _RANGE_DB, _FLOOR_DB)
        amplitudes = bytearray(points)
        for index, power in enumerate(powers):
            if power > 0.0:
                db = 10.0 * math.log10(power)
                scaled = round(255.0 * (db - floor) / (top - floor))
                amplitudes[index] = max(0, min(255, scaled))
        return bytes(amplitudes)
