"""A finished game's page and its text twin as files (:mod:`bot.transcript_page`): what the
season's transcript posts in the archive channel, and what ``/mafia game N`` attaches again
when that message is gone.

:func:`reading_of` turns the channels' history as Discord gave it into a
:class:`~bot.transcript_page.Reading`: each message's author by the name the client shows, and
the names of the members (authors and those mentioned), roles and channels its text names, as
the guild has them at that moment (before the game's channels and roles are deleted).
"""

from __future__ import annotations

import asyncio
import datetime
import io
import logging
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import discord

from bot.picture import PictureError, render_png
from bot.readable import Readable
from bot.transcript_page import (
    ChannelRead,
    Reading,
    Said,
    page_data,
    page_html,
    page_text,
    readable_for,
    summary_text,
)

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

log = logging.getLogger(__name__)


def _name(user: dict[str, Any]) -> str:
    return str(user.get("global_name") or user.get("username") or user.get("id") or "?")


def said_of(message: dict[str, Any]) -> Said:
    """One message of a channel's history as the page keeps it."""
    when = datetime.datetime.fromisoformat(str(message["timestamp"])).timestamp()
    parts = [str(message.get("content") or "")]
    parts += [f"📎 {a.get('filename', '')}" for a in message.get("attachments") or []]
    for embed in message.get("embeds") or []:
        parts += [str(text) for text in (embed.get("title"), embed.get("description")) if text]
    return Said(when, _name(message.get("author") or {}), "\n".join(p for p in parts if p))


async def host_name(bot: ProkuratorBot, guild_id: int, game_id: int) -> dict[str, str]:
    """The game's host by the name the server shows (none if he left it or it is unknown)."""
    archived = await bot.storage.archived_game(game_id)
    guild = bot.get_guild(guild_id)
    if archived is None or guild is None:
        return {}
    member = guild.get_member(archived.host_id)
    if member is None:
        try:
            member = await guild.fetch_member(archived.host_id)
        except discord.HTTPException:
            return {}
    return {str(member.id): member.display_name}


def reading_of(
    guild: discord.Guild | None,
    zone: str,
    read: list[tuple[str, list[dict[str, Any]] | None, str | None]],
    known: dict[str, str] | None = None,
) -> Reading:
    """What was read: ``read`` holds each channel's heading, its history (None: not read) and
    why it was not."""
    members: dict[str, str] = dict(known or {})
    channels: list[ChannelRead] = []
    for heading, history, unread in read:
        for message in history or []:
            for user in [message.get("author") or {}, *(message.get("mentions") or [])]:
                if user.get("id"):
                    members[str(user["id"])] = _name(user)
        channels.append(ChannelRead(heading, [said_of(m) for m in history or []], unread))
    if guild is not None:
        for member in guild.members:
            members.setdefault(str(member.id), member.display_name)
    return Reading(
        zone,
        members,
        {str(role.id): role.name for role in guild.roles} if guild else {},
        {str(channel.id): channel.name for channel in guild.channels} if guild else {},
        channels,
    )


@dataclass(frozen=True)
class Pages:
    """A game's page (HTML, UTF-8), its text twin (UTF-8), the twin's lines before the
    channels, and the names and zone its texts are written out with."""

    html: bytes
    text: bytes
    summary: list[str]
    readable: Readable


async def page_files(
    bot: ProkuratorBot, game_id: int, language: str, reading: Reading | None
) -> Pages | None:
    """The game's page and its text twin (None: the game is not archived)."""
    archived = await bot.storage.archived_game(game_id)
    if archived is None:
        return None
    reading = reading or Reading()
    try:
        picture: bytes | None = await asyncio.to_thread(partial(render_png, archived, language))
    except PictureError as error:
        log.warning("game %s: its page has no picture: %s", game_id, error)
        picture = None
    data = page_data(archived, language, reading, picture=picture)
    return Pages(
        page_html(data).encode("utf-8"),
        page_text(data).encode("utf-8"),
        summary_text(data),
        readable_for(archived, language, reading),
    )


def as_files(game_id: int, pages: Pages) -> list[discord.File]:
    """The two pages as attachments."""
    return [
        discord.File(io.BytesIO(pages.html), filename=f"game-{game_id}.html"),
        discord.File(io.BytesIO(pages.text), filename=f"game-{game_id}.txt"),
    ]


async def lost_pages(bot: ProkuratorBot, game_id: int, language: str) -> list[discord.File]:
    """The game's page and text twin as files when its transcript was posted and that message is
    gone (the archive channel or the message deleted); none while it is there, or if there
    never was one. Asked without a refusal: the channel by the gateway's cache, the message by
    reading the history around it (a message gone is not there, where a GET would be a 404)."""
    row = await bot.storage.transcript(game_id)
    if row is None or row["state"] != "done" or row["message_id"] is None:
        return []
    channel_id, message_id = int(row["channel_id"]), int(row["message_id"])
    if bot.get_channel(channel_id) is not None:
        try:
            around = await bot.http.logs_from(channel_id, 1, around=message_id)
        except discord.HTTPException as error:
            log.warning("game %s: its transcript could not be looked at: %s", game_id, error)
            return []
        if any(int(m["id"]) == message_id for m in around):
            return []
    data = await bot.storage.reading(game_id)
    pages = await page_files(bot, game_id, language, Reading.unpack(data) if data else None)
    log.info("game %s: its transcript's message is gone; its pages are attached again", game_id)
    return as_files(game_id, pages) if pages is not None else []


__all__ = ["Pages", "host_name", "lost_pages", "as_files", "page_files", "reading_of", "said_of"]
