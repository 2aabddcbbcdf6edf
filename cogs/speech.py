"""What a last word posts (:mod:`cogs.lastword` records it): the lines that call the nominee and
follow his recording, the recording committed with its posts, and the outbox's handler that
uploads it.

A last word is told where it is heard: in the cities voting on the nominee
and in his own city, one line in each, the first named ``lastword:{player}:
{token}`` and the others ``…:1``, ``…:2``, so that every edit (the clock, the
outcome) reaches all of them.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import discord
from discord.http import HTTPClient

from bot.i18n import NO_PINGS, mention, phrase
from bot.outbox.intents import Send, Voice
from bot.service import GameService, LiveGame
from bot.storage import OutboxItem
from bot.voice.recorder import RecordingOutcome, RecordingResult
from bot.voice.voice_message import post_audio_attachment, post_voice_message
from rules import RequestLastWord, RuleError

log = logging.getLogger(__name__)


def clock_text(seconds: float) -> str:
    """``83.4`` → ``1:23``."""
    whole = int(seconds)
    return f"{whole // 60}:{whole % 60:02d}"


def line_refs(first: str, count: int) -> list[str]:
    """The message names of one last word's line in each of ``count`` channels."""
    return [first] + [f"{first}:{n}" for n in range(1, count)]


def city_channels(live: LiveGame, player: str) -> list[int]:
    """Where a last word is called and posted: the cities voting on him (those that
    nominated him today), then his own city."""
    game = live.game
    assert game is not None
    voting = [city for city in game.cities if player in game.nominees(city)]
    cities = list(dict.fromkeys([*voting, game.city_of(player)]))
    return [int(live.record.channels["cities"][city]["text"]) for city in cities]


def progress_message(
    live: LiveGame, player: str, elapsed: float, limit: int, *, recording: bool
) -> dict[str, Any]:
    """The line calling him to the tribune (``recording``: the clock of his recording), with
    its Stop button."""
    key = "lastword.recording" if recording else "lastword.calling"
    content = phrase(
        live,
        key,
        player=mention(player),
        elapsed=clock_text(elapsed),
        limit=clock_text(limit),
        tribune=f"<#{live.record.channels.get('voice')}>",
    )
    return {
        "content": content,
        "allowed_mentions": NO_PINGS,
        "components": [
            {
                "type": 1,
                "components": [
                    {
                        "type": 2,
                        "style": 4,
                        "custom_id": f"mafia:stop:{live.id}:{player}",
                        "label": phrase(live, "lastword.stop"),
                    }
                ],
            }
        ],
    }


def closed_message(content: str) -> dict[str, Any]:
    """The line's last state: its text, its Stop button gone."""
    return {"content": content, "components": [], "allowed_mentions": NO_PINGS}


def outcome_message(
    live: LiveGame, player: str, result: RecordingResult, duration: float
) -> dict[str, Any]:
    """The line once his recording is over: how it ended, and how long it is."""
    key = f"lastword.outcome.{result.outcome.value}"
    if result.outcome is RecordingOutcome.connection_lost and not result.technical_failure:
        key = "lastword.outcome.connection_lost_kept"  # what he said is posted
    return closed_message(phrase(live, key, player=mention(player), length=clock_text(duration)))


def announce_items(live: LiveGame, text: str, player: str) -> list[OutboxItem]:
    """A line where his last word is called: his city's channel and the cities voting on him
    (none once he is out of the game or its channels are gone)."""
    if live.game is None or not live.record.channels or player not in live.game.players:
        return []
    return [
        Send({"content": text, "allowed_mentions": NO_PINGS}, channel).item()
        for channel in city_channels(live, player)
    ]


def recording_items(
    live: LiveGame, player: str, path: Path, duration: float, waveform: str
) -> list[OutboxItem]:
    """In each of his channels, the line naming him, then the recording at ``path`` as a voice
    message (the last city's post removes the file)."""
    items = []
    for channel in city_channels(live, player):
        items.append(
            Send(
                {
                    "content": phrase(
                        live,
                        "lastword.posted",
                        player=mention(player),
                        length=clock_text(duration),
                    ),
                    "allowed_mentions": NO_PINGS,
                },
                channel,
            ).item()
        )
        items.append(
            Voice(
                channel,
                {
                    "path": str(path),
                    "duration": duration,
                    "waveform": waveform,
                    "fallback": phrase(live, "lastword.attachment", player=mention(player)),
                    "keep": channel != city_channels(live, player)[-1],
                },
            ).item()
        )
    return items


def has_spoken(live: LiveGame, player: str) -> bool:
    """Whether the rules have the player's last word of today (it is committed)."""
    return live.game is not None and player in live.game.last_words


async def publish(
    service: GameService,
    folder: Path,
    live: LiveGame,
    player: str,
    token: str,
    audio: bytes,
    duration: float,
    waveform: str,
    *,
    interaction_id: int | None = None,
) -> str:
    """Store the file in ``folder``, then commit the last word with the items that post it; the
    player's answer.

    Raises:
        RuleError: the rules refuse his last word now (the file is removed).
    """
    path = folder / f"{live.id}-{player}-{token}.ogg"
    with path.open("wb") as handle:
        handle.write(audio)
        handle.flush()
        os.fsync(handle.fileno())
    items = recording_items(live, player, path, duration, waveform)
    try:
        await service.apply(
            live.id,
            RequestLastWord(player),
            source="player",
            interaction_id=interaction_id,
            extra_outbox=items,
        )
    except RuleError:
        path.unlink(missing_ok=True)  # refused before anything was stored: nothing refers to it
        raise
    except BaseException:
        if not has_spoken(live, player):  # committed, then interrupted: the outbox posts it
            path.unlink(missing_ok=True)
        raise
    return phrase(live, "lastword.done")


async def post_voice(http: HTTPClient, item: OutboxItem) -> int | None:
    """A ``voice`` item carried out: a voice message, else a plain attachment."""
    path = Path(item.payload["path"])
    if not path.exists():
        log.error("recording %s of outbox item %s is missing; nothing to post", path, item.id)
        return None
    audio = path.read_bytes()
    channel = int(item.target["channel_id"])
    nonce = f"ob{item.id}"
    try:
        message = await post_voice_message(
            http,
            channel,
            audio,
            float(item.payload["duration"]),
            str(item.payload["waveform"]),
            nonce=nonce,
        )
    except discord.HTTPException as error:
        if error.status not in (400, 403):
            raise
        log.info("voice message refused (%s); posting the recording as an attachment", error)
        message = await post_audio_attachment(
            http, channel, audio, str(item.payload.get("fallback") or ""), nonce=nonce
        )
    if not item.payload.get("keep"):  # the last city's post: the file is done with
        path.unlink(missing_ok=True)
    return int(message["id"])


__all__ = [
    "announce_items",
    "city_channels",
    "clock_text",
    "closed_message",
    "has_spoken",
    "line_refs",
    "outcome_message",
    "post_voice",
    "progress_message",
    "publish",
    "recording_items",
]
