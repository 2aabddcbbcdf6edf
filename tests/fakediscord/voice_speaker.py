"""Simulated speakers in a voice channel (:class:`FakeSpeaker`): Discord clients with or without
DAVE, sending Opus to the bot as his client would."""

from __future__ import annotations

import asyncio
import inspect
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import davey

from .rtp import (
    RtpHeader,
)
from .voice_ops import DAVE_VERSION, FRAME_SECONDS, OP_SPEAKING, SAMPLE_RATE, SAMPLES_PER_FRAME

if TYPE_CHECKING:
    from .voice import FakeVoiceServer
    from .voice_call import _Call


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


@dataclass(frozen=True)
class _Plan:
    """A play()'s packets as planned, each one's offset from the start of the play (gaps
    included), the sending order and the network's delays."""

    planned: list[SentPacket]
    offsets: list[float]
    order: list[int]
    delays: dict[int, float]

    def due(self, started: float, position: int, index: int) -> float:
        """When the packet ``index``, ``position``-th in sending order, leaves."""
        if self.delays:
            return started + self.offsets[index] + self.delays.get(index, 0.0)
        return started + self.offsets[position]


@dataclass(frozen=True)
class _Mishaps:
    """What befalls a play()'s packets: lost, sent twice, replaced by the SFU's silence, their
    DAVE frames damaged; and the hooks called before some places in the sending order."""

    lost: set[int]
    doubled: set[int]
    muted: set[int]
    corrupt: bool
    hooks: dict[int, Callable[[], object]]


@dataclass(frozen=True)
class _Pacing:
    """How a play() sends: in real time or on the call's clock, with RTP padding and a header
    extension, announcing the speaker first."""

    realtime: bool
    padding: bool
    extension: bool
    announce: bool


class _InOrder:
    """The frames a play() sends, encoded in packet order as far as needed."""

    def __init__(self, speaker: FakeSpeaker, plan: _Plan, mishaps: _Mishaps) -> None:
        self._speaker = speaker
        self._plan = plan
        self._mishaps = mishaps
        self._frames: dict[int, tuple[bytes, bool] | None] = {}
        self._encoded = 0

    def take(self, index: int) -> tuple[bytes, bool] | None:
        """The frame of packet ``index``, encoding every packet before it first."""
        while self._encoded <= index:
            encoded = self._encoded
            self._frames[encoded] = self._speaker._encode(
                self._plan.planned[encoded],
                muted=encoded in self._mishaps.muted,
                corrupt=self._mishaps.corrupt,
            )
            self._encoded += 1
        return self._frames.pop(index)


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
        await self._ready_to_play()
        plan = self._plan(
            packets, start_seq, start_ts, dict(gaps or {}), reorder, dict(delay or {})
        )
        mishaps = _Mishaps(
            set(lose), set(duplicate), set(sfu_silence), corrupt_dave, dict(at or {})
        )
        return await self._send_all(plan, mishaps, _Pacing(realtime, padding, extension, announce))

    async def _ready_to_play(self) -> None:
        bot = self._call.bot
        if bot is None or bot.udp_address is None or bot.secret_key is None:
            raise RuntimeError("no bot is connected to this voice channel")
        if self.left or not self.connected:
            raise RuntimeError(f"speaker {self.user_id} is not in the channel")
        if self.mode == _PENDING:
            # A client starts talking once it can: not before its welcome executed.
            await self.wait_in_group(self.server.response_timeout)

    def _plan(
        self,
        packets: Sequence[bytes],
        start_seq: int | None,
        start_ts: int | None,
        gaps: dict[int, float],
        reorder: Iterable[tuple[int, int]],
        delays: dict[int, float],
    ) -> _Plan:
        """Number and time the packets (moving his counters on) and put them in sending order."""
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
        if delays:
            order.sort(key=lambda index: offsets[index] + delays.get(index, 0.0))
        return _Plan(planned, offsets, order, delays)

    async def _send_all(self, plan: _Plan, mishaps: _Mishaps, pacing: _Pacing) -> list[SentPacket]:
        clock = self.server.clock
        sent: list[SentPacket] = []
        waiting = True
        self._playing += 1
        try:
            if not pacing.realtime:
                clock.hold(id(self))
            if pacing.announce:
                await self._announce_and_wait(pacing)
            started = clock()
            # His client encodes and DAVE-encrypts in order; the network reorders afterwards.
            frames = _InOrder(self, plan, mishaps)
            for position, index in enumerate(plan.order):
                await self._wait_due(position, plan.due(started, position, index), mishaps, pacing)
                frame = frames.take(index)
                if index in mishaps.lost:
                    continue
                packet, waiting = await self._deliver(
                    plan.planned[index], frame, mishaps, pacing, waiting=waiting
                )
                if packet is not None:
                    sent.append(packet)
        finally:
            clock.thaw()
            clock.rest(id(self))
            self._playing -= 1
            if not self._playing:
                self._flush_switches()
        return sent

    async def _announce_and_wait(self, pacing: _Pacing) -> None:
        await self.announce()
        if not pacing.realtime:
            await self.server._until_known(self.user_id, self.ssrc)

    async def _wait_due(
        self, position: int, due: float, mishaps: _Mishaps, pacing: _Pacing
    ) -> None:
        """Run the hook of this place in the sending order, then wait for the packet's time."""
        clock = self.server.clock
        hook = mishaps.hooks.get(position)
        if hook is not None:
            clock.rest(id(self))
            outcome = hook()
            if inspect.isawaitable(outcome):
                await outcome
        if pacing.realtime:
            delay = due - clock()
            if delay > 0:
                await asyncio.sleep(delay)
        else:
            await clock.wait_turn(id(self), due)

    async def _deliver(
        self,
        planned: SentPacket,
        frame: tuple[bytes, bool] | None,
        mishaps: _Mishaps,
        pacing: _Pacing,
        *,
        waiting: bool,
    ) -> tuple[SentPacket | None, bool]:
        """Send one packet (the clock stopped until the bot has read it, while it still reads);
        return what was sent and whether to go on waiting for the bot's reads."""
        clock = self.server.clock
        index = planned.index
        copies = 2 if index in mishaps.doubled else 1
        if waiting and not pacing.realtime:
            clock.freeze()  # until the bot has read it (below)
        packet = self._send(
            planned,
            frame,
            muted=index in mishaps.muted,
            extension=pacing.extension,
            padding=pacing.padding,
            copies=copies,
        )
        self._count_packet()
        if packet is not None:
            # The bot's connection now: it may have reconnected (another UDP socket).
            current = self._call.bot
            if waiting and current is not None and current.udp_address is not None:
                waiting = await self.server._until_read(current.udp_address)
        clock.thaw()
        if self._announce_in is not None and self._announce_in <= 0:
            # Late SPEAKING: after the bot has read the packets sent before it.
            self._announce_in = None
            await self._announce_and_wait(pacing)
        if packet is None:
            await asyncio.sleep(0)
        return packet, waiting

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
