"""The fake's own RTP (tests/fakediscord/rtp.py) against the specifications' vectors and
libsodium; tests/voice/test_rtp.py checks it against the product's, both ways."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from nacl.bindings import (
    crypto_aead_xchacha20poly1305_ietf_decrypt,
    crypto_aead_xchacha20poly1305_ietf_encrypt,
)

from tests.fakediscord.rtp import (
    ONE_BYTE_PROFILE,
    RtpFormatError,
    RtpHeader,
    hchacha20,
    looks_like_rtcp,
    one_byte_elements,
    one_byte_extension,
    open_rtpsize,
    read_header,
    seal_rtpsize,
    xchacha20_poly1305_open,
    xchacha20_poly1305_seal,
)

KEY = bytes(range(0x80, 0xA0))


def test_hchacha20_gives_the_drafts_test_vector() -> None:
    # draft-irtf-cfrg-xchacha-03 §2.2.1
    key = bytes(range(32))
    nonce = bytes.fromhex("000000090000004a0000000031415927")
    assert hchacha20(key, nonce) == bytes.fromhex(
        "82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc"
    )


@given(
    key=st.binary(min_size=32, max_size=32),
    nonce=st.binary(min_size=24, max_size=24),
    plain=st.binary(max_size=300),
    aad=st.binary(max_size=40),
)
def test_xchacha20_poly1305_is_libsodiums(
    key: bytes, nonce: bytes, plain: bytes, aad: bytes
) -> None:
    sealed = xchacha20_poly1305_seal(key, nonce, plain, aad)
    assert sealed == crypto_aead_xchacha20poly1305_ietf_encrypt(plain, aad, nonce, key)
    assert crypto_aead_xchacha20poly1305_ietf_decrypt(sealed, aad, nonce, key) == plain
    assert xchacha20_poly1305_open(key, nonce, sealed, aad) == plain


def test_a_packet_on_the_wire_byte_by_byte() -> None:
    header = RtpHeader(
        0x0102, 0x03040506, 0x0708090A, marker=True, extension_profile=ONE_BYTE_PROFILE
    )
    body = one_byte_extension({1: b"\x7f"})
    datagram = seal_rtpsize(header, b"opus", KEY, 0x11223344, extension=body, padding=3)

    # V=2, P=1, X=1, CC=0; M=1, PT=120; then sequence, timestamp, SSRC, profile, one word
    clear = bytes([0xB0, 0xF8]) + bytes.fromhex("0102030405060708090a") + b"\xbe\xde\x00\x01"
    assert datagram[:16] == clear
    assert datagram[-4:] == b"\x11\x22\x33\x44"
    nonce = b"\x11\x22\x33\x44" + bytes(20)
    plain = crypto_aead_xchacha20poly1305_ietf_decrypt(datagram[16:-4], clear, nonce, KEY)
    assert plain == b"\x10\x7f\x00\x00" + b"opus" + b"\x00\x00\x03"

    opened = open_rtpsize(datagram, KEY)
    assert (opened.payload, opened.extension) == (b"opus", body)
    assert opened.header == RtpHeader(
        0x0102,
        0x03040506,
        0x0708090A,
        marker=True,
        extension_profile=ONE_BYTE_PROFILE,
        extension_words=1,
        padded=True,
    )


@given(
    sequence=st.integers(0, 0xFFFF),
    timestamp=st.integers(0, 0xFFFFFFFF),
    ssrc=st.integers(0, 0xFFFFFFFF),
    csrcs=st.lists(st.integers(0, 0xFFFFFFFF), max_size=15),
    words=st.none() | st.integers(0, 6),
    payload=st.binary(max_size=200),
    padding=st.integers(0, 255),
    counter=st.integers(0, 0xFFFFFFFF),
)
def test_seal_then_open_round_trips(
    sequence: int,
    timestamp: int,
    ssrc: int,
    csrcs: list[int],
    words: int | None,
    payload: bytes,
    padding: int,
    counter: int,
) -> None:
    profile = None if words is None else ONE_BYTE_PROFILE
    body = bytes(range(1, 1 + 4 * (words or 0)))
    header = RtpHeader(sequence, timestamp, ssrc, csrcs=tuple(csrcs), extension_profile=profile)
    opened = open_rtpsize(
        seal_rtpsize(header, payload, KEY, counter, extension=body, padding=padding), KEY
    )
    assert (opened.payload, opened.extension) == (payload, body)
    assert (opened.header.sequence, opened.header.timestamp, opened.header.ssrc) == (
        sequence,
        timestamp,
        ssrc,
    )
    assert opened.header.csrcs == tuple(csrcs)


def test_rfc_8285_one_byte_elements() -> None:
    # RFC 8285 §4.2 allows padding bytes between elements and after the last one
    body = bytes([0x10, 0xAA, 0x00, 0x22, 0xBB, 0xCC, 0xDD, 0x00])
    assert one_byte_elements(body) == {1: b"\xaa", 2: b"\xbb\xcc\xdd"}
    assert one_byte_extension({1: b"\xaa", 2: b"\xbb\xcc\xdd"}) == bytes(
        [0x10, 0xAA, 0x22, 0xBB, 0xCC, 0xDD, 0x00, 0x00]
    )
    assert one_byte_elements(bytes([0x10, 0xAA, 0xF0, 0x31])) == {1: b"\xaa"}  # ID 15 stops
    with pytest.raises(RtpFormatError):
        one_byte_elements(bytes([0x13, 0xAA, 0x00, 0x00]))  # four bytes announced, two left
    with pytest.raises(ValueError):
        one_byte_extension({15: b"x"})
    with pytest.raises(ValueError):
        one_byte_extension({1: bytes(17)})


def test_malformed_and_forged_datagrams_are_format_errors() -> None:
    good = seal_rtpsize(RtpHeader(1, 2, 3), b"opus", KEY, 9, padding=2)
    wrong_key = bytes(32)
    cases = [
        good[:11],  # shorter than a header
        bytes([0x40]) + good[1:],  # RTP version 1
        bytes([0x8F]) + good[1:20],  # fifteen CSRCs announced, not there
        good[:12] + good[-4:],  # no room for a tag
        good[:-5] + bytes([good[-5] ^ 1]) + good[-4:],  # tampered tag
    ]
    for datagram in cases:
        with pytest.raises(RtpFormatError):
            open_rtpsize(datagram, KEY)
    with pytest.raises(RtpFormatError, match="authenticate"):
        open_rtpsize(good, wrong_key)
    # the P bit set on a sealed part whose last byte says zero
    zero = RtpHeader(1, 2, 3).wire()
    zero = bytes([zero[0] | 0x20]) + zero[1:]
    counter = struct.pack("!L", 1)
    sealed = xchacha20_poly1305_seal(KEY, counter + bytes(20), b"opus\x00", zero)
    with pytest.raises(RtpFormatError, match="padding"):
        open_rtpsize(zero + sealed + counter, KEY)


def test_rtcp_is_told_from_rtp_by_its_second_byte() -> None:
    assert looks_like_rtcp(bytes([0x81, 200, 0, 6]) + bytes(24))  # a sender report
    assert looks_like_rtcp(bytes([0x81, 206, 0, 2]) + bytes(8))  # payload-specific feedback
    opus = seal_rtpsize(RtpHeader(1, 2, 3, marker=True), b"x", KEY, 0)
    assert opus[1] == 0xF8 and not looks_like_rtcp(opus)
    assert read_header(opus).marker


@given(st.binary(max_size=120))
def test_garbage_is_a_format_error_and_nothing_else(data: bytes) -> None:
    with pytest.raises(RtpFormatError):  # random bytes never authenticate
        open_rtpsize(data, KEY)
