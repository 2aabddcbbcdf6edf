"""The shared speech source for voice tests: real speech as 20 ms stereo Opus packets.

``fixtures/speech.ogg`` (made by ``fixtures/make_speech.py``) holds about
23 s of espeak-ng speech, Russian and English, 48 kHz mono. Discord clients
send stereo Opus in 20 ms frames, so :func:`opus_packets` decodes the
fixture and re-encodes it that way with PyAV's libopus, once per process.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from pathlib import Path

import av
import av.audio.resampler

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SPEECH_OGG = FIXTURES / "speech.ogg"
SAMPLE_RATE = 48000
FRAME_SAMPLES = 960


@functools.cache
def speech_pcm() -> bytes:
    """Return the fixture's speech as 48 kHz stereo signed 16-bit interleaved PCM."""
    resampler = av.audio.resampler.AudioResampler(format="s16", layout="stereo", rate=SAMPLE_RATE)
    pcm = bytearray()
    with av.open(str(SPEECH_OGG)) as container:
        for frame in container.decode(audio=0):
            for out in resampler.resample(frame):
                pcm += bytes(out.planes[0])[: out.samples * 4]
    for out in resampler.resample(None):
        pcm += bytes(out.planes[0])[: out.samples * 4]
    return bytes(pcm)


@functools.cache
def _encoded_packets() -> tuple[bytes, ...]:
    pcm = speech_pcm()
    encoder = av.CodecContext.create("libopus", "w")
    assert isinstance(encoder, av.AudioCodecContext)
    encoder.sample_rate = SAMPLE_RATE
    encoder.layout = "stereo"
    encoder.format = "s16"
    encoder.bit_rate = 64000
    encoder.options = {"frame_duration": "20", "application": "voip"}
    packets: list[bytes] = []
    step = FRAME_SAMPLES * 4
    whole = len(pcm) - len(pcm) % step
    for index, offset in enumerate(range(0, whole, step)):
        frame = av.AudioFrame(format="s16", layout="stereo", samples=FRAME_SAMPLES)
        frame.planes[0].update(pcm[offset : offset + step])
        frame.sample_rate = SAMPLE_RATE
        frame.pts = index * FRAME_SAMPLES
        frame.time_base = Fraction(1, SAMPLE_RATE)
        packets.extend(bytes(packet) for packet in encoder.encode(frame))
    packets.extend(bytes(packet) for packet in encoder.encode(None))
    return tuple(packets)


def opus_packets() -> list[bytes]:
    """Return the fixture's speech as 20 ms stereo 48 kHz Opus packets (about 1,150).

    Each packet is what a Discord client would send for 20 ms of audio,
    ready to be replayed with RTP timestamps 960 apart.
    """
    return list(_encoded_packets())
