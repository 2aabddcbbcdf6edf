"""Posting voice messages through discord.py's HTTPClient to a tiny local server."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import discord
import pytest
from aiohttp import web
from discord.http import HTTPClient, Route

from bot.voice.voice_message import (
    VOICE_MESSAGE_FLAG,
    post_audio_attachment,
    post_voice_message,
)

CHANNEL_ID = 1_234_567_890_123
AUDIO = b"OggS" + bytes(range(256)) * 40 + b"\r\n--not-a-boundary\r\n" + b"\xff\x00" * 100
WAVEFORM = base64.b64encode(bytes([0, 40, 255, 128, 3])).decode()


@dataclass
class Part:
    name: str
    filename: str | None
    content_type: str | None
    data: bytes


@dataclass
class Captured:
    method: str
    path: str
    headers: dict[str, str]
    parts: list[Part]


@dataclass
class FakeDiscord:
    """Answers login and message creation; can answer 429 a number of times first."""

    requests: list[Captured] = field(default_factory=list)
    rate_limit_first: int = 0
    refuse_voice: bool = False

    async def me(self, request: web.Request) -> web.Response:
        user = {"id": "42", "username": "prokurator", "discriminator": "0", "avatar": None}
        return self._json(user)

    async def create_message(self, request: web.Request) -> web.Response:
        reader = await request.multipart()
        parts: list[Part] = []
        while (part := await reader.next()) is not None:
            assert isinstance(part, aiohttp.BodyPartReader)
            parts.append(
                Part(
                    name=part.name or "",
                    filename=part.filename,
                    content_type=part.headers.get("Content-Type"),
                    data=await part.read(),
                )
            )
        self.requests.append(Captured(request.method, request.path, dict(request.headers), parts))
        if self.rate_limit_first > 0:
            self.rate_limit_first -= 1
            body = {"message": "You are being rate limited.", "retry_after": 0.01, "global": False}
            return self._json(body, status=429, headers={"Via": "1.1 google"})
        payload = json.loads(parts[0].data)
        if self.refuse_voice and payload.get("flags", 0) & VOICE_MESSAGE_FLAG:
            return self._json({"message": "Missing Permissions", "code": 50013}, status=403)
        message = {
            "id": "555",
            "channel_id": request.match_info["channel_id"],
            "flags": payload.get("flags", 0),
            "content": payload.get("content", ""),
            "attachments": [
                {**attachment, "id": "777", "size": len(parts[1].data), "url": "http://x/a.ogg"}
                for attachment in payload["attachments"]
            ],
        }
        return self._json(message)

    @staticmethod
    def _json(
        body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None
    ) -> web.Response:
        # discord.py wants exactly "application/json" (see VOICE_FACTS.md).
        response = web.Response(text=json.dumps(body), status=status, headers=headers)
        response.content_type = "application/json"
        response.charset = None
        return response


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    yield FakeDiscord()


@pytest.fixture
async def http(fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[HTTPClient]:
    app = web.Application()
    app.router.add_get("/api/v10/users/@me", fake.me)
    app.router.add_post("/api/v10/channels/{channel_id}/messages", fake.create_message)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    monkeypatch.setattr(Route, "BASE", f"http://127.0.0.1:{port}/api/v10")
    client = HTTPClient(asyncio.get_running_loop())
    await client.static_login("test-token")
    try:
        yield client
    finally:
        await client.close()
        await runner.cleanup()


async def test_voice_message_multipart(http: HTTPClient, fake: FakeDiscord) -> None:
    message = await post_voice_message(http, CHANNEL_ID, AUDIO, 12.34, WAVEFORM)

    [request] = fake.requests
    assert request.method == "POST"
    assert request.path == f"/api/v10/channels/{CHANNEL_ID}/messages"
    assert request.headers["Authorization"] == "Bot test-token"
    assert request.headers["Content-Type"].startswith("multipart/form-data; boundary=")
    payload_part, file_part = request.parts
    assert payload_part.name == "payload_json"
    payload = json.loads(payload_part.data)
    assert payload == {
        "flags": 8192,
        "attachments": [
            {
                "id": 0,
                "filename": "voice-message.ogg",
                "duration_secs": 12.34,
                "waveform": WAVEFORM,
            }
        ],
    }
    assert "content" not in payload and "embeds" not in payload
    assert file_part.name == "files[0]"
    assert file_part.filename == "voice-message.ogg"
    assert file_part.content_type == "audio/ogg"
    assert file_part.data == AUDIO
    assert message["flags"] == VOICE_MESSAGE_FLAG
    assert message["attachments"][0]["waveform"] == WAVEFORM


async def test_rate_limit_retry_sends_the_whole_file_again(
    http: HTTPClient, fake: FakeDiscord
) -> None:
    fake.rate_limit_first = 2
    message = await post_voice_message(http, CHANNEL_ID, AUDIO, 1.5, WAVEFORM, "last.ogg")
    assert len(fake.requests) == 3
    for request in fake.requests:
        assert request.parts[1].data == AUDIO, "discord.py rewinds the file before a retry"
        assert json.loads(request.parts[0].data)["attachments"][0]["filename"] == "last.ogg"
    assert message["id"] == "555"


async def test_refusal_raises_discord_errors_and_the_fallback_posts_an_attachment(
    http: HTTPClient, fake: FakeDiscord
) -> None:
    fake.refuse_voice = True
    with pytest.raises(discord.Forbidden):
        await post_voice_message(http, CHANNEL_ID, AUDIO, 3.0, WAVEFORM)

    content = "Последнее слово <@42>"
    message = await post_audio_attachment(http, CHANNEL_ID, AUDIO, content)
    request = fake.requests[-1]
    payload = json.loads(request.parts[0].data)
    assert payload == {
        "content": content,
        "attachments": [{"id": 0, "filename": "last-word.ogg"}],
        "allowed_mentions": {"parse": []},
    }
    assert "flags" not in payload
    file_part = request.parts[1]
    assert (file_part.name, file_part.filename) == ("files[0]", "last-word.ogg")
    assert file_part.content_type == "audio/ogg"
    assert file_part.data == AUDIO
    assert message["content"] == content


async def test_fallback_with_mentions_allowed(http: HTTPClient, fake: FakeDiscord) -> None:
    await post_audio_attachment(
        http,
        CHANNEL_ID,
        AUDIO,
        filename="word.ogg",
        allowed_mentions=discord.AllowedMentions(users=True, everyone=False, roles=False),
    )
    payload = json.loads(fake.requests[-1].parts[0].data)
    assert payload["allowed_mentions"] == {"parse": ["users"], "replied_user": True}
    assert "content" not in payload


@pytest.mark.parametrize("duration", [0.0, -1.0, float("nan"), float("inf")])
async def test_bad_duration_is_refused_before_any_request(
    http: HTTPClient, fake: FakeDiscord, duration: float
) -> None:
    with pytest.raises(ValueError):
        await post_voice_message(http, CHANNEL_ID, AUDIO, duration, WAVEFORM)
    with pytest.raises(ValueError):
        await post_voice_message(http, CHANNEL_ID, b"", 1.0, WAVEFORM)
    assert fake.requests == []
