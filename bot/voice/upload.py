"""Turning a nominee's uploaded recording into a voice message.

:func:`prepare_upload` takes the bytes of an uploaded file (Ogg Opus, MP3,
M4A/AAC, WAV or WebM Opus), decodes at most ``max_seconds`` of it with PyAV
as a stream (packet by packet, stopping at the limit: a ten-minute file costs
no more than three minutes of it), cuts it there with a short fade-out,
normalises its loudness, re-encodes it as 48 kHz mono Ogg Opus with PyAV's
libopus and measures its waveform. The decoded audio is held once, as 48 kHz
mono 16-bit PCM (the loudness of the whole is known only at its end): at most
``max_seconds`` × 96 KB, 17 MiB for three minutes; gain and fade are applied
frame by frame as it is encoded, without copies of it. Its own peak is that,
plus the encoded file and the uploaded bytes the caller holds
(``benchmarks/voice_bench.py`` prints it).

Everything it refuses raises :class:`UploadError` with a stable ``code``:
what is not audio at all (an image, a web page, text, whatever its name says)
is told apart from an audio file that is damaged, and a recording shorter
than half a second or silent throughout (judged on the mono mix, as it will
be heard: a stereo file whose channels cancel out is silence) is refused.
The work is CPU-bound and shares no state between calls, so callers run it
in a thread (``await asyncio.to_thread(prepare_upload, ...)``).

The container format is chosen from the file's first bytes (and, failing
that, its name and content type), never by letting ffmpeg probe every
demuxer it has: an uploaded playlist or text file must not make ffmpeg
open anything else.
"""

from __future__ import annotations

import io
import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import PurePath
from typing import Any, Final

import av
import av.audio.resampler

with warnings.catch_warnings():
    warnings.filterwarnings(
        "ignore", message="'audioop' is deprecated", category=DeprecationWarning
    )
    # RMS, peak and gain in C (audioop-lts on Python 3.13+).
    import audioop

from bot.voice.ogg import SAMPLE_RATE, InvalidOpusPacket, OggOpusWriter, opus_packet_samples

#: Largest upload accepted, checked before anything is decoded.
MAX_UPLOAD_BYTES: Final = 25 * 1024 * 1024
#: Loudness the speech is brought toward (RMS, dBFS).
TARGET_DBFS: Final = -20.0
#: The loudest sample stays at least this far below full scale.
HEADROOM_DB: Final = 1.0
#: Quiet recordings are raised by at most this much.
MAX_GAIN_DB: Final = 20.0
#: Anything quieter than this on average is noise or silence: never raised.
NOISE_FLOOR_DBFS: Final = -55.0
#: Length of the fade-out when the recording is cut at ``max_seconds``.
FADE_OUT_MS: Final = 500
#: Bitrate of the re-encoded voice.
OPUS_BITRATE: Final = 64000
#: The shortest recording accepted.
MIN_SECONDS: Final = 0.5
#: A recording none of whose 50 ms windows is louder than this (RMS) is silence.
SILENCE_DBFS: Final = -50.0
#: The window over which loudness is measured to tell silence.
_SILENCE_WINDOW: Final = 2400

_FRAME_SAMPLES: Final = 960
#: Samples handed to the encoder at once.
_CHUNK_SAMPLES: Final = SAMPLE_RATE
_CHANNELS: Final = 1

#: Error codes, stable: callers map them to localised messages.
UPLOAD_TOO_LARGE: Final = "upload_too_large"
UPLOAD_EMPTY: Final = "upload_empty"
UPLOAD_NOT_AUDIO: Final = "upload_not_audio"
UPLOAD_CORRUPT: Final = "upload_corrupt"
UPLOAD_UNSUPPORTED: Final = "upload_unsupported"
UPLOAD_TOO_SHORT: Final = "upload_too_short"
UPLOAD_SILENT: Final = "upload_silent"


class UploadError(Exception):
    """An upload that cannot become a voice message; ``code`` says why.

    Codes: ``upload_too_large`` (over 25 MiB), ``upload_empty`` (no bytes or
    no audio samples), ``upload_not_audio`` (no audio stream at all, or bytes
    that are not an audio file whatever their name), ``upload_corrupt`` (an
    audio file, by its first bytes, that fails to decode),
    ``upload_unsupported`` (audio in a format outside the accepted list),
    ``upload_too_short`` (under half a second), ``upload_silent`` (nothing
    audible in it).
    """

    def __init__(self, code: str, detail: str = "") -> None:
        """Make the error; ``detail`` is for logs, not for players."""
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code
        self.detail = detail


@dataclass(frozen=True, slots=True)
class PreparedAudio:
    """An upload ready to post as a voice message."""

    ogg_bytes: bytes
    """Ogg Opus, 48 kHz mono."""
    duration_secs: float
    """Exact playable duration."""
    waveform: str
    """Base64 of at most 256 amplitudes."""


@dataclass(frozen=True, slots=True)
class _Container:
    """One accepted container: the demuxer to open it with and the codecs allowed in it."""

    demuxer: str
    codecs: frozenset[str]
    pcm_codecs: bool = False


_OPUS_VORBIS: Final = frozenset({"opus", "libopus", "vorbis", "libvorbis"})
_AAC: Final = frozenset({"aac", "aac_fixed", "libfdk_aac"})
_CONTAINERS: Final = {
    "ogg": _Container("ogg", _OPUS_VORBIS),
    "mp3": _Container("mp3", frozenset({"mp3", "mp3float"})),
    "mp4": _Container("mp4", _AAC),
    "aac": _Container("aac", _AAC),
    "wav": _Container("wav", frozenset(), pcm_codecs=True),
    "webm": _Container("matroska", _OPUS_VORBIS),
}

_EXTENSIONS: Final = {
    ".ogg": "ogg",
    ".oga": "ogg",
    ".opus": "ogg",
    ".mp3": "mp3",
    ".m4a": "mp4",
    ".mp4": "mp4",
    ".aac": "aac",
    ".wav": "wav",
    ".wave": "wav",
    ".webm": "webm",
    ".weba": "webm",
}
_CONTENT_TYPES: Final = {
    "audio/ogg": "ogg",
    "audio/opus": "ogg",
    "application/ogg": "ogg",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/mpeg3": "mp3",
    "audio/x-mpeg-3": "mp3",
    "audio/mp4": "mp4",
    "audio/m4a": "mp4",
    "audio/x-m4a": "mp4",
    "audio/aac": "aac",
    "audio/x-aac": "aac",
    "audio/aacp": "aac",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/vnd.wave": "wav",
    "audio/webm": "webm",
    "video/webm": "webm",
}
_OTHER_AUDIO_EXTENSIONS: Final = frozenset(
    {".flac", ".aif", ".aiff", ".aifc", ".wma", ".amr", ".mid", ".midi", ".caf", ".ape", ".wv"}
    | {".mka", ".ac3", ".dts", ".au", ".snd", ".mpc", ".spx", ".gsm", ".3gp", ".mkv", ".avi"}
)
#: First bytes of audio formats that are not accepted.
_OTHER_AUDIO_MAGIC: Final = (
    (0, b"fLaC"),
    (0, b"#!AMR"),
    (0, b"MThd"),
    (0, b"caff"),
    (0, b"MAC "),
    (0, b"wvpk"),
    (0, b".snd"),
    (0, b"\x30\x26\xb2\x75\x8e\x66\xcf\x11"),
    (0, b"\x0b\x77"),
)


#: First bytes of common files that are not audio (images, documents, archives, programs).
_NOT_AUDIO_MAGIC: Final = (
    b"\x89PNG",
    b"\xff\xd8\xff",
    b"GIF87a",
    b"GIF89a",
    b"%PDF",
    b"PK\x03\x04",
    b"\x1f\x8b",
    b"7z\xbc\xaf",
    b"Rar!",
    b"\x7fELF",
    b"MZ",
    b"BM",
    b"II*\x00",
    b"MM\x00*",
)


def _looks_like_text(data: bytes) -> bool:
    """Text of any kind (HTML, JSON, a playlist, a note): UTF-8 with few control characters."""
    head = data[:4096]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start < len(head) - 4:
            return False
        text = head[: error.start].decode("utf-8")
    if not text:
        return False
    controls = sum(1 for char in text if ord(char) < 32 and char not in "\t\n\r\f")
    return controls <= len(text) // 100


def _not_audio(data: bytes) -> bool:
    """Whether the bytes are plainly something else than audio."""
    head = data[:16]
    if head.startswith(_NOT_AUDIO_MAGIC) or (head.startswith(b"RIFF") and head[8:12] == b"WEBP"):
        return True
    return _looks_like_text(data)


def _sniff(data: bytes) -> str | None:
    """Name the container from the first bytes: a key of ``_CONTAINERS``, ``"other"`` or None."""
    head = data[:16]
    if head.startswith(b"OggS"):
        return "ogg"
    if head.startswith(b"RIFF") and head[8:12] == b"WAVE":
        return "wav"
    if head.startswith((b"RIFF", b"RF64", b"FORM")) and head[8:12] != b"WEBP":
        return "other"
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return "webm"
    if head[4:8] == b"ftyp":
        return "mp4"
    if head.startswith(b"ID3"):
        return "mp3"
    if len(head) >= 2 and head[0] == 0xFF:
        if head[1] & 0xF6 == 0xF0:
            return "aac"
        if head[1] & 0xE0 == 0xE0 and head[1] & 0x06:
            return "mp3"
    for offset, magic in _OTHER_AUDIO_MAGIC:
        if head[offset:].startswith(magic):
            return "other"
    return None


def _declared(filename: str, content_type: str | None) -> str | None:
    """Name the container from the upload's name and content type."""
    suffix = PurePath(filename).suffix.lower()
    mime = (content_type or "").split(";", 1)[0].strip().lower()
    if suffix in _EXTENSIONS:
        return _EXTENSIONS[suffix]
    if mime in _CONTENT_TYPES:
        return _CONTENT_TYPES[mime]
    if suffix in _OTHER_AUDIO_EXTENSIONS or mime.startswith("audio/"):
        return "other"
    return None


def _choose_container(
    data: bytes, filename: str, content_type: str | None
) -> tuple[_Container, bool]:
    """Pick the demuxer to try, and say whether the bytes themselves showed it; or refuse.

    Raises:
        UploadError: ``upload_unsupported`` or ``upload_not_audio``.
    """
    kind = _sniff(data)
    sniffed = kind is not None
    if kind is None:
        if _not_audio(data):
            raise UploadError(UPLOAD_NOT_AUDIO, "an image, a document or text, not audio")
        kind = _declared(filename, content_type)
    if kind is None:
        raise UploadError(UPLOAD_NOT_AUDIO, "not a recognised audio file")
    if kind == "other":
        raise UploadError(UPLOAD_UNSUPPORTED, "audio format outside the accepted list")
    return _CONTAINERS[kind], sniffed


def _codec_allowed(container: _Container, codec_name: str) -> bool:
    if container.pcm_codecs:
        return codec_name.startswith("pcm_")
    return codec_name in container.codecs


#: Errors PyAV raises on damaged input, besides its own FFmpegError family.
_DECODE_ERRORS: Final = (av.FFmpegError, ValueError, EOFError, OSError, IndexError, OverflowError)


def _decode(data: bytes, container: _Container, max_samples: int) -> tuple[bytearray, bool]:
    """Decode to 48 kHz mono s16 PCM; stop after ``max_samples`` (+1 to tell a cut).

    Returns the PCM and whether the source was longer than ``max_samples``.

    Raises:
        UploadError: ``upload_corrupt``, ``upload_not_audio``, ``upload_unsupported``.
    """
    limit_bytes = (max_samples + 1) * 2 * _CHANNELS
    pcm = bytearray()
    errors = 0
    try:
        source = av.open(io.BytesIO(data), mode="r", format=container.demuxer)
    except _DECODE_ERRORS as exc:
        raise UploadError(UPLOAD_CORRUPT, f"cannot open: {exc}") from exc
    with source:
        streams = source.streams.audio
        if not streams:
            raise UploadError(UPLOAD_NOT_AUDIO, "no audio stream")
        stream = streams[0]
        decoder = stream.codec_context
        if decoder is None or decoder.codec is None:
            raise UploadError(UPLOAD_CORRUPT, "audio stream without a usable decoder")
        codec_name = decoder.codec.name
        if not _codec_allowed(container, codec_name):
            raise UploadError(UPLOAD_UNSUPPORTED, f"{codec_name} in {container.demuxer}")
        resampler = av.audio.resampler.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
        try:
            for packet in source.demux(stream):
                try:
                    frames = decoder.decode(packet)
                    for frame in frames:
                        for out in resampler.resample(frame):
                            pcm += bytes(out.planes[0])[: out.samples * 2]
                except _DECODE_ERRORS:
                    errors += 1
                    continue
                if len(pcm) >= limit_bytes:
                    break
            else:
                for out in resampler.resample(None):
                    pcm += bytes(out.planes[0])[: out.samples * 2]
        except _DECODE_ERRORS as exc:
            if not pcm:
                raise UploadError(UPLOAD_CORRUPT, f"demuxing failed: {exc}") from exc
    if not pcm and errors:
        raise UploadError(UPLOAD_CORRUPT, f"{errors} packets failed to decode, none decoded")
    cut = len(pcm) > max_samples * 2 * _CHANNELS
    del pcm[max_samples * 2 * _CHANNELS :]
    return pcm, cut


def _loudest_window_dbfs(pcm: bytearray) -> float:
    """RMS of the loudest 50 ms of mono s16 PCM, in dBFS (-inf for digital silence)."""
    window = _SILENCE_WINDOW * 2 * _CHANNELS
    loudest = 0
    view = memoryview(pcm)
    for offset in range(0, len(view), window):
        loudest = max(loudest, audioop.rms(view[offset : offset + window], 2))
    return 20 * math.log10(loudest / 32768) if loudest else -math.inf


def _gain(pcm: bytearray) -> float:
    """The factor that brings the loudness toward the target (1.0: left alone).

    Loudness is the RMS of the whole, peak the loudest sample, both in dBFS
    of 16-bit full scale (32,768); noise below the floor is never raised.
    """
    rms = audioop.rms(pcm, 2)
    if not rms:
        return 1.0
    loudness = 20 * math.log10(rms / 32768)
    if loudness <= NOISE_FLOOR_DBFS:
        return 1.0
    peak = 20 * math.log10(max(audioop.max(pcm, 2), 1) / 32768)
    gain = min(TARGET_DBFS - loudness, -HEADROOM_DB - peak, MAX_GAIN_DB)
    return float(10 ** (gain / 20))


_FADE_STEP: Final = 48
"""Samples (1 ms) per step of the fade-out."""


def _shaped(
    pcm: bytearray, offset: int, length: int, factor: float, fade_from: int | None
) -> bytes:
    """``length`` bytes of the PCM from ``offset``, with the gain and (past ``fade_from``,
    a sample index) the fade-out applied: the amplitude falls linearly to zero at the end."""
    chunk = bytes(memoryview(pcm)[offset : offset + length])
    if factor != 1.0:
        chunk = audioop.mul(chunk, 2, factor)
    if fade_from is None:
        return chunk
    total = len(pcm) // 2
    first = offset // 2
    if first + len(chunk) // 2 <= fade_from:
        return chunk
    span = max(1, total - fade_from)
    parts = []
    for start in range(0, len(chunk) // 2, _FADE_STEP):
        piece = chunk[start * 2 : (start + _FADE_STEP) * 2]
        index = first + start
        if index >= fade_from:
            piece = audioop.mul(piece, 2, max(0.0, (total - index) / span))
        parts.append(piece)
    return b"".join(parts)


def _encode(pcm: bytearray, samples: int, cut: bool) -> tuple[bytes, float, str]:
    """Normalise and encode mono PCM to Ogg Opus, frame by frame (a cut one fading out);
    return (ogg bytes, duration, waveform)."""
    encoder = av.CodecContext.create("libopus", "w")
    if not isinstance(encoder, av.AudioCodecContext):
        raise TypeError("libopus is not an audio encoder")
    encoder.sample_rate = SAMPLE_RATE
    encoder.layout = "mono"
    encoder.format = "s16"
    encoder.bit_rate = OPUS_BITRATE
    # CELT ("audio") with constrained VBR: voice at 64 kbit/s sounds as good as
    # with SILK ("voip") and encodes twice as fast; unconstrained VBR would
    # spend ~95 kbit/s on tonal speech.
    encoder.options = {"frame_duration": "20", "application": "audio", "vbr": "constrained"}
    encoder.open()
    head = encoder.extradata or b""
    pre_skip = int.from_bytes(head[10:12], "little") if head.startswith(b"OpusHead") else 312

    sink = io.BytesIO()
    writer = OggOpusWriter(
        sink,
        max_seconds=samples / SAMPLE_RATE,
        channels=_CHANNELS,
        pre_skip=pre_skip,
        reorder_window=0,
        measure_levels=False,
    )
    factor = _gain(pcm)
    fade_from = max(0, samples - FADE_OUT_MS * SAMPLE_RATE // 1000) if cut else None
    position = 0
    sequence = 0

    def write(packets: Iterable[bytes | av.Packet[Any]]) -> None:
        nonlocal position, sequence
        for packet in packets:
            opus = bytes(packet)
            try:
                duration = opus_packet_samples(opus)
            except InvalidOpusPacket:
                duration = _FRAME_SAMPLES
            writer.feed(sequence, position, opus)
            sequence += 1
            position += duration

    # A second at a time: PyAV cuts it into the encoder's 20 ms frames itself.
    chunk_bytes = _CHUNK_SAMPLES * 2 * _CHANNELS
    for offset in range(0, len(pcm), chunk_bytes):
        chunk = _shaped(pcm, offset, chunk_bytes, factor, fade_from)
        writer.waveform.add_pcm(pre_skip + offset // 2, chunk, _CHANNELS)
        frame = av.AudioFrame(format="s16", layout="mono", samples=len(chunk) // 2)
        frame.planes[0].update(chunk)
        frame.sample_rate = SAMPLE_RATE
        frame.pts = offset // (2 * _CHANNELS)
        frame.time_base = Fraction(1, SAMPLE_RATE)
        write(encoder.encode(frame))
    write(encoder.encode(None))
    info = writer.close()
    return sink.getvalue(), info.duration_secs, info.waveform


def prepare_upload(
    data: bytes, filename: str, content_type: str | None, *, max_seconds: int = 180
) -> PreparedAudio:
    """Turn an uploaded recording into Ogg Opus with its duration and waveform.

    Accepts Ogg (Opus or Vorbis), MP3, M4A/MP4 and raw ADTS AAC, WAV (PCM)
    and WebM (Opus or Vorbis). Decodes at most ``max_seconds``, mixed down to
    mono; a longer recording is cut there with a 0.5 s fade-out. Thread-safe.

    Raises:
        UploadError: ``upload_too_large``, ``upload_empty``,
            ``upload_not_audio``, ``upload_corrupt``, ``upload_unsupported``,
            ``upload_too_short`` or ``upload_silent``.
        ValueError: ``max_seconds`` is not positive.
    """
    if max_seconds <= 0:
        raise ValueError("max_seconds must be positive")
    if len(data) > MAX_UPLOAD_BYTES:
        raise UploadError(UPLOAD_TOO_LARGE, f"{len(data)} bytes")
    if not data:
        raise UploadError(UPLOAD_EMPTY, "no bytes")
    container, sniffed = _choose_container(data, filename, content_type)
    max_samples = max_seconds * SAMPLE_RATE
    try:
        pcm, cut = _decode(data, container, max_samples)
    except UploadError as error:
        if error.code == UPLOAD_CORRUPT and not sniffed:
            # Only the name said audio, and it does not decode: nothing shows it ever was.
            raise UploadError(UPLOAD_NOT_AUDIO, f"named {filename!r} but {error.detail}") from error
        raise
    samples = len(pcm) // (2 * _CHANNELS)
    if samples == 0:
        raise UploadError(UPLOAD_EMPTY, "no audio samples")
    if samples < MIN_SECONDS * SAMPLE_RATE:
        raise UploadError(UPLOAD_TOO_SHORT, f"{samples} samples")
    loudest = _loudest_window_dbfs(pcm)
    if loudest < SILENCE_DBFS:
        raise UploadError(UPLOAD_SILENT, f"loudest 50 ms at {loudest:.1f} dBFS")
    ogg_bytes, duration, waveform = _encode(pcm, samples, cut)
    return PreparedAudio(ogg_bytes=ogg_bytes, duration_secs=duration, waveform=waveform)
