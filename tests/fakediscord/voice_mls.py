"""The MLS wire format (RFC 9420), just what a voice server needs: reading a commit and a welcome
apart, and the external sender's signed Add and Remove proposals."""

from __future__ import annotations

import struct

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

# --------------------------------------------------------------------------
# MLS wire format (RFC 9420), just what a voice server needs


def _varint(value: int) -> bytes:
    if value < 1 << 6:
        return bytes([value])
    if value < 1 << 14:
        return struct.pack(">H", 0x4000 | value)
    if value < 1 << 30:
        return struct.pack(">I", 0x8000_0000 | value)
    raise ValueError(f"{value} is too long for an MLS vector")


def _vbytes(data: bytes) -> bytes:
    return _varint(len(data)) + data


class _TLSReader:
    """Reads TLS-presentation-language fields with MLS's variable-length vectors."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.offset = 0

    def take(self, size: int) -> bytes:
        if self.offset + size > len(self.data):
            raise ValueError(f"MLS message ends at {len(self.data)}, need {self.offset + size}")
        chunk = self.data[self.offset : self.offset + size]
        self.offset += size
        return chunk

    def uint(self, size: int) -> int:
        return int.from_bytes(self.take(size), "big")

    def vector(self) -> bytes:
        first = self.uint(1)
        prefix = first >> 6
        length = first & 0x3F
        if prefix == 1:
            length = (length << 8) | self.uint(1)
        elif prefix == 2:
            length = (length << 24) | self.uint(3)
        elif prefix == 3:
            raise ValueError("invalid MLS variable-length integer")
        return self.take(length)


_SENDER_MEMBER = 1
_SENDER_EXTERNAL = 2
_CONTENT_COMMIT = 3
_LEAF_SOURCE_KEY_PACKAGE = 1
_LEAF_SOURCE_COMMIT = 3


def _skip_leaf_node(reader: _TLSReader) -> None:
    reader.vector()  # encryption_key
    reader.vector()  # signature_key
    reader.uint(2)  # credential_type (basic or x509, both one vector)
    reader.vector()  # identity / certificates
    for _ in range(5):  # capabilities: versions, cipher suites, extensions, proposals, credentials
        reader.vector()
    source = reader.uint(1)
    if source == _LEAF_SOURCE_KEY_PACKAGE:
        reader.uint(8)
        reader.uint(8)
    elif source == _LEAF_SOURCE_COMMIT:
        reader.vector()  # parent_hash
    reader.vector()  # extensions
    reader.vector()  # signature


def split_commit_welcome(payload: bytes) -> tuple[bytes, bytes | None]:
    """Split the bot's op 28 payload: a commit MLSMessage, then maybe a raw Welcome.

    Nothing separates the two, so the commit (a PublicMessage) is parsed to
    find where it ends. Raises ValueError for anything else.
    """
    reader = _TLSReader(payload)
    if reader.uint(2) != 1 or reader.uint(2) != 1:
        raise ValueError("not an MLS 1.0 PublicMessage")
    reader.vector()  # group_id
    reader.uint(8)  # epoch
    sender_type = reader.uint(1)
    if sender_type in (_SENDER_MEMBER, _SENDER_EXTERNAL):
        reader.uint(4)
    reader.vector()  # authenticated_data
    if reader.uint(1) != _CONTENT_COMMIT:
        raise ValueError("the MLSMessage is not a commit")
    reader.vector()  # proposals
    if reader.uint(1):  # optional<UpdatePath>
        _skip_leaf_node(reader)
        reader.vector()  # nodes
    reader.vector()  # signature
    reader.vector()  # confirmation_tag
    if sender_type == _SENDER_MEMBER:
        reader.vector()  # membership_tag
    end = reader.offset
    return payload[:end], (payload[end:] or None)


class _ExternalSender:
    """The voice server's MLS external sender: signs Add and Remove proposals."""

    IDENTITY = bytes(8)

    def __init__(self) -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())
        self.public_key = self._key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )

    def package(self) -> bytes:
        """The op 25 payload: signature key and a basic credential."""
        return _vbytes(self.public_key) + struct.pack(">H", 1) + _vbytes(self.IDENTITY)

    def add(self, group_id: int, epoch: int, key_package: bytes, *, valid: bool = True) -> bytes:
        """An external Add proposal (a PublicMessage) for ``key_package``."""
        return self._proposal(group_id, epoch, struct.pack(">H", 1) + key_package, valid)

    def remove(self, group_id: int, epoch: int, leaf_index: int, *, valid: bool = True) -> bytes:
        """An external Remove proposal for the member at ``leaf_index``."""
        return self._proposal(group_id, epoch, struct.pack(">HI", 3, leaf_index), valid)

    def _proposal(self, group_id: int, epoch: int, proposal: bytes, valid: bool) -> bytes:
        head = struct.pack(">HH", 1, 1)  # mls10, mls_public_message
        content = (
            _vbytes(group_id.to_bytes(8, "big"))
            + struct.pack(">QBI", epoch, _SENDER_EXTERNAL, 0)
            + _vbytes(b"")
            + bytes([2])  # content type: proposal
            + proposal
        )
        to_be_signed = _vbytes(b"MLS 1.0 FramedContentTBS") + _vbytes(head + content)
        if not valid:
            to_be_signed += b"\x00"
        signature = self._key.sign(to_be_signed, ec.ECDSA(hashes.SHA256()))
        return head + content + _vbytes(signature)
