"""The fake voice server's side of the voice gateway's dialogue with the bot: IDENTIFY and READY,
heartbeats, SELECT_PROTOCOL and SESSION_DESCRIPTION, transitions ready, RESUME refused, and the
DAVE frames the bot sends (its key package, its commit and welcome)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .voice_call import _BotConnection
from .voice_ops import (
    CLOSE_AUTHENTICATION_FAILED,
    FRAME_SECONDS,
    OFFERED_MODES,
    OP_CLIENTS_CONNECT,
    OP_DAVE_TRANSITION_READY,
    OP_HEARTBEAT,
    OP_HEARTBEAT_ACK,
    OP_IDENTIFY,
    OP_MLS_COMMIT_WELCOME,
    OP_MLS_EXTERNAL_SENDER,
    OP_MLS_INVALID_COMMIT_WELCOME,
    OP_MLS_KEY_PACKAGE,
    OP_READY,
    OP_RESUME,
    OP_SELECT_PROTOCOL,
    OP_SESSION_DESCRIPTION,
    TRANSPORT_MODE,
)

if TYPE_CHECKING:
    from .voice import FakeVoiceServer


async def on_json(
    server: FakeVoiceServer, connection: _BotConnection, message: dict[str, Any]
) -> None:
    server.bot_messages.append(message)
    op, data = message.get("op"), message.get("d") or {}
    if op == OP_IDENTIFY:
        expected = server._expected.get(data.get("token", ""))
        if (
            expected is None
            or data.get("session_id") != expected.session_id
            or int(data.get("user_id", 0)) != expected.user_id
            or int(data.get("server_id", 0)) != expected.guild_id
        ):
            await connection.ws.close(code=CLOSE_AUTHENTICATION_FAILED)
            return
        connection.expected = expected
        connection.dave = server.dave and int(data.get("max_dave_protocol_version", 0)) >= 1
        connection.ssrc = server._next_ssrc()
        await connection.send_json(
            OP_READY,
            {
                "ssrc": connection.ssrc,
                "ip": "127.0.0.1",
                "port": server._udp_port,
                "modes": list(OFFERED_MODES),
                "heartbeat_interval": server.heartbeat_interval_ms,
            },
        )
    elif op == OP_HEARTBEAT:
        await connection.send_json(OP_HEARTBEAT_ACK, {"t": data.get("t")})
    elif op == OP_SELECT_PROTOCOL:
        await select_protocol(server, connection, data)
    elif op == OP_DAVE_TRANSITION_READY:
        ready = connection.transition_ready.get(int(data.get("transition_id", -1)))
        if ready is not None and not ready.done():
            ready.set_result(None)
    elif op == OP_MLS_INVALID_COMMIT_WELCOME:
        server._record_dave(f"the bot reports an invalid commit/welcome: {data}")
    elif op == OP_RESUME:
        await connection.ws.close(code=4006)


async def select_protocol(
    server: FakeVoiceServer, connection: _BotConnection, data: dict[str, Any]
) -> None:
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
    call = server._call(expected.channel_id)
    if call.bot is not None and call.bot is not connection:
        await server._connection_closed(call.bot)
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
                speaker._announce_in = max(1, round(server.speaking_delay / FRAME_SECONDS))
    server.bot_connected.set()


async def on_binary(server: FakeVoiceServer, connection: _BotConnection, data: bytes) -> None:
    if not data or connection.expected is None:
        return
    op, payload = data[0], data[1:]
    call = server._call(connection.expected.channel_id)
    if op == OP_MLS_KEY_PACKAGE:
        connection.key_package = payload
        waiting = connection.waiting_key_package
        if waiting is not None and not waiting.done():
            waiting.set_result(payload)
        elif call.bot is connection:
            server._spawn(call.join(connection.user_id, payload))
    elif op == OP_MLS_COMMIT_WELCOME:
        waiting_commit = connection.waiting_commit
        if waiting_commit is not None and not waiting_commit.done():
            waiting_commit.set_result(payload)
