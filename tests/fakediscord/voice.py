"""The voice side of the fake Discord: a voice gateway, a UDP media server and DAVE.

:class:`FakeVoiceServer` serves, on 127.0.0.1, what a real discord.py 2.7.1
``VoiceClient`` talks to after the main gateway's VOICE_SERVER_UPDATE:

* the voice websocket (v8, over TLS: discord.py hard-codes ``wss://``): HELLO,
  IDENTIFY, READY (with the modes in Discord's order, AES-GCM first, which
  discord.py does not support), heartbeats, SELECT_PROTOCOL,
  SESSION_DESCRIPTION, SPEAKING (op 5) and clients connect/disconnect (ops 11
  and 13) for simulated users;
* UDP IP discovery and an RTP endpoint (``aead_xchacha20_poly1305_rtpsize``),
  with the fake's own RTP and transport encryption (:mod:`.rtp`, shared with
  nothing of the bot's);
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
import itertools
import json
import logging
import os
import random
import ssl
import struct
import time
from collections.abc import Callable
from typing import Any

import aiohttp
import aiohttp.connector
from aiohttp import web

from .rtp import (
    RtpFormatError,
    RtpPacket,
    looks_like_rtcp,
    open_rtpsize,
)
from .voice_call import _BotConnection, _Call, _Expected
from .voice_clock import MediaClock
from .voice_gateway import on_binary, on_json
from .voice_mls import split_commit_welcome
from .voice_ops import (
    OFFERED_MODES,
    OP_CLIENT_DISCONNECT,
    OP_CLIENTS_CONNECT,
    OP_HELLO,
)
from .voice_speaker import FakeSpeaker, SentPacket
from .voice_transport import _server_ssl_context, _test_certificate, _UDPProtocol

__all__ = [
    "OFFERED_MODES",
    "FakeSpeaker",
    "FakeVoiceServer",
    "MediaClock",
    "SentPacket",
    "split_commit_welcome",
]

_log = logging.getLogger(__name__)

# --------------------------------------------------------------------------
# The server


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
                    await on_json(self, connection, json.loads(message.data))
                elif message.type is aiohttp.WSMsgType.BINARY:
                    await on_binary(self, connection, message.data)
        finally:
            await self._connection_closed(connection)
        return ws

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
