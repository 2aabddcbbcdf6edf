"""Posting a recording as a native Discord voice message (or as a plain attachment).

discord.py 2.7.1 cannot send a voice message: its ``File`` has no duration or
waveform and is sent as ``application/octet-stream``. A voice message is an
ordinary ``POST /channels/{id}/messages`` multipart request whose
``payload_json`` has the flag ``IS_VOICE_MESSAGE`` (``1 << 13``), no content,
and one attachment carrying ``duration_secs`` and ``waveform``; the file part
must have an ``audio/*`` content type.

Both functions build that form themselves but send it through discord.py's
own :meth:`discord.http.HTTPClient.request` with a :class:`~discord.http.Route`,
so rate limits, retries (which rewind the file) and errors are discord.py's:
failures raise :class:`discord.HTTPException` and its subclasses, e.g.
:class:`discord.Forbidden` where voice messages are not allowed, after which
the caller may fall back to :func:`post_audio_attachment`.
"""

from __future__ import annotations

import io
import json
import math
from typing import Any, Final

import discord
from discord.http import HTTPClient, Route

#: Message flag IS_VOICE_MESSAGE.
VOICE_MESSAGE_FLAG: Final = 1 << 13
#: Content type of the uploaded Ogg Opus file.
OGG_CONTENT_TYPE: Final = "audio/ogg"


def _payload_json(payload: dict[str, Any]) -> str:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=True)


async def _post_ogg(
    http: HTTPClient, channel_id: int, payload: dict[str, Any], audio: bytes, filename: str
) -> dict[str, Any]:
    """Send ``payload`` with ``audio`` as ``files[0]`` and return the created message."""
    file = discord.File(io.BytesIO(audio), filename=filename)
    form: list[dict[str, Any]] = [
        {"name": "payload_json", "value": _payload_json(payload)},
        {
            "name": "files[0]",
            "value": file.fp,
            "filename": filename,
            "content_type": OGG_CONTENT_TYPE,
        },
    ]
    route = Route("POST", "/channels/{channel_id}/messages", channel_id=channel_id)
    try:
        message: dict[str, Any] = await http.request(route, files=[file], form=form)
    finally:
        file.close()
    return message


async def post_voice_message(
    http: HTTPClient,
    channel_id: int,
    audio: bytes,
    duration_secs: float,
    waveform_b64: str,
    filename: str = "voice-message.ogg",
    *,
    nonce: str | None = None,
) -> dict[str, Any]:
    """Post Ogg Opus ``audio`` to a channel as a native voice message.

    Args:
        http: the bot's HTTP client (``bot.http``).
        channel_id: text channel (or thread) to post to.
        audio: the Ogg Opus file.
        duration_secs: its playable duration.
        waveform_b64: base64 of at most 256 amplitudes.
        filename: attachment name; Discord's clients use ``voice-message.ogg``.
        nonce: sent with ``enforce_nonce``, so a retry after a lost answer
            gives back the message already created instead of a second one.

    Returns:
        The created message as Discord returned it.

    Raises:
        ValueError: no audio, or a duration that is not a positive number.
        discord.HTTPException: Discord refused (``discord.Forbidden`` when
            the bot may not send voice messages there).
    """
    if not audio:
        raise ValueError("no audio to post")
    if not math.isfinite(duration_secs) or duration_secs <= 0:
        raise ValueError(f"duration_secs must be a positive number, not {duration_secs!r}")
    payload: dict[str, Any] = {
        "flags": VOICE_MESSAGE_FLAG,
        "attachments": [
            {
                "id": 0,
                "filename": filename,
                "duration_secs": float(duration_secs),
                "waveform": waveform_b64,
            }
        ],
    }
    if nonce is not None:
        payload.update(nonce=nonce, enforce_nonce=True)
    return await _post_ogg(http, channel_id, payload, audio, filename)


async def post_audio_attachment(
    http: HTTPClient,
    channel_id: int,
    audio: bytes,
    content: str | None = None,
    filename: str = "last-word.ogg",
    *,
    allowed_mentions: discord.AllowedMentions | None = None,
    nonce: str | None = None,
) -> dict[str, Any]:
    """Post Ogg Opus ``audio`` as an ordinary attachment, with an optional content line.

    The fallback where a voice message is refused. Mentions in ``content``
    notify nobody unless ``allowed_mentions`` says so.

    Returns:
        The created message as Discord returned it.

    Raises:
        ValueError: no audio.
        discord.HTTPException: Discord refused.
    """
    if not audio:
        raise ValueError("no audio to post")
    mentions = allowed_mentions if allowed_mentions is not None else discord.AllowedMentions.none()
    payload: dict[str, Any] = {
        "attachments": [{"id": 0, "filename": filename}],
        "allowed_mentions": mentions.to_dict(),
    }
    if content:
        payload["content"] = content
    if nonce is not None:
        payload.update(nonce=nonce, enforce_nonce=True)
    return await _post_ogg(http, channel_id, payload, audio, filename)
