"""The fake voice server against the real discord.py 2.7.1 voice client.

Also home of :func:`voice_world`, the harness the receiver and recorder tests
share: a real ``discord.Client`` logged in to a small main gateway on
127.0.0.1 (:class:`MiniDiscord`, just what reaching a voice channel needs)
whose op 4 answers point at a :class:`FakeVoiceServer`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import davey
import discord
import discord.gateway
import discord.http
import pytest
import yarl
from aiohttp import web

from bot.voice.receiver import ReceivingVoiceClient
from tests.fakediscord.voice import FakeSpeaker, FakeVoiceServer, split_commit_welcome
from tests.voice.speech import opus_packets

GUILD_ID = 1_100_000_000_000_001
VOICE_CHANNEL_ID = 1_100_000_000_000_002
BOT_ID = 1_100_000_000_000_100
OWNER_ID = 1_100_000_000_000_101
NOMINEE_ID = 1_100_000_000_000_201
NEIGHBOUR_ID = 1_100_000_000_000_202
JOINED_AT = "2026-01-01T00:00:00+00:00"


def _user(user_id: int, *, bot: bool = False) -> dict[str, Any]:
    return {
        "id": str(user_id),
        "username": f"user{user_id % 1000}",
        "global_name": None,
        "discriminator": "0",
        "avatar": None,
        "bot": bot,
    }


def _member(user_id: int, *, bot: bool = False) -> dict[str, Any]:
    return {
        "user": _user(user_id, bot=bot),
        "roles": [],
        "joined_at": JOINED_AT,
        "deaf": False,
        "mute": False,
        "flags": 0,
    }


def _json(data: Any) -> web.Response:
    # Exactly "application/json": with a charset discord.py takes the body for text.
    return web.Response(
        body=json.dumps(data).encode(), headers={"Content-Type": "application/json"}
    )


class MiniDiscord:
    """A main gateway with one guild and one voice channel; op 4 leads to the voice server."""

    def __init__(self, voice_server: FakeVoiceServer) -> None:
        self.voice_server = voice_server
        self.voice_states: dict[int, dict[str, Any]] = {}
        self.port = 0
        self._ws: web.WebSocketResponse | None = None
        self._seq = itertools.count(1)
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/api/v10/users/@me", self._me)
        app.router.add_get("/api/v10/oauth2/applications/@me", self._application)
        app.router.add_get("/gateway", self._gateway)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert isinstance(server, asyncio.Server)
        self.port = server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def set_voice_state(
        self, user_id: int, channel_id: int | None, session_id: str | None = None
    ) -> None:
        """A member joins (or, with None, leaves) voice: VOICE_STATE_UPDATE to the bot."""
        state = self._voice_state(user_id, channel_id, session_id or f"session-{user_id}")
        if channel_id is None:
            self.voice_states.pop(user_id, None)
        else:
            self.voice_states[user_id] = state
        await self._dispatch("VOICE_STATE_UPDATE", state)

    async def _me(self, request: web.Request) -> web.Response:
        return _json(_user(BOT_ID, bot=True))

    async def _application(self, request: web.Request) -> web.Response:
        return _json(
            {
                "id": str(BOT_ID),
                "name": "prokurator",
                "description": "",
                "icon": None,
                "bot_public": False,
                "bot_require_code_grant": False,
                "owner": _user(OWNER_ID),
                "verify_key": "00",
                "flags": 0,
            }
        )

    async def _dispatch(self, name: str, data: dict[str, Any]) -> None:
        if self._ws is not None and not self._ws.closed:
            payload = {"op": 0, "t": name, "s": next(self._seq), "d": data}
            await self._ws.send_str(json.dumps(payload))

    def _voice_state(self, user_id: int, channel_id: int | None, session_id: str) -> dict[str, Any]:
        return {
            "guild_id": str(GUILD_ID),
            "channel_id": str(channel_id) if channel_id else None,
            "user_id": str(user_id),
            "session_id": session_id,
            "deaf": False,
            "mute": False,
            "self_deaf": False,
            "self_mute": False,
            "self_video": False,
            "suppress": False,
            "request_to_speak_timestamp": None,
            "member": _member(user_id, bot=user_id == BOT_ID),
        }

    def _guild(self) -> dict[str, Any]:
        everyone = {
            "id": str(GUILD_ID),
            "name": "@everyone",
            "permissions": str((1 << 41) - 1),
            "position": 0,
            "color": 0,
            "hoist": False,
            "managed": False,
            "mentionable": False,
            "flags": 0,
        }
        channel = {
            "id": str(VOICE_CHANNEL_ID),
            "type": 2,
            "name": "square",
            "position": 0,
            "permission_overwrites": [],
            "bitrate": 64000,
            "user_limit": 0,
            "parent_id": None,
            "rtc_region": None,
            "nsfw": False,
        }
        return {
            "id": str(GUILD_ID),
            "name": "city",
            "icon": None,
            "owner_id": str(OWNER_ID),
            "roles": [everyone],
            "emojis": [],
            "stickers": [],
            "features": [],
            "channels": [channel],
            "members": [_member(BOT_ID, bot=True)],
            "voice_states": [
                {k: v for k, v in state.items() if k != "member"}
                for state in self.voice_states.values()
            ],
            "member_count": 1,
            "large": False,
            "threads": [],
            "presences": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "unavailable": False,
        }

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._ws = ws
        await ws.send_str(json.dumps({"op": 10, "d": {"heartbeat_interval": 41250}}))
        async for message in ws:
            payload = json.loads(message.data)
            op, data = payload["op"], payload.get("d") or {}
            if op == 1:
                await ws.send_str(json.dumps({"op": 11}))
            elif op == 2:
                await self._dispatch(
                    "READY",
                    {
                        "v": 10,
                        "user": _user(BOT_ID, bot=True),
                        "guilds": [{"id": str(GUILD_ID), "unavailable": True}],
                        "session_id": "main-session",
                        "resume_gateway_url": f"ws://127.0.0.1:{self.port}/gateway",
                        "application": {"id": str(BOT_ID), "flags": 0},
                    },
                )
                await self._dispatch("GUILD_CREATE", self._guild())
            elif op == 4:
                await self._bot_voice_state(data)
        return ws

    async def _bot_voice_state(self, data: dict[str, Any]) -> None:
        channel_id = int(data["channel_id"]) if data.get("channel_id") else None
        session_id = "bot-voice-session"
        await self.set_voice_state(BOT_ID, channel_id, session_id)
        if channel_id is not None:
            token = self.voice_server.expect(GUILD_ID, channel_id, BOT_ID, session_id)
            await self._dispatch(
                "VOICE_SERVER_UPDATE",
                {
                    "token": token,
                    "guild_id": str(GUILD_ID),
                    "endpoint": self.voice_server.endpoint,
                },
            )


@dataclass
class VoiceWorld:
    """A logged-in bot, its main gateway and the voice server of its one voice channel."""

    discord: MiniDiscord
    server: FakeVoiceServer
    client: discord.Client

    @property
    def channel(self) -> discord.VoiceChannel:
        channel = self.client.get_channel(VOICE_CHANNEL_ID)
        assert isinstance(channel, discord.VoiceChannel)
        return channel

    async def connect(self) -> ReceivingVoiceClient:
        """The bot joins the voice channel (returns before DAVE is ready, as discord.py does)."""
        voice_client = await self.channel.connect(cls=ReceivingVoiceClient)
        assert isinstance(voice_client, ReceivingVoiceClient)
        return voice_client

    async def join(self, user_id: int) -> FakeSpeaker:
        """A member comes into the channel: main gateway voice state, then the voice server."""
        await self.discord.set_voice_state(user_id, VOICE_CHANNEL_ID)
        return self.server.add_speaker(user_id, channel_id=VOICE_CHANNEL_ID)

    async def leave(self, speaker: FakeSpeaker) -> None:
        """A member leaves: the voice server drops him, the main gateway says so."""
        await speaker.leave()
        await self.discord.set_voice_state(speaker.user_id, None)


@contextlib.asynccontextmanager
async def voice_world(**server_options: Any) -> AsyncIterator[VoiceWorld]:
    """Start a fake voice server, a main gateway and a logged-in real discord.py client."""
    server = FakeVoiceServer(**server_options)
    await server.start()
    mini = MiniDiscord(server)
    await mini.start()
    old_base = discord.http.Route.BASE
    old_gateway = discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
    discord.http.Route.BASE = f"http://127.0.0.1:{mini.port}/api/v10"
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(
        f"ws://127.0.0.1:{mini.port}/gateway"
    )
    intents = discord.Intents.none()
    intents.guilds = True
    intents.voice_states = True
    client = discord.Client(intents=intents)
    client._connection.guild_ready_timeout = 0.05
    runner = asyncio.create_task(client.start("fake-token"))
    try:
        await asyncio.wait_for(client.wait_until_ready(), 10)
        yield VoiceWorld(mini, server, client)
    finally:
        await client.close()
        runner.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await runner
        await mini.close()
        await server.close()
        discord.http.Route.BASE = old_base
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = old_gateway


async def wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll ``condition`` until it holds; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout} s")
        await asyncio.sleep(0.005)


async def connected_with_dave(world: VoiceWorld) -> ReceivingVoiceClient:
    """Connect and wait until DAVE is settled (with whoever is in the channel)."""
    voice_client = await world.connect()
    await wait_until(voice_client.dave_ready)
    return voice_client


# --------------------------------------------------------------------------


async def test_handshake_over_tls_and_dave_via_welcome_when_a_member_commits() -> None:
    async with voice_world() as world:
        speaker = await world.join(NOMINEE_ID)
        voice_client = await world.connect()
        await wait_until(voice_client.dave_ready)
        await speaker.wait_in_group()

        session = voice_client._connection.dave_session
        assert session is not None and session.ready
        assert voice_client.dave_members() == {BOT_ID, NOMINEE_ID}
        assert not voice_client._connection.dave_pending_transitions
        ops = [message["op"] for message in world.server.bot_messages]
        identify = world.server.bot_messages[ops.index(0)]["d"]
        assert identify["max_dave_protocol_version"] == 1
        select = world.server.bot_messages[ops.index(1)]["d"]["data"]
        assert select["mode"] == "aead_xchacha20_poly1305_rtpsize"
        assert select["address"] == "127.0.0.1"
        assert 5 in ops  # discord.py announces its SSRC with SPEAKING
        transition = world.server.transitions_executed[-1]
        assert {"op": 23, "d": {"transition_id": transition}} in world.server.bot_messages
        assert any("speaker" in event and "commits" in event for event in world.server.dave_log)
        assert voice_client.speakers.connected_users == {NOMINEE_ID}


async def test_bot_commits_when_a_member_joins_after_it() -> None:
    async with voice_world() as world:
        voice_client = await world.connect()
        await wait_until(lambda: voice_client._connection.dave_session is not None)
        assert not voice_client.dave_ready()  # alone: its group is only pending

        speaker = await world.join(NOMINEE_ID)
        await speaker.wait_in_group()
        await wait_until(voice_client.dave_ready)

        assert voice_client.dave_members() == {BOT_ID, NOMINEE_ID}
        assert any(event.endswith("(bot committed)") for event in world.server.dave_log)
        neighbour = await world.join(NEIGHBOUR_ID)
        await neighbour.wait_in_group()
        await wait_until(lambda: voice_client.dave_members() == {BOT_ID, NOMINEE_ID, NEIGHBOUR_ID})


async def test_a_member_who_leaves_is_removed_from_the_group() -> None:
    async with voice_world() as world:
        speaker = await world.join(NOMINEE_ID)
        neighbour = await world.join(NEIGHBOUR_ID)
        voice_client = await connected_with_dave(world)
        await speaker.play(opus_packets()[:3])
        await wait_until(lambda: voice_client.speakers.ssrc_for(NOMINEE_ID) == speaker.ssrc)

        await world.leave(speaker)

        await wait_until(lambda: voice_client.dave_members() == {BOT_ID, NEIGHBOUR_ID})
        await wait_until(lambda: voice_client.speakers.ssrc_for(NOMINEE_ID) is None)
        await wait_until(voice_client.dave_ready)
        assert neighbour.session.ready


async def test_bot_audio_reaches_the_fake_and_a_member_decrypts_it() -> None:
    async with voice_world() as world:
        speaker = await world.join(NOMINEE_ID)
        voice_client = await connected_with_dave(world)
        await speaker.wait_in_group()
        packets = opus_packets()[:5]

        for packet in packets:
            voice_client.send_audio_packet(packet, encode=False)
        await wait_until(lambda: len(world.server.bot_rtp) == len(packets))

        frames = [rtp.payload for rtp in world.server.bot_rtp]
        assert all(frame.endswith(b"\xfa\xfa") for frame in frames)
        decrypted = [speaker.session.decrypt(BOT_ID, davey.MediaType.audio, f) for f in frames]
        assert decrypted == packets
        assert [rtp.header.ssrc for rtp in world.server.bot_rtp] == [voice_client.ssrc] * 5


async def test_bad_proposal_signature_leaves_dave_never_ready_but_the_link_up() -> None:
    async with voice_world(bad_proposal_signature=True, response_timeout=0.3) as world:
        voice_client = await world.connect()
        await wait_until(lambda: voice_client._connection.dave_session is not None)
        speaker = await world.join(NOMINEE_ID)

        await wait_until(lambda: any("never answered" in e for e in world.server.dave_log))

        assert not voice_client.dave_ready()
        assert not speaker.in_group.is_set()
        assert voice_client.is_connected() and voice_client.link_alive()
        # VOICE_FACTS item 7: discord.py's websocket poller died on the proposal.
        runner = voice_client._connection._runner
        assert runner is not None and runner.done()
        assert "InvalidSignature" in str(runner.exception())


async def test_drop_connection_is_seen_by_the_voice_client() -> None:
    async with voice_world() as world:
        await world.join(NOMINEE_ID)
        voice_client = await connected_with_dave(world)

        await world.server.drop_connection()

        await wait_until(lambda: not voice_client.link_alive())


def test_split_commit_welcome_rejects_what_is_not_a_commit() -> None:
    with pytest.raises(ValueError):
        split_commit_welcome(b"\x00\x01\x00\x01")
    with pytest.raises(ValueError):
        split_commit_welcome(b"\x00\x02\x00\x01" + bytes(20))
