"""The Ogg Opus writer: page structure, exact timeline, decoded audio, waveform."""

from __future__ import annotations

import array
import base64
import io
import struct
from dataclasses import dataclass
from fractions import Fraction

import av
import discord.opus
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.voice import opuslib
from bot.voice.ogg import (
    DEFAULT_PRE_SKIP,
    SILENCE_FRAME,
    InvalidOpusPacket,
    OggOpusWriter,
    RecordingInfo,
    ogg_crc,
    opus_packet_samples,
)
from bot.voice.waveform import MAX_POINTS, WaveformBuilder
from tests.voice.speech import opus_packets, speech_pcm

FRAME = 960
PRE_SKIP = DEFAULT_PRE_SKIP


# --- an independent Ogg reader -------------------------------------------------------------


def _crc_table() -> list[int]:
    table = []
    for byte in range(256):
        value = byte << 24
        for _ in range(8):
            value = ((value << 1) ^ 0x04C11DB7) if value & 0x80000000 else value << 1
            value &= 0xFFFFFFFF
        table.append(value)
    return table


CRC_TABLE = _crc_table()


def reference_crc(data: bytes) -> int:
    """RFC 3533's CRC, bit by bit through a table, independent of the writer's zlib trick."""
    crc = 0
    for byte in data:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ CRC_TABLE[((crc >> 24) ^ byte) & 0xFF]
    return crc


@dataclass
class Page:
    flags: int
    granule: int
    serial: int
    sequence: int
    packets: list[bytes]
    continued_packet: bool


def parse_ogg(data: bytes) -> tuple[list[Page], list[bytes]]:
    """Split an Ogg stream into pages and packets, checking every page's CRC."""
    pages: list[Page] = []
    packets: list[bytes] = []
    partial = b""
    offset = 0
    while offset < len(data):
        assert data[offset : offset + 4] == b"OggS", f"no capture pattern at {offset}"
        version, flags, granule, serial, sequence, crc, count = struct.unpack_from(
            "<BBqIIIB", data, offset + 4
        )
        assert version == 0
        lacing = data[offset + 27 : offset + 27 + count]
        body_size = sum(lacing)
        end = offset + 27 + count + body_size
        assert end <= len(data), "page runs past the end of the file"
        page_bytes = bytearray(data[offset:end])
        page_bytes[22:26] = b"\0\0\0\0"
        assert reference_crc(bytes(page_bytes)) == crc, f"bad CRC on page {sequence}"
        body = data[offset + 27 + count : end]
        page_packets: list[bytes] = []
        position = 0
        if flags & 0x01:
            assert partial, "continued page without a packet to continue"
        else:
            assert not partial, "packet left unfinished"
        for value in lacing:
            partial += body[position : position + value]
            position += value
            if value < 255:
                page_packets.append(partial)
                partial = b""
        pages.append(Page(flags, granule, serial, sequence, page_packets, bool(flags & 0x01)))
        packets.extend(page_packets)
        offset = end
    assert not partial, "stream ends inside a packet"
    return pages, packets


def audio_packets(data: bytes) -> list[bytes]:
    """Return the audio packets (after OpusHead and OpusTags)."""
    return parse_ogg(data)[1][2:]


# --- decoding -----------------------------------------------------------------------------


def _append_frame(
    left: array.array[float], right: array.array[float], frame: av.AudioFrame
) -> None:
    assert frame.format.name == "fltp"
    assert len(frame.planes) == 2
    left.frombytes(bytes(frame.planes[0])[: frame.samples * 4])
    right.frombytes(bytes(frame.planes[1])[: frame.samples * 4])


def decode_file(data: bytes) -> tuple[array.array[float], array.array[float]]:
    """Decode an Ogg Opus file with PyAV (pre-skip and end trimming applied by ffmpeg)."""
    left: array.array[float] = array.array("f")
    right: array.array[float] = array.array("f")
    with av.open(io.BytesIO(data), "r") as container:
        for frame in container.decode(audio=0):
            _append_frame(left, right, frame)
    return left, right


def decode_packets(
    packets: list[bytes], start: int = PRE_SKIP, length: int | None = None
) -> tuple[array.array[float], array.array[float]]:
    """Decode raw packets with a fresh decoder; keep ``length`` samples from ``start``."""
    decoder = av.CodecContext.create("opus", "r")
    assert isinstance(decoder, av.AudioCodecContext)
    decoder.sample_rate = 48000
    decoder.layout = "stereo"
    left: array.array[float] = array.array("f")
    right: array.array[float] = array.array("f")
    for packet in packets:
        for frame in decoder.decode(av.Packet(packet)):
            _append_frame(left, right, frame)
    stop = None if length is None else start + length
    return left[start:stop], right[start:stop]


def write(
    feed: list[tuple[int, int, bytes]], **options: object
) -> tuple[bytes, RecordingInfo, OggOpusWriter]:
    sink = io.BytesIO()
    writer = OggOpusWriter(sink, **options)  # type: ignore[arg-type]
    for sequence, timestamp, packet in feed:
        writer.feed(sequence, timestamp, packet)
    info = writer.close()
    return sink.getvalue(), info, writer


def in_order(
    packets: list[bytes], seq0: int = 1000, ts0: int = 123_456
) -> list[tuple[int, int, bytes]]:
    return [
        ((seq0 + i) & 0xFFFF, (ts0 + i * FRAME) & 0xFFFFFFFF, packet)
        for i, packet in enumerate(packets)
    ]


@pytest.fixture(scope="module")
def packets() -> list[bytes]:
    return opus_packets()


# --- the fixture itself -------------------------------------------------------------------


def test_speech_fixture_is_stereo_20ms_opus(packets: list[bytes]) -> None:
    assert 1000 < len(packets) < 1300
    assert all(packet[0] & 0x04 for packet in packets), "every packet is coded stereo"
    assert {opus_packet_samples(packet) for packet in packets} == {FRAME}
    assert len(speech_pcm()) // 4 >= (len(packets) - 1) * FRAME


# --- CRC and page structure ---------------------------------------------------------------


@given(st.binary(max_size=600))
def test_crc_matches_the_bitwise_definition(data: bytes) -> None:
    assert ogg_crc(data) == reference_crc(data)


def test_known_crc_value() -> None:
    # CRC-32/MPEG-2 without its initial inversion, per RFC 3533: "123456789" -> 0x89A1897F.
    assert ogg_crc(b"123456789") == 0x89A1897F


def test_headers_pages_and_granules(packets: list[bytes]) -> None:
    data, info, _ = write(in_order(packets))
    pages, all_packets = parse_ogg(data)

    head = all_packets[0]
    assert len(head) == 19
    assert head[:8] == b"OpusHead"
    version, channels, pre_skip, rate, gain, family = struct.unpack("<BBHIhB", head[8:])
    assert (version, channels, pre_skip, rate, gain, family) == (1, 2, 312, 48000, 0, 0)
    tags = all_packets[1]
    assert tags[:8] == b"OpusTags"
    vendor_length = struct.unpack_from("<I", tags, 8)[0]
    assert tags[12 : 12 + vendor_length].decode() == "Prokurator voice recorder"
    assert struct.unpack_from("<I", tags, 12 + vendor_length)[0] == 0

    assert pages[0].flags == 0x02 and pages[0].packets == [head]
    assert pages[1].flags == 0 and pages[1].packets == [tags]
    assert pages[0].granule == pages[1].granule == 0
    assert all(page.flags & 0x02 == 0 for page in pages[1:])
    assert [page.flags & 0x04 for page in pages] == [0] * (len(pages) - 1) + [0x04]
    assert [page.sequence for page in pages] == list(range(len(pages)))
    assert len({page.serial for page in pages}) == 1
    granules = [page.granule for page in pages[2:]]
    assert granules == sorted(granules) and granules[0] > 0
    samples = 0
    for page in pages[2:]:
        samples += sum(opus_packet_samples(packet) for packet in page.packets)
        assert page.granule == samples
    assert pages[-1].granule == len(packets) * FRAME
    assert info.duration_secs == (len(packets) * FRAME - PRE_SKIP) / 48000
    assert info.byte_size == len(data)
    assert info.packet_count == info.voice_packets == len(packets)
    assert info.dropped_packets == 0 and not info.truncated
    assert len(pages) > 10, "pages are written as they fill, not as one page"


def test_packets_are_copied_and_decode_bit_identically(packets: list[bytes]) -> None:
    data, _, _ = write(in_order(packets))
    assert audio_packets(data) == packets
    left, right = decode_file(data)
    expected_left, expected_right = decode_packets(packets)
    assert len(left) == len(packets) * FRAME - PRE_SKIP
    assert left == expected_left and right == expected_right
    assert max(abs(sample) for sample in left) > 0.05, "speech, not silence"


def test_pages_are_streamed_while_recording(packets: list[bytes]) -> None:
    sink = io.BytesIO()
    writer = OggOpusWriter(sink)
    sizes = []
    for sequence, timestamp, packet in in_order(packets):
        writer.feed(sequence, timestamp, packet)
        sizes.append(sink.tell())
    final = writer.close().byte_size
    assert sizes[100] > sizes[0] > 0
    assert final - sizes[-1] <= 4096 + 27 + 255, "at most one page held back"


def test_no_page_holds_more_than_a_second(packets: list[bytes]) -> None:
    # Speech, then 20 s of silence frames (3 bytes each: 4 KiB would be 27 s), then speech.
    sink = io.BytesIO()
    writer = OggOpusWriter(sink, max_seconds=60)
    for index, packet in enumerate(packets[:200]):
        writer.feed(index, index * FRAME, packet)
    for index, packet in enumerate(packets[200:400], start=200):
        writer.feed(index, index * FRAME + 20 * 48000, packet)
    writer.close()
    pages, _ = parse_ogg(sink.getvalue())
    durations = [b.granule - a.granule for a, b in zip(pages[1:], pages[2:], strict=False)]
    assert max(durations) <= 48000
    assert sum(1 for d in durations if d == 48000) >= 19, "silence goes in one-second pages"


# --- the timeline: gaps, losses, reordering, wrap-around ----------------------------------


def test_three_seconds_without_packets_become_exact_silence(packets: list[bytes]) -> None:
    cut = 400
    gap_frames = 150  # 3 s
    feed = in_order(packets[:cut]) + [
        (1000 + i, 123_456 + (i + gap_frames) * FRAME, packets[i]) for i in range(cut, len(packets))
    ]
    data, info, _ = write(feed)
    expected = packets[:cut] + [SILENCE_FRAME] * gap_frames + packets[cut:]
    assert audio_packets(data) == expected
    assert info.duration_secs == ((len(packets) + gap_frames) * FRAME - PRE_SKIP) / 48000
    left, right = decode_file(data)
    expected_left, expected_right = decode_packets(expected)
    assert left == expected_left and right == expected_right
    gap_start = cut * FRAME - PRE_SKIP
    gap_end = (cut + gap_frames) * FRAME - PRE_SKIP
    # The first 20 ms carry the last speech frame's overlap; the rest is silent.
    assert max(abs(x) for x in left[gap_start + FRAME : gap_end]) < 1e-4
    assert max(abs(x) for x in right[gap_start + FRAME : gap_end]) < 1e-4
    assert max(abs(x) for x in left[gap_end : gap_end + 50 * FRAME]) > 0.01


def test_lost_packets_are_filled_with_silence(packets: list[bytes]) -> None:
    lost = {10, 11, 50, *range(300, 305), len(packets) - 2}
    feed = [item for i, item in enumerate(in_order(packets)) if i not in lost]
    data, info, _ = write(feed)
    expected = [SILENCE_FRAME if i in lost else packet for i, packet in enumerate(packets)]
    assert audio_packets(data) == expected
    assert info.voice_packets == len(packets) - len(lost)
    assert info.packet_count == len(packets)


def test_reordered_and_duplicated_packets_are_put_in_place(packets: list[bytes]) -> None:
    feed = in_order(packets)
    arrival = list(feed)
    for i in range(20, 200, 7):
        arrival[i], arrival[i + 1] = arrival[i + 1], arrival[i]
    late = arrival.pop(400)
    arrival.insert(403, late)  # three packets late: within the window
    duplicates = [arrival[30], arrival[500], arrival[501]]
    arrival.insert(31, duplicates[0])
    arrival.insert(505, duplicates[1])
    arrival.insert(900, duplicates[2])  # long after: too late and already written
    data, info, _ = write(arrival)
    assert audio_packets(data) == packets
    assert info.dropped_packets == len(duplicates)


def test_a_packet_later_than_the_window_is_dropped(packets: list[bytes]) -> None:
    arrival = in_order(packets[:300])
    late = arrival.pop(100)
    arrival.insert(100 + 12, late)
    data, info, _ = write(arrival, reorder_window=5)
    assert audio_packets(data) == packets[:100] + [SILENCE_FRAME] + packets[101:300]
    assert info.dropped_packets == 1


def test_wraparound_of_sequence_and_timestamp(packets: list[bytes]) -> None:
    baseline, _, _ = write(in_order(packets[:200]))
    feed = in_order(packets[:200], seq0=65530, ts0=2**32 - 3 * FRAME)
    assert feed[10][0] < feed[0][0] and feed[10][1] < feed[0][1], "both counters wrap"
    feed[4], feed[7] = feed[7], feed[4]  # reordered across the wrap
    wrapped, info, _ = write(feed)
    assert wrapped == baseline
    assert info.dropped_packets == 0


def test_start_timestamp_gives_leading_silence_and_drops_earlier_packets(
    packets: list[bytes],
) -> None:
    feed = in_order(packets[:100], ts0=50_000)
    start = (50_000 + 5 * FRAME - 75 * FRAME) % 2**32  # 1.5 s before packet 5
    feed = feed[5:] + [feed[0]]
    data, info, _ = write(feed, start_timestamp=start, reorder_window=0)
    assert audio_packets(data) == [SILENCE_FRAME] * 75 + packets[5:100]
    assert info.duration_secs == ((75 + 95) * FRAME - PRE_SKIP) / 48000
    assert info.dropped_packets == 1


def test_start_timestamp_before_a_wrap(packets: list[bytes]) -> None:
    start = 2**32 - 10 * FRAME
    feed = [(7 + i, (start + (i + 20) * FRAME) % 2**32, p) for i, p in enumerate(packets[:30])]
    data, _, _ = write(feed, start_timestamp=start)
    assert audio_packets(data) == [SILENCE_FRAME] * 20 + packets[:30]


def test_end_timestamp_adds_trailing_silence(packets: list[bytes]) -> None:
    sink = io.BytesIO()
    writer = OggOpusWriter(sink)
    for sequence, timestamp, packet in in_order(packets[:50], ts0=2**32 - 20 * FRAME):
        writer.feed(sequence, timestamp, packet)
    info = writer.close(end_timestamp=(2**32 - 20 * FRAME + 80 * FRAME) % 2**32)
    assert audio_packets(sink.getvalue()) == packets[:50] + [SILENCE_FRAME] * 30
    assert info.duration_secs == (80 * FRAME - PRE_SKIP) / 48000


def test_gap_that_is_not_a_whole_frame(packets: list[bytes]) -> None:
    feed = in_order(packets[:10]) + [
        (1010 + i, 123_456 + (10 + i) * FRAME + 1000, p) for i, p in enumerate(packets[10:20])
    ]
    data, _, _ = write(feed)
    # 1000 samples: one 20 ms frame; the 40 left over (< 2.5 ms) are not representable.
    assert audio_packets(data) == packets[:10] + [SILENCE_FRAME] + packets[10:20]
    odd = in_order(packets[:10]) + [
        (1010 + i, 123_456 + (10 + i) * FRAME + 1800, p) for i, p in enumerate(packets[10:20])
    ]
    data, _, _ = write(odd)
    # 1800 = 960 + 480 + 240 + 120 (+0): 20, 10, 5 and 2.5 ms CELT silence.
    silences = [SILENCE_FRAME, b"\xf0\xff\xfe", b"\xe8\xff\xfe", b"\xe0\xff\xfe"]
    assert audio_packets(data) == packets[:10] + silences + packets[10:20]
    assert sum(opus_packet_samples(s) for s in silences) == 1800


def test_malformed_packets_are_dropped_and_filled(packets: list[bytes]) -> None:
    feed = in_order(packets[:20])
    feed[5] = (feed[5][0], feed[5][1], b"")
    feed[6] = (feed[6][0], feed[6][1], bytes([0xFD, 0x00]))  # code 3 with zero frames
    data, info, _ = write(feed)
    assert audio_packets(data) == packets[:5] + [SILENCE_FRAME] * 2 + packets[7:20]
    assert info.dropped_packets == 2


def test_empty_recording_is_a_valid_file() -> None:
    data, info, _ = write([])
    pages, all_packets = parse_ogg(data)
    assert pages[-1].flags & 0x04 and pages[-1].granule == PRE_SKIP
    assert len(all_packets) > 2
    assert info.duration_secs == 0.0 and info.voice_packets == 0
    left, _ = decode_file(data)
    # RFC 7845 says 0 samples; ffmpeg trims the single page only in part.
    assert len(left) < 960 and not any(left)
    assert base64.b64decode(info.waveform) == b"\x00"


def test_feeding_a_closed_writer_is_an_error() -> None:
    writer = OggOpusWriter(io.BytesIO())
    writer.close()
    with pytest.raises(RuntimeError):
        writer.feed(1, 1, SILENCE_FRAME)
    with pytest.raises(RuntimeError):
        writer.close()


# --- the hard limit -----------------------------------------------------------------------


def test_four_minutes_are_cut_at_exactly_three(packets: list[bytes]) -> None:
    four_minutes = [packets[i % len(packets)] for i in range(12_000)]
    sink = io.BytesIO()
    writer = OggOpusWriter(sink, max_seconds=180)
    accepted = [
        writer.feed(sequence, timestamp, packet)
        for sequence, timestamp, packet in in_order(four_minutes)
    ]
    info = writer.close()
    assert writer.full and info.truncated
    assert accepted.index(False) < 9_100, "the writer says when it is full"
    assert info.duration_secs == 180.0
    pages, _ = parse_ogg(sink.getvalue())
    assert pages[-1].granule == PRE_SKIP + 180 * 48000
    left, right = decode_file(sink.getvalue())
    assert abs(len(left) - 180 * 48000) <= 1
    assert len(right) == len(left)
    written = audio_packets(sink.getvalue())
    assert written == four_minutes[: len(written)]
    assert len(written) == -(-(180 * 48000 + PRE_SKIP) // FRAME)


def test_cut_inside_a_packet_is_exact_and_bit_identical(packets: list[bytes]) -> None:
    data, info, _ = write(in_order(packets), max_seconds=10.003)
    left, right = decode_file(data)
    assert len(left) == 480_144
    assert info.duration_secs == pytest.approx(10.003, abs=1 / 48000)
    expected_left, expected_right = decode_packets(packets, length=480_144)
    assert left == expected_left and right == expected_right


def test_silence_filling_stops_at_the_limit(packets: list[bytes]) -> None:
    feed = in_order(packets[:5]) + [(1005, 123_456 + 48000 * 60, packets[5])]
    data, info, _ = write(feed, max_seconds=2)
    assert info.truncated and info.duration_secs == 2.0
    written = audio_packets(data)
    assert written[:5] == packets[:5] and set(written[5:]) == {SILENCE_FRAME}
    assert len(decode_file(data)[0]) == 96_000


# --- packet durations from the TOC byte ---------------------------------------------------


def _encode(frame_duration: str) -> list[bytes]:
    encoder = av.CodecContext.create("libopus", "w")
    assert isinstance(encoder, av.AudioCodecContext)
    encoder.sample_rate = 48000
    encoder.layout = "stereo"
    encoder.format = "s16"
    encoder.bit_rate = 64000
    encoder.options = {"frame_duration": frame_duration}
    encoder.open()
    size = encoder.frame_size
    pcm = speech_pcm()[: 48000 * 4 * 3]
    out: list[bytes] = []
    for index, offset in enumerate(range(0, len(pcm) - size * 4 + 1, size * 4)):
        frame = av.AudioFrame(format="s16", layout="stereo", samples=size)
        frame.planes[0].update(pcm[offset : offset + size * 4])
        frame.sample_rate = 48000
        frame.pts = index * size
        frame.time_base = Fraction(1, 48000)
        out.extend(bytes(p) for p in encoder.encode(frame))
    return out


@pytest.mark.parametrize(
    ("frame_duration", "samples"), [("2.5", 120), ("10", 480), ("40", 1920), ("60", 2880)]
)
def test_packets_of_other_durations(frame_duration: str, samples: int) -> None:
    encoded = _encode(frame_duration)
    assert {opus_packet_samples(p) for p in encoded} == {samples}
    feed = [(i, 9_000 + i * samples, p) for i, p in enumerate(encoded)]
    del feed[7]  # one lost packet
    data, info, _ = write(feed)
    written = audio_packets(data)
    assert sum(opus_packet_samples(p) for p in written) == len(encoded) * samples
    assert written[:7] == encoded[:7] and written[-10:] == encoded[-10:]
    assert info.duration_secs == (len(encoded) * samples - PRE_SKIP) / 48000


def test_toc_durations_and_frame_packing() -> None:
    assert opus_packet_samples(bytes([0 << 3, 1, 2])) == 480  # SILK NB 10 ms
    assert opus_packet_samples(bytes([3 << 3])) == 2880  # SILK NB 60 ms, empty frame
    assert opus_packet_samples(bytes([11 << 3 | 1, 1, 2])) == 5760  # 2 x 60 ms
    assert opus_packet_samples(bytes([13 << 3 | 2, 2, 9, 9, 9])) == 1920  # hybrid 2 x 20
    assert opus_packet_samples(bytes([16 << 3, 0])) == 120  # CELT 2.5 ms
    assert opus_packet_samples(bytes([31 << 3 | 3, 6]) + b"\x01" * 12) == 5760  # 6 x 20 ms CBR
    vbr = bytes([28 << 3 | 3, 0x80 | 0x40 | 3, 2, 3, 1, 4]) + b"\x05" * 6 + b"\0\0"
    assert opus_packet_samples(vbr) == 360  # 3 x 2.5 ms VBR, 2 padding bytes
    two_byte_length = bytes([31 << 3 | 2, 252, 1]) + b"\x07" * 256 + b"\x08"
    assert opus_packet_samples(two_byte_length) == 1920
    for bad in (
        b"",
        bytes([31 << 3 | 1, 1]),  # code 1 with an odd total
        bytes([31 << 3 | 2]),  # code 2 without a length
        bytes([31 << 3 | 2, 5, 1]),  # first frame longer than the packet
        bytes([31 << 3 | 3]),  # code 3 without a count
        bytes([31 << 3 | 3, 0]),  # zero frames
        bytes([31 << 3 | 3, 7]) + b"\0" * 7,  # 140 ms
        bytes([31 << 3 | 3, 3]) + b"\0" * 4,  # CBR not divisible
        bytes([31 << 3 | 3, 0x40 | 1, 255]),  # padding length cut short
        bytes([31 << 3]) + b"\0" * 1276,  # frame over 1275 bytes
    ):
        with pytest.raises(InvalidOpusPacket):
            opus_packet_samples(bad)


@settings(max_examples=300)
@given(st.binary(min_size=1, max_size=40))
def test_any_bytes_give_a_duration_or_invalid(data: bytes) -> None:
    try:
        samples = opus_packet_samples(data)
    except InvalidOpusPacket:
        return
    assert samples in range(120, 5761) and samples % 120 == 0


# --- the waveform -------------------------------------------------------------------------


def test_waveform_of_speech_and_silence(packets: list[bytes]) -> None:
    cut = 400
    feed = in_order(packets[:cut]) + [
        (1000 + i, 123_456 + (i + 250) * FRAME, packets[i]) for i in range(cut, len(packets))
    ]
    _, info, _ = write(feed)
    amplitudes = base64.b64decode(info.waveform)
    assert len(amplitudes) == MAX_POINTS
    total = (len(packets) + 250) * FRAME - PRE_SKIP
    gap = range(
        (cut * FRAME - PRE_SKIP) * MAX_POINTS // total + 1,
        ((cut + 250) * FRAME - PRE_SKIP) * MAX_POINTS // total,
    )
    assert len(gap) > 30
    assert all(amplitudes[i] == 0 for i in gap), "5 s without packets draw as zeros"
    speech = [amplitudes[i] for i in range(MAX_POINTS) if i not in gap]
    assert max(speech) == 255
    assert sum(1 for a in speech if a > 60) > 0.6 * len(speech), "speech is drawn as speech"


def test_waveform_of_a_short_recording_has_one_point_per_slot(packets: list[bytes]) -> None:
    _, info, _ = write(in_order(packets[:50]))
    assert len(base64.b64decode(info.waveform)) == 50


def test_waveform_of_silence_only_is_zeros() -> None:
    _, info, _ = write([(i, 7 + i * FRAME, SILENCE_FRAME) for i in range(500)], start_timestamp=7)
    assert base64.b64decode(info.waveform) == bytes(MAX_POINTS)
    sink = io.BytesIO()
    writer = OggOpusWriter(sink, start_timestamp=0)
    info = writer.close(end_timestamp=48000 * 2)
    assert info.duration_secs == (96_000 - PRE_SKIP) / 48000
    assert base64.b64decode(info.waveform) == bytes(100)


def test_waveform_builder_levels_and_scale() -> None:
    builder = WaveformBuilder()
    loud = array.array("h", [8000, -8000] * 480).tobytes()
    quiet = array.array("h", [80, -80] * 480).tobytes()
    for slot in range(100):
        builder.add_pcm(slot * 960, loud if slot % 2 == 0 else quiet, 1)
    builder.add_silence(100 * 960, 960 * 50)
    amplitudes = builder.finish(0, 150 * 960)
    assert len(amplitudes) == 150
    assert amplitudes[0] == 255
    assert amplitudes[1] == round(255 * (45 - 40) / 45), "-40 dB relative: near the bottom"
    assert amplitudes[100:] == bytes(50)
    assert builder.finish(0, 0) == b"\x00"


# --- a property: any light network damage gives the source back ---------------------------


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_network_damage_within_the_window_is_undone(data: st.DataObject) -> None:
    source = _PROPERTY_PACKETS
    lost = data.draw(st.sets(st.integers(1, len(source) - 2), max_size=8))
    duplicated = data.draw(st.sets(st.integers(0, len(source) - 1), max_size=8))
    seq0 = data.draw(st.integers(0, 0xFFFF))
    ts0 = data.draw(st.integers(0, 0xFFFFFFFF))
    arrival: list[tuple[float, tuple[int, int, bytes]]] = []
    for index, item in enumerate(in_order(source, seq0=seq0, ts0=ts0)):
        if index in lost:
            continue
        # Each packet is delayed by less than three packet times: within a window of 5.
        arrival.append((index + data.draw(st.floats(0, 2.9)), item))
        if index in duplicated:
            arrival.append((index + data.draw(st.floats(0, 2.9)), item))
    arrival.sort(key=lambda pair: pair[0])
    written, info, _ = write([item for _, item in arrival], reorder_window=5)
    expected = [SILENCE_FRAME if i in lost else p for i, p in enumerate(source)]
    assert audio_packets(written) == expected
    assert info.dropped_packets == len(duplicated - lost)


_PROPERTY_PACKETS = opus_packets()[:120]


# --- libopus from PyAV's wheel ------------------------------------------------------------


def test_libopus_is_found_in_pyavs_wheel_and_serves_discord_opus(packets: list[bytes]) -> None:
    path = opuslib.find_libopus()
    assert "av.libs" in path or ".dylibs" in path, path
    assert opuslib.version().startswith("libopus 1.")
    assert opuslib.load_for_discord() == path
    assert discord.opus.is_loaded()
    pcm = discord.opus.Decoder().decode(packets[100], fec=False)  # type: ignore[no-untyped-call]
    assert len(pcm) == FRAME * 2 * 2 and any(pcm)


def test_opus_decoder_wrapper(packets: list[bytes]) -> None:
    decoder = opuslib.OpusDecoder(16000, 1)
    assert len(decoder.decode(packets[100])) == 320 * 2
    decoder.reset()
    assert bytes(decoder.decode(SILENCE_FRAME)) == bytes(640)
    with pytest.raises(ValueError):
        decoder.decode(bytes([0xFD, 0x00]))
    with pytest.raises(ValueError):
        opuslib.OpusDecoder(44100, 1)
    decoder.close()
