"""Preparing uploaded recordings: formats, the 3-minute cut, refusals, garbage."""

from __future__ import annotations

import array
import asyncio
import base64
import functools
import importlib
import io
import math
import struct
import warnings
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import av
import av.audio.resampler
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.voice.upload import (
    HEADROOM_DB,
    MAX_GAIN_DB,
    MAX_UPLOAD_BYTES,
    NOISE_FLOOR_DBFS,
    SILENCE_DBFS,
    TARGET_DBFS,
    PreparedAudio,
    UploadError,
    prepare_upload,
)
from tests.voice.speech import speech_pcm


def encode_file(
    container_format: str,
    codec: str,
    pcm: bytes,
    *,
    rate: int = 48000,
    layout: str = "stereo",
    bit_rate: int | None = None,
) -> bytes:
    """Encode 48 kHz s16 PCM (stereo or mono, as ``layout``) into a file in memory."""
    channels = 2 if layout == "stereo" else 1
    sink = io.BytesIO()
    with av.open(sink, "w", format=container_format) as out:
        stream = out.add_stream(codec, rate=rate, layout=layout)
        assert isinstance(stream, av.AudioStream)
        if bit_rate:
            stream.bit_rate = bit_rate
        context = stream.codec_context
        resampler = av.audio.resampler.AudioResampler(
            format=context.format.name,
            layout=layout,
            rate=rate,
            frame_size=context.frame_size or 1024,
        )
        step = 4800
        frame_bytes = 2 * channels
        for offset in range(0, len(pcm) // frame_bytes, step):
            chunk = pcm[offset * frame_bytes : (offset + step) * frame_bytes]
            frame = av.AudioFrame(format="s16", layout=layout, samples=len(chunk) // frame_bytes)
            frame.planes[0].update(chunk)
            frame.sample_rate = 48000
            frame.pts = offset
            frame.time_base = Fraction(1, 48000)
            for resampled in resampler.resample(frame):
                out.mux(stream.encode(resampled))
        for resampled in resampler.resample(None):
            out.mux(stream.encode(resampled))
        out.mux(stream.encode(None))
    return sink.getvalue()


def wav_bytes(pcm: bytes, rate: int, channels: int = 1) -> bytes:
    """A canonical 16-bit PCM WAV file."""
    header = struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        36 + len(pcm),
        b"WAVE",
        b"fmt ",
        16,
        1,
        channels,
        rate,
        rate * 2 * channels,
        2 * channels,
        16,
        b"data",
        len(pcm),
    )
    return header + pcm


def decode_mono(ogg: bytes) -> array.array[float]:
    """Decode the prepared Ogg Opus (checking it is 48 kHz mono Opus)."""
    samples: array.array[float] = array.array("f")
    with av.open(io.BytesIO(ogg), "r", format="ogg") as container:
        stream = container.streams.audio[0]
        assert stream.codec_context.name == "opus"
        assert stream.sample_rate == 48000 and stream.channels == 1
        for frame in container.decode(stream):
            assert frame.format.name == "fltp"
            samples.frombytes(bytes(frame.planes[0])[: frame.samples * 4])
    return samples


def rms_db(samples: Sequence[float]) -> float:
    power = sum(x * x for x in samples) / max(1, len(samples))
    return 10 * math.log10(power) if power > 0 else -math.inf


def _audioop() -> Any:
    """The deprecated audioop module (audioop-lts on 3.13+), for building inputs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return importlib.import_module("audioop")


def mono_pcm() -> bytes:
    pcm: bytes = _audioop().tomono(speech_pcm(), 2, 0.5, 0.5)
    return pcm


FORMATS = {
    "ogg": ("ogg", "libopus", "speech.ogg", "audio/ogg"),
    "mp3": ("mp3", "libmp3lame", "speech.mp3", "audio/mpeg"),
    "m4a": ("ipod", "aac", "speech.m4a", "audio/mp4"),
    "aac": ("adts", "aac", "speech.aac", "audio/aac"),
    "wav": ("wav", "pcm_s16le", "speech.wav", "audio/wav"),
    "webm": ("webm", "libopus", "speech.webm", "audio/webm"),
}


@pytest.fixture(scope="module")
def uploads() -> dict[str, bytes]:
    pcm = speech_pcm()
    return {
        name: encode_file(container, codec, pcm)
        for name, (container, codec, _, _) in FORMATS.items()
    }


def opus_head(ogg: bytes) -> tuple[int, int, int, int, int, int]:
    """(version, channels, pre-skip, input rate, gain, mapping family) of the first page."""
    assert ogg[:4] == b"OggS" and ogg[28:36] == b"OpusHead"
    fields: tuple[int, int, int, int, int, int] = struct.unpack("<BBHIhB", ogg[36:47])
    return fields


def check_prepared(prepared: PreparedAudio) -> array.array[float]:
    version, channels, _, rate, _, family = opus_head(prepared.ogg_bytes)
    assert (version, channels, rate, family) == (1, 1, 48000, 0), "mono 48 kHz, as Discord records"
    decoded = decode_mono(prepared.ogg_bytes)
    assert len(decoded) == round(prepared.duration_secs * 48000)
    waveform = base64.b64decode(prepared.waveform)
    assert 0 < len(waveform) <= 256
    return decoded


@pytest.mark.parametrize("name", list(FORMATS))
def test_each_format_becomes_normalised_ogg_opus(uploads: dict[str, bytes], name: str) -> None:
    _, _, filename, content_type = FORMATS[name]
    prepared = prepare_upload(uploads[name], filename, content_type)
    decoded = check_prepared(prepared)
    source_seconds = len(speech_pcm()) / 4 / 48000
    assert abs(prepared.duration_secs - source_seconds) < 0.06, "codec padding at most"
    loudness = rms_db(decoded)
    assert loudness == pytest.approx(expected_loudness(mono_pcm()), abs=1.5)
    assert max(abs(x) for x in decoded) < 1.0, "headroom kept"
    waveform = base64.b64decode(prepared.waveform)
    assert len(waveform) == 256
    assert sum(1 for a in waveform if a > 60) > 150, "speech is drawn as speech"
    # The pauses between sentences (0.6 s) are still there.
    source = mono_pcm()
    window = 4800
    quiet = [
        i
        for i in range(0, len(source) // 2 - window, window)
        if _audioop().rms(source[i * 2 : (i + window) * 2], 2) < 20
    ]
    assert quiet, "the fixture has pauses"
    for start in quiet:
        assert rms_db(decoded[start + 960 : start + window - 960]) < loudness - 30


def test_names_and_content_types_do_not_matter_for_known_bytes(uploads: dict[str, bytes]) -> None:
    prepared = prepare_upload(uploads["mp3"], "recording.bin", "application/octet-stream")
    assert prepared.duration_secs > 20


def test_mono_8khz_wav_is_resampled() -> None:
    audioop = _audioop()
    pcm8k, _ = audioop.ratecv(mono_pcm(), 2, 1, 48000, 8000, None)
    prepared = prepare_upload(wav_bytes(pcm8k, 8000), "voice.wav", None)
    check_prepared(prepared)
    assert abs(prepared.duration_secs - len(pcm8k) / 2 / 8000) < 0.01


def tone_wav(seconds: int, rate: int = 8000, amplitude: int = 8000) -> bytes:
    period = array.array(
        "h", [round(amplitude * math.sin(2 * math.pi * i / 20)) for i in range(20)]
    )
    return wav_bytes(period.tobytes() * (seconds * rate // 20), rate)


def test_ten_minutes_are_cut_at_three_with_a_fade_out() -> None:
    data = tone_wav(600)
    prepared = prepare_upload(data, "long.wav", "audio/wav")
    assert prepared.duration_secs == 180.0
    decoded = check_prepared(prepared)
    assert len(decoded) == 180 * 48000
    steady = rms_db(decoded[-48000 * 2 : -48000])
    assert TARGET_DBFS - 1 < steady < TARGET_DBFS + 1
    tail = [rms_db(decoded[-4800 * (k + 1) : len(decoded) - 4800 * k]) for k in range(6)]
    # The last 0.5 s fall steadily, by a lot; the 0.1 s before them are untouched.
    assert tail[5] == pytest.approx(steady, abs=0.5)
    assert tail[0] < tail[1] < tail[2] < tail[3] < tail[4] < tail[5]
    assert tail[0] < steady - 15
    waveform = base64.b64decode(prepared.waveform)
    assert waveform[-1] < waveform[-3] == 255


def test_shorter_max_seconds() -> None:
    prepared = prepare_upload(tone_wav(10), "tone.wav", None, max_seconds=3)
    assert prepared.duration_secs == 3.0
    assert len(check_prepared(prepared)) == 3 * 48000


def level_db(pcm: bytes) -> tuple[float, float]:
    """RMS and peak of s16 PCM in dBFS, computed here without pydub."""
    samples = array.array("h", pcm)
    peak = max(abs(x) for x in samples) / 32768
    return rms_db(samples) - 20 * math.log10(32768), 20 * math.log10(peak) if peak else -math.inf


def expected_loudness(pcm: bytes) -> float:
    """The documented rule: toward the target, peaks 1 dB below full scale, +20 dB at most."""
    rms, peak = level_db(pcm)
    if rms <= NOISE_FLOOR_DBFS:
        return rms
    return rms + min(TARGET_DBFS - rms, -HEADROOM_DB - peak, MAX_GAIN_DB)


@pytest.mark.parametrize("factor", [0.3, 0.1, 0.02, 3.0])
def test_loudness_normalisation(factor: float) -> None:
    scaled: bytes = _audioop().mul(mono_pcm(), 2, factor)
    prepared = prepare_upload(wav_bytes(scaled, 48000), "speech.wav", None)
    decoded = decode_mono(prepared.ogg_bytes)
    assert rms_db(decoded) == pytest.approx(expected_loudness(scaled), abs=1.0)
    assert max(abs(x) for x in decoded) < 1.0


def test_the_rule_covers_each_case() -> None:
    source = mono_pcm()
    rms, peak = level_db(source)
    assert -26 < rms < -23 and -4 < peak < -2, "ordinary speech, peaks limit the gain"
    audioop = _audioop()
    assert level_db(audioop.mul(source, 2, 0.1))[0] + MAX_GAIN_DB < expected_loudness(
        audioop.mul(source, 2, 0.3)
    ), "0.1: capped at +20 dB; 0.3: limited by the peaks"
    assert level_db(audioop.mul(source, 2, 0.02))[0] < NOISE_FLOOR_DBFS, "0.02: left alone"
    assert expected_loudness(audioop.mul(source, 2, 3.0)) == pytest.approx(TARGET_DBFS)


def test_noise_is_not_amplified() -> None:
    # A faint tone in hiss: audible, but on average below the noise floor.
    hiss = array.array("h", [(i * 7919) % 7 - 3 for i in range(48000 * 4)])
    for i in range(48000):
        hiss[i] += round(150 * math.sin(2 * math.pi * 440 * i / 48000))
    quiet = hiss.tobytes()
    loudness, _ = level_db(quiet)
    assert NOISE_FLOOR_DBFS - 20 < loudness < NOISE_FLOOR_DBFS
    prepared = prepare_upload(wav_bytes(quiet, 48000), "hiss.wav", None)
    assert rms_db(decode_mono(prepared.ogg_bytes)) == pytest.approx(loudness, abs=3)


# --- refusals -----------------------------------------------------------------------------


def refusal(data: bytes, filename: str, content_type: str | None) -> str:
    with pytest.raises(UploadError) as caught:
        prepare_upload(data, filename, content_type)
    return caught.value.code


def test_too_large_is_refused_before_decoding() -> None:
    assert refusal(b"OggS" + bytes(MAX_UPLOAD_BYTES), "big.ogg", "audio/ogg") == "upload_too_large"


def test_empty_uploads() -> None:
    assert refusal(b"", "nothing.ogg", "audio/ogg") == "upload_empty"
    assert refusal(wav_bytes(b"", 48000), "nothing.wav", "audio/wav") == "upload_empty"


def png_bytes() -> bytes:
    sink = io.BytesIO()
    with av.open(sink, "w", format="image2pipe") as out:
        stream = out.add_stream("png", rate=1)
        stream.width = stream.height = 8
        stream.pix_fmt = "rgb24"
        frame = av.VideoFrame(8, 8, "rgb24")
        frame.pts = 0
        out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return sink.getvalue()


def video_only_mp4() -> bytes:
    sink = io.BytesIO()
    with av.open(sink, "w", format="mp4") as out:
        stream = out.add_stream("mpeg4", rate=10)
        stream.width = stream.height = 16
        stream.pix_fmt = "yuv420p"
        for index in range(5):
            frame = av.VideoFrame(16, 16, "yuv420p")
            frame.pts = index
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return sink.getvalue()


def test_not_audio() -> None:
    png = png_bytes()
    assert png.startswith(b"\x89PNG")
    assert refusal(png, "avatar.png", "image/png") == "upload_not_audio"
    assert refusal(png, "avatar.png", None) == "upload_not_audio"
    assert refusal("Я не виновен!".encode(), "speech.txt", "text/plain") == "upload_not_audio"
    playlist = b"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\nfile:///etc/passwd\n"
    assert refusal(playlist, "list.m3u8", "application/vnd.apple.mpegurl") == "upload_not_audio"
    assert refusal(video_only_mp4(), "clip.mp4", "video/mp4") == "upload_not_audio"


def test_what_is_not_audio_is_not_audio_whatever_its_name() -> None:
    page = b"<!DOCTYPE html><html><head><title>404</title></head><body>Not found</body></html>"
    assert refusal(png_bytes(), "last-word.mp3", "audio/mpeg") == "upload_not_audio"
    assert refusal(page, "last-word.mp3", "audio/mpeg") == "upload_not_audio"
    assert refusal(page * 50, "last-word.ogg", None) == "upload_not_audio"
    assert refusal(b"not really an mp3 " * 40, "song.mp3", "audio/mpeg") == "upload_not_audio"
    assert refusal(b"\xff\xd8\xff\xe0" + bytes(500), "photo.m4a", None) == "upload_not_audio"
    assert refusal(b"%PDF-1.7\n" + bytes(500), "speech.wav", "audio/wav") == "upload_not_audio"
    assert refusal(bytes(range(256)) * 4, "noise.mp3", "audio/mpeg") == "upload_not_audio", (
        "nothing in the bytes says audio: only the name did"
    )


def test_corrupt(uploads: dict[str, bytes]) -> None:
    assert refusal(b"OggS" + bytes(range(256)) * 8, "broken.ogg", "audio/ogg") == "upload_corrupt"
    m4a = uploads["m4a"]
    assert refusal(m4a[: len(m4a) // 2], "cut.m4a", "audio/mp4") == "upload_corrupt"
    garbled_wav = b"RIFF\xff\xff\xff\xffWAVEfmt \x02\x00\x00\x00\x01\x00" + bytes(64)
    assert refusal(garbled_wav, "broken.wav", "audio/wav") == "upload_corrupt"
    assert (
        refusal(b"ID3\x04\x00\x00\x00\x00\x00\x10" + bytes(range(256)) * 4, "cut.mp3", None)
        == "upload_corrupt"
    )


def test_shorter_than_half_a_second_is_refused() -> None:
    pcm = mono_pcm()
    assert refusal(wav_bytes(pcm[: 2 * 19_200], 48000), "oops.wav", None) == "upload_too_short"
    assert refusal(wav_bytes(pcm[:2], 48000), "click.wav", None) == "upload_too_short"
    accepted = prepare_upload(wav_bytes(pcm[: 2 * 28_800], 48000), "short.wav", None)
    assert accepted.duration_secs == pytest.approx(0.6, abs=0.01)


def stereo(left: Sequence[int], right: Sequence[int]) -> bytes:
    frames = array.array("h")
    for sample in zip(left, right, strict=True):
        frames.extend(sample)
    return frames.tobytes()


def tone(seconds: float, amplitude: int, frequency: float = 440.0) -> list[int]:
    return [
        round(amplitude * math.sin(2 * math.pi * frequency * i / 48000))
        for i in range(round(seconds * 48000))
    ]


def test_silence_is_refused_both_channels_considered() -> None:
    voice = tone(3, 12_000)
    assert refusal(wav_bytes(bytes(48000 * 4), 48000), "nothing.wav", None) == "upload_silent"
    hiss = [(i * 7919) % 7 - 3 for i in range(48000 * 3)]
    assert refusal(wav_bytes(array.array("h", hiss).tobytes(), 48000), "hiss.wav", None) == (
        "upload_silent"
    )
    # Channels that cancel: Discord plays voice messages mixed down, and that is silence.
    opposite = stereo(voice, [-sample for sample in voice])
    assert refusal(wav_bytes(opposite, 48000, 2), "phase.wav", None) == "upload_silent"
    assert refusal(encode_file("ogg", "libopus", opposite), "phase.ogg", None) == "upload_silent"
    # One silent channel is not silence: the other is heard, in the one mono channel.
    one_sided = prepare_upload(wav_bytes(stereo(voice, [0] * len(voice)), 48000, 2), "l.wav", None)
    assert rms_db(check_prepared(one_sided)) > SILENCE_DBFS + 20


def test_unsupported() -> None:
    flac = encode_file("flac", "flac", speech_pcm()[: 48000 * 4])
    assert refusal(flac, "speech.flac", "audio/flac") == "upload_unsupported"
    assert refusal(flac, "speech.ogg", "audio/ogg") == "upload_unsupported"
    adpcm = encode_file("wav", "adpcm_ima_wav", speech_pcm()[: 48000 * 4])
    assert refusal(adpcm, "speech.wav", "audio/wav") == "upload_unsupported"
    aac_in_webm = encode_file("matroska", "aac", speech_pcm()[: 48000 * 4])
    assert refusal(aac_in_webm, "speech.webm", "audio/webm") == "upload_unsupported"
    assert refusal(b"\x00\x01\x02 whatever", "speech.wma", None) == "upload_unsupported"


# --- garbage and threads ------------------------------------------------------------------


def _prepare_or_refuse(data: bytes, filename: str, content_type: str | None) -> None:
    try:
        prepared = prepare_upload(data, filename, content_type, max_seconds=2)
    except UploadError as error:
        assert error.code in {
            "upload_empty",
            "upload_not_audio",
            "upload_corrupt",
            "upload_unsupported",
            "upload_too_short",
            "upload_silent",
        }
        return
    assert prepared.ogg_bytes.startswith(b"OggS")
    assert 0 < prepared.duration_secs <= 2.0


NAMES = st.sampled_from(
    [
        ("a.ogg", "audio/ogg"),
        ("a.mp3", "audio/mpeg"),
        ("a.m4a", None),
        ("a.aac", "audio/aac"),
        ("a.wav", None),
        ("a.webm", "video/webm"),
        ("a.bin", None),
        ("a.flac", "audio/flac"),
    ]
)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=2048), NAMES)
def test_random_bytes_never_crash(data: bytes, name: tuple[str, str | None]) -> None:
    _prepare_or_refuse(data, *name)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_damaged_real_files_never_crash(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(FORMATS)))
    original = short_upload(name)
    damaged = bytearray(original[: data.draw(st.integers(0, len(original)))])
    for _ in range(data.draw(st.integers(0, 8))):
        if damaged:
            position = data.draw(st.integers(0, len(damaged) - 1))
            damaged[position] = data.draw(st.integers(0, 255))
    _, _, filename, content_type = FORMATS[name]
    _prepare_or_refuse(bytes(damaged), filename, content_type)


@functools.cache
def short_upload(name: str) -> bytes:
    """Two seconds of the fixture in the format ``name``."""
    container, codec, _, _ = FORMATS[name]
    return encode_file(container, codec, speech_pcm()[: 48000 * 4 * 2])


async def test_concurrent_threads_give_the_same_results(uploads: dict[str, bytes]) -> None:
    names = ["ogg", "mp3", "m4a", "wav", "ogg", "mp3"]
    alone = {name: prepare_upload(uploads[name], FORMATS[name][2], None) for name in set(names)}
    together = await asyncio.gather(
        *(
            asyncio.to_thread(prepare_upload, uploads[name], FORMATS[name][2], None)
            for name in names
        )
    )
    for name, prepared in zip(names, together, strict=True):
        assert prepared == alone[name]


def test_an_upload_holds_its_decoded_audio_once() -> None:
    """Ten minutes in, three minutes out: the decoded PCM (17 MiB) held once (a growing
    buffer's slack included), no copies of it (there were three: 67 MiB)."""
    import tracemalloc

    data = tone_wav(600)
    tracemalloc.start()
    try:
        prepared = prepare_upload(data, "long.wav", "audio/wav")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    pcm = 180 * 48000 * 2
    assert prepared.duration_secs == 180.0
    assert peak < 1.25 * pcm + len(prepared.ogg_bytes) + 2 * 1024 * 1024, f"{peak / 2**20:.1f} MiB"
