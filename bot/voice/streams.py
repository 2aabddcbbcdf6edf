"""What the receiver sorts packets with before they reach a recording: who speaks on which
SSRC (:class:`SpeakerDirectory`), DAVE's protocol transitions (:class:`DaveTransitions`),
repeated packets, and the jitter buffer that puts late packets back in order
(:mod:`bot.voice.receiver` says why each is needed)."""

from __future__ import annotations

import heapq
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .rtp import sequence_delta

_log = logging.getLogger(__name__)

TRANSITION_GRACE = 10.0
"""Seconds a receiver keeps accepting what a transition replaced (the whitepaper's "up to ten seconds")."""

_OP_SESSION_DESCRIPTION = 4

_OP_SPEAKING = 5

_OP_CLIENTS_CONNECT = 11

_OP_CLIENT_CONNECT = 12

_OP_CLIENT_DISCONNECT = 13

_OP_DAVE_PREPARE_TRANSITION = 21

_OP_DAVE_EXECUTE_TRANSITION = 22

_OP_DAVE_PREPARE_EPOCH = 24

_RESTART_BEHIND = 512
"""A sequence number this far behind the last released starts a new stream, not a late packet."""

_JITTER_MAX = 200
"""Packets one SSRC's jitter buffer holds at most (four seconds of 20 ms packets)."""

_SEEN_WINDOW = 128


@dataclass(frozen=True, slots=True)
class ReceivedPacket:
    """One decrypted Opus packet of a user, as it came: its RTP stream and arrival time.

    ``arrival`` is the receiver's clock when the datagram was read from the
    socket (not when the event loop got to it).
    """

    ssrc: int
    sequence: int
    timestamp: int
    opus: bytes
    arrival: float


class PacketSink(Protocol):
    """Where one user's received Opus packets go, in arrival order."""

    def write_packet(self, packet: ReceivedPacket) -> None:
        """Take one Opus packet with its RTP stream position and arrival time."""


@dataclass
class UserStats:
    """What arrived for one registered user (updated live; copy to keep a snapshot).

    ``packets`` counts RTP packets that arrived on the user's SSRCs;
    ``delivered`` those handed to the sink. The gap between them is
    ``duplicates`` (a sequence number of that SSRC seen again: dropped before
    any end-to-end decryption), ``decrypt_errors`` (transport: wrong key,
    damaged packet), ``dave_errors`` (end-to-end: no key for the sender,
    failed authentication, an unencrypted frame where DAVE requires
    encryption) and ``sink_errors``. ``passthrough`` counts frames accepted
    unencrypted, SFU silence frames included. Times are the receiver's clock.
    """

    packets: int = 0
    delivered: int = 0
    duplicates: int = 0
    decrypt_errors: int = 0
    dave_errors: int = 0
    sink_errors: int = 0
    passthrough: int = 0
    last_packet_time: float | None = None
    last_delivered_time: float | None = None


@dataclass
class ReceiverStats:
    """Every datagram the receiver saw, by what became of it."""

    datagrams: int = 0
    rtcp: int = 0
    not_rtp: int = 0
    unknown_ssrc: int = 0
    """Packets on an SSRC no SPEAKING event had named: held a moment, replayed if one does."""
    unregistered: int = 0
    """Packets of known users nobody asked for: dropped before any decryption."""
    duplicates: int = 0
    decrypt_errors: int = 0
    dave_errors: int = 0
    delivered: int = 0
    last_packet_time: float | None = None


class SpeakerDirectory:
    """Who is behind which SSRC, as the voice gateway tells it.

    Written on the event loop (the websocket hook), read from the socket
    reader thread: single dictionary operations, atomic in CPython.
    """

    def __init__(self) -> None:
        self._users_by_ssrc: dict[int, int] = {}
        self._ssrcs_by_user: dict[int, int] = {}
        self._listeners: list[Callable[[int, int], None]] = []
        self.connected_users: set[int] = set()
        """Users the voice server reported connected (op 11) and not yet gone (op 13)."""

    def add_listener(self, listener: Callable[[int, int], None]) -> None:
        """Call ``listener(user_id, ssrc)`` (on the event loop) whenever an SSRC is learnt."""
        self._listeners.append(listener)

    def user_for(self, ssrc: int) -> int | None:
        """The user sending on ``ssrc``, if the voice gateway said so."""
        return self._users_by_ssrc.get(ssrc)

    def ssrc_for(self, user_id: int) -> int | None:
        """The audio SSRC of ``user_id``, if known."""
        return self._ssrcs_by_user.get(user_id)

    def learn(self, user_id: int, ssrc: int) -> None:
        """Record that ``user_id`` sends audio on ``ssrc`` (replacing older mappings)."""
        previous_user = self._users_by_ssrc.get(ssrc)
        if previous_user is not None and previous_user != user_id:
            self._ssrcs_by_user.pop(previous_user, None)
        previous_ssrc = self._ssrcs_by_user.get(user_id)
        if previous_ssrc is not None and previous_ssrc != ssrc:
            self._users_by_ssrc.pop(previous_ssrc, None)
        self._users_by_ssrc[ssrc] = user_id
        self._ssrcs_by_user[user_id] = ssrc
        for listener in self._listeners:
            listener(user_id, ssrc)

    def forget(self, user_id: int) -> None:
        """Drop ``user_id``'s SSRC (he left the voice channel, or his client reconnects)."""
        ssrc = self._ssrcs_by_user.pop(user_id, None)
        if ssrc is not None and self._users_by_ssrc.get(ssrc) == user_id:
            del self._users_by_ssrc[ssrc]
        self.connected_users.discard(user_id)

    def clear(self) -> None:
        """Forget everything (a new voice session starts with new SSRCs)."""
        self._users_by_ssrc.clear()
        self._ssrcs_by_user.clear()
        self.connected_users.clear()

    async def on_voice_ws_message(self, ws: Any, message: dict[str, Any]) -> None:
        """A voice websocket hook that only feeds this directory; never raises."""
        try:
            self.handle(message)
        except Exception:
            _log.exception("Ignoring a malformed voice gateway message: %r", message)

    def handle(self, message: dict[str, Any]) -> None:
        """Update the directory from one voice gateway message (ops 2, 5, 11, 12, 13)."""
        op = message.get("op")
        data = message.get("d")
        if not isinstance(data, dict):
            return
        if op == 2:  # READY: a new voice session, SSRCs are reassigned
            self.clear()
        elif op == _OP_SPEAKING and "user_id" in data and "ssrc" in data:
            self.learn(int(data["user_id"]), int(data["ssrc"]))
        elif op == _OP_CLIENT_CONNECT and "user_id" in data:
            audio_ssrc = int(data.get("audio_ssrc") or 0)
            if audio_ssrc:
                self.learn(int(data["user_id"]), audio_ssrc)
            self.connected_users.add(int(data["user_id"]))
        elif op == _OP_CLIENTS_CONNECT:
            self.connected_users.update(int(user) for user in data.get("user_ids", ()))
        elif op == _OP_CLIENT_DISCONNECT and "user_id" in data:
            self.forget(int(data["user_id"]))


class DaveTransitions:
    """Whether unencrypted audio is to be expected now, from the voice gateway's DAVE messages.

    The whitepaper's receiver side of "Protocol Version Changes" and "Initial
    Transitory Phase": passthrough while the call is transport-only (op 4 with
    protocol version 0, or a prepared downgrade, op 21 to version 0), through
    an upgrade (op 24 creating a new group while transport-only) until it
    executes (op 22), and for :data:`TRANSITION_GRACE` seconds after that, for
    the frames senders sent before they switched. discord.py tells davey
    nothing of the upgrade window, so davey alone would refuse those frames.
    """

    def __init__(self) -> None:
        self.transport_only = False
        """The call carries no end-to-end encryption (now or while a downgrade is prepared)."""
        self.upgrading = False
        """A transport-only call is creating its MLS group; senders switch on op 22."""
        self.grace_until = -math.inf
        """Until then (receiver's clock), frames of the upgrade's window still pass."""
        self._prepared: dict[int, int] = {}

    def passthrough_allowed(self, now: float) -> bool:
        """Whether a frame without the DAVE marker is legitimate at ``now``."""
        return self.transport_only or now < self.grace_until

    def handle(self, message: dict[str, Any], now: float) -> None:
        """Follow one voice gateway message (ops 4, 21, 22 and 24; others are ignored)."""
        op = message.get("op")
        data = message.get("d")
        if not isinstance(data, dict):
            return
        if op == _OP_SESSION_DESCRIPTION:
            self.transport_only = int(data.get("dave_protocol_version") or 0) == 0
            self.upgrading = False
            self.grace_until = -math.inf
            self._prepared.clear()
        elif op == _OP_DAVE_PREPARE_TRANSITION:
            transition = int(data.get("transition_id", 0))
            version = int(data.get("protocol_version", 0))
            self._prepared[transition] = version
            if version == 0:
                self.transport_only = True
                self.upgrading = False
            if transition == 0:
                self._execute(transition, now)
        elif op == _OP_DAVE_PREPARE_EPOCH:
            if int(data.get("epoch", 0)) == 1 and int(data.get("protocol_version", 0)) > 0:
                self.upgrading = self.transport_only
        elif op == _OP_DAVE_EXECUTE_TRANSITION:
            self._execute(int(data.get("transition_id", 0)), now)

    def _execute(self, transition: int, now: float) -> None:
        version = self._prepared.pop(transition, None)
        if version == 0:
            self.transport_only = True
        elif self.upgrading and transition != 0:
            self.transport_only = False
            self.upgrading = False
            self.grace_until = now + TRANSITION_GRACE


class _SeenSequences:
    """The sequence numbers of one SSRC seen lately (a bit mask over the last 128)."""

    __slots__ = ("highest", "mask")

    def __init__(self) -> None:
        self.highest: int | None = None
        self.mask = 0

    def is_repeat(self, sequence: int) -> bool:
        """Record ``sequence``; True if it was seen already.

        A number further back than the window starts the window afresh: it is
        either a sender that restarted its counter or a packet too late to
        matter; neither is a duplicate we could tell.
        """
        highest = self.highest
        if highest is None:
            self.highest, self.mask = sequence, 1
            return False
        delta = sequence_delta(sequence, highest)
        if delta > 0:
            self.mask = (
                ((self.mask << delta) | 1) & ((1 << _SEEN_WINDOW) - 1)
                if delta < _SEEN_WINDOW
                else 1
            )
            self.highest = sequence
            return False
        if -delta >= _SEEN_WINDOW:
            self.highest, self.mask = sequence, 1
            return False
        bit = 1 << -delta
        if self.mask & bit:
            return True
        self.mask |= bit
        return False


_Queued = tuple["_Route", int, int, int, bytes, float]
"""A transport-decrypted packet waiting for the event loop: route, SSRC, sequence,
timestamp, frame, arrival."""


class _JitterBuffer:
    """One SSRC's packets, put back in sequence order before end-to-end decryption.

    :meth:`push` takes a packet (duplicates are already gone) and
    :meth:`release` gives back, in order, every packet that follows the last
    one released, and any that has waited ``hold`` seconds for a missing
    predecessor. A stream's first packet (nothing released yet) goes once the
    one after it has arrived: the first of a stream is not held ``hold``
    seconds for predecessors it has none of. A packet older than the last released passes straight
    through: it is late, and only DAVE or the writer can still say whether it
    is of use.
    """

    __slots__ = ("hold", "last", "_count", "_held", "_reference")

    def __init__(self, hold: float) -> None:
        self.hold = hold
        self.last: int | None = None
        """Extended sequence number of the last packet released."""
        self._held: list[tuple[int, int, _Queued]] = []
        self._count = 0
        self._reference: tuple[int, int] | None = None

    def __len__(self) -> int:
        return len(self._held)

    def _extend(self, sequence: int) -> int:
        if self._reference is None:
            self._reference = (sequence, 0)
            return 0
        raw, extended = self._reference
        value = extended + sequence_delta(sequence, raw)
        if value > extended:
            self._reference = (sequence & 0xFFFF, value)
        return value

    def push(self, item: _Queued) -> list[_Queued]:
        """Hold ``item``; return what is now due (a late packet at once)."""
        extended = self._extend(item[2])
        due: list[_Queued] = []
        if self.last is not None and extended < self.last - _RESTART_BEHIND:
            # The sender restarted its counter: a new stream on the same SSRC.
            due = self.flush()
            self.last, self._reference, extended = None, (item[2] & 0xFFFF, 0), 0
        elif self.last is not None and extended <= self.last:
            return [item]
        self._count += 1
        heapq.heappush(self._held, (extended, self._count, item))
        due += self.release(item[5])
        while len(self._held) > _JITTER_MAX:
            due.append(self._pop())
        return due

    def release(self, now: float) -> list[_Queued]:
        """The held packets that are due at ``now``, in sequence order."""
        due: list[_Queued] = []
        held = self._held
        while held:
            extended, _, item = held[0]
            if self.last is not None:
                follows = extended == self.last + 1
            else:
                # A stream's first: once the packet after it is here, it waits no longer.
                follows = any(held_extended == extended + 1 for held_extended, _, _ in held)
            if follows or now - item[5] >= self.hold:
                due.append(self._pop())
            else:
                break
        return due

    def flush(self) -> list[_Queued]:
        """Everything held, in order (the recording ends)."""
        return [self._pop() for _ in range(len(self._held))]

    def next_due(self) -> float | None:
        """Arrival time plus hold of the packet waiting longest, if any."""
        if not self._held:
            return None
        return min(item[5] for _, _, item in self._held) + self.hold

    def _pop(self) -> _Queued:
        extended, _, item = heapq.heappop(self._held)
        self.last = extended if self.last is None else max(self.last, extended)
        return item


@dataclass
class _Route:
    user_id: int
    sink: PacketSink
    stats: UserStats = field(default_factory=UserStats)
    seen: dict[int, _SeenSequences] = field(default_factory=dict)
    jitter: dict[int, _JitterBuffer] = field(default_factory=dict)
