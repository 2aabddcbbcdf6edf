"""RTP packets as Discord's voice server sends them, and their transport encryption.

Pure functions, no I/O. Discord negotiates the ``aead_xchacha20_poly1305_rtpsize``
transport mode: the plain part of a packet is the RTP header, its CSRC list and,
when the X bit is set, the 4-byte header-extension preamble (profile and length);
it is the AEAD's associated data. The ciphertext follows, and the packet ends
with a 4-byte big-endian counter, the first four bytes of the 24-byte nonce
(the rest is zeros). Decrypted, the payload starts with the header-extension
body and, when the P bit is set, ends with RTP padding whose last byte counts
the padding bytes.

Every way a received datagram can be wrong surfaces as one exception,
:class:`RTPError`, so the receive path needs a single ``except``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from nacl.bindings import (
    crypto_aead_xchacha20poly1305_ietf_decrypt,
    crypto_aead_xchacha20poly1305_ietf_encrypt,
)
from nacl.exceptions import CryptoError

__all__ = [
    "EXTENSION_PROFILE_ONE_BYTE",
    "NONCE_SUFFIX_SIZE",
    "OPUS_PAYLOAD_TYPE",
    "RTCP_SECOND_BYTES",
    "RTP_HEADER_SIZE",
    "RTPError",
    "RTPHeader",
    "RTPPacket",
    "build_rtpsize_packet",
    "decrypt_rtpsize",
    "is_rtcp",
    "parse_header",
    "peek_ssrc",
    "sequence_delta",
    "timestamp_delta",
]

RTP_VERSION = 2
RTP_HEADER_SIZE = 12
"""Size of the fixed RTP header, before CSRCs and the extension preamble."""
EXTENSION_PREAMBLE_SIZE = 4
NONCE_SUFFIX_SIZE = 4
"""The rtpsize modes append this many nonce bytes to every packet."""
AEAD_TAG_SIZE = 16
OPUS_PAYLOAD_TYPE = 0x78
"""Discord's dynamic payload type for Opus (120)."""
EXTENSION_PROFILE_ONE_BYTE = 0xBEDE
"""RFC 8285 one-byte header extensions; what Discord's clients send."""
KEY_SIZE = 32
_NONCE_PAD = bytes(24 - NONCE_SUFFIX_SIZE)
RTCP_SECOND_BYTES = range(192, 224)
"""Second bytes RFC 5761 §4 leaves to RTCP on a shared port: packet types 192-223,
which an RTP packet would show only with the marker bit on payload types 64-95."""

_FIXED = struct.Struct(">BBHII")
_PREAMBLE = struct.Struct(">HH")


class RTPError(ValueError):
    """A datagram is not a well-formed, authentic RTP packet.

    Raised for short or truncated packets, a wrong RTP version, a failed
    AEAD authentication and padding or extension lengths that do not fit.
    """


@dataclass(frozen=True, slots=True)
class RTPHeader:
    """The clear part of an RTP packet.

    ``extension_profile`` is None when the X bit is clear; otherwise
    ``extension_words`` is the length of the extension body in 32-bit words,
    as the preamble states it (the body itself is encrypted in rtpsize mode).
    """

    sequence: int
    timestamp: int
    ssrc: int
    payload_type: int = OPUS_PAYLOAD_TYPE
    marker: bool = False
    padding: bool = False
    csrcs: tuple[int, ...] = ()
    extension_profile: int | None = None
    extension_words: int = 0

    @property
    def size(self) -> int:
        """Bytes of the packet that stay in the clear (the AEAD's associated data)."""
        size = RTP_HEADER_SIZE + 4 * len(self.csrcs)
        if self.extension_profile is not None:
            size += EXTENSION_PREAMBLE_SIZE
        return size

    @property
    def extension_body_size(self) -> int:
        """Bytes of header-extension body at the start of the decrypted payload."""
        return 4 * self.extension_words if self.extension_profile is not None else 0

    def pack(self) -> bytes:
        """Serialise the header (with CSRCs and extension preamble).

        Raises ValueError when a field does not fit its wire width.
        """
        if not 0 <= self.payload_type <= 0x7F:
            raise ValueError(f"payload type {self.payload_type} does not fit 7 bits")
        if len(self.csrcs) > 15:
            raise ValueError(f"{len(self.csrcs)} CSRCs, at most 15 fit")
        first = (RTP_VERSION << 6) | len(self.csrcs)
        if self.padding:
            first |= 0x20
        if self.extension_profile is not None:
            first |= 0x10
        second = self.payload_type | (0x80 if self.marker else 0)
        try:
            parts = [_FIXED.pack(first, second, self.sequence, self.timestamp, self.ssrc)]
            parts.extend(struct.pack(">I", csrc) for csrc in self.csrcs)
            if self.extension_profile is not None:
                parts.append(_PREAMBLE.pack(self.extension_profile, self.extension_words))
        except struct.error as exc:
            raise ValueError(f"RTP header field out of range: {exc}") from None
        return b"".join(parts)


@dataclass(frozen=True, slots=True)
class RTPPacket:
    """A decrypted RTP packet: its header and the media payload alone.

    ``extension_body`` is the header-extension body that preceded the payload
    (empty without the X bit); padding has been removed.
    """

    header: RTPHeader
    payload: bytes
    extension_body: bytes = b""


def peek_ssrc(packet: bytes) -> int:
    """Return the SSRC of an RTP packet without parsing the rest.

    Raises RTPError if the packet is shorter than a fixed RTP header.
    """
    if len(packet) < RTP_HEADER_SIZE:
        raise RTPError(f"{len(packet)} bytes is shorter than an RTP header")
    return int.from_bytes(packet[8:12], "big")


def is_rtcp(packet: bytes) -> bool:
    """Tell RTCP from RTP on a shared port (RFC 5761 §4).

    The second byte of an RTCP packet is its packet type: the reports, SDES,
    BYE and APP (200-204), but also the feedback messages Discord's clients
    send (205 transport-layer, 206 payload-specific, 207 extended reports).
    RFC 5761 reserves the whole range 192-223 for RTCP, because an RTP packet
    could only show it with the marker bit set on payload types 64-95, which
    RTP sessions sharing a port with RTCP must not use.
    """
    return len(packet) >= 2 and packet[0] >> 6 == RTP_VERSION and packet[1] in RTCP_SECOND_BYTES


def parse_header(packet: bytes) -> RTPHeader:
    """Parse the clear header of an RTP packet.

    Raises RTPError for a packet that is too short for what its first byte
    announces or that is not RTP version 2.
    """
    if len(packet) < RTP_HEADER_SIZE:
        raise RTPError(f"{len(packet)} bytes is shorter than an RTP header")
    first, second, sequence, timestamp, ssrc = _FIXED.unpack_from(packet, 0)
    if first >> 6 != RTP_VERSION:
        raise RTPError(f"RTP version {first >> 6}, expected {RTP_VERSION}")
    csrc_count = first & 0x0F
    offset = RTP_HEADER_SIZE + 4 * csrc_count
    if len(packet) < offset:
        raise RTPError(f"{len(packet)} bytes cannot hold {csrc_count} CSRCs")
    csrcs = struct.unpack_from(f">{csrc_count}I", packet, RTP_HEADER_SIZE) if csrc_count else ()
    extension_profile: int | None = None
    extension_words = 0
    if first & 0x10:
        if len(packet) < offset + EXTENSION_PREAMBLE_SIZE:
            raise RTPError("packet ends inside the header-extension preamble")
        extension_profile, extension_words = _PREAMBLE.unpack_from(packet, offset)
    return RTPHeader(
        sequence=sequence,
        timestamp=timestamp,
        ssrc=ssrc,
        payload_type=second & 0x7F,
        marker=bool(second & 0x80),
        padding=bool(first & 0x20),
        csrcs=tuple(csrcs),
        extension_profile=extension_profile,
        extension_words=extension_words,
    )


def decrypt_rtpsize(packet: bytes, key: bytes) -> RTPPacket:
    """Authenticate and decrypt an ``aead_xchacha20_poly1305_rtpsize`` packet.

    Returns the header and the bare media payload: the extension body is
    split off the front and RTP padding off the end.

    Raises RTPError if the header is malformed, the packet is too short to
    hold a tag and a nonce, authentication fails, or the extension body or
    padding does not fit in the decrypted payload.
    """
    header = parse_header(packet)
    clear = header.size
    if len(packet) < clear + AEAD_TAG_SIZE + NONCE_SUFFIX_SIZE:
        raise RTPError(f"{len(packet)} bytes cannot hold a {clear}-byte header, tag and nonce")
    nonce = packet[-NONCE_SUFFIX_SIZE:] + _NONCE_PAD
    try:
        plain = crypto_aead_xchacha20poly1305_ietf_decrypt(
            bytes(packet[clear:-NONCE_SUFFIX_SIZE]), bytes(packet[:clear]), nonce, key
        )
    except CryptoError:
        raise RTPError("transport decryption failed (wrong key or tampered packet)") from None
    end = len(plain)
    if header.padding:
        if not plain:
            raise RTPError("padding bit set on an empty payload")
        end -= plain[-1]
        if plain[-1] == 0 or end < 0:
            raise RTPError(f"padding of {plain[-1]} bytes does not fit a {len(plain)}-byte payload")
    body = header.extension_body_size
    if body > end:
        raise RTPError(f"extension body of {body} bytes does not fit a {end}-byte payload")
    return RTPPacket(header=header, payload=plain[body:end], extension_body=plain[:body])


def build_rtpsize_packet(
    header: RTPHeader,
    payload: bytes,
    key: bytes,
    nonce: int,
    *,
    extension_body: bytes = b"",
    padding: int = 0,
) -> bytes:
    """Build an encrypted ``aead_xchacha20_poly1305_rtpsize`` packet.

    The header's P bit and extension length are set from ``padding`` and
    ``extension_body`` (whose length must be a multiple of 4); ``nonce`` is
    the 32-bit counter appended to the packet.

    Raises ValueError for an extension body that is not whole 32-bit words,
    padding outside 0-255, a key that is not 32 bytes or a field that does not
    fit its wire width.
    """
    if len(key) != KEY_SIZE:
        raise ValueError(f"key must be {KEY_SIZE} bytes, not {len(key)}")
    if len(extension_body) % 4:
        raise ValueError(f"extension body of {len(extension_body)} bytes is not whole words")
    if header.extension_profile is None and extension_body:
        raise ValueError("extension body given but the header has no extension profile")
    if not 0 <= padding <= 255:
        raise ValueError(f"padding {padding} does not fit one byte")
    if not 0 <= nonce <= 0xFFFFFFFF:
        raise ValueError(f"nonce {nonce} does not fit 32 bits")
    words = len(extension_body) // 4
    if words > 0xFFFF:
        raise ValueError(f"extension body of {words} words does not fit 16 bits")
    wire_header = RTPHeader(
        sequence=header.sequence,
        timestamp=header.timestamp,
        ssrc=header.ssrc,
        payload_type=header.payload_type,
        marker=header.marker,
        padding=padding > 0,
        csrcs=header.csrcs,
        extension_profile=header.extension_profile,
        extension_words=words if header.extension_profile is not None else 0,
    )
    clear = wire_header.pack()
    pad = bytes(padding - 1) + bytes([padding]) if padding else b""
    suffix = nonce.to_bytes(NONCE_SUFFIX_SIZE, "big")
    sealed = crypto_aead_xchacha20poly1305_ietf_encrypt(
        extension_body + payload + pad, clear, suffix + _NONCE_PAD, key
    )
    return clear + sealed + suffix


def sequence_delta(later: int, earlier: int) -> int:
    """Signed distance between two 16-bit RTP sequence numbers, across wrap-around."""
    return ((later - earlier + 0x8000) & 0xFFFF) - 0x8000


def timestamp_delta(later: int, earlier: int) -> int:
    """Signed distance between two 32-bit RTP timestamps, across wrap-around."""
    return ((later - earlier + 0x80000000) & 0xFFFFFFFF) - 0x80000000
