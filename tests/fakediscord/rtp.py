"""RTP on the fake voice server's wire, written from the specifications, not from the product.

The fake shares no code with ``bot/voice`` (nor with PyNaCl, which the product and discord.py
use): what the bot's receiver decodes was built here, and what discord.py sends is opened here,
so a misreading of the format on either side makes the voice tests fail instead of hiding on
both.

* The fixed header is RFC 3550 §5.1: version 2, padding (P), extension (X), the CSRC count,
  marker and payload type, a 16-bit sequence number, a 32-bit timestamp and the SSRC, then the
  CSRCs. With X set, a 4-byte preamble follows (RFC 3550 §5.3.1: a 16-bit profile and the
  body's length in 32-bit words).
* The body Discord's clients send is RFC 8285 §4.2's one-byte form (profile ``0xBEDE``): each
  element is a byte ``ID << 4 | (length - 1)`` and its 1-16 data bytes; zero bytes pad between
  elements and to the word boundary; ID 15 ends the body.
* Padding (RFC 3550 §5.1): the payload's last byte counts the padding bytes, itself included.
* Discord's ``aead_xchacha20_poly1305_rtpsize`` transport mode: the header, the CSRCs and the
  extension preamble travel in the clear and are the AEAD's associated data; the extension
  body, payload and padding are sealed; a 32-bit big-endian counter ends the datagram and is the
  first four bytes of the 24-byte nonce, the rest zeros.
* XChaCha20-Poly1305 is built here as draft-irtf-cfrg-xchacha-03 §2.3 defines it: HChaCha20
  (§2.2, from a ChaCha20 block, below) derives a subkey from the key and the nonce's first 16 bytes, and the
  IETF ChaCha20-Poly1305 of RFC 8439 (``cryptography``'s) seals with that subkey under the
  nonce ``00000000 || nonce[16:24]``.
* RTCP shares the port (RFC 5761 §4): a second byte of 192-223 is an RTCP packet type.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

__all__ = [
    "ONE_BYTE_PROFILE",
    "OPUS",
    "RtpFormatError",
    "RtpHeader",
    "RtpPacket",
    "hchacha20",
    "looks_like_rtcp",
    "one_byte_elements",
    "one_byte_extension",
    "open_rtpsize",
    "read_header",
    "seal_rtpsize",
    "xchacha20_poly1305_open",
    "xchacha20_poly1305_seal",
]

ONE_BYTE_PROFILE = 0xBEDE
"""RFC 8285 §4.2's profile for one-byte header extension elements."""
OPUS = 120
"""The dynamic payload type Discord gives Opus."""
TAG = 16
"""Bytes of Poly1305 tag after the sealed part."""
COUNTER = 4
"""Bytes of nonce counter at the end of an rtpsize datagram."""

_SIGMA = (0x61707865, 0x3320646E, 0x79622D32, 0x6B206574)  # "expand 32-byte k", little-endian
_MASK = 0xFFFFFFFF


class RtpFormatError(ValueError):
    """A datagram that is not a well-formed, authentic rtpsize RTP packet."""


@dataclass(frozen=True)
class RtpHeader:
    """What an RTP packet shows in the clear. ``extension_profile`` is None without the X bit;
    ``extension_words`` is the body's length as the preamble states it."""

    sequence: int
    timestamp: int
    ssrc: int
    marker: bool = False
    payload_type: int = OPUS
    csrcs: tuple[int, ...] = ()
    extension_profile: int | None = None
    extension_words: int = 0
    padded: bool = False

    def wire(self) -> bytes:
        """The clear bytes: fixed header, CSRCs, extension preamble."""
        if len(self.csrcs) > 15 or not 0 <= self.payload_type < 128:
            raise ValueError(f"{len(self.csrcs)} CSRCs or payload type {self.payload_type}")
        flags = 2 << 6 | len(self.csrcs)
        flags |= 0x20 if self.padded else 0
        flags |= 0x10 if self.extension_profile is not None else 0
        second = self.payload_type | (0x80 if self.marker else 0)
        out = struct.pack("!BBHLL", flags, second, self.sequence, self.timestamp, self.ssrc)
        out += b"".join(struct.pack("!L", csrc) for csrc in self.csrcs)
        if self.extension_profile is not None:
            out += struct.pack("!HH", self.extension_profile, self.extension_words)
        return out


@dataclass(frozen=True)
class RtpPacket:
    """An opened packet: its header, the media payload alone and the extension body."""

    header: RtpHeader
    payload: bytes
    extension: bytes = b""


def read_header(datagram: bytes) -> RtpHeader:
    """The clear header of ``datagram``; RtpFormatError if it is not RTP version 2 or too short."""
    if len(datagram) < 12:
        raise RtpFormatError(f"{len(datagram)} bytes, an RTP header takes 12")
    flags, second, sequence, timestamp, ssrc = struct.unpack_from("!BBHLL", datagram)
    if flags >> 6 != 2:
        raise RtpFormatError(f"RTP version {flags >> 6}")
    count = flags & 0x0F
    end = 12 + 4 * count
    if flags & 0x10:
        end += 4
    if len(datagram) < end:
        raise RtpFormatError(f"{len(datagram)} bytes, the header announces {end}")
    csrcs = struct.unpack_from(f"!{count}L", datagram, 12)
    profile: int | None = None
    words = 0
    if flags & 0x10:
        profile, words = struct.unpack_from("!HH", datagram, end - 4)
    return RtpHeader(
        sequence,
        timestamp,
        ssrc,
        marker=bool(second & 0x80),
        payload_type=second & 0x7F,
        csrcs=tuple(csrcs),
        extension_profile=profile,
        extension_words=words,
        padded=bool(flags & 0x20),
    )


def looks_like_rtcp(datagram: bytes) -> bool:
    """RFC 5761 §4: on a port shared with RTP, a second byte of 192-223 marks RTCP."""
    return len(datagram) >= 2 and datagram[0] >> 6 == 2 and 192 <= datagram[1] <= 223


def one_byte_extension(elements: Mapping[int, bytes]) -> bytes:
    """An RFC 8285 one-byte extension body of ``elements`` (ID 1-14 → 1-16 bytes), zero-padded
    to whole 32-bit words."""
    out = bytearray()
    for ident, data in elements.items():
        if not 1 <= ident <= 14 or not 1 <= len(data) <= 16:
            raise ValueError(f"element {ident} of {len(data)} bytes has no one-byte form")
        out.append(ident << 4 | (len(data) - 1))
        out += data
    out += bytes(-len(out) % 4)
    return bytes(out)


def one_byte_elements(body: bytes) -> dict[int, bytes]:
    """The elements of an RFC 8285 one-byte extension body; padding skipped, ID 15 stops."""
    found: dict[int, bytes] = {}
    at = 0
    while at < len(body):
        ident, size = body[at] >> 4, (body[at] & 0x0F) + 1
        if ident == 0:  # a padding byte (its length nibble must be 0 too)
            at += 1
            continue
        if ident == 15:
            break
        if at + 1 + size > len(body):
            raise RtpFormatError(f"element {ident} runs past the extension body")
        found[ident] = body[at + 1 : at + 1 + size]
        at += 1 + size
    return found


def hchacha20(key: bytes, nonce16: bytes) -> bytes:
    """draft-irtf-cfrg-xchacha-03 §2.2: ChaCha20's 20 rounds over constants, key and a 16-byte
    nonce, with no final addition; the subkey is words 0-3 and 12-15.

    A ChaCha20 block (RFC 8439 §2.3) is those rounds plus the initial state, word by word, and
    ``cryptography``'s ChaCha20 takes exactly that state (its 16-byte nonce is the block counter
    and the nonce, words 12-15): its first keystream block less the state's words is the rounds'
    output."""
    if len(key) != 32 or len(nonce16) != 16:
        raise ValueError("HChaCha20 takes a 32-byte key and a 16-byte nonce")
    block = Cipher(algorithms.ChaCha20(key, nonce16), mode=None).encryptor().update(bytes(64))
    words = struct.unpack("<16L", block)
    initial = (*_SIGMA, *struct.unpack("<4L", nonce16))
    rounds = [
        (word - start) & _MASK for word, start in zip(words[:4] + words[12:], initial, strict=True)
    ]
    return struct.pack("<8L", *rounds)


def _aead(key: bytes, nonce24: bytes) -> tuple[ChaCha20Poly1305, bytes]:
    if len(nonce24) != 24:
        raise ValueError(f"an XChaCha20 nonce is 24 bytes, not {len(nonce24)}")
    return ChaCha20Poly1305(hchacha20(key, nonce24[:16])), bytes(4) + nonce24[16:]


def xchacha20_poly1305_seal(key: bytes, nonce24: bytes, plain: bytes, aad: bytes) -> bytes:
    """AEAD_XChaCha20_Poly1305 encryption: ciphertext then 16-byte tag."""
    cipher, nonce = _aead(key, nonce24)
    return cipher.encrypt(nonce, plain, aad)


def xchacha20_poly1305_open(key: bytes, nonce24: bytes, sealed: bytes, aad: bytes) -> bytes:
    """AEAD_XChaCha20_Poly1305 decryption; RtpFormatError if the tag does not authenticate."""
    cipher, nonce = _aead(key, nonce24)
    try:
        return cipher.decrypt(nonce, sealed, aad)
    except InvalidTag:
        raise RtpFormatError("the transport tag does not authenticate") from None


def seal_rtpsize(
    header: RtpHeader,
    payload: bytes,
    key: bytes,
    counter: int,
    *,
    extension: bytes = b"",
    padding: int = 0,
) -> bytes:
    """An ``aead_xchacha20_poly1305_rtpsize`` datagram. The X bit, the extension length and the P
    bit come from ``extension`` (whole words, needs the header's profile) and ``padding``."""
    if len(extension) % 4 or (extension and header.extension_profile is None):
        raise ValueError(f"an extension body of {len(extension)} bytes for this header")
    if not 0 <= padding <= 255 or not 0 <= counter <= _MASK:
        raise ValueError(f"padding {padding} or counter {counter} out of range")
    words = len(extension) // 4 if header.extension_profile is not None else 0
    clear = RtpHeader(
        header.sequence,
        header.timestamp,
        header.ssrc,
        marker=header.marker,
        payload_type=header.payload_type,
        csrcs=header.csrcs,
        extension_profile=header.extension_profile,
        extension_words=words,
        padded=padding > 0,
    ).wire()
    tail = bytes(padding - 1) + bytes([padding]) if padding else b""
    suffix = struct.pack("!L", counter)
    sealed = xchacha20_poly1305_seal(key, suffix + bytes(20), extension + payload + tail, clear)
    return clear + sealed + suffix


def open_rtpsize(datagram: bytes, key: bytes) -> RtpPacket:
    """Authenticate and open an ``aead_xchacha20_poly1305_rtpsize`` datagram: the header, the
    payload without extension body or padding, and the extension body."""
    header = read_header(datagram)
    clear = len(header.wire())
    if len(datagram) < clear + TAG + COUNTER:
        raise RtpFormatError(f"{len(datagram)} bytes hold no tag and counter after the header")
    suffix = datagram[-COUNTER:]
    plain = xchacha20_poly1305_open(
        key, suffix + bytes(20), datagram[clear:-COUNTER], datagram[:clear]
    )
    end = len(plain)
    if header.padded:
        count = plain[-1] if plain else 0
        if count == 0 or count > end:
            raise RtpFormatError(f"padding of {count} in a {end}-byte sealed part")
        end -= count
    start = 4 * header.extension_words if header.extension_profile is not None else 0
    if start > end:
        raise RtpFormatError(f"an extension body of {start} bytes in {end}")
    return RtpPacket(header, plain[start:end], plain[:start])
