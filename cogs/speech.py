"""What a last word posts (:mod:`cogs.lastword` records it): the lines that call the nominee and
follow his recording, the recording committed with its posts, and the outbox's handler that
uploads it.

A last word follows the game (:func:`interruption`): once the nominee is out of it
(killed, struck out, replaced) or the game is over, his recording is cut short, and
the one line about it says why, in the third person, with the length of what is
posted.

A last word is told where it is heard: in the cities voting on the nominee
and in his own city, one line in each, the first named ``lastword:{player}:
{token}`` and the others ``…:1``, ``…:2``, so that every edit (the clock, the
outcome) reaches all of them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
from pathlib import Path
from typing import Any

import discord
from discord.http import HTTPClient

from bot.i18n import NO_PINGS, mention, phrase
from bot.limits import CITIES
from bot.outbox.intents import Edit, Send, Voice
from bot.service import GameService, LiveGame
from bot.storage import GameState, OutboxItem
from bot.voice.ogg import RecordingInfo
from bot.voice.recorder import RecordingOutcome, RecordingResult
from bot.voice.upload import UploadError, prepare_upload
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


def interruption(live: LiveGame, player: str) -> str | None:
    """Why the game no longer lets ``player``'s last word go on, or None while it does:
    ``ended`` (the game is over), ``replaced``, ``out`` (killed, struck out), ``used`` (his
    last word is had), ``moved_on`` (any other refusal of the rules). Its words are
    ``lastword.reason.{reason}``."""
    game = live.game
    if game is None or game.over or live.record.state != GameState.RUNNING:
        return "ended"
    if player not in game.players:
        return "replaced"
    if player not in game.alive():
        return "out"
    try:
        game.check(RequestLastWord(player))
    except RuleError as error:
        return "used" if error.code == "last_word_used" else "moved_on"
    return None


def cancelled_text(live: LiveGame, player: str, reason: str) -> str:
    """The line of a last word that will not take place (``reason``: see :func:`interruption`)."""
    return phrase(
        live,
        "lastword.cancelled",
        player=mention(player),
        reason=phrase(live, f"lastword.reason.{reason}"),
    )


def cut_short_message(live: LiveGame, player: str, reason: str, duration: float) -> dict[str, Any]:
    """The line of a recording the game cut short: why, and how long what is posted lasts."""
    return closed_message(
        phrase(
            live,
            "lastword.outcome.cut_short",
            player=mention(player),
            reason=phrase(live, f"lastword.reason.{reason}"),
            length=clock_text(duration),
        )
    )


def channels_kept(live: LiveGame) -> bool:
    """Whether the game's channels are there to be posted in: it has some, and they are not
    being deleted with its end (``at_end: delete``)."""
    over = live.game is None or live.game.over or live.record.state != GameState.RUNNING
    deleted = over and live.record.lobby.get("at_end", "keep") == "delete"
    return bool(live.record.channels) and not deleted


def cut_short_items(
    live: LiveGame,
    player: str,
    part: Path,
    info: RecordingInfo | None,
    channels: list[int],
    refs: list[str],
    reason: str,
) -> list[OutboxItem]:
    """A recording the game cut short (``reason``: see :func:`interruption`): his line in
    each channel (``refs``) says why and how long what is posted lasts; what he said
    (``info``, None when nothing) follows it as a voice message, not as his last word (the
    rules no longer give him one). The recording ``part`` becomes the posted file. Nothing
    where the game's channels go with its end."""
    if not channels_kept(live):
        return []
    duration = info.duration_secs if info is not None else 0.0
    line = cut_short_message(live, player, reason, duration)
    items = [Edit(each, line).item() for each in refs]
    if info is not None:
        path = part.with_suffix("")  # name.ogg.part -> name.ogg
        os.replace(part, path)
        items += recording_items(
            live, player, path, duration, info.waveform, channels=channels, named=False
        )
    return items


def restart_items(live: LiveGame, player: str, token: str) -> list[OutboxItem]:
    """A recording a restart interrupted: his line (in each city it may have been told in)
    says so, and his cities are told he may ask again, while the game lets him."""
    line = closed_message(phrase(live, "lastword.outcome.interrupted", player=mention(player)))
    items = [Edit(ref, line).item() for ref in line_refs(f"lastword:{player}:{token}", CITIES)]
    if interruption(live, player) is None:
        text = phrase(live, "lastword.interrupted", player=mention(player))
        items += announce_items(live, text, player)
    return items


def announce_items(live: LiveGame, text: str, player: str) -> list[OutboxItem]:
    """A line where his last word is called: his city's channel and the cities voting on him
    (none once he is out of the game or its channels are gone)."""
    if not channels_kept(live) or live.game is None or player not in live.game.players:
        return []
    return [
        Send({"content": text, "allowed_mentions": NO_PINGS}, channel).item()
        for channel in city_channels(live, player)
    ]


def recording_items(
    live: LiveGame,
    player: str,
    path: Path,
    duration: float,
    waveform: str,
    *,
    channels: list[int] | None = None,
    named: bool = True,
) -> list[OutboxItem]:
    """In each of his channels (``channels``, else :func:`city_channels`), the line naming him
    (unless not ``named``: his line says it already), then the recording at ``path`` as a
    voice message (the last city's post removes the file)."""
    items = []
    where = channels if channels is not None else city_channels(live, player)
    for channel in where:
        if named:
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
                    "keep": channel != where[-1],
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


async def take_upload(
    service: GameService,
    folder: Path,
    live: LiveGame,
    player: str,
    file: discord.Attachment,
    *,
    interaction_id: int,
    max_mib: int,
) -> str:
    """``/lastword upload``: his own recording prepared in a worker thread (cut to the limit)
    and committed as his last word (:func:`publish`); his answer, also when it is refused."""
    game = live.game
    assert game is not None
    try:
        data = await file.read()
        prepared = await asyncio.to_thread(
            prepare_upload,
            data,
            file.filename,
            file.content_type,
            max_seconds=game.options.last_word_seconds,
        )
        return await publish(
            service,
            folder,
            live,
            player,
            secrets.token_hex(4),
            prepared.ogg_bytes,
            prepared.duration_secs,
            prepared.waveform,
            interaction_id=interaction_id,
        )
    except UploadError as error:
        log.info("upload of %s in game %s refused: %s (%s)", player, live.id, error.code, error)
        return phrase(live, f"upload.{error.code}", limit=max_mib)
    except (RuleError, discord.HTTPException) as error:
        log.info("upload of %s in game %s failed: %s", player, live.id, error)
        return phrase(live, "lastword.upload_failed")


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
    "cancelled_text",
    "channels_kept",
    "city_channels",
    "clock_text",
    "closed_message",
    "cut_short_items",
    "cut_short_message",
    "has_spoken",
    "interruption",
    "line_refs",
    "outcome_message",
    "post_voice",
    "progress_message",
    "publish",
    "recording_items",
    "restart_items",
    "take_upload",
]
