"""Scheduled games (``/mafia schedule``): a host names when (``in: 2h``) and, if he likes, a title;
the bot makes a Discord guild scheduled event (an EXTERNAL one, "where" being the channel he asked
in), members mark it "Interested" in Discord's client, and at its time the bot opens the lobby
there for him and pings the interested members (read from the event's users, 100 at a time, when
the lobby opens: no gateway intent needed).

The game to open is stored before Discord is asked (:meth:`bot.storage.Storage.add_schedule`),
and moves on once Discord made the event and once the lobby is open; one task sleeps until the
earliest, woken by each new one and by the database's return after an outage, and looks again
after a restart. A host cancels by deleting or
cancelling the event in Discord: at its time the bot finds it gone and opens nothing. If the server
has a game open then, the bot says so in the channel and opens nothing either.

Making the event is a call to Discord outside any game, so it is made here, not through a game's
outbox; the lobby and its pings go through the outbox of the game they open.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from typing import TYPE_CHECKING, Any, cast

import discord
from discord import app_commands
from discord.ext import commands

from bot.errors import UserError
from bot.i18n import NO_PINGS, key_str, t
from bot.limits import CONTENT
from bot.options import parse_duration
from bot.outbox.intents import Send
from bot.service import LiveGame
from bot.storage import GameExists, OutboxItem
from bot.timers import Backoff
from cogs.common import answer, join_group, leave_group
from cogs.lobby import lobby_post, may_host, new_lobby
from cogs.scheduled import event_link

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

log = logging.getLogger(__name__)

#: scheduled games a server may have waiting
MOST_WAITING = 5
#: the shortest wait, and how long the event lasts in Discord's calendar
SOONEST = 60
LASTS = 3 * 3600
#: Discord's page of an event's users
PAGE = 100
#: the most interested members the lobby pings
MOST_PINGED = 1000
EXTERNAL, GUILD_ONLY, ACTIVE, CANCELED = 3, 2, 2, 4
#: the longest the keeper sleeps before it looks at the table again (seconds)
LOOK_AGAIN = 3600.0
#: Discord's "Unknown Guild Scheduled Event"
UNKNOWN_EVENT = 10070


def iso(when: float) -> str:
    return datetime.datetime.fromtimestamp(when, tz=datetime.UTC).isoformat()


def ping_items(live: LiveGame, title: str, interested: list[int]) -> list[OutboxItem]:
    """The lobby's call to the members interested in its event: as many messages as Discord's
    limits need (100 pinged members a message)."""
    channel = live.record.lobby.get("channel_id")
    if channel is None:
        return []
    if not interested:
        nobody = t(live.language, "schedule.opened_nobody", title=title, game=live.id)
        return [Send({"content": nobody, "allowed_mentions": NO_PINGS}, channel).item()]
    frame = len(t(live.language, "schedule.opened", title=title, game=live.id, players=""))
    batches: list[list[int]] = [[]]
    room = CONTENT - frame
    for user in interested:  # as many as Discord pings in one message and its text holds
        mention = f"<@{user}>"
        if len(batches[-1]) == PAGE or len(mention) + 1 > room:
            batches.append([])
            room = CONTENT - frame
        batches[-1].append(user)
        room -= len(mention) + 1
    return [
        Send(
            {
                "content": t(
                    live.language,
                    "schedule.opened",
                    title=title,
                    game=live.id,
                    players=" ".join(f"<@{user}>" for user in batch),
                ),
                "allowed_mentions": {"parse": [], "users": [str(user) for user in batch]},
            },
            channel,
        ).item()
        for batch in batches
    ]


class ScheduleCog(commands.Cog):
    """``/mafia schedule`` and the lobbies it opens."""

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._moved: list[app_commands.Command[Any, ..., Any]] = []
        self.handled = 0
        """Scheduled games whose time came and that were dealt with (opened, cancelled, skipped)."""

    async def cog_load(self) -> None:
        """Join the ``/mafia`` group; start waiting for the scheduled games once the bot is ready."""
        self._moved = join_group(self.bot, self, "mafia")
        self._task = asyncio.create_task(self._run(), name="schedules")

    async def cog_unload(self) -> None:
        leave_group(self.bot, "mafia", self._moved)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    def wake(self) -> None:
        """Look at the scheduled games again (a new one, or the clock moved in a test)."""
        self._wake.set()

    async def _run(self) -> None:
        await self.bot.wait_until_ready()
        backoff = Backoff("scheduled games: the keeper")
        while True:
            self._wake.clear()
            delay = LOOK_AGAIN
            try:
                for row in await self.bot.storage.schedules("scheduled"):
                    wait = float(row["starts_at"]) - self.bot.clock()
                    if wait > 0:
                        delay = min(delay, wait)
                        break
                    await self._open(row)
                    self.handled += 1
            except Exception as error:
                delay = backoff.failed(error)
            else:
                backoff.succeeded()
            await self.bot.storage.health.sleep(self._wake, delay)

    async def _interested(self, guild_id: int, event_id: int) -> list[int]:
        """The members interested in the event, in id order (pages of 100, up to the most pinged)."""
        users: list[int] = []
        after: int | None = None
        while len(users) < MOST_PINGED:
            page = await self.bot.http.get_scheduled_event_users(
                guild_id, event_id, PAGE, False, after=after
            )
            # Discord's answer has each user's id (its spec's ``user_id``), discord.py's type not
            rows = cast(list[dict[str, Any]], page)
            ids = [int(row["user_id"]) for row in rows]
            users.extend(ids)
            if len(ids) < PAGE:
                break
            after = ids[-1]
        return users[:MOST_PINGED]

    async def _open(self, row: dict[str, Any]) -> None:
        """A scheduled game's time has come: open its lobby and ping who is interested."""
        schedule, guild_id, event_id = int(row["id"]), int(row["guild_id"]), int(row["event_id"])
        language = await self.bot.service.language(guild_id)
        try:
            event = await self.bot.http.get_scheduled_event(guild_id, event_id, False)
        except discord.NotFound:
            event = None
        if event is None or int(event.get("status", 0)) == CANCELED:
            log.info(
                "scheduled game %s: its event %s is gone or cancelled; nothing opens",
                schedule,
                event_id,
            )
            await self.bot.storage.set_schedule(schedule, "cancelled")
            return
        live = await self.bot.service.open_game(guild_id)
        if (
            live is None or live.record.lobby.get("scheduled") != schedule
        ):  # (else opened before a restart)
            try:
                live = await self.bot.service.create(
                    guild_id,
                    int(row["host_id"]),
                    {**new_lobby(self.bot, int(row["channel_id"])), "scheduled": schedule},
                    outbox=lobby_post,
                )
            except GameExists:
                log.info(
                    "scheduled game %s: guild %s has a game open; nothing opens", schedule, guild_id
                )
                await self.bot.storage.set_schedule(schedule, "skipped")
                text = t(language, "schedule.skipped", title=row["title"])
                with (
                    contextlib.suppress(discord.HTTPException),
                    discord.http.handle_message_parameters(
                        content=text, allowed_mentions=discord.AllowedMentions.none()
                    ) as params,
                ):
                    await self.bot.http.send_message(int(row["channel_id"]), params=params)
                return
            log.info("scheduled game %s: lobby %s opened in guild %s", schedule, live.id, guild_id)
        if not live.record.lobby.get("scheduled_pinged"):
            interested = [
                user
                for user in await self._interested(guild_id, event_id)
                if user != int(row["host_id"])
            ]

            def ping(live: LiveGame) -> list[OutboxItem]:
                if live.record.lobby.get("scheduled_pinged"):
                    return []
                live.record.lobby["scheduled_pinged"] = True
                return ping_items(live, str(row["title"]), interested)

            await self.bot.service.update(live.id, ping)
        await self.bot.storage.set_schedule(schedule, "opened", game_id=live.id)
        with contextlib.suppress(discord.HTTPException):
            await self.bot.http.edit_scheduled_event(guild_id, event_id, status=ACTIVE)

    @app_commands.command(
        name=key_str("cmd.mafia.schedule.name"),
        description=key_str("cmd.mafia.schedule.description"),
    )
    @app_commands.rename(
        when=key_str("opt.schedule_in.name"),
        title=key_str("opt.schedule_title.name"),
    )
    @app_commands.describe(
        when=key_str("opt.schedule_in.description"),
        title=key_str("opt.schedule_title.description"),
    )
    async def schedule(
        self,
        interaction: discord.Interaction,
        when: app_commands.Range[str, 1, 40],
        title: app_commands.Range[str, 1, 100] | None = None,
    ) -> None:
        if interaction.guild_id is None or interaction.channel_id is None:
            raise UserError("error.guild_only")
        guild_id = interaction.guild_id
        if not await may_host(self.bot, interaction.user, guild_id):
            raise UserError("error.not_host")
        if not interaction.app_permissions.create_events:
            raise UserError("error.schedule_no_right")
        language = await self.bot.service.language(guild_id)  # the event is the server's
        seconds = parse_duration(when)
        if seconds < SOONEST:
            raise UserError("error.schedule_too_soon")
        name = " ".join((title or t(language, "schedule.default_title")).split())[:100]
        await interaction.response.defer(ephemeral=True, thinking=True)
        starts = self.bot.clock() + seconds
        schedule = await self.bot.storage.add_schedule(
            guild_id,
            interaction.user.id,
            interaction.channel_id,
            name,
            starts,
            now=self.bot.clock(),
            most=MOST_WAITING,
        )
        if schedule is None:
            raise UserError("error.schedule_full", count=MOST_WAITING)
        event_id = await self._make_event(interaction, guild_id, language, schedule, name, starts)
        await self.bot.storage.set_schedule(schedule, "scheduled", event_id=event_id)
        log.info(
            "guild %s: game scheduled by %s for %s (event %s)",
            guild_id,
            interaction.user.id,
            starts,
            event_id,
        )
        self.wake()
        await answer(
            interaction,
            t(
                await self.bot.language_for(interaction),
                "schedule.made",
                title=name,
                when=f"<t:{int(starts)}:F>",
                link=event_link(guild_id, event_id),
            ),
        )

    async def _make_event(
        self,
        interaction: discord.Interaction,
        guild_id: int,
        language: str,
        schedule: int,
        name: str,
        starts: float,
    ) -> int:
        """The scheduled game's event made on Discord (its id); refused, the game is dropped.

        Raises:
            UserError: Discord refused the event.
        """
        channel = getattr(interaction.channel, "name", None)
        try:
            event = await self.bot.http.create_guild_scheduled_event(
                guild_id,
                reason=t(language, "schedule.reason"),
                name=name,
                description=t(
                    language, "schedule.description", channel=f"<#{interaction.channel_id}>"
                )[:1000],
                privacy_level=GUILD_ONLY,
                entity_type=EXTERNAL,
                entity_metadata={
                    "location": (f"#{channel}" if channel else t(language, "schedule.location"))[
                        :100
                    ]
                },
                scheduled_start_time=iso(starts),
                scheduled_end_time=iso(starts + LASTS),
            )
        except discord.HTTPException as error:
            await self.bot.storage.drop_schedule(schedule)
            log.warning("guild %s: Discord refused the scheduled event: %s", guild_id, error)
            raise UserError("error.schedule_refused") from None
        return int(event["id"])


async def setup(bot: ProkuratorBot) -> None:
    await bot.add_cog(ScheduleCog(bot))


__all__ = ["ScheduleCog", "event_link", "ping_items"]
