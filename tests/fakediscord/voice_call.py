"""The bot's voice connection and a call (the MLS group of one voice channel) on the fake voice
server."""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import davey
from aiohttp import web

from .rtp import (
    ONE_BYTE_PROFILE,
    RtpHeader,
    one_byte_extension,
    seal_rtpsize,
)
from .voice_mls import _ExternalSender, _vbytes, split_commit_welcome
from .voice_ops import (
    DAVE_VERSION,
    OP_DAVE_EXECUTE_TRANSITION,
    OP_DAVE_PREPARE_EPOCH,
    OP_DAVE_PREPARE_TRANSITION,
    OP_MLS_ANNOUNCE_COMMIT_TRANSITION,
    OP_MLS_EXTERNAL_SENDER,
    OP_MLS_PROPOSALS,
    OP_MLS_WELCOME,
)

if TYPE_CHECKING:
    from .voice import FakeVoiceServer
    from .voice_speaker import FakeSpeaker


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
