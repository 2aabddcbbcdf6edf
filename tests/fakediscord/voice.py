"""The voice side of the fake Discord: a voice gateway, a UDP media server and DAVE.

:class:`FakeVoiceServer` serves, on 127.0.0.1, what a real discord.py 2.7.1
``VoiceClient`` talks to after the main gateway's VOICE_SERVER_UPDATE:

* the voice websocket (v8, over TLS: discord.py hard-codes ``wss://``): HELLO,
  IDENTIFY, READY, heartbeats, SELECT_PROTOCOL, SESSION_DESCRIPTION, SPEAKING
  (op 5) and clients connect/disconnect (ops 11 and 13) for simulated users;
* UDP IP discovery and an RTP endpoint (``aead_xchacha20_poly1305_rtpsize``);
* DAVE (protocol version 1): an external sender (a P-256 key of our own,
  op 25), external Add/Remove proposals it signs (op 27), the bot's
  commit/welcome (op 28), announced commits (op 29), welcomes (op 30) and
  transitions (ops 23 and 22). Whoever is in the MLS group commits: the bot
  when it is a member ("bot commits"), otherwise a simulated speaker ("other
  member commits", the bot then gets a Welcome).

Simulated speakers (:meth:`FakeVoiceServer.add_speaker`) are MLS members with
their own davey session; :meth:`FakeSpeaker.play` sends Opus packets to the bot
as a Discord client's audio reaches it: DAVE-encrypted, in RTP with a header
extension and padding, transport-encrypted with the bot's key.

TLS. The certificate is made at first use (a throwaway CA and a leaf for IP
127.0.0.1, with ``cryptography``) and the CA is added to the SSL context that
aiohttp builds at import time and uses for every verified connection
(``aiohttp.connector._SSL_CONTEXT_VERIFIED``). That works whatever was imported
first, unlike ``SSL_CERT_FILE``, and keeps discord.py's own ``wss://`` code path
(rewriting the URL to ``ws://`` would test less). A client built with its own
``connector`` can use :meth:`FakeVoiceServer.client_ssl_context` instead.

Fault switches: ``bad_proposal_signature`` (the bot's websocket poller dies on
the proposal, its DAVE session never becomes ready), ``corrupt_dave`` in
:meth:`FakeSpeaker.play` (frames still look like DAVE frames but fail to
decrypt) and :meth:`FakeVoiceServer.drop_connection`.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import itertools
import json
import logging
import os
import ssl
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import aiohttp.connector
import davey
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from bot.voice.rtp import (
    EXTENSION_PROFILE_ONE_BYTE,
    RTPError,
    RTPHeader,
    RTPPacket,
    build_rtpsize_packet,
    decrypt_rtpsize,
    is_rtcp,
)

__all__ = ["FakeSpeaker", "FakeVoiceServer", "SentPacket"]

_log = logging.getLogger(__name__)

TRANSPORT_MODE = "aead_xchacha20_poly1305_rtpsize"
DAVE_VERSION = 1
SAMPLES_PER_FRAME = 960
FRAME_SECONDS = 0.02
SAMPLE_RATE = 48_000

# Voice gateway opcodes (discord.py names them on DiscordVoiceWebSocket).
OP_IDENTIFY = 0
OP_SELECT_PROTOCOL = 1
OP_READY = 2
OP_HEARTBEAT = 3
OP_SESSION_DESCRIPTION = 4
OP_SPEAKING = 5
OP_HEARTBEAT_ACK = 6
OP_RESUME = 7
OP_HELLO = 8
OP_CLIENTS_CONNECT = 11
OP_CLIENT_DISCONNECT = 13
OP_DAVE_EXECUTE_TRANSITION = 22
OP_DAVE_TRANSITION_READY = 23
OP_MLS_EXTERNAL_SENDER = 25
OP_MLS_KEY_PACKAGE = 26
OP_MLS_PROPOSALS = 27
OP_MLS_COMMIT_WELCOME = 28
OP_MLS_ANNOUNCE_COMMIT_TRANSITION = 29
OP_MLS_WELCOME = 30
OP_MLS_INVALID_COMMIT_WELCOME = 31

CLOSE_AUTHENTICATION_FAILED = 4004


# --------------------------------------------------------------------------
# TLS


@dataclass(frozen=True)
class _Certificate:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes


_certificate: _Certificate | None = None


def _make_certificate() -> _Certificate:
    """A throwaway CA and a server certificate it signs for IP 127.0.0.1."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake discord test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return _Certificate(
        ca_pem=ca.public_bytes(serialization.Encoding.PEM),
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


def _test_certificate() -> _Certificate:
    """The process-wide test certificate, trusted by aiohttp's default context."""
    global _certificate
    if _certificate is None:
        _certificate = _make_certificate()
        default_context = getattr(aiohttp.connector, "_SSL_CONTEXT_VERIFIED", None)
        if not isinstance(default_context, ssl.SSLContext):
            raise RuntimeError(
                "aiohttp no longer exposes connector._SSL_CONTEXT_VERIFIED; "
                "give the client a connector with FakeVoiceServer.client_ssl_context()"
            )
        default_context.load_verify_locations(cadata=_certificate.ca_pem.decode("ascii"))
    return _certificate


def _server_ssl_context(certificate: _Certificate) -> ssl.SSLContext:
    import tempfile

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as directory:
        cert_path = os.path.join(directory, "cert.pem")
        key_path = os.path.join(directory, "key.pem")
        with open(cert_path, "wb") as cert_file:
            cert_file.write(certificate.cert_pem)
        with open(key_path, "wb") as key_file:
            key_file.write(certificate.key_pem)
        context.load_cert_chain(cert_path, key_path)
    return context


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


# --------------------------------------------------------------------------
# Speakers


@dataclass(frozen=True, slots=True)
class SentPacket:
    """One packet a speaker sent: its index in the ``packets`` given to play()."""

    index: int
    sequence: int
    timestamp: int
    opus: bytes


class FakeSpeaker:
    """A simulated member of the voice channel with his own davey session."""

    def __init__(self, server: FakeVoiceServer, call: _Call, user_id: int, ssrc: int) -> None:
        self.server = server
        self.user_id = user_id
        self.ssrc = ssrc
        self.channel_id = call.channel_id
        self.session = davey.DaveSession(DAVE_VERSION, user_id, call.channel_id)
        self.key_package = self.session.get_serialized_key_package()
        self.session.set_external_sender(call.external_sender.package())
        self.in_group = asyncio.Event()
        self.left = False
        self._call = call
        self._nonce = itertools.count(1)
        self._announced_to: set[int] = set()

    async def wait_in_group(self, timeout: float = 5.0) -> None:
        """Wait until the speaker is a member of the MLS group with the bot."""
        await asyncio.wait_for(self.in_group.wait(), timeout)

    async def play(
        self,
        packets: Sequence[bytes],
        *,
        start_seq: int = 0,
        start_ts: int = 0,
        lose: Iterable[int] = (),
        reorder: Iterable[tuple[int, int]] = (),
        gaps: Mapping[int, float] | None = None,
        realtime: bool = False,
        padding: bool = True,
        extension: bool = True,
        corrupt_dave: bool = False,
        announce: bool = True,
        fast_interval: float = 0.001,
    ) -> list[SentPacket]:
        """Send Opus packets to the bot as his Discord client would; return what was sent.

        Packet ``i`` gets sequence ``start_seq + i`` and timestamp ``start_ts +
        960 i`` plus every gap before it (``gaps[i]`` seconds of silence before
        packet ``i``: the timestamp jumps, the sequence does not). ``lose``
        skips packets, ``reorder`` swaps pairs in the sending order.
        ``realtime`` paces packets at 20 ms (plus the gaps); otherwise one
        every ``fast_interval`` seconds. ``corrupt_dave`` damages each DAVE
        frame's ciphertext so the bot cannot decrypt it. Unless ``announce``
        is False, op 5 SPEAKING names his SSRC first (once per bot connection),
        racing the audio as on Discord.
        """
        bot = self._call.bot
        if bot is None or bot.udp_address is None or bot.secret_key is None:
            raise RuntimeError("no bot is connected to this voice channel")
        if self.left:
            raise RuntimeError(f"speaker {self.user_id} has left the channel")
        gaps = dict(gaps or {})
        lost = set(lose)
        if announce:
            await self.announce()
        planned: list[SentPacket] = []
        offsets: list[float] = []
        timestamp = start_ts
        offset = 0.0
        for index, opus in enumerate(packets):
            silence = gaps.get(index, 0.0)
            timestamp += round(silence * SAMPLE_RATE)
            offset += silence
            planned.append(
                SentPacket(index, (start_seq + index) & 0xFFFF, timestamp & 0xFFFFFFFF, opus)
            )
            offsets.append(offset)
            timestamp += SAMPLES_PER_FRAME
            offset += FRAME_SECONDS
        order = list(range(len(planned)))
        for first, second in reorder:
            order[first], order[second] = order[second], order[first]
        loop = asyncio.get_running_loop()
        started = loop.time()
        sent: list[SentPacket] = []
        for position, index in enumerate(order):
            if realtime:
                delay = started + offsets[position] - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
            elif position:
                await asyncio.sleep(fast_interval)
            if index in lost:
                continue
            packet = planned[index]
            frame = self.session.encrypt_opus(packet.opus) if self.session.ready else packet.opus
            if corrupt_dave and frame.endswith(b"\xfa\xfa"):
                frame = bytes([frame[0] ^ 0x55]) + frame[1:]
            bot.send_rtp(
                RTPHeader(packet.sequence, packet.timestamp, self.ssrc, marker=index == 0),
                frame,
                nonce=next(self._nonce),
                extension=extension,
                padding=(index % 7) + 1 if padding else 0,
            )
            sent.append(packet)
        return sent

    async def announce(self) -> None:
        """Op 5 SPEAKING to the connected bot: this user speaks on this SSRC (once per connection)."""
        bot = self._call.bot
        if bot is None or bot.connection_id in self._announced_to:
            return
        self._announced_to.add(bot.connection_id)
        await bot.send_json(
            OP_SPEAKING, {"user_id": str(self.user_id), "ssrc": self.ssrc, "speaking": 1}
        )

    async def leave(self) -> None:
        """Leave the channel: the bot gets op 13 and the MLS group removes him."""
        await self.server._remove_speaker(self)


# --------------------------------------------------------------------------
# The bot's voice connection


@dataclass
class _Expected:
    guild_id: int
    channel_id: int
    user_id: int
    session_id: str


class _BotConnection:
    """One voice websocket session of the bot, with its UDP address and keys."""

    def __init__(
        self,
        server: FakeVoiceServer,
        ws: web.WebSocketResponse,
        transport: asyncio.BaseTransport | None,
        connection_id: int,
    ) -> None:
        self.server = server
        self.ws = ws
        self.transport = transport
        self.connection_id = connection_id
        self.expected: _Expected | None = None
        self.ssrc = 0
        self.udp_address: tuple[str, int] | None = None
        self.secret_key: bytes | None = None
        self.key_package: bytes | None = None
        self.leaf_index: int | None = None
        self.dave = False
        self._seq = itertools.count(1)
        self._nonce = itertools.count(1)
        self.waiting_commit: asyncio.Future[bytes] | None = None
        self.transition_ready: dict[int, asyncio.Future[None]] = {}

    @property
    def user_id(self) -> int:
        return self.expected.user_id if self.expected else 0

    async def send_json(self, op: int, data: Any) -> None:
        if self.ws.closed:
            return
        await self.ws.send_str(json.dumps({"op": op, "d": data, "seq": next(self._seq)}))

    async def send_binary(self, op: int, payload: bytes) -> None:
        if self.ws.closed:
            return
        await self.ws.send_bytes(struct.pack(">HB", next(self._seq), op) + payload)

    def send_rtp(
        self,
        header: RTPHeader,
        frame: bytes,
        *,
        nonce: int,
        extension: bool,
        padding: int,
    ) -> None:
        assert self.secret_key is not None and self.udp_address is not None
        extension_body = b""
        if extension:
            # One RFC 8285 element (id 1, one byte: an audio level) padded to a word.
            header = RTPHeader(
                header.sequence,
                header.timestamp,
                header.ssrc,
                marker=header.marker,
                extension_profile=EXTENSION_PROFILE_ONE_BYTE,
            )
            extension_body = bytes([0x10, 0x7F, 0, 0])
        packet = build_rtpsize_packet(
            header,
            frame,
            self.secret_key,
            nonce,
            extension_body=extension_body,
            padding=padding,
        )
        self.server._send_udp(packet, self.udp_address)


# --------------------------------------------------------------------------
# A call: the MLS group of one voice channel


class _Call:
    """Members, MLS group state and the external sender of one voice channel."""

    def __init__(self, server: FakeVoiceServer, channel_id: int) -> None:
        self.server = server
        self.channel_id = channel_id
        self.external_sender = _ExternalSender()
        self.speakers: dict[int, FakeSpeaker] = {}
        self.bot: _BotConnection | None = None
        # MLS group: epoch is None while nobody holds a group; leaves[i] is the
        # user at leaf i (None for a blank leaf), tracked as RFC 9420 assigns them.
        self.epoch: int | None = None
        self.leaves: list[int | None] = []
        self.lock = asyncio.Lock()

    # Membership as MLS sees it -------------------------------------------

    def _is_member(self, user_id: int) -> bool:
        return user_id in self.leaves

    def _bot_is_member(self) -> bool:
        return self.bot is not None and self._is_member(self.bot.user_id)

    def _member_speakers(self) -> list[FakeSpeaker]:
        return [s for s in self.speakers.values() if self._is_member(s.user_id)]

    def _found(self, user_id: int) -> None:
        self.epoch = 0
        self.leaves = [user_id]

    def _apply_add(self, user_id: int) -> int:
        for index, occupant in enumerate(self.leaves):
            if occupant is None:
                self.leaves[index] = user_id
                return index
        self.leaves.append(user_id)
        return len(self.leaves) - 1

    def _apply_remove(self, user_id: int) -> None:
        self.leaves[self.leaves.index(user_id)] = None
        while self.leaves and self.leaves[-1] is None:
            self.leaves.pop()

    def _reset(self) -> None:
        self.epoch = None
        self.leaves = []

    # Operations ------------------------------------------------------------

    async def join(self, user_id: int, key_package: bytes) -> None:
        """Bring a new member (the bot or a speaker) into the MLS group."""
        async with self.lock:
            if self.epoch is None:
                self._found(user_id)
                self.server._record_dave(f"{user_id} founds the group of channel {self.channel_id}")
                return
            if self._is_member(user_id):
                # A member that sends a new key package has reset its session.
                self._apply_remove(user_id)
            epoch = self.epoch
            bot_commits = self._bot_is_member()
            proposal = self.external_sender.add(
                self.channel_id,
                epoch,
                key_package,
                valid=not (bot_commits and self.server.bad_proposal_signature),
            )
            committed = await self._commit([proposal], bot_commits)
            if committed is None:
                return
            commit, welcome = committed
            self._apply_add(user_id)
            self.epoch = epoch + 1
            if welcome is None:
                raise RuntimeError("a commit adding a member came without a Welcome")
            await self._deliver(commit, welcome, new_member=user_id, bot_committed=bot_commits)

    async def leave(self, user_id: int) -> None:
        """Remove a member from the MLS group (external Remove proposal)."""
        async with self.lock:
            if self.epoch is None or not self._is_member(user_id):
                return
            leaf = self.leaves.index(user_id)
            bot_commits = (
                self.bot is not None and self.bot.user_id != user_id and self._bot_is_member()
            )
            other_speakers = [s for s in self._member_speakers() if s.user_id != user_id]
            if not bot_commits and not other_speakers:
                # Nobody else is left to commit: the group ends with its last member.
                self._reset()
                return
            proposal = self.external_sender.remove(
                self.channel_id,
                self.epoch,
                leaf,
                valid=not (bot_commits and self.server.bad_proposal_signature),
            )
            committed = await self._commit([proposal], bot_commits, exclude=user_id)
            if committed is None:
                return
            commit, _ = committed
            self._apply_remove(user_id)
            self.epoch += 1
            await self._deliver(commit, None, new_member=None, bot_committed=bot_commits)

    async def _commit(
        self, proposals: list[bytes], bot_commits: bool, *, exclude: int | None = None
    ) -> tuple[bytes, bytes | None] | None:
        """Hand proposals to every member; return the chosen committer's commit/welcome."""
        vector = _vbytes(b"".join(proposals))
        chosen: tuple[bytes, bytes | None] | None = None
        for speaker in self._member_speakers():
            if speaker.user_id == exclude:
                continue
            result = speaker.session.process_proposals(davey.ProposalsOperationType.append, vector)
            if chosen is None and not bot_commits and result is not None:
                chosen = (result.commit, result.welcome)
                self.server._record_dave(f"speaker {speaker.user_id} commits epoch {self.epoch}")
        if bot_commits:
            bot = self.bot
            assert bot is not None
            loop = asyncio.get_running_loop()
            bot.waiting_commit = loop.create_future()
            await bot.send_binary(OP_MLS_PROPOSALS, bytes([0]) + vector)
            try:
                payload = await asyncio.wait_for(bot.waiting_commit, self.server.response_timeout)
            except (TimeoutError, asyncio.CancelledError):
                self.server._record_dave("the bot never answered the proposals")
                return None
            finally:
                bot.waiting_commit = None
            chosen = split_commit_welcome(payload)
            self.server._record_dave(f"the bot commits epoch {self.epoch}")
        return chosen

    async def _deliver(
        self, commit: bytes, welcome: bytes | None, *, new_member: int | None, bot_committed: bool
    ) -> None:
        """Send the commit to members, the welcome to the new one, run the transition."""
        transition_id = self.server._next_transition_id()
        for speaker in self._member_speakers():
            if speaker.user_id == new_member:
                continue
            speaker.session.process_commit(commit)
        bot = self.bot
        if new_member is not None and welcome is not None:
            newcomer = self.speakers.get(new_member)
            if newcomer is not None:
                newcomer.session.process_welcome(welcome)
            elif bot is not None and bot.user_id == new_member:
                await self._transition(
                    bot, OP_MLS_WELCOME, struct.pack(">H", transition_id) + welcome, transition_id
                )
        if bot is not None and self._bot_is_member() and bot.user_id != new_member:
            await self._transition(
                bot,
                OP_MLS_ANNOUNCE_COMMIT_TRANSITION,
                struct.pack(">H", transition_id) + commit,
                transition_id,
            )
        self._mark_ready_speakers()
        self.server._record_dave(
            f"epoch {self.epoch} executed as transition {transition_id}"
            + (" (bot committed)" if bot_committed else "")
        )

    async def _transition(
        self, bot: _BotConnection, op: int, payload: bytes, transition_id: int
    ) -> None:
        ready = asyncio.get_running_loop().create_future()
        bot.transition_ready[transition_id] = ready
        await bot.send_binary(op, payload)
        try:
            await asyncio.wait_for(ready, self.server.response_timeout)
        except TimeoutError:
            self.server._record_dave(f"the bot never got ready for transition {transition_id}")
            return
        finally:
            bot.transition_ready.pop(transition_id, None)
        await bot.send_json(OP_DAVE_EXECUTE_TRANSITION, {"transition_id": transition_id})
        self.server.transitions_executed.append(transition_id)

    def _mark_ready_speakers(self) -> None:
        for speaker in self._member_speakers():
            if speaker.session.ready:
                speaker.in_group.set()


# --------------------------------------------------------------------------
# The server


class FakeVoiceServer:
    """Discord's voice server for one test: voice websocket, UDP media and DAVE.

    Give ``endpoint`` and :meth:`expect`'s token to the bot in
    VOICE_SERVER_UPDATE. Attributes record what the bot did: ``bot_messages``
    (every JSON payload it sent, in order), ``bot_rtp`` (its RTP packets,
    transport-decrypted), ``transitions_executed`` and ``dave_log``.
    """

    def __init__(
        self,
        *,
        dave: bool = True,
        bad_proposal_signature: bool = False,
        response_timeout: float = 5.0,
        heartbeat_interval_ms: float = 41_250.0,
    ) -> None:
        self.dave = dave
        self.bad_proposal_signature = bad_proposal_signature
        self.response_timeout = response_timeout
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.endpoint = ""
        self.bot_messages: list[dict[str, Any]] = []
        self.bot_rtp: list[RTPPacket] = []
        self.transitions_executed: list[int] = []
        self.dave_log: list[str] = []
        self.connections: list[_BotConnection] = []
        self.bot_connected = asyncio.Event()
        self.down = False
        self._expected: dict[str, _Expected] = {}
        self._calls: dict[int, _Call] = {}
        self._ssrcs = itertools.count(1001)
        self._transition_ids = itertools.count(1)
        self._connection_ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self._udp: asyncio.DatagramTransport | None = None
        self._udp_port = 0
        self._tasks: set[asyncio.Task[None]] = set()

    # Lifecycle ---------------------------------------------------------------

    async def start(self) -> None:
        """Listen on 127.0.0.1: TLS websocket and UDP, each on a free port."""
        certificate = _test_certificate()
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(
            lambda: _UDPProtocol(self), local_addr=("127.0.0.1", 0)
        )
        self._udp = transport
        self._udp_port = transport.get_extra_info("sockname")[1]
        app = web.Application()
        app.router.add_get("/", self._handle_websocket)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(
            self._runner, "127.0.0.1", 0, ssl_context=_server_ssl_context(certificate)
        )
        await site.start()
        server = site._server
        assert isinstance(server, asyncio.Server)
        port = server.sockets[0].getsockname()[1]
        self.endpoint = f"127.0.0.1:{port}"

    async def close(self) -> None:
        """Stop serving; close the bot's websocket and the UDP endpoint."""
        for task in list(self._tasks):
            task.cancel()
        for connection in self.connections:
            if not connection.ws.closed:
                await connection.ws.close()
        if self._udp is not None:
            self._udp.close()
            self._udp = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeVoiceServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @staticmethod
    def client_ssl_context() -> ssl.SSLContext:
        """An SSL context that trusts the fake voice server (for a custom connector)."""
        context = ssl.create_default_context(cadata=_test_certificate().ca_pem.decode("ascii"))
        return context

    # What the main gateway asks -----------------------------------------------

    def expect(self, guild_id: int, channel_id: int, user_id: int, session_id: str) -> str:
        """Register the bot's coming voice connection; return its voice token."""
        token = os.urandom(12).hex()
        self._expected[token] = _Expected(guild_id, channel_id, user_id, session_id)
        self._call(channel_id)
        return token

    # Simulated members ---------------------------------------------------------

    def add_speaker(self, user_id: int, *, channel_id: int | None = None) -> FakeSpeaker:
        """A user joins the voice channel: op 11 to the bot and an MLS Add.

        ``channel_id`` may be left out when the server knows one channel only.
        The MLS join runs in the background; await
        :meth:`FakeSpeaker.wait_in_group` before playing.
        """
        call = self._call(channel_id if channel_id is not None else self._only_channel())
        if user_id in call.speakers:
            raise ValueError(f"speaker {user_id} is already in channel {call.channel_id}")
        speaker = FakeSpeaker(self, call, user_id, next(self._ssrcs))
        call.speakers[user_id] = speaker
        bot = call.bot
        if bot is not None and bot.secret_key is not None:
            self._spawn(bot.send_json(OP_CLIENTS_CONNECT, {"user_ids": [str(user_id)]}))
        if self.dave:
            self._spawn(call.join(user_id, speaker.key_package))
        else:
            speaker.in_group.set()
        return speaker

    async def _remove_speaker(self, speaker: FakeSpeaker) -> None:
        call = self._calls[speaker.channel_id]
        if speaker.left:
            return
        speaker.left = True
        call.speakers.pop(speaker.user_id, None)
        if call.bot is not None:
            await call.bot.send_json(OP_CLIENT_DISCONNECT, {"user_id": str(speaker.user_id)})
        if self.dave:
            await call.leave(speaker.user_id)

    # Faults ----------------------------------------------------------------------

    def send_raw(self, data: bytes, *, channel_id: int | None = None) -> None:
        """Send any datagram to the bot's UDP address (garbage, RTCP, forged RTP)."""
        call = self._call(channel_id if channel_id is not None else self._only_channel())
        if call.bot is None or call.bot.udp_address is None:
            raise RuntimeError("no bot is connected to this voice channel")
        self._send_udp(data, call.bot.udp_address)

    def bot_secret_key(self, *, channel_id: int | None = None) -> bytes:
        """The transport key of the bot's current voice session."""
        call = self._call(channel_id if channel_id is not None else self._only_channel())
        if call.bot is None or call.bot.secret_key is None:
            raise RuntimeError("no bot is connected to this voice channel")
        return call.bot.secret_key

    async def drop_connection(self) -> None:
        """The voice server goes away: websockets aborted, UDP closed, no reconnects."""
        self.down = True
        for connection in self.connections:
            if isinstance(connection.transport, asyncio.Transport):
                connection.transport.abort()
        if self._udp is not None:
            self._udp.close()
            self._udp = None

    # Internals ----------------------------------------------------------------

    def _call(self, channel_id: int) -> _Call:
        call = self._calls.get(channel_id)
        if call is None:
            call = self._calls[channel_id] = _Call(self, channel_id)
        return call

    def _only_channel(self) -> int:
        if len(self._calls) != 1:
            raise ValueError(f"{len(self._calls)} voice channels known: say which one")
        return next(iter(self._calls))

    def _next_transition_id(self) -> int:
        return next(self._transition_ids)

    def _record_dave(self, event: str) -> None:
        _log.debug("fake voice DAVE: %s", event)
        self.dave_log.append(event)

    def _spawn(self, coroutine: Any) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.error("fake voice server task failed", exc_info=task.exception())

    def _send_udp(self, packet: bytes, address: tuple[str, int]) -> None:
        if self._udp is not None and not self.down:
            self._udp.sendto(packet, address)

    def _on_datagram(self, data: bytes, address: tuple[str, int]) -> None:
        if self.down:
            return
        if len(data) == 74 and data[:4] == struct.pack(">HH", 1, 70):
            ssrc = struct.unpack_from(">I", data, 4)[0]
            reply = struct.pack(">HHI", 2, 70, ssrc)
            reply += address[0].encode("ascii").ljust(64, b"\x00")
            reply += struct.pack(">H", address[1])
            self._send_udp(reply, address)
            return
        if is_rtcp(data):
            return
        for connection in self.connections:
            if connection.udp_address == address and connection.secret_key is not None:
                with contextlib.suppress(RTPError):
                    self.bot_rtp.append(decrypt_rtpsize(data, connection.secret_key))
                return

    async def _handle_websocket(self, request: web.Request) -> web.StreamResponse:
        if self.down:
            raise web.HTTPServiceUnavailable()
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        connection = _BotConnection(self, ws, request.transport, next(self._connection_ids))
        self.connections.append(connection)
        await connection.send_json(OP_HELLO, {"heartbeat_interval": self.heartbeat_interval_ms})
        try:
            async for message in ws:
                if message.type is aiohttp.WSMsgType.TEXT:
                    await self._on_json(connection, json.loads(message.data))
                elif message.type is aiohttp.WSMsgType.BINARY:
                    await self._on_binary(connection, message.data)
        finally:
            await self._connection_closed(connection)
        return ws

    async def _on_json(self, connection: _BotConnection, message: dict[str, Any]) -> None:
        self.bot_messages.append(message)
        op, data = message.get("op"), message.get("d") or {}
        if op == OP_IDENTIFY:
            expected = self._expected.get(data.get("token", ""))
            if (
                expected is None
                or data.get("session_id") != expected.session_id
                or int(data.get("user_id", 0)) != expected.user_id
                or int(data.get("server_id", 0)) != expected.guild_id
            ):
                await connection.ws.close(code=CLOSE_AUTHENTICATION_FAILED)
                return
            connection.expected = expected
            connection.dave = self.dave and int(data.get("max_dave_protocol_version", 0)) >= 1
            connection.ssrc = next(self._ssrcs)
            await connection.send_json(
                OP_READY,
                {
                    "ssrc": connection.ssrc,
                    "ip": "127.0.0.1",
                    "port": self._udp_port,
                    "modes": [TRANSPORT_MODE, "aead_aes256_gcm_rtpsize"],
                    "heartbeat_interval": self.heartbeat_interval_ms,
                },
            )
        elif op == OP_HEARTBEAT:
            await connection.send_json(OP_HEARTBEAT_ACK, {"t": data.get("t")})
        elif op == OP_SELECT_PROTOCOL:
            await self._select_protocol(connection, data)
        elif op == OP_DAVE_TRANSITION_READY:
            ready = connection.transition_ready.get(int(data.get("transition_id", -1)))
            if ready is not None and not ready.done():
                ready.set_result(None)
        elif op == OP_MLS_INVALID_COMMIT_WELCOME:
            self._record_dave(f"the bot reports an invalid commit/welcome: {data}")
        elif op == OP_RESUME:
            await connection.ws.close(code=4006)

    async def _select_protocol(self, connection: _BotConnection, data: dict[str, Any]) -> None:
        expected = connection.expected
        if expected is None:
            await connection.ws.close(code=4003)
            return
        address = data.get("data", {})
        if address.get("mode") != TRANSPORT_MODE:
            await connection.ws.close(code=4016)
            return
        connection.udp_address = (address["address"], int(address["port"]))
        connection.secret_key = os.urandom(32)
        call = self._call(expected.channel_id)
        if call.bot is not None and call.bot is not connection:
            await self._connection_closed(call.bot)
        call.bot = connection
        await connection.send_json(
            OP_SESSION_DESCRIPTION,
            {
                "mode": TRANSPORT_MODE,
                "secret_key": list(connection.secret_key),
                "dave_protocol_version": DAVE_VERSION if connection.dave else 0,
                "audio_codec": "opus",
                "media_session_id": os.urandom(8).hex(),
            },
        )
        if connection.dave:
            await connection.send_binary(OP_MLS_EXTERNAL_SENDER, call.external_sender.package())
        if call.speakers:
            await connection.send_json(
                OP_CLIENTS_CONNECT, {"user_ids": [str(user) for user in call.speakers]}
            )
        self.bot_connected.set()

    async def _on_binary(self, connection: _BotConnection, data: bytes) -> None:
        if not data or connection.expected is None:
            return
        op, payload = data[0], data[1:]
        call = self._call(connection.expected.channel_id)
        if op == OP_MLS_KEY_PACKAGE:
            connection.key_package = payload
            if call.bot is connection:
                self._spawn(call.join(connection.user_id, payload))
        elif op == OP_MLS_COMMIT_WELCOME:
            waiting = connection.waiting_commit
            if waiting is not None and not waiting.done():
                waiting.set_result(payload)

    async def _connection_closed(self, connection: _BotConnection) -> None:
        if connection.expected is None:
            return
        call = self._call(connection.expected.channel_id)
        if call.bot is not connection:
            return
        if connection.waiting_commit is not None and not connection.waiting_commit.done():
            connection.waiting_commit.cancel()
        user_id = connection.user_id
        if self.dave and not self.down and call._is_member(user_id):
            await call.leave(user_id)
        if call.bot is connection:
            call.bot = None
        if self.down and call._is_member(user_id):
            call._reset()


class _UDPProtocol(asyncio.DatagramProtocol):
    def __init__(self, server: FakeVoiceServer) -> None:
        self.server = server

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        self.server._on_datagram(data, addr)
