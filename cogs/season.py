"""A season fits in a server: a finished game's channels become one transcript, its roles go.

Discord caps a guild at 500 channels and 250 roles; a 2-city game kept at its
end (``channels.at_end: keep``) leaves 8 channels and 3 roles, so a community
would hit the cap after some sixty games. After a delay (``/host setup
archive_after``, default ``channels.archive_after`` of the config: 24 hours) a
finished game's channels are read back (their whole history, 100 messages a
page) and posted as one transcript, a text file split in parts under Discord's
10 MiB upload, in a single archive channel the bot keeps per guild
(``#архив-игр``: everyone reads, only the bot writes); then its channels and
roles are deleted. ``/mafia game N`` links the transcript.

What it holds: every city channel, the tribune's chat and the dead's channel,
and the mafia rooms and the host's log only when the game opened them to its
players at the end (``reveal_at_end``): a transcript never tells more than the
game did. Discord gives a bot the text of other people's messages only with the
Message Content intent enabled for it in the developer portal; without it the
transcript holds the bot's own messages and says the rest was not readable.

Durable like the rest (the transcripts table, migration V7): scheduled when a
game ends (and at start, for games that ended unscheduled); at its time the
state moves to ``posting`` in the same transaction as the ``transcript``
outbox item; once Discord took it, to ``done`` with the deletes. If Discord
refuses the transcript for good, nothing is deleted: the state is ``failed``
and the host's log says why, in the server's language (:mod:`cogs.failures`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import io
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

import discord
from discord.ext import commands
from discord.http import handle_message_parameters

from bot.channels import TEXT, end_of_game_items, missing_permissions
from bot.i18n import t
from bot.outbox.intents import Send, Transcript
from bot.permissions import BOT, READ, SILENCE
from bot.readable import zone_of
from bot.service import LiveGame
from bot.storage import FINISHED, GameRecord, OutboxItem
from bot.wiring import Hooks
from cogs.failures import failure_of, failure_text
from cogs.pages import host_name, page_files, reading_of

if TYPE_CHECKING:
    from discord.types.channel import ChannelType

    from bot.bot import ProkuratorBot

log = logging.getLogger(__name__)

#: how soon a transcript that could not begin is tried again (sooner: when the database is back)
RETRY = 60.0
#: messages Discord gives in one page of a channel's history
PAGE = 100
#: bytes in one uploaded file (Discord's 10 MiB for a server without boosts), with room for the form
PART_BYTES = 10 * 1024 * 1024 - 64 * 1024
#: the longest the keeper sleeps before it looks at the table again
LOOK_AGAIN = 3600.0
#: Discord's application flags that give a bot the text of other people's messages
MESSAGE_CONTENT_FLAGS = (1 << 18) | (1 << 19)


def archive_after(record: GameRecord, default: int) -> int:
    """Seconds after the end until a game's channels are archived (0: never)."""
    return int(record.lobby.get("archive_after", default))


def wants_transcript(record: GameRecord) -> bool:
    """A finished game whose channels were made and kept at its end."""
    return (
        record.state in FINISHED
        and "roles" in record.channels
        and record.lobby.get("at_end", "keep") == "keep"
    )


def transcript_channels(record: GameRecord, language: str) -> list[tuple[str, int]]:
    """(heading, channel id) of what a game's transcript holds, in order (see the module
    docstring: the mafia rooms and the log only if they were revealed)."""
    channels = record.channels
    revealed = bool(record.lobby.get("reveal", True))
    found: list[tuple[str, int]] = []
    for city, ids in channels.get("cities", {}).items():
        found.append((t(language, "channel.city", city=city), int(ids["text"])))
        if revealed:
            found.append((t(language, "channel.mafia", city=city), int(ids["mafia"])))
    found.append((t(language, "channel.voice"), int(channels["voice"])))
    found.append((t(language, "channel.dead"), int(channels["dead"])))
    if revealed:
        found.append((t(language, "channel.log"), int(channels["log"])))
    return found


def message_lines(
    message: dict[str, Any], language: str, *, readable: bool, zone: datetime.tzinfo = datetime.UTC
) -> list[str]:
    """One message of a channel's history as lines of the transcript (its time in ``zone``)."""
    author = message.get("author") or {}
    name = author.get("global_name") or author.get("username") or "?"
    when = datetime.datetime.fromisoformat(str(message["timestamp"])).astimezone(zone)
    head = f"[{when:%Y-%m-%d %H:%M:%S}] {name}:"
    content = str(message.get("content") or "")
    lines = [f"{head} {content}" if content else head]
    for attachment in message.get("attachments") or []:
        lines.append(
            f"    📎 {attachment.get('filename', '')} {attachment.get('url', '')}".rstrip()
        )
    for embed in message.get("embeds") or []:
        for text in (embed.get("title"), embed.get("description")):
            if text:
                lines.append(f"    {text}")
    if (
        not content
        and not message.get("attachments")
        and not message.get("embeds")
        and not readable
    ):
        lines[0] = f"{head} {t(language, 'transcript.unreadable_message')}"
    return lines


def split_parts(lines: list[str], limit: int = PART_BYTES) -> list[bytes]:
    """The transcript as UTF-8 files of at most ``limit`` bytes each, split between lines (a line
    longer than a whole part is cut, never inside a character)."""
    parts: list[bytes] = []
    current = bytearray()
    for line in lines:
        data = (line + "\n").encode("utf-8")
        while len(data) > limit:
            cut = limit
            while cut > 0 and (data[cut] & 0xC0) == 0x80:  # not inside a character
                cut -= 1
            if current:
                parts.append(bytes(current))
                current = bytearray()
            parts.append(data[:cut])
            data = data[cut:]
        if len(current) + len(data) > limit:
            parts.append(bytes(current))
            current = bytearray()
        current += data
    if current or not parts:
        parts.append(bytes(current))
    return parts


class SeasonCog(commands.Cog):
    """Schedules, posts and finishes the transcripts of finished games."""

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._locks: dict[int, asyncio.Lock] = {}
        self._scheduled: set[int] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._posting: set[int] = set()
        """Games whose transcript item is in the outbox (the lane's idle hook looks only at them)."""
        self.part_bytes = PART_BYTES
        """Bytes in one file of a transcript."""

    def hooks(self) -> Hooks:
        """The outbox's ``transcript`` items, its idle lanes and refusals; after every commit,
        a game that ended is scheduled."""
        return Hooks(
            outbox_handlers={"transcript": self.post_transcript},
            idle_hooks=[self._lane_idle],
            failure_hooks=[self._refused],
            after_commit=[self.game_ended],
        )

    async def cog_load(self) -> None:
        """Start the keeper (it first schedules games that ended unscheduled); it looks again
        as soon as the database is back after an outage (it sleeps in ``Health.sleep``)."""
        self._task = asyncio.get_running_loop().create_task(self._keep(), name="season-keeper")

    async def cog_unload(self) -> None:
        """Stop the keeper and the hooks (what is scheduled stays stored)."""
        for hooks, hook in (
            (self.bot.outbox.idle_hooks, self._lane_idle),
            (self.bot.outbox.failure_hooks, self._refused),
            (self.bot.service.after_commit, self.game_ended),
        ):
            if hook in hooks:
                hooks.remove(hook)  # type: ignore[arg-type]
        for task in [self._task, *self._tasks]:
            if task is not None:
                task.cancel()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    # ------------------------------------------------------------------ scheduling

    def game_ended(self, live: LiveGame) -> None:
        """The service's after-commit hook: schedule a game that has just ended."""
        record = live.record
        if record.id in self._scheduled or not wants_transcript(record):
            return
        self._scheduled.add(record.id)
        task = asyncio.get_running_loop().create_task(
            self._schedule(record), name=f"season-schedule-{record.id}"
        )
        self._tasks.add(task)  # the loop keeps only a weak reference to a task
        task.add_done_callback(self._tasks.discard)

    async def _schedule(self, record: GameRecord) -> None:
        delay = archive_after(record, self.bot.config.channels.archive_after)
        if delay <= 0:
            log.info("game %s: its channels are kept (no archiving)", record.id)
            return
        try:
            await self.bot.storage.schedule_transcript(
                record.id, record.guild_id, self.bot.clock() + delay
            )
        except Exception:
            self._scheduled.discard(record.id)  # the keeper finds it again at the next start
            log.exception("game %s: could not schedule its transcript", record.id)
            return
        log.info("game %s: its channels become a transcript in %d s", record.id, delay)
        self._wake.set()

    async def _keep(self) -> None:
        delay = 1.0
        while True:
            try:
                await self._look()
                return
            except Exception:
                # the database (a full disk, say): what is scheduled stays stored
                log.exception("the transcripts' keeper failed; looking again in %.0f s", delay)
                await self.bot.storage.health.wait(delay)  # at once when the database is back
                delay = min(delay * 2, LOOK_AGAIN)

    async def _look(self) -> None:
        for game_id in await self.bot.storage.unscheduled_finished():
            record = await self.bot.storage.game(game_id)
            if record is not None and wants_transcript(record):
                self._scheduled.add(game_id)
                await self._schedule(record)
        for game_id, _ in await self.bot.storage.transcripts_due("posting"):
            self._posting.add(game_id)
            await self._lane_idle(game_id, "messages")  # posted just before a restart: finish it
        while True:
            self._wake.clear()
            due = await self.bot.storage.transcripts_due()
            now = self.bot.clock()
            failed = False
            for game_id, at in due:
                if at <= now:
                    try:
                        await self._begin(game_id)
                    except Exception:  # it stays due: tried again when the database is back
                        failed = True
                        log.exception("game %s: could not begin its transcript", game_id)
            later = [at - now for _, at in due if at > now] + ([RETRY] if failed else [])
            await self.bot.storage.health.sleep(self._wake, min([LOOK_AGAIN, *later]))

    async def _begin(self, game_id: int) -> None:
        """Its time has come: the transcript item, stored as the state moves to posting."""
        record = await self.bot.storage.game(game_id)
        if record is None or not wants_transcript(record):
            return
        language = await self.bot.service.language(record.guild_id)
        item = Transcript(
            record.guild_id,
            {
                "game": game_id,
                "language": language,
                "channels": transcript_channels(record, language),
            },
            lane="messages",
        ).item()
        if await self.bot.storage.begin_transcript(game_id, [item]):
            # only now: an idle hook of the lane while the state was still due would have taken
            # the game off the list for good (its transcript posted, its channels never deleted);
            # the kick after it makes the lane's idle hook look again in any case
            self._posting.add(game_id)
            log.info("game %s: posting its transcript", game_id)
            self.bot.outbox.kick(game_id, ("messages",))

    # ------------------------------------------------------------------ the outbox's side

    async def post_transcript(self, item: OutboxItem) -> int | None:
        """The outbox handler of ``transcript`` items: read every channel back, post the game's
        page and the text's parts in the archive channel (each with its nonce: a retry gives
        back what was posted)."""
        guild_id = int(item.target["guild_id"])
        language = str(item.payload["language"])
        game = int(item.payload["game"])
        # asked each time: the intent is toggled in the portal, without a reconnect
        readable = bool((await self.bot.application_info()).flags.value & MESSAGE_CONTENT_FLAGS)
        lines = [t(language, "transcript.title", game=game)]
        if not readable:
            lines.append(t(language, "transcript.no_content_intent"))
        read = await self._read_back(item, lines, readable)
        host = await host_name(self.bot, guild_id, game)
        reading = reading_of(self.bot.get_guild(guild_id), self.bot.config.time_zone, read, host)
        await self.bot.storage.save_reading(game, reading.pack())
        pages = await page_files(self.bot, game, language, reading)
        archive = await self._archive_channel(guild_id, language)
        if pages is not None:  # the text twin: the game in words, then its channels, names resolved
            head = 1 if readable else 2  # the title (and the missing intent's line)
            body = [pages.readable.text(line) for line in lines[head:]]
            lines = [*lines[:head], "", *pages.summary, *body]
        # a part posted by an attempt whose answer was lost (a retry, a restart) is not posted
        # twice: the bot's own recent posts there are known by their captions
        bot_id = str(self.bot.user.id) if self.bot.user else ""
        posted = {
            str(m.get("content")): int(m["id"])
            for m in await self.bot.http.logs_from(archive, PAGE)
            if str((m.get("author") or {}).get("id")) == bot_id
        }
        files: list[tuple[str, str, bytes]] = []
        if pages is not None and len(pages.html) <= self.part_bytes:
            caption = t(language, "transcript.page", game=game)
            files.append((caption, f"game-{game}.html", pages.html))
        parts = split_parts(lines, self.part_bytes)
        for number, data in enumerate(parts, 1):
            name = f"game-{game}.txt" if len(parts) == 1 else f"game-{game}-part{number}.txt"
            caption = t(language, "transcript.posted", game=game, part=number, parts=len(parts))
            files.append((caption, name, data))
        first: int | None = None
        for number, (caption, name, data) in enumerate(files, 1):
            message_id = posted.get(caption)
            if message_id is None:
                with handle_message_parameters(
                    content=caption,
                    file=discord.File(io.BytesIO(data), filename=name),
                    nonce=f"ob{item.id}p{number}",
                    allowed_mentions=discord.AllowedMentions.none(),
                ) as params:
                    message_id = int(
                        (await self.bot.http.send_message(archive, params=params))["id"]
                    )
            first = first if first is not None else message_id
        return first

    async def _read_back(
        self, item: OutboxItem, lines: list[str], readable: bool
    ) -> list[tuple[str, list[dict[str, Any]] | None, str | None]]:
        """Every channel of the transcript read back: its lines added to ``lines``; each
        channel's heading, history (None: not read) and why not."""
        language, game = str(item.payload["language"]), int(item.payload["game"])
        zone = zone_of(self.bot.config.time_zone)
        read: list[tuple[str, list[dict[str, Any]] | None, str | None]] = []
        for heading, channel_id in item.payload["channels"]:
            lines += ["", f"=== #{heading} ==="]
            try:
                history = await self._history(int(channel_id))
            except discord.HTTPException as error:
                log.warning(
                    "game %s: channel %s not read for its transcript: %s", game, channel_id, error
                )
                reason = failure_text(language, failure_of(error))
                lines.append(t(language, "transcript.unread", reason=reason))
                read.append((heading, None, lines[-1]))
                continue
            read.append((heading, history, None))
            for message in history:
                lines += message_lines(message, language, readable=readable, zone=zone)
        return read

    async def _history(self, channel_id: int) -> list[dict[str, Any]]:
        """A channel's whole history, oldest first, a page of 100 at a time."""
        messages: list[dict[str, Any]] = []
        before: int | None = None
        while True:
            # read as plain JSON (:func:`message_lines`), not as discord.py's typed messages
            page = cast(
                list[dict[str, Any]],
                await self.bot.http.logs_from(channel_id, PAGE, before=before),
            )
            messages += page
            if len(page) < PAGE:
                break
            before = min(int(message["id"]) for message in page)
        return sorted(messages, key=lambda message: int(message["id"]))

    async def _archive_channel(self, guild_id: int, language: str) -> int:
        """The guild's archive channel: the stored one if Discord still has it, else one found by
        its topic (made by a call whose answer was lost), else a new one."""
        async with self._locks.setdefault(guild_id, asyncio.Lock()):
            stored = await self.bot.storage.season_channel(guild_id)
            channels = await self.bot.http.get_all_guild_channels(guild_id)
            ids = {int(channel["id"]) for channel in channels}
            if stored is not None and stored in ids:
                return stored
            topic = t(language, "channel.topic.archive")
            found = next(
                (
                    int(c["id"])
                    for c in channels
                    if c.get("topic") == topic and int(c["type"]) == TEXT
                ),
                None,
            )
            if found is None:
                bot_id = self.bot.user.id if self.bot.user else 0
                overwrites = [
                    # everyone reads, nobody writes but the bot (as in a game's channels at its end)
                    {
                        "id": str(guild_id),
                        "type": 0,
                        "allow": str(READ.value),
                        "deny": str(SILENCE.value),
                    },
                    {"id": str(bot_id), "type": 1, "allow": str(BOT.value), "deny": "0"},
                ]
                made = await self.bot.http.create_channel(
                    guild_id,
                    cast("ChannelType", TEXT),  # discord.py takes a channel type as a literal
                    name=t(language, "channel.archive"),
                    topic=topic,
                    permission_overwrites=overwrites,
                    reason=t(language, "channel.topic.archive"),
                )
                found = int(made["id"])
                log.info("guild %s: archive channel %s made", guild_id, found)
            await self.bot.storage.set_season_channel(guild_id, found)
            return found

    async def _lane_idle(self, game_id: int, lane: str) -> None:
        """A game's messages lane has nothing left: a transcript posted is finished (its channels
        and roles deleted, in the same transaction as the state's move to done)."""
        if lane != "messages" or game_id not in self._posting:
            return
        row = await self.bot.storage.transcript(game_id)
        if row is None or row["state"] != "posting":
            self._posting.discard(game_id)
            return
        state, message_id = await self.bot.storage.transcript_posted(game_id)
        if state != "sent" or message_id is None:
            return
        record = await self.bot.storage.game(game_id)
        channel = await self.bot.storage.season_channel(row["guild_id"])
        if record is None or channel is None:
            return
        deletes = [
            replace(item, lane="messages")
            for item in end_of_game_items(record.channels, None, "delete")
        ]
        self._posting.discard(game_id)
        if await self.bot.storage.finish_transcript(game_id, channel, message_id, deletes):
            log.info(
                "game %s: transcript posted (message %s); deleting its channels and roles",
                game_id,
                message_id,
            )
            self.bot.outbox.kick(game_id, ("messages",))

    async def _refused(self, item: OutboxItem, error: BaseException) -> None:
        """Discord refused the transcript for good: nothing is deleted; the host's log says why."""
        if item.kind != "transcript":
            return
        language = str(item.payload.get("language") or "ru")
        guild = self.bot.get_guild(int(item.target["guild_id"]))
        lacking = missing_permissions(guild.me.guild_permissions) if guild is not None else []
        failure = failure_of(error, lacking=lacking if isinstance(error, discord.Forbidden) else [])
        record = await self.bot.storage.game(item.game_id)
        notice: list[OutboxItem] = []
        if record is not None and record.channels.get("log") is not None:
            text = t(
                language,
                "transcript.failed",
                game=item.game_id,
                reason=failure_text(language, failure),
            )
            notice.append(
                Send(
                    {"content": text, "allowed_mentions": {"parse": []}},
                    int(record.channels["log"]),
                    lane="messages",
                ).item()
            )
        self._posting.discard(item.game_id)
        await self.bot.storage.transcript_failed(item.game_id, failure.to_dict(), notice)
        log.warning(
            "game %s: its transcript was refused (%s); its channels are kept",
            item.game_id,
            failure.key,
        )
        self.bot.outbox.kick(item.game_id, ("messages",))


async def transcript_link(bot: ProkuratorBot, game_id: int, language: str) -> list[str]:
    """The line of ``/mafia game N`` that links the game's transcript (none until it is posted)."""
    row = await bot.storage.transcript(game_id)
    if row is None or row["state"] != "done" or row["message_id"] is None:
        return []
    link = f"https://discord.com/channels/{row['guild_id']}/{row['channel_id']}/{row['message_id']}"
    return [t(language, "transcript.link", link=link)]


async def setup(bot: ProkuratorBot) -> None:
    """Load the cog."""
    await bot.add_cog(SeasonCog(bot))
