"""The fake gateway: Discord's websocket protocol with JSON text frames.

Sessions outlive connections, as on Discord: when a connection drops, its
session keeps numbering and buffering the events meant for it, and a client
that RESUMEs gets the missed ones replayed before RESUMED.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import WSMsgType, web

from .gateway_limits import (
    MAX_USER_IDS,
    GatewayLimits,
    LimitEvent,
    member_chunks,
    rate_limited_payload,
    wanted_ids,
)

if TYPE_CHECKING:
    from .server import FakeDiscord

OP_DISPATCH = 0
OP_HEARTBEAT = 1
OP_IDENTIFY = 2
OP_PRESENCE_UPDATE = 3
OP_VOICE_STATE_UPDATE = 4
OP_RESUME = 6
OP_RECONNECT = 7
OP_REQUEST_GUILD_MEMBERS = 8
OP_INVALID_SESSION = 9
OP_HELLO = 10
OP_HEARTBEAT_ACK = 11

INTENT_GUILDS = 1 << 0
INTENT_GUILD_MEMBERS = 1 << 1
INTENT_GUILD_VOICE_STATES = 1 << 7
INTENT_GUILD_PRESENCES = 1 << 8
INTENT_GUILD_MESSAGES = 1 << 9
INTENT_DIRECT_MESSAGES = 1 << 12
INTENT_MESSAGE_CONTENT = 1 << 15
PRIVILEGED_INTENTS = INTENT_GUILD_MEMBERS | INTENT_GUILD_PRESENCES | INTENT_MESSAGE_CONTENT
ALL_INTENTS = (1 << 26) - 1

CLOSE_UNKNOWN_OPCODE = 4001
CLOSE_DECODE_ERROR = 4002
CLOSE_NOT_AUTHENTICATED = 4003
CLOSE_AUTHENTICATION_FAILED = 4004
CLOSE_ALREADY_AUTHENTICATED = 4005
CLOSE_RATE_LIMITED = 4008
CLOSE_INVALID_INTENTS = 4013
CLOSE_DISALLOWED_INTENTS = 4014

CLOSE_HEARTBEAT_TIMEOUT = 1000
"""How Discord closes a connection whose heartbeat did not come in time. The docs say only that
"your connection will be closed and you will be forced to Resume" (events/gateway.mdx, Sending
Heartbeats); the close code seen for it is 1000 (discord-api-docs#2922), which discord.py takes
as resumable when the server sends it. The session stays resumable here too."""

SEND_LIMIT = 120
SEND_WINDOW = 60.0
"""Discord: "Apps can send 120 gateway events per connection every 60 seconds ... Apps that
surpass the limit are immediately disconnected" (events/gateway.mdx, Rate Limiting), with 4008
(topics/opcodes-and-status-codes.mdx). The window is fixed from its first frame, as discord.py's
own limiter counts it."""
HEARTBEAT_GRACE = 5.0
"""Seconds of tolerance after a heartbeat is due. Discord documents that a tolerance exists
("There is already tolerance in the heartbeat_interval that will cover network latency"), not
its size: this one is the fake's choice (``fake.gateway.heartbeat_grace``)."""

CONTENT_FIELDS = ("content", "embeds", "attachments", "components", "poll")


@dataclass
class GatewayEvent:
    """One dispatch the fake sent (or buffered) for a session."""

    seq: int
    name: str
    data: dict[str, Any]
    time: float


@dataclass
class GatewayLogEntry:
    """Something that happened on the gateway: connect, identify, resume, close..."""

    kind: str
    session_id: str | None
    detail: str
    time: float = field(default_factory=time.monotonic)


class GatewaySession:
    """A gateway session created by IDENTIFY; it survives its connection for RESUME."""

    def __init__(
        self, session_id: str, intents: int, shard: tuple[int, int] | None, buffer_size: int
    ) -> None:
        self.session_id = session_id
        self.intents = intents
        self.shard = shard
        self.seq = 0
        self.connection: GatewayConnection | None = None
        self.events: deque[GatewayEvent] = deque(maxlen=buffer_size)
        self.identified_at = time.monotonic()
        self.presence: dict[str, Any] | None = None

    def has_intent(self, intent: int) -> bool:
        """Whether the session asked for this intent (0 always counts as asked)."""
        return intent == 0 or bool(self.intents & intent)

    def covers(self, guild_id: int | None) -> bool:
        """Whether the session's shard is the one for this guild."""
        if self.shard is None:
            return True
        shard_id, shard_count = self.shard
        if guild_id is None:
            return shard_id == 0
        return (guild_id >> 22) % shard_count == shard_id

    @property
    def connected(self) -> bool:
        """Whether a live connection carries this session."""
        return self.connection is not None and not self.connection.closed

    def dispatch(self, name: str, data: dict[str, Any]) -> int:
        """Numbers the event, keeps it for replay and sends it if connected."""
        self.seq += 1
        event = GatewayEvent(seq=self.seq, name=name, data=data, time=time.monotonic())
        self.events.append(event)
        if self.connection is not None:
            self.connection.send({"op": OP_DISPATCH, "t": name, "s": self.seq, "d": data})
        return self.seq


class GatewayConnection:
    """One websocket; frames go out in order through a writer task.

    It also keeps what Discord holds a connection to: how many frames the
    client sent (all of them count, heartbeats included), the most in any
    :attr:`Gateway.send_window` seconds, and how late each heartbeat came
    against the interval announced in HELLO; and how it was closed.
    """

    def __init__(self, ws: web.WebSocketResponse, number: int, heartbeat_interval: float) -> None:
        self.ws = ws
        self.number = number
        """Connections are numbered from 1 in the order they opened."""
        self.session: GatewaySession | None = None
        self.closed = False
        self.heartbeats = 0
        self.opened_at = time.monotonic()
        self.heartbeat_interval = heartbeat_interval
        """Seconds, as announced in this connection's HELLO."""
        self.last_heartbeat_at: float | None = None
        self.max_heartbeat_lateness = 0.0
        """Seconds the latest heartbeat came after it was due (0 when none was late)."""
        self.sends = 0
        """Frames the client sent on this connection."""
        self.max_sends_in_window = 0
        """The most frames the client sent within any send window (60 s on Discord)."""
        self._recent: deque[float] = deque()
        self._window_start = 0.0
        self._window_sends = 0
        self.close_code: int | None = None
        self.close_reason = ""
        self.closed_by: str | None = None
        """``"server"`` when the fake closed it, ``"client"`` when the client did."""
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._writer = asyncio.create_task(self._write_frames())

    @property
    def heartbeat_due(self) -> float:
        """When the next heartbeat is due (an interval after HELLO or the last heartbeat)."""
        return (self.last_heartbeat_at or self.opened_at) + self.heartbeat_interval

    def count_send(self, now: float, window: float) -> int:
        """Counts one frame from the client; returns the count in the current fixed window."""
        self.sends += 1
        self._recent.append(now)
        while self._recent and self._recent[0] <= now - window:
            self._recent.popleft()
        self.max_sends_in_window = max(self.max_sends_in_window, len(self._recent))
        if now - self._window_start >= window:
            self._window_start = now
            self._window_sends = 0
        self._window_sends += 1
        return self._window_sends

    def count_heartbeat(self, now: float) -> float:
        """Counts one heartbeat; returns how late it was (0 when in time)."""
        lateness = max(0.0, now - self.heartbeat_due)
        self.max_heartbeat_lateness = max(self.max_heartbeat_lateness, lateness)
        self.last_heartbeat_at = now
        self.heartbeats += 1
        return lateness

    def send(self, payload: dict[str, Any]) -> None:
        """Queues a frame; it is sent after every frame queued before it."""
        if not self.closed:
            self._queue.put_nowait(json.dumps(payload))

    async def _write_frames(self) -> None:
        while True:
            frame = await self._queue.get()
            if frame is None:
                return
            try:
                await self.ws.send_str(frame)
            except (ConnectionError, RuntimeError):
                return

    async def close(self, code: int, message: str = "") -> None:
        """Flushes nothing more and closes the socket with ``code``."""
        if self.closed:
            return
        self.closed = True
        self.close_code, self.close_reason, self.closed_by = code, message, "server"
        self._queue.put_nowait(None)
        with contextlib.suppress(ConnectionError, RuntimeError, asyncio.TimeoutError):
            await asyncio.wait_for(self.ws.close(code=code, message=message.encode()), timeout=2.0)

    async def finish(self) -> None:
        """Stops the writer task once the socket is gone."""
        if self.closed_by is None:
            self.close_code, self.closed_by = self.ws.close_code, "client"
        self.closed = True
        self._queue.put_nowait(None)
        with contextlib.suppress(asyncio.CancelledError):
            await self._writer


@dataclass
class GatewayClose:
    """How one connection ended."""

    connection: int
    session_id: str | None
    code: int | None
    reason: str
    by: str


class Gateway:
    """Serves ``/gateway`` and routes dispatches to sessions."""

    def __init__(
        self, fake: FakeDiscord, *, heartbeat_interval_ms: int = 41250, buffer_size: int = 5000
    ) -> None:
        self._fake = fake
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.buffer_size = buffer_size
        self.sessions: dict[str, GatewaySession] = {}
        self.connections: set[GatewayConnection] = set()
        self.log: list[GatewayLogEntry] = []
        self.received: list[tuple[float, int, Any]] = []
        """Every frame a client sent: (monotonic time, op, d)."""
        self.allowed_privileged_intents = PRIVILEGED_INTENTS
        """Privileged intents the application may use; others close the socket with 4014."""
        self.ack_heartbeats = True
        """Set to False to stop answering heartbeats (the client then sees a zombie connection)."""
        self.send_limit = SEND_LIMIT
        """Frames a client may send per connection within :attr:`send_window` (Discord: 120)."""
        self.send_window = SEND_WINDOW
        """Seconds of the send limit's window (Discord: 60)."""
        self.heartbeat_grace = HEARTBEAT_GRACE
        """Seconds a heartbeat may come after it is due before the connection is closed."""
        self.history: list[GatewayConnection] = []
        """Every connection so far, open or closed, in the order they opened."""
        self.limits = GatewayLimits()
        """Identify buckets and member requests (:mod:`.gateway_limits`), and the clock."""

    # websocket handling -----------------------------------------------------------

    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        """The aiohttp handler for the gateway websocket."""
        ws = web.WebSocketResponse(autoping=True, max_msg_size=0)
        await ws.prepare(request)
        connection = GatewayConnection(ws, len(self.history) + 1, self.heartbeat_interval_ms / 1000)
        self.history.append(connection)
        self.connections.add(connection)
        self._log("connect", None, request.query_string)
        connection.send({"op": OP_HELLO, "d": {"heartbeat_interval": self.heartbeat_interval_ms}})
        watchdog = asyncio.create_task(self._watch_heartbeats(connection))
        try:
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    try:
                        payload = json.loads(message.data)
                    except ValueError:
                        await connection.close(CLOSE_DECODE_ERROR, "Error while decoding payload.")
                        break
                    await self._on_frame(connection, payload)
                elif message.type == WSMsgType.BINARY:
                    await connection.close(CLOSE_DECODE_ERROR, "Error while decoding payload.")
                    break
        finally:
            watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watchdog
            session = connection.session
            if session is not None and session.connection is connection:
                session.connection = None
            self.connections.discard(connection)
            await connection.finish()
            self._log("close", session.session_id if session else None, str(ws.close_code))
            self._fake.notify()
        return ws

    async def _watch_heartbeats(self, connection: GatewayConnection) -> None:
        """Closes the connection when a heartbeat is later than the grace allows, as Discord does."""
        while not connection.closed:
            wait = connection.heartbeat_due + self.heartbeat_grace - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            lateness = time.monotonic() - connection.heartbeat_due
            connection.max_heartbeat_lateness = max(connection.max_heartbeat_lateness, lateness)
            session_id = connection.session.session_id if connection.session else None
            self._log("heartbeat-timeout", session_id, f"{lateness:.3f}")
            await connection.close(CLOSE_HEARTBEAT_TIMEOUT, "Heartbeat timed out.")
            return

    async def _on_frame(self, connection: GatewayConnection, payload: dict[str, Any]) -> None:
        op = payload.get("op")
        data = payload.get("d")
        now = self.limits.now()
        self.received.append((now, op if isinstance(op, int) else -1, data))
        if connection.count_send(now, self.send_window) > self.send_limit:
            session_id = connection.session.session_id if connection.session else None
            self._log("rate-limited", session_id, f"{connection.sends} sends")
            await connection.close(CLOSE_RATE_LIMITED, "You are being rate limited.")
            return
        if op == OP_HEARTBEAT:
            connection.count_heartbeat(now)
            if self.ack_heartbeats:
                connection.send({"op": OP_HEARTBEAT_ACK})
        elif op == OP_IDENTIFY:
            await self._identify(connection, data or {})
        elif op == OP_RESUME:
            await self._resume(connection, data or {})
        elif connection.session is None:
            await connection.close(CLOSE_NOT_AUTHENTICATED, "Not authenticated.")
        elif op == OP_PRESENCE_UPDATE:
            connection.session.presence = data
        elif op == OP_VOICE_STATE_UPDATE:
            self._fake.handle_bot_voice_state(connection.session, data or {})
        elif op == OP_REQUEST_GUILD_MEMBERS:
            self._send_member_chunks(connection.session, data or {})
        else:
            await connection.close(CLOSE_UNKNOWN_OPCODE, "Unknown opcode.")
        self._fake.notify()

    async def _identify(self, connection: GatewayConnection, data: dict[str, Any]) -> None:
        if connection.session is not None:
            await connection.close(CLOSE_ALREADY_AUTHENTICATED, "Already authenticated.")
            return
        if data.get("token") != self._fake.token:
            self._log("identify-failed", None, "bad token")
            await connection.close(CLOSE_AUTHENTICATION_FAILED, "Authentication failed.")
            return
        intents = data.get("intents")
        if not isinstance(intents, int) or intents < 0 or intents & ~ALL_INTENTS:
            await connection.close(CLOSE_INVALID_INTENTS, "Invalid intent(s).")
            return
        if intents & PRIVILEGED_INTENTS & ~self.allowed_privileged_intents:
            await connection.close(CLOSE_DISALLOWED_INTENTS, "Disallowed intent(s).")
            return
        raw_shard = data.get("shard")
        shard = (int(raw_shard[0]), int(raw_shard[1])) if raw_shard else None
        if not self.limits.admit_identify(shard):
            self._log("identify-too-soon", None, f"shard {shard}")
            connection.send({"op": OP_INVALID_SESSION, "d": False})
            return
        session = GatewaySession(secrets.token_hex(16), intents, shard, self.buffer_size)
        self.sessions[session.session_id] = session
        session.connection = connection
        connection.session = session
        self._log("identify", session.session_id, f"intents={intents}")
        guilds = [guild for guild in self._fake.state.guilds.values() if session.covers(guild.id)]
        ready = self._fake.ready_payload(session, [guild.id for guild in guilds])
        session.dispatch("READY", ready)
        for guild in guilds:
            session.dispatch("GUILD_CREATE", self._fake.guild_create_payload(guild.id, session))

    async def _resume(self, connection: GatewayConnection, data: dict[str, Any]) -> None:
        session = self.sessions.get(str(data.get("session_id")))
        raw_seq = data.get("seq")
        seq = raw_seq if isinstance(raw_seq, int) else -1
        if session is None or not self._can_resume(session, data.get("token"), seq):
            self._log("invalid-session", str(data.get("session_id")), f"seq={raw_seq}")
            connection.send({"op": OP_INVALID_SESSION, "d": False})
            return
        previous = session.connection
        if previous is not None and previous is not connection:
            await previous.close(4000, "Session resumed elsewhere.")
        session.connection = connection
        connection.session = session
        missed = [event for event in session.events if event.seq > seq]
        for event in missed:
            connection.send({"op": OP_DISPATCH, "t": event.name, "s": event.seq, "d": event.data})
        self._log("resume", session.session_id, f"replayed={len(missed)}")
        session.dispatch("RESUMED", {"_trace": ["fake-discord"]})

    def _can_resume(self, session: GatewaySession, token: Any, seq: int) -> bool:
        """A session resumes with the right token and a sequence whose successors are still buffered."""
        if token != self._fake.token or not 0 <= seq <= session.seq:
            return False
        return not session.events or session.events[0].seq <= seq + 1

    def _send_member_chunks(self, session: GatewaySession, data: dict[str, Any]) -> None:
        """Answers op 8 (:mod:`.gateway_limits`): chunks, or RATE_LIMITED, or nothing when bad."""
        guild_ids = data.get("guild_id")
        for raw_guild_id in guild_ids if isinstance(guild_ids, list) else [guild_ids]:
            try:
                guild = self._fake.state.guilds.get(int(str(raw_guild_id)))
                too_many = len(wanted_ids(data) or ()) > MAX_USER_IDS
            except ValueError:
                guild, too_many = None, True
            if guild is None or too_many:
                self.limits.events.append(
                    LimitEvent("bad-member-request", str(raw_guild_id), self.limits.now())
                )
                continue
            retry_after = self.limits.member_request_retry_after(guild.id, data)
            if retry_after is not None:
                session.dispatch("RATE_LIMITED", rate_limited_payload(guild.id, data, retry_after))
                continue
            for payload in member_chunks(guild.members, data):
                session.dispatch("GUILD_MEMBERS_CHUNK", {"guild_id": str(guild.id), **payload})

    # dispatching --------------------------------------------------------------------

    def live_sessions(self) -> list[GatewaySession]:
        """Sessions that are connected or may still RESUME, oldest first."""
        return list(self.sessions.values())

    def dispatch(
        self,
        name: str,
        data: dict[str, Any] | Callable[[GatewaySession], dict[str, Any] | None],
        *,
        guild_id: int | None = None,
        intent: int = 0,
        only: GatewaySession | None = None,
    ) -> None:
        """Sends an event to every session that covers the guild and asked for the intent.

        ``data`` may be a function of the session, for payloads that differ
        between sessions (it may return None to skip one).
        """
        targets = [only] if only is not None else self.live_sessions()
        for session in targets:
            if not session.covers(guild_id) or not session.has_intent(intent):
                continue
            payload = data(session) if callable(data) else data
            if payload is not None:
                session.dispatch(name, payload)
        self._fake.notify()

    def dispatch_message(
        self, name: str, payload: dict[str, Any], *, guild_id: int | None, author_id: int | None
    ) -> None:
        """MESSAGE_CREATE/UPDATE with Discord's MESSAGE_CONTENT rules applied per session."""
        intent = INTENT_GUILD_MESSAGES if guild_id is not None else INTENT_DIRECT_MESSAGES
        bot_id = self._fake.state.bot_user.id

        def for_session(session: GatewaySession) -> dict[str, Any]:
            mentioned = any(
                str(user.get("id")) == str(bot_id) for user in payload.get("mentions", [])
            )
            if (
                guild_id is None
                or author_id == bot_id
                or mentioned
                or session.has_intent(INTENT_MESSAGE_CONTENT)
            ):
                return payload
            stripped = dict(payload)
            for key in CONTENT_FIELDS:
                if key in stripped:
                    stripped[key] = "" if key == "content" else []
            return stripped

        self.dispatch(name, for_session, guild_id=guild_id, intent=intent)

    def interaction_session(self, guild_id: int | None) -> GatewaySession | None:
        """The session an interaction goes to: the newest connected one for the guild's shard."""
        candidates = [session for session in self.sessions.values() if session.covers(guild_id)]
        connected = [session for session in candidates if session.connected]
        pool = connected or candidates
        return max(pool, key=lambda session: session.identified_at) if pool else None

    def events(self, name: str | None = None) -> list[GatewayEvent]:
        """Events dispatched to any session (still in the replay buffers), oldest first."""
        found = [
            event
            for session in self.sessions.values()
            for event in session.events
            if name is None or event.name == name
        ]
        return sorted(found, key=lambda event: event.time)

    # server-side actions ------------------------------------------------------------

    async def drop(self, *, code: int = 4000, resumable: bool = True) -> None:
        """Closes every gateway connection from the server side.

        With ``resumable`` the sessions stay, so the client RESUMEs and gets
        the missed events; otherwise they are forgotten and RESUME gets
        INVALID_SESSION, so the client IDENTIFYs again.
        """
        if not resumable:
            for session in self.sessions.values():
                self._log("forget", session.session_id, "drop")
            self.sessions.clear()
        for connection in list(self.connections):
            self._log(
                "drop", connection.session.session_id if connection.session else None, str(code)
            )
            await connection.close(code, "Dropped by the fake.")

    def request_reconnect(self) -> None:
        """Sends op 7 RECONNECT on every connection (the client closes and RESUMEs)."""
        for connection in self.connections:
            connection.send({"op": OP_RECONNECT, "d": None})

    async def close(self) -> None:
        """Closes every connection (1001 going away)."""
        for connection in list(self.connections):
            await connection.close(1001, "Fake Discord stopped.")

    def _log(self, kind: str, session_id: str | None, detail: str) -> None:
        self.log.append(GatewayLogEntry(kind=kind, session_id=session_id, detail=detail))

    def count(self, kind: str) -> int:
        """How many log entries of this kind there are (``identify``, ``resume``, ``connect``...)."""
        return sum(1 for entry in self.log if entry.kind == kind)

    # what Discord would hold against the client ------------------------------------

    @property
    def sends_per_connection(self) -> list[int]:
        """Frames the client sent on each connection, in the order they opened."""
        return [connection.sends for connection in self.history]

    @property
    def max_sends_in_window(self) -> int:
        """The most frames any connection sent within one send window (60 s)."""
        return max((connection.max_sends_in_window for connection in self.history), default=0)

    @property
    def max_heartbeat_lateness(self) -> float:
        """Seconds the latest heartbeat of any connection came after it was due."""
        return max((connection.max_heartbeat_lateness for connection in self.history), default=0.0)

    @property
    def closes(self) -> list[GatewayClose]:
        """How each closed connection ended: code, reason and who closed it."""
        return [
            GatewayClose(
                connection=connection.number,
                session_id=connection.session.session_id if connection.session else None,
                code=connection.close_code,
                reason=connection.close_reason,
                by=connection.closed_by or "",
            )
            for connection in self.history
            if connection.closed_by is not None
        ]

    @property
    def rate_limited(self) -> int:
        """Connections closed with 4008 because the client sent too much."""
        return self.count("rate-limited")

    @property
    def heartbeat_timeouts(self) -> int:
        """Connections closed because a heartbeat came too late."""
        return self.count("heartbeat-timeout")
