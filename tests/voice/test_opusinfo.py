"""opusinfo (opus-tools) is here to check the voice tests' recordings (see conftest.py)."""

from __future__ import annotations

import io

import pytest

from bot.voice.ogg import OggOpusWriter
from tests.voice.conftest import OPUSINFO, opusinfo_problems
from tests.voice.speech import opus_packets


def written(count: int, end_timestamp: int | None = None) -> bytes:
    """An Ogg Opus file of the first ``count`` speech packets, as the writer makes it."""
    sink = io.BytesIO()
    writer = OggOpusWriter(sink)
    for index, packet in enumerate(opus_packets()[:count]):
        writer.feed(index, index * 960, packet)
    writer.close(end_timestamp=end_timestamp)
    return sink.getvalue()


def test_opusinfo_is_installed_to_check_every_recording() -> None:
    if OPUSINFO is None:
        pytest.skip(
            "opusinfo not installed (Debian: apt-get install -y opus-tools): "
            "the voice tests' recordings were not checked with it"
        )
    assert OPUSINFO


def test_opusinfo_finds_what_the_writer_used_to_get_wrong() -> None:
    """The check can fail: a file whose silence sits in one 5-second page is refused."""
    if OPUSINFO is None:
        pytest.skip("opusinfo not installed (Debian: apt-get install -y opus-tools)")
    data = written(50, end_timestamp=50 * 960 + 10 * 48_000)
    assert opusinfo_problems(data) == []
    # The same stream with its pages merged the old way (255 segments per page).
    pages = _repaged(data)
    assert any("muxing delay" in problem for problem in opusinfo_problems(pages))


def _repaged(data: bytes) -> bytes:
    """Rewrite an Ogg Opus stream with audio pages of up to 255 packets (as before the fix)."""
    from bot.voice.ogg import ogg_crc, opus_packet_samples
    from tests.voice.test_ogg import parse_ogg

    pages, _ = parse_ogg(data)
    out = bytearray()
    sequence = 0

    def page(flags: int, granule: int, packets: list[bytes]) -> None:
        nonlocal sequence
        lacing = b"".join(b"\xff" * (len(p) // 255) + bytes([len(p) % 255]) for p in packets)
        header = b"OggS" + bytes([0, flags]) + granule.to_bytes(8, "little")
        header += pages[0].serial.to_bytes(4, "little") + sequence.to_bytes(4, "little")
        body = header + b"\0\0\0\0" + bytes([len(lacing)]) + lacing + b"".join(packets)
        crc = ogg_crc(body)
        out.extend(body[:22] + crc.to_bytes(4, "little") + body[26:])
        sequence += 1

    page(0x02, 0, pages[0].packets)
    page(0, 0, pages[1].packets)
    audio = [packet for p in pages[2:] for packet in p.packets]
    chunks: list[list[bytes]] = [[]]
    segments = 0
    for packet in audio:
        needed = len(packet) // 255 + 1
        if segments + needed > 255:
            chunks.append([])
            segments = 0
        chunks[-1].append(packet)
        segments += needed
    granule = 0
    for number, chunk in enumerate(chunks):
        granule += sum(opus_packet_samples(p) for p in chunk)
        last = number == len(chunks) - 1
        page(0x04 if last else 0, pages[-1].granule if last else granule, chunk)
    return bytes(out)


def test_oggz_validate_is_installed_and_refuses_a_stream_cut_short() -> None:
    """The second reader can fail too: the same valid file without its last (EOS) page is refused."""
    from tests.voice.conftest import OGGZ_VALIDATE, oggz_problems

    if OGGZ_VALIDATE is None:
        pytest.skip("oggz-validate not installed (Debian: apt-get install -y oggz-tools)")
    data = written(200)
    assert oggz_problems(data) == []
    last = data.rindex(b"OggS")
    assert any("missing *** eos" in problem for problem in oggz_problems(data[:last]))
