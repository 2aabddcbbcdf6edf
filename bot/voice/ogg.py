"""Writing received Opus packets straight into an Ogg Opus file.

No audio is decoded and re-encoded: each received packet becomes one Ogg
packet (RFC 7845 on RFC 3533). Received packets carry an RTP sequence number
and timestamp; the writer puts them on an exact timeline:

* a small reorder window sorts late packets into place, drops duplicates
  and packets that come too late;
* gaps in the timestamps (silence, lost packets) are filled with Opus
  silence frames (``F8 FF FE`` for 20 ms, shorter CELT frames for the rest),
  so the file's timeline matches the RTP clock to within 2.5 ms;
* sequence numbers and timestamps wrap around (16 and 32 bits);
* an optional start timestamp gives leading silence when the speaker starts
  later than the recording;
* ``max_seconds`` is a hard limit: the packet that crosses it ends the file
  and the last page's granule position marks the exact end, so decoders
  stop at exactly ``max_seconds``;
* a page holds at most one second of audio (and 255 segments, about 4 KiB).

Pages are streamed to a binary file object as they fill, so a recording in
progress holds a few kilobytes, not the audio.
"""

from __future__ import annotations

import heapq
import struct
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Final

from bot.voice.waveform import WaveformBuilder, to_base64

#: The Opus clock: granule positions and RTP timestamps count 48 kHz samples.
SAMPLE_RATE: Final = 48000
#: Decoder delay of libopus encoders at 48 kHz, customary in OpusHead.
DEFAULT_PRE_SKIP: Final = 312
#: Discord's 20 ms silence frame: CELT fullband 20 ms, mono, one frame.
SILENCE_FRAME: Final = b"\xf8\xff\xfe"
#: Vendor string written into OpusTags.
VENDOR: Final = "Prokurator voice recorder"

#: Silence frames by length in samples, longest first (CELT 20/10/5/2.5 ms).
_SILENCE_FRAMES: Final = (
    (960, SILENCE_FRAME),
    (480, b"\xf0\xff\xfe"),
    (240, b"\xe8\xff\xfe"),
    (120, b"\xe0\xff\xfe"),
)
#: The shortest Opus frame; gaps are filled in multiples of it.
_MIN_FRAME: Final = 120
#: Opus frame sizes in samples by TOC configuration (RFC 6716 §3.1, Table 2).
_CONFIG_FRAME_SAMPLES: Final = (
    (480, 960, 1920, 2880) * 3  # SILK NB, MB, WB: 10, 20, 40, 60 ms
    + (480, 960) * 2  # Hybrid SWB, FB: 10, 20 ms
    + (120, 240, 480, 960) * 4  # CELT NB, WB, SWB, FB: 2.5, 5, 10, 20 ms
)
_MAX_FRAME_BYTES: Final = 1275
_MAX_PACKET_SAMPLES: Final = 5760
#: A page is written once its body would grow past this many bytes.
_PAGE_BODY_TARGET: Final = 4096
_MAX_SEGMENTS: Final = 255
#: ... or once it would hold more than this much audio (one second): a player
#: that seeks, or a reader that streams the file, waits for a whole page, and
#: during silence 4 KiB of 3-byte frames would be five seconds (opusinfo calls
#: that "high muxing delay").
PAGE_MAX_SAMPLES: Final = SAMPLE_RATE

_PAGE_HEADER: Final = struct.Struct("<4sBBqIIIB")
_FLAG_BOS: Final = 0x02
_FLAG_EOS: Final = 0x04
_DEFAULT_SERIAL: Final = 0x50524F4B

_BIT_REVERSED: Final = bytes(int(f"{byte:08b}"[::-1], 2) for byte in range(256))


class InvalidOpusPacket(ValueError):
    """Bytes that are not a well-formed Opus packet (RFC 6716 §3.4)."""


def ogg_crc(data: bytes | bytearray) -> int:
    """Return the Ogg page checksum of ``data`` (RFC 3533 §6).

    Ogg's CRC-32 is the unreflected one (polynomial 0x04C11DB7, initial value
    0, no final xor). zlib computes the reflected twin in C, so feed it the
    bytes with their bits reversed, undo zlib's initial and final inversion,
    and reverse the 32-bit result.
    """
    raw = zlib.crc32(bytes(data).translate(_BIT_REVERSED), 0xFFFFFFFF) ^ 0xFFFFFFFF
    return int.from_bytes(raw.to_bytes(4, "big").translate(_BIT_REVERSED), "little")


def _frame_length(packet: bytes, offset: int) -> tuple[int, int]:
    """Read a frame length (RFC 6716 §3.2.1); return (length, bytes used)."""
    if offset >= len(packet):
        raise InvalidOpusPacket("frame length missing")
    first = packet[offset]
    if first < 252:
        return first, 1
    if offset + 1 >= len(packet):
        raise InvalidOpusPacket("two-byte frame length cut short")
    return first + 4 * packet[offset + 1], 2


def opus_packet_samples(packet: bytes) -> int:
    """Return the duration of an Opus packet in 48 kHz samples.

    Reads the TOC byte (RFC 6716 §3.1) and checks the frame packing of
    §3.2 against the requirements R1-R7 of §3.4.

    Raises:
        InvalidOpusPacket: the bytes break one of those requirements.
    """
    size = len(packet)
    if size == 0:
        raise InvalidOpusPacket("empty packet")
    toc = packet[0]
    frame_samples = _CONFIG_FRAME_SAMPLES[toc >> 3]
    code = toc & 0x03
    if code == 0:
        if size - 1 > _MAX_FRAME_BYTES:
            raise InvalidOpusPacket("frame longer than 1275 bytes")
        return frame_samples
    if code == 1:
        if (size - 1) % 2 or (size - 1) // 2 > _MAX_FRAME_BYTES:
            raise InvalidOpusPacket("code 1 frames of unequal or excessive length")
        return 2 * frame_samples
    if code == 2:
        first, used = _frame_length(packet, 1)
        second = size - 1 - used - first
        if second < 0 or first > _MAX_FRAME_BYTES or second > _MAX_FRAME_BYTES:
            raise InvalidOpusPacket("code 2 frame lengths do not fit the packet")
        return 2 * frame_samples
    return _code3_samples(packet, frame_samples)


def _code3_samples(packet: bytes, frame_samples: int) -> int:
    """The duration of a code 3 packet (any number of frames, §3.2.5), checked."""
    size = len(packet)
    if size < 2:
        raise InvalidOpusPacket("code 3 packet without frame count")
    count_byte = packet[1]
    frames = count_byte & 0x3F
    if frames == 0 or frames * frame_samples > _MAX_PACKET_SAMPLES:
        raise InvalidOpusPacket(f"code 3 packet with {frames} frames")
    offset = 2
    padding = 0
    if count_byte & 0x40:
        offset, padding = _padding(packet, offset)
    if count_byte & 0x80:
        total = 0
        for _ in range(frames - 1):
            length, used = _frame_length(packet, offset)
            if length > _MAX_FRAME_BYTES:
                raise InvalidOpusPacket("frame longer than 1275 bytes")
            offset += used
            total += length
        last = size - offset - padding - total
        if last < 0 or last > _MAX_FRAME_BYTES:
            raise InvalidOpusPacket("code 3 VBR frame lengths do not fit the packet")
    else:
        data = size - offset - padding
        if data < 0 or data % frames or data // frames > _MAX_FRAME_BYTES:
            raise InvalidOpusPacket("code 3 CBR frames do not fit the packet")
    return frames * frame_samples


def _padding(packet: bytes, offset: int) -> tuple[int, int]:
    """Read a code 3 packet's padding length from ``offset``: where its frames start, and how
    many bytes of padding end it."""
    padding = 0
    while True:
        if offset >= len(packet):
            raise InvalidOpusPacket("padding length cut short")
        chunk = packet[offset]
        offset += 1
        padding += 254 if chunk == 255 else chunk
        if chunk != 255:
            return offset, padding


def opus_head(channels: int, pre_skip: int, input_rate: int = SAMPLE_RATE) -> bytes:
    """Return an identification header (RFC 7845 §5.1), mapping family 0."""
    return b"OpusHead" + struct.pack("<BBHIhB", 1, channels, pre_skip, input_rate, 0, 0)


def opus_tags(vendor: str, comments: tuple[str, ...] = ()) -> bytes:
    """Return a comment header (RFC 7845 §5.2)."""
    parts = [b"OpusTags"]
    encoded = vendor.encode("utf-8")
    parts.append(struct.pack("<I", len(encoded)) + encoded)
    parts.append(struct.pack("<I", len(comments)))
    for comment in comments:
        raw = comment.encode("utf-8")
        parts.append(struct.pack("<I", len(raw)) + raw)
    return b"".join(parts)


def _lacing(length: int) -> bytes:
    """Return the segment table entries for one packet of ``length`` bytes."""
    return b"\xff" * (length // 255) + bytes((length % 255,))


def _unwrap(raw: int, ref_raw: int, ref_ext: int, bits: int) -> int:
    """Place ``raw`` (a ``bits``-bit counter) nearest to the reference on an unbounded line."""
    half = 1 << (bits - 1)
    return ref_ext + ((raw - ref_raw + half) % (1 << bits)) - half


def _check_options(max_seconds: float, channels: int, pre_skip: int, reorder_window: int) -> None:
    """Refuse a writer's option out of range (``ValueError``)."""
    if max_seconds <= 0:
        raise ValueError("max_seconds must be positive")
    if channels not in (1, 2):
        raise ValueError("channels must be 1 or 2")
    if not 0 <= pre_skip <= 0xFFFF:
        raise ValueError("pre_skip must fit 16 bits")
    if reorder_window < 0:
        raise ValueError("reorder_window must not be negative")


@dataclass(frozen=True, slots=True)
class RecordingInfo:
    """What :meth:`OggOpusWriter.close` reports about the finished file."""

    duration_secs: float
    """Playable duration: final granule position minus pre-skip, in seconds."""
    waveform: str
    """Base64 of at most 256 amplitudes, ready for an attachment's ``waveform``."""
    packet_count: int
    """Audio packets in the file, silence frames included."""
    byte_size: int
    """Bytes written to the file object, headers included."""
    voice_packets: int
    """Received packets written into the file."""
    dropped_packets: int
    """Received packets left out: duplicates, too late, malformed, past the limit."""
    truncated: bool
    """True when the recording reached ``max_seconds``."""


class OggOpusWriter:
    """Streams one speaker's received Opus packets into an Ogg Opus file.

    Feed every received packet with :meth:`feed`, then call :meth:`close`
    (also when the recording is cut short). One writer per RTP stream: the
    sequence numbers and timestamps of a new SSRC (a reconnect) do not
    continue the old ones. Not thread-safe: feed it from one task or thread.
    """

    def __init__(
        self,
        sink: BinaryIO,
        *,
        max_seconds: float = 180.0,
        start_timestamp: int | None = None,
        channels: int = 2,
        pre_skip: int = DEFAULT_PRE_SKIP,
        reorder_window: int = 5,
        measure_levels: bool = True,
        vendor: str = VENDOR,
        serial: int = _DEFAULT_SERIAL,
    ) -> None:
        """Write the two header pages and get ready for packets.

        Args:
            sink: binary file object the pages are written to, in order.
            max_seconds: most audio the file may hold; the output is cut at
                exactly this many seconds.
            start_timestamp: RTP timestamp at which the recording starts;
                packets before it are dropped, a later first packet gets
                leading silence. ``None``: start at the first packet.
            channels: channel count announced in OpusHead (Discord sends stereo).
            pre_skip: samples the decoder drops at the start.
            reorder_window: packets held back to sort late ones into place.
            measure_levels: decode packets for the waveform; turn off when
                the caller feeds :attr:`waveform` itself (uploads do).
            vendor: OpusTags vendor string.
            serial: Ogg bitstream serial number.

        Raises:
            ValueError: a parameter out of range.
        """
        _check_options(max_seconds, channels, pre_skip, reorder_window)
        self._sink = sink
        self._serial = serial & 0xFFFFFFFF
        self._pre_skip = pre_skip
        self._limit = pre_skip + round(max_seconds * SAMPLE_RATE)
        self._window = reorder_window
        self._measure = measure_levels
        self.waveform = WaveformBuilder()
        """Loudness of the timeline; uploads add measured PCM to it directly."""

        self._page_sequence = 0
        self._byte_size = 0
        self._lacing = bytearray()
        self._body: list[bytes] = []
        self._body_size = 0
        self._page_granule = 0
        self._page_start = 0
        self._granule = 0
        self._full = False
        self._closed = False

        self._start_order(start_timestamp)

        self._packet_count = 0
        self._voice_packets = 0
        self._dropped = 0
        self._write_headers(channels, vendor)

    def _start_order(self, start_timestamp: int | None) -> None:
        """Nothing held for reordering yet; the timeline starts at ``start_timestamp`` (None:
        at the first packet)."""
        self._pending: list[tuple[int, int, int, bytes]] = []
        self._pending_sequences: set[int] = set()
        self._seq_ref: tuple[int, int] | None = None
        self._last_emitted_seq: int | None = None
        self._ts_ref: tuple[int, int] | None = None
        self._t0: int | None = None
        if start_timestamp is not None:
            self._ts_ref = (start_timestamp & 0xFFFFFFFF, 0)
            self._t0 = 0

    def _write_headers(self, channels: int, vendor: str) -> None:
        """The two header pages: OpusHead alone on the first, OpusTags on the second."""
        self._write_page(_FLAG_BOS, 0, _lacing(19), [opus_head(channels, self._pre_skip)])
        tags = opus_tags(vendor)
        self._write_page(0, 0, _lacing(len(tags)), [tags])

    @property
    def full(self) -> bool:
        """True once ``max_seconds`` of audio are written; later packets are ignored."""
        return self._full

    @property
    def duration_secs(self) -> float:
        """Playable seconds written so far (packets still held for reordering excluded)."""
        return max(0, min(self._granule, self._limit) - self._pre_skip) / SAMPLE_RATE

    def feed(self, sequence: int, timestamp: int, packet: bytes) -> bool:
        """Take one received packet: RTP sequence (u16), RTP timestamp (u32), Opus bytes.

        Returns False once the file is full (the caller may stop feeding).

        Raises:
            RuntimeError: the writer is closed.
        """
        if self._closed:
            raise RuntimeError("feed() after close()")
        if self._full:
            self._dropped += 1
            return False
        try:
            samples = opus_packet_samples(packet)
        except InvalidOpusPacket:
            self._dropped += 1
            return True
        sequence &= 0xFFFF
        timestamp &= 0xFFFFFFFF

        if self._seq_ref is None:
            ext_seq = 0
            self._seq_ref = (sequence, 0)
        else:
            ext_seq = _unwrap(sequence, self._seq_ref[0], self._seq_ref[1], 16)
            if ext_seq > self._seq_ref[1]:
                self._seq_ref = (sequence, ext_seq)
        if self._ts_ref is None:
            ext_ts = 0
            self._ts_ref = (timestamp, 0)
        else:
            ext_ts = _unwrap(timestamp, self._ts_ref[0], self._ts_ref[1], 32)
            if ext_ts > self._ts_ref[1]:
                self._ts_ref = (timestamp, ext_ts)

        last = self._last_emitted_seq
        if (last is not None and ext_seq <= last) or ext_seq in self._pending_sequences:
            self._dropped += 1
            return True
        heapq.heappush(self._pending, (ext_seq, ext_ts, samples, packet))
        self._pending_sequences.add(ext_seq)
        while len(self._pending) > self._window and not self._full:
            self._emit_next()
        return not self._full

    def _emit_next(self) -> None:
        """Write the earliest held packet on the timeline."""
        ext_seq, ext_ts, samples, packet = heapq.heappop(self._pending)
        self._pending_sequences.discard(ext_seq)
        self._last_emitted_seq = ext_seq
        if self._t0 is None:
            self._t0 = ext_ts
        gap = ext_ts - self._t0 - self._granule
        if gap < 0:
            self._dropped += 1
            return
        if gap >= _MIN_FRAME:
            self._fill_silence(gap)
            if self._full:
                self._dropped += 1
                return
        position = self._granule
        self._append(packet, samples)
        self._voice_packets += 1
        if self._measure:
            self.waveform.add_packet(position, samples, packet)

    def _fill_silence(self, samples: int) -> None:
        """Write silence frames covering ``samples`` (rounded down to 2.5 ms)."""
        remaining = samples - samples % _MIN_FRAME
        for frame_samples, frame in _SILENCE_FRAMES:
            while remaining >= frame_samples and not self._full:
                self._append(frame, frame_samples)
                remaining -= frame_samples

    def _append(self, packet: bytes, samples: int) -> None:
        """Add one audio packet to the current page, writing the page first if full."""
        lacing = _lacing(len(packet))
        if self._lacing and (
            len(self._lacing) + len(lacing) > _MAX_SEGMENTS
            or self._body_size + len(packet) > _PAGE_BODY_TARGET
            or self._granule + samples - self._page_start > PAGE_MAX_SAMPLES
        ):
            self._flush_page(0, self._page_granule)
            self._page_start = self._granule
        self._lacing += lacing
        self._body.append(packet)
        self._body_size += len(packet)
        self._granule += samples
        self._page_granule = self._granule
        self._packet_count += 1
        if self._granule >= self._limit:
            self._full = True

    def _flush_page(self, flags: int, granule: int) -> None:
        self._write_page(flags, granule, bytes(self._lacing), self._body)
        self._lacing.clear()
        self._body = []
        self._body_size = 0

    def _write_page(self, flags: int, granule: int, lacing: bytes, body: list[bytes]) -> None:
        header = _PAGE_HEADER.pack(
            b"OggS", 0, flags, granule, self._serial, self._page_sequence, 0, len(lacing)
        )
        page = b"".join((header, lacing, *body))
        crc = ogg_crc(page)
        page = page[:22] + crc.to_bytes(4, "little") + page[26:]
        self._sink.write(page)
        self._byte_size += len(page)
        self._page_sequence += 1

    def close(self, *, end_timestamp: int | None = None) -> RecordingInfo:
        """Write the held packets and the last page; return what was written.

        Args:
            end_timestamp: RTP timestamp at which the recording ended (the
                stop button, the speaker leaving, the time running out):
                silence is added up to it, so a speaker who went quiet
                before the end is not cut. ``None``: end after the last packet.

        Raises:
            RuntimeError: already closed.
        """
        if self._closed:
            raise RuntimeError("close() called twice")
        while self._pending and not self._full:
            self._emit_next()
        self._dropped += len(self._pending)
        self._pending.clear()
        self._pending_sequences.clear()
        if end_timestamp is not None and not self._full and self._ts_ref is not None:
            end = _unwrap(end_timestamp & 0xFFFFFFFF, self._ts_ref[0], self._ts_ref[1], 32)
            if self._t0 is None:
                self._t0 = end
            gap = end - self._t0 - self._granule
            if gap > 0:
                self._fill_silence(gap)
        final = min(self._granule, self._limit)
        if final < self._pre_skip or not self._body:
            self._fill_silence(max(self._pre_skip - self._granule + _MIN_FRAME - 1, _MIN_FRAME))
            final = max(final, self._pre_skip)
        self._flush_page(_FLAG_EOS, final)
        self._closed = True
        amplitudes = self.waveform.finish(self._pre_skip, final)
        self.waveform.close()
        return RecordingInfo(
            duration_secs=(final - self._pre_skip) / SAMPLE_RATE,
            waveform=to_base64(amplitudes),
            packet_count=self._packet_count,
            byte_size=self._byte_size,
            voice_packets=self._voice_packets,
            dropped_packets=self._dropped,
            truncated=self._full,
        )
