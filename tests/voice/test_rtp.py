"""RTP parsing and rtpsize transport encryption (bot/voice/rtp.py), and the product against the
fake Discord's own implementation (tests/fakediscord/rtp.py), both ways."""

from __future__ import annotations

import contextlib
import struct

import discord
import nacl.secret
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.voice.rtp import (
    EXTENSION_PROFILE_ONE_BYTE,
    OPUS_PAYLOAD_TYPE,
    RTPError,
    RTPHeader,
    build_rtpsize_packet,
    decrypt_rtpsize,
    is_rtcp,
    parse_header,
    peek_ssrc,
    sequence_delta,
    timestamp_delta,
)
from tests.fakediscord import rtp as fake

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))

u16 = st.integers(0, 0xFFFF)
u32 = st.integers(0, 0xFFFFFFFF)


@st.composite
def headers(draw: st.DrawFn) -> RTPHeader:
    has_extension = draw(st.booleans())
    return RTPHeader(
        sequence=draw(u16),
        timestamp=draw(u32),
        ssrc=draw(u32),
        payload_type=draw(st.integers(0, 0x7F)),
        marker=draw(st.booleans()),
        csrcs=tuple(draw(st.lists(u32, max_size=15))),
        extension_profile=draw(u16) if has_extension else None,
    )


@given(
    header=headers(),
    payload=st.binary(max_size=400),
    extension_words=st.integers(0, 8),
    padding=st.integers(0, 255),
    nonce=u32,
)
def test_build_then_decrypt_round_trips(
    header: RTPHeader, payload: bytes, extension_words: int, padding: int, nonce: int
) -> None:
    body = bytes(range(4 * extension_words)) if header.extension_profile is not None else b""
    packet = build_rtpsize_packet(header, payload, KEY, nonce, extension_body=body, padding=padding)

    decrypted = decrypt_rtpsize(packet, KEY)

    assert decrypted.payload == payload
    assert decrypted.extension_body == body
    got = decrypted.header
    assert (got.sequence, got.timestamp, got.ssrc) == (
        header.sequence,
        header.timestamp,
        header.ssrc,
    )
    assert (got.payload_type, got.marker, got.csrcs) == (
        header.payload_type,
        header.marker,
        header.csrcs,
    )
    assert got.extension_profile == header.extension_profile
    assert got.padding == (padding > 0)
    assert peek_ssrc(packet) == header.ssrc
    assert packet[-4:] == nonce.to_bytes(4, "big")
    assert not is_rtcp(packet) or 192 <= packet[1] <= 223


@given(st.binary(max_size=200))
def test_garbage_raises_only_rtperror(data: bytes) -> None:
    for parse in (parse_header, peek_ssrc, lambda d: decrypt_rtpsize(d, KEY)):
        with contextlib.suppress(RTPError):
            parse(data)
    assert is_rtcp(data) in (True, False)


@given(header=headers(), payload=st.binary(min_size=1, max_size=100), data=st.data())
@settings(max_examples=200)
def test_tampered_packets_raise_rtperror(
    header: RTPHeader, payload: bytes, data: st.DataObject
) -> None:
    packet = bytearray(build_rtpsize_packet(header, payload, KEY, 7, padding=3))
    position = data.draw(st.integers(0, len(packet) - 1))
    packet[position] ^= data.draw(st.integers(1, 255))
    with pytest.raises(RTPError):
        decrypt_rtpsize(bytes(packet), KEY)


def test_wrong_key_is_an_rtperror() -> None:
    packet = build_rtpsize_packet(RTPHeader(1, 2, 3), b"opus", KEY, 0)
    with pytest.raises(RTPError, match="transport decryption failed"):
        decrypt_rtpsize(packet, OTHER_KEY)


def test_decrypts_what_discord_py_itself_encrypts() -> None:
    """discord.py 2.7.1's own sender is an independent implementation of the mode."""

    class Sender:
        secret_key = list(KEY)
        _incr_nonce = 41

        def checked_add(self, attr: str, value: int, limit: int) -> None:
            setattr(self, attr, getattr(self, attr) + value)

    header = bytes([0x80, 0x78]) + struct.pack(">HII", 513, 96000, 0xDEADBEEF)
    packet = discord.VoiceClient._encrypt_aead_xchacha20_poly1305_rtpsize(
        Sender(),  # type: ignore[arg-type]
        header,
        b"\xfc\x01\x02opus",
    )

    decrypted = decrypt_rtpsize(packet, KEY)

    assert decrypted.payload == b"\xfc\x01\x02opus"
    assert decrypted.header == RTPHeader(sequence=513, timestamp=96000, ssrc=0xDEADBEEF)


def test_client_packet_with_extension_and_padding_built_by_hand() -> None:
    """A packet laid out as a Discord client sends it, sealed with PyNaCl's own API."""
    clear = bytes([0xB0, 0x78]) + struct.pack(">HII", 9, 4800, 77)
    clear += struct.pack(">HH", EXTENSION_PROFILE_ONE_BYTE, 2)
    extension_body = bytes([0x10, 0xAA, 0x21, 0xBB, 0xCC, 0, 0, 0])
    padding = bytes([0, 0, 3])
    nonce = (5).to_bytes(4, "big")
    sealed = (
        nacl.secret.Aead(KEY)
        .encrypt(extension_body + b"OPUS" + padding, clear, nonce + bytes(20))
        .ciphertext
    )
    packet = clear + sealed + nonce

    decrypted = decrypt_rtpsize(packet, KEY)

    assert decrypted.payload == b"OPUS"
    assert decrypted.extension_body == extension_body
    assert decrypted.header.extension_profile == EXTENSION_PROFILE_ONE_BYTE
    assert decrypted.header.extension_words == 2
    assert decrypted.header.padding


def test_padding_larger_than_payload_is_rejected() -> None:
    clear = bytes([0xA0, 0x78]) + struct.pack(">HII", 1, 1, 1)
    nonce = bytes(4)
    sealed = nacl.secret.Aead(KEY).encrypt(b"ab\x09", clear, nonce + bytes(20)).ciphertext
    with pytest.raises(RTPError, match="padding"):
        decrypt_rtpsize(clear + sealed + nonce, KEY)


def test_extension_body_longer_than_payload_is_rejected() -> None:
    clear = bytes([0x90, 0x78]) + struct.pack(">HIIHH", 1, 1, 1, EXTENSION_PROFILE_ONE_BYTE, 4)
    nonce = bytes(4)
    sealed = nacl.secret.Aead(KEY).encrypt(b"short", clear, nonce + bytes(20)).ciphertext
    with pytest.raises(RTPError, match="extension body"):
        decrypt_rtpsize(clear + sealed + nonce, KEY)


@pytest.mark.parametrize("packet_type", [192, 200, 201, 202, 203, 204, 205, 206, 207, 223])
def test_rtcp_is_recognised_by_the_rfc_5761_range(packet_type: int) -> None:
    # 205-207 are the feedback (NACK, PLI, REMB) and extended reports clients send.
    assert is_rtcp(bytes([0x81, packet_type, 0, 7]) + bytes(28))


@pytest.mark.parametrize("second", [0x78, 0xF8, 191, 224])
def test_rtp_payload_types_outside_the_range_are_not_rtcp(second: int) -> None:
    assert not is_rtcp(bytes([0x80, second, 0, 7]) + bytes(28))


def test_opus_rtp_and_ip_discovery_are_not_rtcp() -> None:
    opus = build_rtpsize_packet(RTPHeader(1, 2, 3, marker=True), b"x", KEY, 0)
    discovery_reply = struct.pack(">HHI", 2, 70, 3) + bytes(66)
    assert opus[1] == 0x80 | OPUS_PAYLOAD_TYPE
    assert not is_rtcp(opus)
    assert not is_rtcp(discovery_reply)


def test_bad_build_arguments_are_value_errors() -> None:
    header = RTPHeader(1, 2, 3, extension_profile=EXTENSION_PROFILE_ONE_BYTE)
    with pytest.raises(ValueError, match="whole words"):
        build_rtpsize_packet(header, b"", KEY, 0, extension_body=b"abc")
    with pytest.raises(ValueError, match="no extension profile"):
        build_rtpsize_packet(RTPHeader(1, 2, 3), b"", KEY, 0, extension_body=b"abcd")
    with pytest.raises(ValueError, match="padding"):
        build_rtpsize_packet(header, b"", KEY, 0, padding=256)
    with pytest.raises(ValueError, match="key"):
        build_rtpsize_packet(header, b"", KEY[:16], 0)
    with pytest.raises(ValueError, match="out of range"):
        RTPHeader(70000, 2, 3).pack()


@pytest.mark.parametrize(
    ("later", "earlier", "delta"),
    [(5, 3, 2), (3, 5, -2), (1, 0xFFFF, 2), (0xFFFF, 1, -2)],
)
def test_sequence_delta_wraps(later: int, earlier: int, delta: int) -> None:
    assert sequence_delta(later, earlier) == delta


def test_timestamp_delta_wraps() -> None:
    assert timestamp_delta(960, 0xFFFFFFFF - 959) == 1920
    assert timestamp_delta(0, 960) == -960


@given(
    header=headers(),
    payload=st.binary(max_size=300),
    extension_words=st.integers(0, 6),
    padding=st.integers(0, 255),
    nonce=u32,
)
def test_the_product_opens_what_the_fake_seals(
    header: RTPHeader, payload: bytes, extension_words: int, padding: int, nonce: int
) -> None:
    body = bytes(range(4 * extension_words)) if header.extension_profile is not None else b""
    fake_header = fake.RtpHeader(
        header.sequence,
        header.timestamp,
        header.ssrc,
        marker=header.marker,
        payload_type=header.payload_type,
        csrcs=header.csrcs,
        extension_profile=header.extension_profile,
    )
    datagram = fake.seal_rtpsize(fake_header, payload, KEY, nonce, extension=body, padding=padding)

    opened = decrypt_rtpsize(datagram, KEY)

    assert (opened.payload, opened.extension_body) == (payload, body)
    assert opened.header == RTPHeader(
        header.sequence,
        header.timestamp,
        header.ssrc,
        payload_type=header.payload_type,
        marker=header.marker,
        padding=padding > 0,
        csrcs=header.csrcs,
        extension_profile=header.extension_profile,
        extension_words=extension_words if header.extension_profile is not None else 0,
    )


@given(
    header=headers(),
    payload=st.binary(max_size=300),
    extension_words=st.integers(0, 6),
    padding=st.integers(0, 255),
    nonce=u32,
)
def test_the_fake_opens_what_the_product_builds(
    header: RTPHeader, payload: bytes, extension_words: int, padding: int, nonce: int
) -> None:
    body = bytes(range(4 * extension_words)) if header.extension_profile is not None else b""
    packet = build_rtpsize_packet(header, payload, KEY, nonce, extension_body=body, padding=padding)

    opened = fake.open_rtpsize(packet, KEY)

    assert (opened.payload, opened.extension) == (payload, body)
    got = opened.header
    assert (got.sequence, got.timestamp, got.ssrc, got.marker, got.payload_type) == (
        header.sequence,
        header.timestamp,
        header.ssrc,
        header.marker,
        header.payload_type,
    )
    assert (got.csrcs, got.extension_profile, got.padded) == (
        header.csrcs,
        header.extension_profile,
        padding > 0,
    )
    assert fake.looks_like_rtcp(packet) == is_rtcp(packet)
