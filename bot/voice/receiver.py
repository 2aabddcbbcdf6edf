"""Receiving voice: UDP packets of chosen users, decrypted down to their Opus frames.

discord.py 2.7.1 sends voice but does not receive it. What it offers to build
on, and what this module uses:

* ``VoiceConnectionState(voice_client, hook=...)``: the hook coroutine sees
  every JSON message of the voice websocket (after discord.py handled it), on
  every (re)connection. :class:`ReceivingVoiceClient` passes one from
  ``create_connection_state``: the SSRC of each user is learnt from op 5
  SPEAKING (and op 12), and forgotten on op 13 CLIENT_DISCONNECT, and the DAVE
  transitions (ops 4, 21, 22, 24) are followed, from the first message on.
  Use it as ``await channel.connect(cls=ReceivingVoiceClient)``.
* ``VoiceConnectionState.add_socket_listener(callback)``: the callback gets
  every UDP datagram, in discord.py's socket-reader *thread*. It is installed
  for the connection's whole life: discord.py stops reading the socket while
  no listener is installed, and what piled up in the kernel meanwhile (seconds
  of old audio) would otherwise arrive all at once when a recording starts.
* ``VoiceConnectionState.dave_session`` (a ``davey.DaveSession``):
  ``decrypt(user_id, davey.MediaType.audio, frame)`` turns a DAVE frame back
  into the Opus packet.

In the reader thread a datagram costs a few dictionary lookups unless it
belongs to a registered user: RTCP (RFC 5761's range, feedback included) and
other users' audio are counted and dropped there, before any decryption.
Packets on an SSRC no SPEAKING event has named yet are held for
:data:`UNNAMED_HOLD` seconds (by arrival time; at most :data:`_HELD_PER_SSRC`
of them): SPEAKING travels on the websocket and races the first audio, and
after a reconnect it may come seconds late, so without the hold the start of
a sentence is lost. Registered users' packets are transport-decrypted in the
thread (PyNaCl is thread-safe), stamped with their arrival time and queued;
the event loop drains the queue, drops repeated sequence numbers of an SSRC
(a duplicate would fail DAVE's replay check and look like an attack), puts
each SSRC's packets back in sequence order in a jitter buffer, DAVE-decrypts
them in that order (the davey session is also driven by discord.py on the
loop, so it is only touched from there) and hands each Opus packet to the
user's :class:`PacketSink`. Nothing raised here reaches discord.py's reader
thread.

The jitter buffer exists for DAVE as much as for the file: davey accepts a
frame older than the newest it decrypted only when it saw the gap open, so
the first frame of a stream or of a new key generation, overtaken by the
next, would be refused. A packet is released as soon as it follows the last
one released (a stream's first, as soon as the one after it is here),
otherwise once it has waited :data:`JITTER_HOLD` seconds (by
arrival time) for the ones missing before it: a lost packet costs the next
ones that wait, never audio. Discord's own clients buffer hundreds of
milliseconds of jitter; so does this one.

End-to-end encryption follows the DAVE whitepaper's rules for receivers
(https://daveprotocol.com, "Protocol Version Negotiation", "Protocol Frame
Check", "Silence Packets"):

* a frame ending in the DAVE marker ``0xFAFA`` is always decrypted, with the
  keys of the current or a recent epoch (davey keeps a previous epoch's for
  ten seconds after a commit, and the session is not reset by a downgrade, so
  frames still in flight when the call drops to transport-only encryption
  decrypt too); one that cannot be decrypted is dropped, never written raw;
* a frame without the marker passes through unencrypted while the call is
  transport-only, while a downgrade or upgrade is being prepared, and for ten
  seconds after an upgrade executes (senders switch on op 22; frames already
  on their way are still plain), and while the bot's own session is not ready
  (it could decrypt nothing then); otherwise it is davey's to refuse;
* the SFU's silence frame ``F8 FF FE`` always passes.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import davey
import discord
from discord.voice_state import ConnectionFlowState, VoiceConnectionState

from .rtp import RTCP_SECOND_BYTES, RTP_HEADER_SIZE, RTPError, decrypt_rtpsize

__all__ = [
    "DAVE_MAGIC",
    "SFU_SILENCE",
    "DaveTransitions",
    "PacketSink",
    "ReceivedPacket",
    "ReceiverStats",
    "ReceivingVoiceClient",
    "SpeakerDirectory",
    "UserStats",
    "VoiceReceiver",
]

from bot.voice.streams import (
    DaveTransitions,
    PacketSink,
    ReceivedPacket,
    ReceiverStats,
    SpeakerDirectory,
    UserStats,
    _JitterBuffer,
    _Queued,
    _Route,
    _SeenSequences,
)

_log = logging.getLogger(__name__)

DAVE_MAGIC = b"\xfa\xfa"
"""Every DAVE-encrypted frame ends with these two bytes."""
SFU_SILENCE = b"\xf8\xff\xfe"
"""The silence frame Discord's SFU synthesises for a muted source, never encrypted."""

JITTER_HOLD = 0.4
"""Seconds a packet waits for the ones missing before it (network reordering), by arrival time."""
UNNAMED_HOLD = 5.0
"""Seconds of packets kept on an SSRC no SPEAKING event named yet (a late SPEAKING after a reconnect)."""
_LOG_EVERY = 500
_HELD_PER_SSRC = 500
"""A bound on the unnamed hold, whatever the rate: ten seconds of 20 ms packets."""
_HELD_SSRCS = 16


class VoiceReceiver:
    """Routes received audio of registered users to their sinks.

    Create it through :class:`ReceivingVoiceClient` (its ``receiver``): the
    socket listener is installed at once and stays for the connection's life.
    ``clock`` stamps arrivals and times the DAVE transition windows; it may be
    replaced (tests drive a simulated one) before audio flows. ``jitter_hold``
    is the jitter buffer's wait, ``unnamed_hold`` how long packets of an
    unnamed SSRC are kept (both seconds of that clock).
    """

    def __init__(
        self,
        voice_client: discord.VoiceClient,
        speakers: SpeakerDirectory,
        *,
        clock: Callable[[], float] = time.monotonic,
        jitter_hold: float = JITTER_HOLD,
        unnamed_hold: float = UNNAMED_HOLD,
    ) -> None:
        self.voice_client = voice_client
        self.speakers = speakers
        self.clock = clock
        self.jitter_hold = jitter_hold
        self.unnamed_hold = unnamed_hold
        self._release_timer: asyncio.TimerHandle | None = None
        self.stats = ReceiverStats()
        self.transitions = DaveTransitions()
        self._routes: dict[int, _Route] = {}
        self._queue: collections.deque[_Queued] = collections.deque()
        self._drain_scheduled = False
        self._key_source: object = None
        self._key = b""
        self._held: dict[int, collections.deque[tuple[bytes, float]]] = {}
        self._held_lock = threading.Lock()
        speakers.add_listener(self._on_ssrc_learnt)
        self._connection.add_socket_listener(self._on_datagram)

    @property
    def _connection(self) -> VoiceConnectionState:
        return self.voice_client._connection

    # Registration (event loop) -------------------------------------------------

    def register(
        self, user_id: int, sink: PacketSink, *, stats: UserStats | None = None
    ) -> UserStats:
        """Start delivering ``user_id``'s Opus packets to ``sink``; return his live stats.

        ``stats``: go on counting into these (a recording moved here from
        another connection). Raises ValueError if the user already has a sink.
        """
        if user_id in self._routes:
            raise ValueError(f"user {user_id} already has a sink")
        route = _Route(user_id, sink, stats if stats is not None else UserStats())
        self._routes[user_id] = route
        return route.stats

    def unregister(self, user_id: int) -> None:
        """Stop delivering ``user_id``'s packets: what already arrived (queued for the event
        loop, held in his jitter buffers) is delivered first, in order."""
        route = self._routes.get(user_id)
        if route is None:
            return
        self._drain()
        for ssrc, buffer in route.jitter.items():
            self._deliver_all(route, ssrc, buffer.flush())
        self._routes.pop(user_id, None)

    def is_registered(self, user_id: int) -> bool:
        """Whether ``user_id`` currently has a sink."""
        return user_id in self._routes

    def on_voice_ws_message(self, message: dict[str, Any]) -> None:
        """Follow the DAVE transitions of one voice gateway message (on the event loop)."""
        self.transitions.handle(message, self.clock())

    # The socket reader thread -------------------------------------------------

    def _on_datagram(self, data: bytes) -> None:
        """discord.py's socket listener: runs in its reader thread, must not raise."""
        try:
            self._receive(data)
        except Exception:
            _log.exception("Voice receive failed on a %d-byte datagram", len(data))

    def _receive(self, data: bytes) -> None:
        stats = self.stats
        now = self.clock()  # before the count: a datagram counted has its arrival time
        stats.datagrams += 1
        stats.last_packet_time = now
        if len(data) < RTP_HEADER_SIZE or data[0] >> 6 != 2:
            stats.not_rtp += 1
            return
        if data[1] in RTCP_SECOND_BYTES:
            stats.rtcp += 1
            return
        ssrc = int.from_bytes(data[8:12], "big")
        user_id = self.speakers.user_for(ssrc)
        if user_id is None:
            with self._held_lock:
                # Checked again under the lock: _on_ssrc_learnt may just have emptied the hold.
                user_id = self.speakers.user_for(ssrc)
                if user_id is None:
                    stats.unknown_ssrc += 1
                    self._hold(ssrc, data, now)
                    return
        item = self._decode(user_id, data, now)
        if item is None:
            return
        self._queue.append(item)
        if not self._drain_scheduled:
            self._drain_scheduled = True
            try:
                self.voice_client.loop.call_soon_threadsafe(self._drain)
            except RuntimeError:
                # The event loop is closed: the bot is shutting down.
                self._queue.clear()

    def _hold(self, ssrc: int, data: bytes, now: float) -> None:
        """Keep a packet of an SSRC not yet named: SPEAKING and audio race each other.

        The last :attr:`unnamed_hold` seconds of packets are kept, by arrival.
        """
        held = self._held.get(ssrc)
        if held is None:
            if len(self._held) >= _HELD_SSRCS:
                del self._held[next(iter(self._held))]
            held = self._held[ssrc] = collections.deque(maxlen=_HELD_PER_SSRC)
            if ssrc != self._connection.ssrc:
                _log.debug("Voice packets on SSRC %d, which no SPEAKING event named yet", ssrc)
        held.append((data, now))
        oldest = now - self.unnamed_hold
        while held[0][1] < oldest:
            held.popleft()

    def _decode(self, user_id: int, data: bytes, now: float) -> _Queued | None:
        """Transport-decrypt a packet of a known user, if he is registered."""
        route = self._routes.get(user_id)
        if route is None:
            self.stats.unregistered += 1
            return None
        user = route.stats
        user.packets += 1
        user.last_packet_time = now
        try:
            packet = decrypt_rtpsize(data, self._secret_key())
        except RTPError as exc:
            user.decrypt_errors += 1
            self.stats.decrypt_errors += 1
            if user.decrypt_errors % _LOG_EVERY == 1:
                _log.warning(
                    "Voice packet of user %d failed transport decryption (%d so far): %s",
                    user_id,
                    user.decrypt_errors,
                    exc,
                )
            return None
        header = packet.header
        return route, header.ssrc, header.sequence, header.timestamp, packet.payload, now

    def _on_ssrc_learnt(self, user_id: int, ssrc: int) -> None:
        """On the event loop: replay what arrived on ``ssrc`` before it was named."""
        with self._held_lock:
            held = self._held.pop(ssrc, None)
        if not held:
            return
        try:
            oldest = self.clock() - self.unnamed_hold
            items = [
                item
                for data, at in held
                if at >= oldest and (item := self._decode(user_id, data, at)) is not None
            ]
        except Exception:
            _log.exception("Replaying held voice packets of user %d failed", user_id)
            return
        # Ahead of anything the reader queued since: these came first.
        self._queue.extendleft(reversed(items))
        if items and not self._drain_scheduled:
            self._drain_scheduled = True
            self.voice_client.loop.call_soon(self._drain)

    def _secret_key(self) -> bytes:
        source = self._connection.secret_key
        if source is not self._key_source:
            self._key = bytes(source)
            self._key_source = source
        return self._key

    # The event loop ---------------------------------------------------------------

    def _drain(self) -> None:
        self._drain_scheduled = False
        queue = self._queue
        while queue:
            item = queue.popleft()
            route, ssrc, sequence = item[0], item[1], item[2]
            if self._routes.get(route.user_id) is not route:
                continue
            seen = route.seen.get(ssrc)
            if seen is None:
                seen = route.seen[ssrc] = _SeenSequences()
            if seen.is_repeat(sequence):
                # Before DAVE: davey would refuse the repeated nonce as a replay.
                route.stats.duplicates += 1
                self.stats.duplicates += 1
                continue
            buffer = route.jitter.get(ssrc)
            if buffer is None:
                buffer = route.jitter[ssrc] = _JitterBuffer(self.jitter_hold)
            self._deliver_all(route, ssrc, buffer.push(item))
        self._release_due()

    def _release_due(self) -> None:
        """Deliver what waited long enough in the jitter buffers; time the next release."""
        if self._release_timer is not None:
            self._release_timer.cancel()
            self._release_timer = None
        now = self.clock()
        soonest: float | None = None
        for route in list(self._routes.values()):
            for ssrc, buffer in route.jitter.items():
                if buffer:
                    self._deliver_all(route, ssrc, buffer.release(now))
                due = buffer.next_due()
                if due is not None and (soonest is None or due < soonest):
                    soonest = due
        if soonest is not None:
            # The receiver's clock runs at least as fast as the loop's (a simulated one jumps).
            self._release_timer = self.voice_client.loop.call_later(
                max(0.0, soonest - now) + 0.001, self._release_due
            )

    def _deliver_all(self, route: _Route, ssrc: int, items: list[_Queued]) -> None:
        for _, _, sequence, timestamp, frame, arrival in items:
            if self._routes.get(route.user_id) is not route:
                return
            opus = self._end_to_end_decrypt(route, frame, arrival)
            if opus is None:
                continue
            try:
                route.sink.write_packet(ReceivedPacket(ssrc, sequence, timestamp, opus, arrival))
            except Exception:
                route.stats.sink_errors += 1
                _log.exception("Sink of user %d failed on packet %d", route.user_id, sequence)
                continue
            route.stats.delivered += 1
            route.stats.last_delivered_time = self.clock()
            self.stats.delivered += 1

    def _end_to_end_decrypt(self, route: _Route, frame: bytes, arrival: float) -> bytes | None:
        """Undo DAVE where the frame has it; None (and a counted error) where it cannot be."""
        if frame == SFU_SILENCE:
            route.stats.passthrough += 1
            return frame
        session = self._connection.dave_session
        if not frame.endswith(DAVE_MAGIC):
            if (
                session is None
                or not session.ready
                or self.transitions.passthrough_allowed(arrival)
            ):
                route.stats.passthrough += 1
                return frame
        elif session is None:
            self._dave_error(route, "no DAVE session for an encrypted frame")
            return None
        try:
            opus: bytes = session.decrypt(route.user_id, davey.MediaType.audio, frame)
        except Exception as exc:
            self._dave_error(route, str(exc))
            return None
        if not frame.endswith(DAVE_MAGIC):
            route.stats.passthrough += 1
        return opus

    def _dave_error(self, route: _Route, reason: str) -> None:
        """Count (and now and then log) a frame that end-to-end decryption refused."""
        route.stats.dave_errors += 1
        self.stats.dave_errors += 1
        if route.stats.dave_errors % _LOG_EVERY == 1:
            _log.warning(
                "DAVE decryption failed for user %d (%d so far): %s",
                route.user_id,
                route.stats.dave_errors,
                reason,
            )


class ReceivingVoiceClient(discord.VoiceClient):
    """A discord.py ``VoiceClient`` that can also receive: connect with ``cls=`` this.

    ``speakers`` learns SSRCs from the voice gateway from the first message
    on; ``receiver`` routes registered users' audio to sinks.
    """

    def __init__(self, client: discord.Client, channel: discord.abc.Connectable) -> None:
        # create_connection_state() runs inside the parent constructor and needs the directory.
        self.speakers = SpeakerDirectory()
        self.voice_sessions = 0
        """Voice sessions begun (op 2 READY): one per connection, reconnects included."""
        super().__init__(client, channel)
        self.receiver = VoiceReceiver(self, self.speakers)

    def create_connection_state(self) -> VoiceConnectionState:
        """discord.py's connection state, with our voice websocket hook installed."""
        return VoiceConnectionState(self, hook=self._on_voice_ws_message)

    async def _on_voice_ws_message(self, ws: Any, message: dict[str, Any]) -> None:
        """discord.py's voice websocket hook; never raises (that would end its poller)."""
        try:
            if message.get("op") == 2:
                self.voice_sessions += 1
            self.speakers.handle(message)
            receiver = getattr(self, "receiver", None)
            if receiver is not None:
                receiver.on_voice_ws_message(message)
        except Exception:
            _log.exception("Ignoring a malformed voice gateway message: %r", message)

    def dave_ready(self) -> bool:
        """Whether end-to-end encryption is settled: group ready, no transition pending.

        True without DAVE when the voice server negotiated protocol version 0.
        """
        connection = self._connection
        if not connection.is_connected():
            return False
        if connection.dave_protocol_version == 0:
            return True
        session = connection.dave_session
        return session is not None and session.ready and not connection.dave_pending_transitions

    def dave_members(self) -> set[int]:
        """User ids in the current MLS group (empty without DAVE)."""
        session = self._connection.dave_session
        if session is None or not session.ready:
            return set()
        return {int(user) for user in session.get_user_ids()}

    def link_alive(self) -> bool:
        """Connected, and the voice websocket not closed under us.

        After an abnormal close discord.py waits for its reconnect back-off
        while still reporting ``is_connected()``; the socket tells sooner.
        """
        if not self.is_connected():
            return False
        ws = self._connection.ws
        socket = getattr(ws, "ws", None)
        return not bool(getattr(socket, "closed", False))

    def close_code(self) -> int | None:
        """The close code of the voice websocket, once it is closed (None while open)."""
        socket = getattr(self._connection.ws, "ws", None)
        code = getattr(socket, "close_code", None)
        return code if isinstance(code, int) else None

    def is_connecting(self) -> bool:
        """discord.py is in its connection flow (following a VOICE_SERVER_UPDATE, say)."""
        state = self._connection.state
        return (
            state is not ConnectionFlowState.disconnected
            and state is not ConnectionFlowState.connected
        )

    async def abandon(self) -> None:
        """Give this connection up for good: stop discord.py's own reconnecting, then leave.

        discord.py's websocket poller may be in a resume or reconnect of its
        own; it is cancelled first, so that it cannot disconnect a newer
        connection of the bot later on.
        """
        connection = self._connection
        try:
            await connection.soft_disconnect(with_state=ConnectionFlowState.disconnected)
        except Exception:
            _log.debug("Ignoring a failed soft disconnect", exc_info=True)
        try:
            await self.disconnect(force=True)
        except Exception:
            _log.debug("Ignoring a failed disconnect", exc_info=True)
