"""The voice side of the fake Discord: a voice gateway, a UDP media server and DAVE.

:class:`FakeVoiceServer` serves, on 127.0.0.1, what a real discord.py 2.7.1
``VoiceClient`` talks to after the main gateway's VOICE_SERVER_UPDATE:

* the voice websocket (v8, over TLS: discord.py hard-codes ``wss://``): HELLO,
  IDENTIFY, READY (with the modes in Discord's order, AES-GCM first, which
  discord.py does not support), heartbeats, SELECT_PROTOCOL,
  SESSION_DESCRIPTION, SPEAKING (op 5) and clients connect/disconnect (ops 11
  and 13) for simulated users;
* UDP IP discovery and an RTP endpoint (``aead_xchacha20_poly1305_rtpsize``);
* DAVE (protocol version 1), as the whitepaper (github.com/discord/dave-protocol)
  has the voice gateway do it: an external sender (a P-256 key of our own,
  op 25), external Add/Remove proposals it signs (op 27), the bot's
  commit/welcome (op 28), announced commits (op 29), welcomes (op 30) and
  transitions (op 23 from the bot, then op 22). Whoever is in the MLS group
  commits: the bot when it is a member ("bot commits"), otherwise a simulated
  speaker ("other member commits", the bot then gets a Welcome). A sole
  remaining member is reset (op 24 with epoch 1, then op 21 with transition
  0). A client without DAVE joining downgrades the call (op 21 to protocol
  version 0, op 23, op 22); the last one leaving upgrades it (op 24, a new
  group of every member in one commit, op 22).

Simulated speakers (:meth:`FakeVoiceServer.add_speaker`) are Discord clients,
with their own davey session when they support DAVE. They switch their media
keys when a transition executes (op 22), not when they process a commit, send
in the clear while the call is transport-only or not yet upgraded, and send
nothing while they wait to be welcomed. :meth:`FakeSpeaker.play` sends Opus
packets to the bot as a Discord client's audio reaches it: DAVE-encrypted, in
RTP with a header extension and padding, transport-encrypted with the bot's
key; duplicated by the network or replaced by the SFU's silence frames when
asked. :meth:`FakeSpeaker.reconnect` drops a client off the voice server and
brings it back with a new SSRC and new random RTP counters.

Time. The call has a :class:`MediaClock`: real time that a fast ``play()``
jumps forward packet by packet, waiting each time until the bot has read the
packet (:attr:`FakeVoiceServer.receipts`). Give the same clock to the bot's
receiver and a three-minute speech is received as in three minutes, in
seconds of wall time.

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
decrypt), ``transition_lag`` and ``transition_delay`` (frames in flight across
a transition), :meth:`FakeVoiceServer.drop_connection` (the server gone for
good), ``silent`` (a hung server: websockets accepted, never answered),
:meth:`FakeVoiceServer.close_bot_websocket` (a close code of Discord's,
4015 say, or an abrupt end of the TCP connection), :meth:`FakeVoiceServer.move_endpoint`
(the call moves to another address; with the main gateway's VOICE_SERVER_UPDATE,
:meth:`tests.fakediscord.world.World.move_voice_server`), and ``speaking_delay``
(op 5 SPEAKING reaching a new connection of the bot that much later than the
audio, on the call's clock). A RESUME (op 7) is refused with 4006, as Discord
does for a session it no longer holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import functools
import inspect
import ipaddress
import itertools
import json
import logging
import os
import random
import ssl
import struct
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
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

from .rtp import (
    ONE_BYTE_PROFILE,
    RtpFormatError,
    RtpHeader,
    RtpPacket,
    looks_like_rtcp,
    one_byte_extension,
    open_rtpsize,
    seal_rtpsize,
)

__all__ = ["OFFERED_MODES", "FakeSpeaker", "FakeVoiceServer", "MediaClock", "SentPacket"]

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
OP_DAVE_PREPARE_TRANSITION = 21
OP_DAVE_EXECUTE_TRANSITION = 22
OP_DAVE_TRANSITION_READY = 23
OP_DAVE_PREPARE_EPOCH = 24
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
# The call's clock


class MediaClock:
    """The clock of a simulated call: real time, jumped forward when speakers run ahead of it.

    :meth:`FakeSpeaker.play` (not ``realtime``) sends every packet at its
    planned time on this clock, jumping it forward instead of waiting, and
    waits until the bot has read the packet before the next jump (see
    :attr:`FakeVoiceServer.receipts`). A bot whose receiver stamps arrivals
    with the same clock then sees three minutes of speech arrive exactly as
    in three minutes of real time, in a second or two. Speakers playing at
    once take turns in time order (:meth:`wait_turn`). Between jumps it runs
    at real speed, so timeouts still expire. Reading it is thread-safe.
    """

    def __init__(self) -> None:
        self._skew = 0.0
        self._due: dict[int, float] = {}
        self._frozen: float | None = None

    def __call__(self) -> float:
        frozen = self._frozen
        return frozen if frozen is not None else time.monotonic() + self._skew

    def freeze(self) -> None:
        """Stop the clock (a packet is on its way): the bot reads it at the time it was sent,
        however long a loaded machine takes to get its reader thread to it."""
        if self._frozen is None:
            self._frozen = self()

    def thaw(self) -> None:
        """Run on at real speed from where :meth:`freeze` stopped."""
        frozen = self._frozen
        if frozen is not None:
            self._skew = frozen - time.monotonic()
            self._frozen = None

    async def wait_turn(self, player: int, when: float) -> None:
        """Wait until ``when`` for ``player``, jumping there once no other player is due sooner.

        Speakers playing at once thus take turns in time order, like a
        discrete-event simulation; none runs ahead of the others' schedule.
        """
        self._due[player] = when
        while when > self():
            if when <= min(self._due.values()):
                self.advance_to(when)
                break
            await asyncio.sleep(0)

    def hold(self, player: int) -> None:
        """``player`` is about to send: nobody jumps past now until it has its turn."""
        self._due[player] = self()

    def rest(self, player: int) -> None:
        """``player`` is not sending for now: others need not wait for it."""
        self._due.pop(player, None)

    def advance_to(self, when: float) -> None:
        """Jump forward to ``when`` (nothing if it is already later)."""
        now = self()
        if when > now:
            self.advance(when - now)

    def advance(self, seconds: float) -> None:
        """Jump forward by ``seconds``."""
        if seconds > 0:
            if self._frozen is not None:
                self._frozen += seconds
            else:
                self._skew += seconds

    async def sleep(self, seconds: float) -> None:
        """Wait until ``seconds`` have passed on this clock (jumps included)."""
        until = self() + seconds
        while self() < until:
            await asyncio.sleep(min(0.005, max(0.0, until - self())))


# --------------------------------------------------------------------------
# Speakers


@dataclass(frozen=True, slots=True)
class SentPacket:
    """One packet a speaker sent: its index in the ``packets`` given to play()."""

    index: int
    sequence: int
    timestamp: int
    opus: bytes
    ssrc: int = 0
    sent_at: float = 0.0
    """The call's clock (:class:`MediaClock`) when it was sent."""
    encrypted: bool = False
    """Sent DAVE-encrypted (else in the clear: transport-only, a transition, SFU silence)."""


SFU_SILENCE = b"\xf8\xff\xfe"

_PENDING = "pending"
_E2EE = "e2ee"
_PLAIN = "plain"


class FakeSpeaker:
    """A simulated member of the voice channel: a Discord client, with or without DAVE.

    His client sends as the whitepaper says senders do: DAVE-encrypted once
    it executed a transition into the MLS group (op 22), in the clear while
    the call is transport-only or an upgrade has not executed yet, and nothing
    while it waits to be welcomed into an encrypted call. A transition reaches
    him with the server's ``transition_lag``: he still sends that many packets
    the old way after the bot got op 22 (frames already encoded, in flight).
    """

    def __init__(self, server: FakeVoiceServer, call: _Call, user_id: int, *, dave: bool) -> None:
        self.server = server
        self.user_id = user_id
        self.dave = dave
        self.channel_id = call.channel_id
        self.in_group = asyncio.Event()
        self.left = False
        self.connected = False
        self.ssrc = 0
        self.session: davey.DaveSession | None = None
        self.key_package = b""
        self.mode = _PLAIN
        self.next_sequence = 0
        self.next_timestamp = 0
        self.reconnects = 0
        self._call = call
        self._nonce = itertools.count(1)
        self._announced_to: set[int] = set()
        self._switches: list[list[Any]] = []
        self._playing = 0
        self._announce_in: int | None = None
        """Packets still to send before his SPEAKING reaches a new connection of the bot
        (``speaking_delay``; None: nothing to announce)."""

    # connection --------------------------------------------------------------

    def _connect(self, *, fresh_stream: bool) -> None:
        """A (re)connection to the voice server: new SSRC, new session, maybe new counters."""
        call = self._call
        self.connected = True
        self.ssrc = self.server._next_ssrc()
        self._announced_to.clear()
        self._nonce = itertools.count(1)
        if fresh_stream:
            # WebRTC picks both at random for every new stream.
            self.next_sequence = self.server.rng.randrange(1 << 16)
            self.next_timestamp = self.server.rng.randrange(1 << 32)
        if self.dave and call.protocol_version > 0:
            self._new_session()
            self._wait_for_group()
        else:
            self.session = None
            self.mode = _PLAIN
            self.in_group.set()

    def _new_session(self) -> None:
        call = self._call
        self.session = davey.DaveSession(DAVE_VERSION, self.user_id, call.channel_id)
        self.session.set_external_sender(call.external_sender.package())
        self.key_package = self.session.get_serialized_key_package()

    async def wait_in_group(self, timeout: float = 5.0) -> None:
        """Wait until the speaker sends what the call expects (in the MLS group, or in the clear)."""
        await asyncio.wait_for(self.in_group.wait(), timeout)

    async def leave(self) -> None:
        """Leave the channel: the bot gets op 13 and the MLS group removes him."""
        await self.server._remove_speaker(self)

    async def reconnect(self, away: float = 1.0) -> None:
        """His client drops off the voice server and comes back ``away`` seconds later.

        The bot gets op 13, the MLS group loses him (a sole remaining member is
        reset), the call's clock moves on by ``away``, then he connects again
        (op 11) with a new SSRC, a new random sequence number and timestamp
        base and a new DAVE session, and is added to the group anew. He stays
        in the voice channel as far as the main gateway is concerned. Await
        :meth:`wait_in_group` before playing again.
        """
        self._flush_switches()
        await self.server._disconnect_speaker(self)
        self.server.clock.advance(away)
        self.reconnects += 1
        self.server._connect_speaker(self, fresh_stream=True)

    # transitions -------------------------------------------------------------

    def _schedule(self, switch: Callable[[], None]) -> None:
        """Apply a transition now, or after ``transition_lag`` more packets while playing."""
        lag = self.server.transition_lag
        if self._playing and lag > 0:
            self._switches.append([lag, switch])
        else:
            switch()

    def _flush_switches(self) -> None:
        switches, self._switches = self._switches, []
        for _, switch in switches:
            switch()

    def _count_packet(self) -> None:
        if self._announce_in is not None:
            self._announce_in -= 1
        due: list[Callable[[], None]] = []
        for entry in self._switches:
            entry[0] -= 1
            if entry[0] <= 0:
                due.append(entry[1])
        if due:
            self._switches = [entry for entry in self._switches if entry[0] > 0]
            for switch in due:
                switch()

    def _wait_for_group(self) -> None:
        self.mode = _PENDING
        self.in_group.clear()

    def _enter_group(self) -> None:
        self.mode = _E2EE
        self.in_group.set()

    def _go_plain(self) -> None:
        self.mode = _PLAIN
        self.in_group.set()

    # audio -------------------------------------------------------------------

    async def play(
        self,
        packets: Sequence[bytes],
        *,
        start_seq: int | None = None,
        start_ts: int | None = None,
        lose: Iterable[int] = (),
        reorder: Iterable[tuple[int, int]] = (),
        delay: Mapping[int, float] | None = None,
        gaps: Mapping[int, float] | None = None,
        duplicate: Iterable[int] = (),
        sfu_silence: Iterable[int] = (),
        realtime: bool = False,
        padding: bool = True,
        extension: bool = True,
        corrupt_dave: bool = False,
        announce: bool = True,
        at: Mapping[int, Callable[[], object]] | None = None,
    ) -> list[SentPacket]:
        """Send Opus packets to the bot as his Discord client would; return what was sent.

        Packet ``i`` gets sequence ``start_seq + i`` and timestamp ``start_ts +
        960 i`` plus every gap before it (``gaps[i]`` seconds of silence before
        packet ``i``: the timestamp jumps, the sequence does not); both start
        where his previous play() ended unless given. ``lose`` skips packets,
        ``reorder`` swaps pairs in the sending order, ``delay[i]`` holds packet
        ``i`` back that many seconds on its way (network jitter: it arrives
        after those sent later), ``duplicate`` sends
        packets twice (byte for byte, as a network does), ``sfu_silence``
        replaces packets by the SFU's unencrypted silence frame (he is muted).
        ``realtime`` paces packets at 20 ms (plus the gaps) of real time;
        otherwise the call's :class:`MediaClock` is jumped to each packet's
        time. ``corrupt_dave`` damages each DAVE frame's ciphertext so the bot
        cannot decrypt it. Unless ``announce`` is False, op 5 SPEAKING names
        his SSRC first (once per connection), racing the audio as on Discord.
        ``at[i]`` is called (and awaited, if it returns an awaitable) before
        the ``i``-th packet in sending order is due: something happens in the
        call while he speaks. Packets his client could not encrypt (he waits
        for a welcome) are not sent and not returned.
        """
        bot = self._call.bot
        if bot is None or bot.udp_address is None or bot.secret_key is None:
            raise RuntimeError("no bot is connected to this voice channel")
        if self.left or not self.connected:
            raise RuntimeError(f"speaker {self.user_id} is not in the channel")
        if self.mode == _PENDING:
            # A client starts talking once it can: not before its welcome executed.
            await self.wait_in_group(self.server.response_timeout)
        clock = self.server.clock
        gaps = dict(gaps or {})
        lost, doubled, muted = set(lose), set(duplicate), set(sfu_silence)
        first_seq = self.next_sequence if start_seq is None else start_seq
        timestamp = self.next_timestamp if start_ts is None else start_ts
        planned: list[SentPacket] = []
        offsets: list[float] = []
        offset = 0.0
        for index, opus in enumerate(packets):
            silence = gaps.get(index, 0.0)
            timestamp += round(silence * SAMPLE_RATE)
            offset += silence
            planned.append(
                SentPacket(index, (first_seq + index) & 0xFFFF, timestamp & 0xFFFFFFFF, opus)
            )
            offsets.append(offset)
            timestamp += SAMPLES_PER_FRAME
            offset += FRAME_SECONDS
        self.next_sequence = (first_seq + len(packets)) & 0xFFFF
        self.next_timestamp = timestamp & 0xFFFFFFFF
        order = list(range(len(planned)))
        for first, second in reorder:
            order[first], order[second] = order[second], order[first]
        delays = dict(delay or {})
        if delays:
            order.sort(key=lambda index: offsets[index] + delays.get(index, 0.0))
        sent: list[SentPacket] = []
        waiting = True
        self._playing += 1
        try:
            if not realtime:
                clock.hold(id(self))
            if announce:
                await self.announce()
                if not realtime:
                    await self.server._until_known(self.user_id, self.ssrc)
            started = clock()
            hooks = dict(at or {})
            # His client encodes and DAVE-encrypts in order; the network reorders afterwards.
            frames: dict[int, tuple[bytes, bool] | None] = {}
            encoded = 0
            for position, index in enumerate(order):
                hook = hooks.get(position)
                if hook is not None:
                    clock.rest(id(self))
                    outcome = hook()
                    if inspect.isawaitable(outcome):
                        await outcome
                due = started + (
                    offsets[index] + delays.get(index, 0.0) if delays else offsets[position]
                )
                if realtime:
                    delay = due - clock()
                    if delay > 0:
                        await asyncio.sleep(delay)
                else:
                    await clock.wait_turn(id(self), due)
                while encoded <= index:
                    frames[encoded] = self._encode(
                        planned[encoded], muted=encoded in muted, corrupt=corrupt_dave
                    )
                    encoded += 1
                frame = frames.pop(index)
                if index in lost:
                    continue
                copies = 2 if index in doubled else 1
                if waiting and not realtime:
                    clock.freeze()  # until the bot has read it (below)
                packet = self._send(
                    planned[index],
                    frame,
                    muted=index in muted,
                    extension=extension,
                    padding=padding,
                    copies=copies,
                )
                self._count_packet()
                if packet is not None:
                    sent.append(packet)
                    # The bot's connection now: it may have reconnected (another UDP socket).
                    current = self._call.bot
                    if waiting and current is not None and current.udp_address is not None:
                        waiting = await self.server._until_read(current.udp_address)
                clock.thaw()
                if self._announce_in is not None and self._announce_in <= 0:
                    # Late SPEAKING: after the bot has read the packets sent before it.
                    self._announce_in = None
                    await self.announce()
                    if not realtime:
                        await self.server._until_known(self.user_id, self.ssrc)
                if packet is None:
                    await asyncio.sleep(0)
        finally:
            clock.thaw()
            clock.rest(id(self))
            self._playing -= 1
            if not self._playing:
                self._flush_switches()
        return sent

    def _encode(
        self, packet: SentPacket, *, muted: bool, corrupt: bool
    ) -> tuple[bytes, bool] | None:
        """The frame his client makes of a packet (DAVE-encrypted or not), or None if it cannot."""
        if muted:
            return SFU_SILENCE, False
        if self.mode == _E2EE and self.session is not None:
            frame = self.session.encrypt_opus(packet.opus)
            if corrupt and frame.endswith(b"\xfa\xfa"):
                frame = bytes([frame[0] ^ 0x55]) + frame[1:]
            return frame, True
        if self.mode == _PLAIN:
            return packet.opus, False
        return None  # libdave has no key to encrypt with: the frame is dropped

    def _send(
        self,
        packet: SentPacket,
        encoded: tuple[bytes, bool] | None,
        *,
        muted: bool,
        extension: bool,
        padding: bool,
        copies: int,
    ) -> SentPacket | None:
        bot = self._call.bot
        if bot is None or bot.udp_address is None or bot.secret_key is None or encoded is None:
            return None
        frame, encrypted = encoded
        datagram = bot.rtp_datagram(
            RtpHeader(packet.sequence, packet.timestamp, self.ssrc, marker=packet.index == 0),
            frame,
            nonce=next(self._nonce),
            extension=extension,
            padding=(packet.index % 7) + 1 if padding else 0,
        )
        sent_at = self.server.clock()
        for _ in range(copies):
            self.server._send_udp(datagram, bot.udp_address)
        return SentPacket(
            packet.index,
            packet.sequence,
            packet.timestamp,
            SFU_SILENCE if muted else packet.opus,
            ssrc=self.ssrc,
            sent_at=sent_at,
            encrypted=encrypted,
        )

    async def announce(self) -> None:
        """Op 5 SPEAKING to the connected bot: this user speaks on this SSRC (once per connection)."""
        bot = self._call.bot
        if bot is None or bot.connection_id in self._announced_to:
            return
        self._announced_to.add(bot.connection_id)
        await bot.send_json(
            OP_SPEAKING, {"user_id": str(self.user_id), "ssrc": self.ssrc, "speaking": 1}
        )


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
        self.dave = False
        """The bot's client supports DAVE (its IDENTIFY said so)."""
        self._seq = itertools.count(1)
        self.waiting_commit: asyncio.Future[bytes] | None = None
        self.waiting_key_package: asyncio.Future[bytes] | None = None
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

    def rtp_datagram(
        self,
        header: RtpHeader,
        frame: bytes,
        *,
        nonce: int,
        extension: bool,
        padding: int,
    ) -> bytes:
        """A client's RTP packet for the bot, transport-encrypted with the bot's key."""
        assert self.secret_key is not None
        body = b""
        if extension:
            # One RFC 8285 element, as a client's audio level (id 1, one byte), padded to a word.
            header = RtpHeader(
                header.sequence,
                header.timestamp,
                header.ssrc,
                marker=header.marker,
                extension_profile=ONE_BYTE_PROFILE,
            )
            body = one_byte_extension({1: b"\x7f"})
        return seal_rtpsize(header, frame, self.secret_key, nonce, extension=body, padding=padding)


# --------------------------------------------------------------------------
# A call: the MLS group of one voice channel


class _Call:
    """Members, protocol version, MLS group state and the external sender of one voice channel."""

    def __init__(self, server: FakeVoiceServer, channel_id: int) -> None:
        self.server = server
        self.channel_id = channel_id
        self.external_sender = _ExternalSender()
        self.speakers: dict[int, FakeSpeaker] = {}
        self.bot: _BotConnection | None = None
        self.protocol_version = DAVE_VERSION if server.dave else 0
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

    def _members(self) -> list[int]:
        return [user for user in self.leaves if user is not None]

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

    def _without_dave(self) -> list[FakeSpeaker]:
        return [s for s in self.speakers.values() if not s.dave]

    def _flush_speakers(self) -> None:
        for speaker in self.speakers.values():
            speaker._flush_switches()

    # Operations ------------------------------------------------------------

    async def join(self, user_id: int, key_package: bytes) -> None:
        """Bring a new member (the bot or a speaker) into the MLS group."""
        async with self.lock:
            if self.protocol_version == 0:
                return
            self._flush_speakers()
            if self.epoch is None:
                self._found(user_id)
                self.server._record_dave(f"{user_id} founds the group of channel {self.channel_id}")
                return
            if self._is_member(user_id):
                # A member that sends a new key package has reset its session.
                self._apply_remove(user_id)
            await self._add([(user_id, key_package)])

    async def _add(self, newcomers: list[tuple[int, bytes]]) -> None:
        """One commit adding ``newcomers`` (user, key package) to the established group."""
        assert self.epoch is not None
        epoch = self.epoch
        bot_commits = self._bot_is_member()
        proposals = [
            self.external_sender.add(
                self.channel_id,
                epoch,
                key_package,
                valid=not (bot_commits and self.server.bad_proposal_signature),
            )
            for _, key_package in newcomers
        ]
        committed = await self._commit(proposals, bot_commits)
        if committed is None:
            return
        commit, welcome = committed
        for user_id, _ in newcomers:
            self._apply_add(user_id)
        self.epoch = epoch + 1
        if welcome is None:
            raise RuntimeError("a commit adding a member came without a Welcome")
        await self._deliver(
            commit, welcome, new_members=[user for user, _ in newcomers], bot_committed=bot_commits
        )

    async def leave(self, user_id: int) -> None:
        """Remove a member from the MLS group; a sole remaining member is reset (whitepaper)."""
        async with self.lock:
            if self.epoch is None or not self._is_member(user_id):
                return
            self._flush_speakers()
            remaining = [user for user in self._members() if user != user_id]
            if len(remaining) <= 1:
                self._reset()
                if remaining:
                    await self._sole_member_reset(remaining[0])
                return
            leaf = self.leaves.index(user_id)
            bot_commits = (
                self.bot is not None and self.bot.user_id != user_id and self._bot_is_member()
            )
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
            await self._deliver(commit, None, new_members=[], bot_committed=bot_commits)

    async def _sole_member_reset(self, user_id: int) -> None:
        """Op 24 (epoch 1) then op 21 (transition 0): the last member starts a new pending group."""
        self.server._record_dave(f"sole member {user_id} is reset")
        bot = self.bot
        if bot is not None and bot.user_id == user_id:
            # Its new key package (op 26) founds the next group.
            await bot.send_json(
                OP_DAVE_PREPARE_EPOCH, {"protocol_version": DAVE_VERSION, "epoch": 1}
            )
            await bot.send_json(
                OP_DAVE_PREPARE_TRANSITION, {"protocol_version": DAVE_VERSION, "transition_id": 0}
            )
            return
        speaker = self.speakers.get(user_id)
        if speaker is not None:
            # His old group is gone with its keys: until someone joins him he has nothing to
            # encrypt with, so his client drops frames (as while waiting for a Welcome).
            speaker._new_session()
            speaker._wait_for_group()
            self._found(user_id)
            self.server._record_dave(f"{user_id} founds the group of channel {self.channel_id}")

    async def downgrade(self) -> None:
        """A client without DAVE joined: ops 21 (to version 0), 23, 22; senders go plain."""
        async with self.lock:
            if self.protocol_version == 0:
                return
            self._flush_speakers()
            self.protocol_version = 0
            transition_id = self.server._next_transition_id()
            self.server.downgrades.append(transition_id)
            bot = self.bot
            if bot is not None and bot.dave:
                await self._prepare_and_execute(
                    bot,
                    OP_DAVE_PREPARE_TRANSITION,
                    {"protocol_version": 0, "transition_id": transition_id},
                    transition_id,
                    binary=False,
                )
            for speaker in list(self.speakers.values()):
                if speaker.dave and speaker.connected:
                    speaker._schedule(speaker._go_plain)
            self.server._record_dave(f"downgraded to transport-only as transition {transition_id}")

    async def upgrade(self) -> None:
        """The last client without DAVE left: op 24 (epoch 1), a new group of everyone, op 22."""
        async with self.lock:
            if self.protocol_version != 0 or not self.server.dave:
                return
            self._flush_speakers()
            self.protocol_version = DAVE_VERSION
            self._reset()
            self.server._record_dave("upgrading to DAVE: a new group")
            bot = self.bot
            pending: list[tuple[int, bytes]] = []
            speakers = [s for s in self.speakers.values() if s.dave and s.connected]
            for speaker in speakers:
                # Each keeps sending in the clear until the upgrade executes (op 22).
                speaker._new_session()
                pending.append((speaker.user_id, speaker.key_package))
            if bot is not None and bot.dave:
                loop = asyncio.get_running_loop()
                bot.waiting_key_package = loop.create_future()
                await bot.send_json(
                    OP_DAVE_PREPARE_EPOCH, {"protocol_version": DAVE_VERSION, "epoch": 1}
                )
                await bot.send_binary(OP_MLS_EXTERNAL_SENDER, self.external_sender.package())
                try:
                    key_package = await asyncio.wait_for(
                        bot.waiting_key_package, self.server.response_timeout
                    )
                except (TimeoutError, asyncio.CancelledError):
                    self.server._record_dave("the bot sent no key package for the upgrade")
                else:
                    pending.append((bot.user_id, key_package))
                finally:
                    bot.waiting_key_package = None
            if not pending:
                return
            founder, _ = pending[0]
            self._found(founder)
            self.server._record_dave(f"{founder} founds the group of channel {self.channel_id}")
            if len(pending) == 1:
                if bot is not None and bot.user_id == founder:
                    await bot.send_json(
                        OP_DAVE_PREPARE_TRANSITION,
                        {"protocol_version": DAVE_VERSION, "transition_id": 0},
                    )
                return
            await self._add(pending[1:])

    async def _commit(
        self, proposals: list[bytes], bot_commits: bool, *, exclude: int | None = None
    ) -> tuple[bytes, bytes | None] | None:
        """Hand proposals to every member; return the chosen committer's commit/welcome."""
        vector = _vbytes(b"".join(proposals))
        chosen: tuple[bytes, bytes | None] | None = None
        for speaker in self._member_speakers():
            if speaker.user_id == exclude or speaker.session is None:
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
        self,
        commit: bytes,
        welcome: bytes | None,
        *,
        new_members: list[int],
        bot_committed: bool,
    ) -> None:
        """Commit to the members, welcome to the new ones, then the transition (ops 23, 22).

        Speakers apply it when op 22 is sent, as real clients switch their
        media keys on execute, not when they process the commit: the bot
        processed the commit before it said it was ready, so it can decrypt
        both epochs by then.
        """
        transition_id = self.server._next_transition_id()
        bot = self.bot
        if bot is not None and bot.user_id in new_members and welcome is not None:
            await self._prepare_and_execute(
                bot, OP_MLS_WELCOME, struct.pack(">H", transition_id) + welcome, transition_id
            )
        elif bot is not None and self._bot_is_member():
            await self._prepare_and_execute(
                bot,
                OP_MLS_ANNOUNCE_COMMIT_TRANSITION,
                struct.pack(">H", transition_id) + commit,
                transition_id,
            )
        for speaker in self._member_speakers():
            session = speaker.session
            if session is None:
                continue
            if speaker.user_id in new_members:
                if welcome is not None:
                    speaker._schedule(functools.partial(self._welcomed, speaker, session, welcome))
            else:
                speaker._schedule(functools.partial(self._committed, speaker, session, commit))
        self.server._record_dave(
            f"epoch {self.epoch} executed as transition {transition_id}"
            + (" (bot committed)" if bot_committed else "")
        )

    @staticmethod
    def _welcomed(speaker: FakeSpeaker, session: davey.DaveSession, welcome: bytes) -> None:
        if speaker.session is session:
            session.process_welcome(welcome)
            speaker._enter_group()

    @staticmethod
    def _committed(speaker: FakeSpeaker, session: davey.DaveSession, commit: bytes) -> None:
        if speaker.session is session:
            session.process_commit(commit)
            if session.ready:
                speaker._enter_group()

    async def _prepare_and_execute(
        self,
        bot: _BotConnection,
        op: int,
        payload: bytes | dict[str, Any],
        transition_id: int,
        *,
        binary: bool = True,
    ) -> None:
        """Send what prepares a transition, wait for op 23 (or time out), send op 22."""
        ready = asyncio.get_running_loop().create_future()
        bot.transition_ready[transition_id] = ready
        if isinstance(payload, bytes):
            await bot.send_binary(op, payload)
        else:
            await bot.send_json(op, payload)
        try:
            await asyncio.wait_for(ready, self.server.response_timeout)
        except TimeoutError:
            self.server._record_dave(f"the bot never got ready for transition {transition_id}")
            return
        finally:
            bot.transition_ready.pop(transition_id, None)
        if self.server.transition_delay > 0:
            # The gateway waits for every member's op 23 (or a timeout), not just the bot's.
            await self.server.clock.sleep(self.server.transition_delay)
        await bot.send_json(OP_DAVE_EXECUTE_TRANSITION, {"transition_id": transition_id})
        self.server.transitions_executed.append(transition_id)
        self.server.executed_at[transition_id] = self.server.clock()


# --------------------------------------------------------------------------
# The server


#: What Discord's voice servers offer in READY, in their order (Discord's voice
#: docs): a client must pick the first one it supports, not the first one.
OFFERED_MODES = (
    "aead_aes256_gcm_rtpsize",
    TRANSPORT_MODE,
    "xsalsa20_poly1305_lite_rtpsize",
)


class FakeVoiceServer:
    """Discord's voice server for one test: voice websocket, UDP media and DAVE.

    Give ``endpoint`` and :meth:`expect`'s token to the bot in
    VOICE_SERVER_UPDATE. Attributes record what the bot did: ``bot_messages``
    (every JSON payload it sent, in order), ``bot_rtp`` (its RTP packets,
    transport-decrypted), ``transitions_executed`` and ``dave_log``.

    ``clock`` is the call's :class:`MediaClock`; ``receipts``, when set, says
    how many datagrams the bot has read so far (its receiver's count), and
    :meth:`FakeSpeaker.play` then waits for each packet to be read before it
    jumps the clock to the next; ``ssrc_known(user, ssrc)``, when set, says
    whether the bot has learnt an SSRC, and a fast play() waits for it after
    its SPEAKING. ``transition_lag`` is how many packets a
    speaker still sends the old way after a transition executed;
    ``transition_delay`` how long (on the call's clock) the gateway waits
    after the bot's op 23 before op 22. ``speaking_delay`` is how long (the
    call's clock) a new connection of the bot waits for the SPEAKING of
    members already talking. ``seed`` seeds the random SSRC-stream counters
    of reconnecting speakers.
    """

    def __init__(
        self,
        *,
        dave: bool = True,
        bad_proposal_signature: bool = False,
        response_timeout: float = 5.0,
        heartbeat_interval_ms: float = 41_250.0,
        clock: MediaClock | None = None,
        transition_lag: int = 0,
        transition_delay: float = 0.0,
        speaking_delay: float = 0.0,
        seed: int = 0,
    ) -> None:
        self.dave = dave
        self.speaking_delay = speaking_delay
        self.bad_proposal_signature = bad_proposal_signature
        self.response_timeout = response_timeout
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.clock = clock if clock is not None else MediaClock()
        self.transition_lag = transition_lag
        self.transition_delay = transition_delay
        self.rng = random.Random(seed)
        self.receipts: Callable[[], int | None] | None = None
        self.ssrc_known: Callable[[int, int], bool] | None = None
        self.endpoint = ""
        self.bot_messages: list[dict[str, Any]] = []
        self.bot_rtp: list[RtpPacket] = []
        self.transitions_executed: list[int] = []
        self.executed_at: dict[int, float] = {}
        """When (the call's clock) each transition's op 22 went to the bot."""
        self.downgrades: list[int] = []
        """Transition ids of the downgrades to transport-only, in order."""
        self.dave_log: list[str] = []
        self.connections: list[_BotConnection] = []
        self.bot_connected = asyncio.Event()
        self.down = False
        self.silent = False
        """A voice server that hangs: new websockets are accepted and never answered (no HELLO)."""
        self.unanswered = 0
        """Websockets accepted while ``silent``."""
        self._expected: dict[str, _Expected] = {}
        self._calls: dict[int, _Call] = {}
        self._ssrcs = itertools.count(1001)
        self._transition_ids = itertools.count(1)
        self._connection_ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self.endpoints: list[str] = []
        """Every endpoint the server listened on, in order (the last is ``endpoint``)."""
        self._udp: asyncio.DatagramTransport | None = None
        self._udp_port = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._sent_to: dict[tuple[str, int], int] = {}

    # Lifecycle ---------------------------------------------------------------

    async def start(self) -> None:
        """Listen on 127.0.0.1: TLS websocket and UDP, each on a free port."""
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
        await self._listen()

    async def _listen(self) -> None:
        """Serve the voice websocket on a new free port; it becomes ``endpoint``."""
        assert self._runner is not None
        site = web.TCPSite(
            self._runner, "127.0.0.1", 0, ssl_context=_server_ssl_context(_test_certificate())
        )
        await site.start()
        server = site._server
        assert isinstance(server, asyncio.Server)
        port = server.sockets[0].getsockname()[1]
        self._site = site
        self.endpoint = f"127.0.0.1:{port}"
        self.endpoints.append(self.endpoint)

    async def move_endpoint(self) -> str:
        """The call moves to another voice server: a new endpoint; the old one stops listening.

        The calls, their MLS groups and the UDP media stay (one process plays
        both servers); connections already open stay open until the bot
        closes them. Tell the bot with the main gateway's VOICE_SERVER_UPDATE.
        """
        old = self._site
        await self._listen()
        if old is not None:
            await old.stop()
        return self.endpoint

    async def close_bot_websocket(self, code: int | None = 4015) -> None:
        """Close the bot's current voice websocket with ``code`` (None: abort the TCP connection)."""
        connection = self.connections[-1] if self.connections else None
        if connection is None or connection.ws.closed:
            raise RuntimeError("the bot has no open voice websocket")
        if code is None:
            if isinstance(connection.transport, asyncio.Transport):
                connection.transport.abort()
            return
        await connection.ws.close(code=code)

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

    def add_speaker(
        self, user_id: int, *, channel_id: int | None = None, dave: bool = True
    ) -> FakeSpeaker:
        """A user joins the voice channel: op 11 to the bot, and his client's DAVE part.

        ``channel_id`` may be left out when the server knows one channel only.
        A DAVE client's MLS join runs in the background; await
        :meth:`FakeSpeaker.wait_in_group` before playing. A client without
        DAVE (``dave=False``) downgrades an encrypted call to transport-only
        (ops 21, 23, 22), in the background too.
        """
        call = self._call(channel_id if channel_id is not None else self._only_channel())
        if user_id in call.speakers:
            raise ValueError(f"speaker {user_id} is already in channel {call.channel_id}")
        speaker = FakeSpeaker(self, call, user_id, dave=dave)
        call.speakers[user_id] = speaker
        self._connect_speaker(speaker, fresh_stream=False)
        return speaker

    def _connect_speaker(self, speaker: FakeSpeaker, *, fresh_stream: bool) -> None:
        call = self._calls[speaker.channel_id]
        speaker._connect(fresh_stream=fresh_stream)
        bot = call.bot
        if bot is not None and bot.secret_key is not None:
            self._spawn(bot.send_json(OP_CLIENTS_CONNECT, {"user_ids": [str(speaker.user_id)]}))
        if not speaker.dave:
            if call.protocol_version > 0:
                self._spawn(call.downgrade())
        elif speaker.session is not None:
            self._spawn(call.join(speaker.user_id, speaker.key_package))

    async def _disconnect_speaker(self, speaker: FakeSpeaker) -> None:
        """His client leaves the voice server: op 13, then the MLS group or the upgrade."""
        call = self._calls[speaker.channel_id]
        if not speaker.connected:
            return
        speaker.connected = False
        speaker.in_group.clear()
        if call.bot is not None:
            await call.bot.send_json(OP_CLIENT_DISCONNECT, {"user_id": str(speaker.user_id)})
        if not speaker.dave:
            others = [s for s in call._without_dave() if s is not speaker and s.connected]
            if not others:
                await call.upgrade()
        elif self.dave:
            await call.leave(speaker.user_id)

    async def _remove_speaker(self, speaker: FakeSpeaker) -> None:
        call = self._calls[speaker.channel_id]
        if speaker.left:
            return
        speaker._flush_switches()
        speaker.left = True
        await self._disconnect_speaker(speaker)
        call.speakers.pop(speaker.user_id, None)

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

    def _next_ssrc(self) -> int:
        return next(self._ssrcs)

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
            self._sent_to[address] = self._sent_to.get(address, 0) + 1

    async def _until_known(self, user_id: int, ssrc: int) -> None:
        """Wait until the bot learnt this SSRC (when ``ssrc_known`` can tell).

        On Discord, SPEAKING and the first audio race by milliseconds; on the
        call's jumping clock those milliseconds would be seconds of speech.
        """
        known = self.ssrc_known
        deadline = time.monotonic() + 2.0
        while known is not None and not known(user_id, ssrc) and time.monotonic() < deadline:
            await asyncio.sleep(0.001)

    async def _until_read(self, address: tuple[str, int]) -> bool:
        """Wait until the bot has read every datagram sent to ``address``; False if it stopped.

        Only when ``receipts`` can tell how many it read (discovery replies
        and garbage count too: its receiver sees every datagram).
        """
        sent = self._sent_to.get(address, 0)
        deadline = time.monotonic() + 2.0
        while True:
            count = self.receipts() if self.receipts is not None else None
            if count is None or count >= sent:
                return True
            if time.monotonic() > deadline:
                _log.warning("the bot stopped reading its voice socket; not waiting for it")
                return False
            await asyncio.sleep(0)

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
        if looks_like_rtcp(data):
            return
        for connection in self.connections:
            if connection.udp_address == address and connection.secret_key is not None:
                with contextlib.suppress(RtpFormatError):
                    self.bot_rtp.append(open_rtpsize(data, connection.secret_key))
                return

    async def _handle_websocket(self, request: web.Request) -> web.StreamResponse:
        if self.down:
            raise web.HTTPServiceUnavailable()
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        if self.silent:
            self.unanswered += 1
            async for _ in ws:  # read and never answered
                pass
            return ws
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
            connection.ssrc = self._next_ssrc()
            await connection.send_json(
                OP_READY,
                {
                    "ssrc": connection.ssrc,
                    "ip": "127.0.0.1",
                    "port": self._udp_port,
                    "modes": list(OFFERED_MODES),
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
            # The other offered modes are Discord's too, but this fake serves only this one.
            await connection.ws.close(code=4016)
            return
        connection.udp_address = (address["address"], int(address["port"]))
        connection.secret_key = os.urandom(32)
        call = self._call(expected.channel_id)
        if call.bot is not None and call.bot is not connection:
            await self._connection_closed(call.bot)
        call.bot = connection
        version = call.protocol_version if connection.dave else 0
        await connection.send_json(
            OP_SESSION_DESCRIPTION,
            {
                "mode": TRANSPORT_MODE,
                "secret_key": list(connection.secret_key),
                "dave_protocol_version": version,
                "audio_codec": "opus",
                "media_session_id": os.urandom(8).hex(),
            },
        )
        if version > 0:
            await connection.send_binary(OP_MLS_EXTERNAL_SENDER, call.external_sender.package())
        connected = [user for user, speaker in call.speakers.items() if speaker.connected]
        if connected:
            await connection.send_json(
                OP_CLIENTS_CONNECT, {"user_ids": [str(user) for user in connected]}
            )
            # Those talking now: their SPEAKING reaches the new connection, ``speaking_delay``
            # later (counted in their packets, 20 ms each: the call's clock jumps with them).
            # At least one packet later: SPEAKING and audio race, the audio wins here.
            for speaker in call.speakers.values():
                if speaker.connected and speaker._playing:
                    speaker._announce_in = max(1, round(self.speaking_delay / FRAME_SECONDS))
        self.bot_connected.set()

    async def _on_binary(self, connection: _BotConnection, data: bytes) -> None:
        if not data or connection.expected is None:
            return
        op, payload = data[0], data[1:]
        call = self._call(connection.expected.channel_id)
        if op == OP_MLS_KEY_PACKAGE:
            connection.key_package = payload
            waiting = connection.waiting_key_package
            if waiting is not None and not waiting.done():
                waiting.set_result(payload)
            elif call.bot is connection:
                self._spawn(call.join(connection.user_id, payload))
        elif op == OP_MLS_COMMIT_WELCOME:
            waiting_commit = connection.waiting_commit
            if waiting_commit is not None and not waiting_commit.done():
                waiting_commit.set_result(payload)

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
