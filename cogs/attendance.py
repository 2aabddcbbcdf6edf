"""The roll call before the start (``/host attendance``): the host asks, the lobby's players are
pinged in the lobby's channel under a button "I'm here" (a :class:`cogs.components.HereButton`,
``mafia:here:{game}:{round}``), and whoever of them has not pressed it when the time is up leaves
the lobby, named in a notice there.

The check is stored in the lobby (``lobby.attendance``: its round, its end, who was asked and who
answered), so a restart loses nothing: one task per game sleeps until the end, woken by every
commit and by the database's return, and the games loaded at start are looked at once the bot is ready. A player who joins
during the check was not asked and stays; a start during the check ends it (nobody is dropped
from a game being dealt).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands
from discord.ext import commands

from bot.errors import UserError
from bot.i18n import NO_PINGS, key_str, mention, phrase
from bot.limits import CONTENT, listing
from bot.options import duration_text, parse_duration
from bot.outbox.intents import Edit, Send
from bot.service import GameBroken, LiveGame, NoGame
from bot.storage import GameState, OutboxItem
from bot.storage.shapes import Attendance
from bot.timers import Backoff
from bot.wiring import Hooks
from cogs.common import (
    InteractionAnswer,
    answer,
    join_group,
    leave_group,
    require_host,
    seen_by,
)
from cogs.lobby import lobby_edit

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

log = logging.getLogger(__name__)

#: how long a roll call lasts unless the host says (seconds), and its bounds
DEFAULT_WITHIN = 120
SHORTEST, LONGEST = 10, 900
#: the most members one message may ping (Discord's ``allowed_mentions.users``)
MOST_PINGED = 100


def pending(live: LiveGame | None) -> Attendance | None:
    """The lobby's roll call under way, if any."""
    if live is None or live.record.state != GameState.LOBBY or live.broken is not None:
        return None
    return live.record.lobby.get("attendance")


def ask_payload(live: LiveGame, check: Attendance) -> dict[str, Any]:
    """The roll call's message: who is asked (pinged, as many as fit), the deadline, the button."""
    button = phrase(live, "attendance.button")
    deadline = f"<t:{int(check['until'])}:T>"
    frame = phrase(
        live, "attendance.ask", game=live.id, players="", button=button, deadline=deadline
    )
    asked = [str(player) for player in check["asked"]]
    shown = listing(
        live.language, [mention(p) for p in asked[:MOST_PINGED]], CONTENT - len(frame) - 1
    )
    pinged = [p for p in asked[:MOST_PINGED] if mention(p) in shown]
    return {
        "content": phrase(
            live, "attendance.ask", game=live.id, players=shown, button=button, deadline=deadline
        ),
        "allowed_mentions": {"parse": [], "users": pinged},
        "components": [
            {
                "type": 1,
                "components": [
                    {
                        "type": 2,
                        "style": 3,
                        "label": button,
                        "custom_id": f"mafia:here:{live.id}:{check['round']}",
                    }
                ],
            }
        ],
    }


class AttendanceCog(commands.Cog):
    """``/host attendance`` and its button; drops who did not answer in time."""

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._wake: dict[int, asyncio.Event] = {}
        self._closed = False
        self._moved: list[app_commands.Command[Any, ..., Any]] = []
        self._restore: asyncio.Task[None] | None = None

    def hooks(self) -> Hooks:
        """The attendance button; after every commit, the check's deadline armed."""
        return Hooks(components={"here": self._here}, after_commit=[self.arm])

    async def cog_load(self) -> None:
        """Join the ``/host`` group; look at the games loaded at start once the bot is ready."""
        self._moved = join_group(self.bot, self, "host")
        self._restore = asyncio.create_task(self._after_start(), name="attendance-restore")

    async def cog_unload(self) -> None:
        leave_group(self.bot, "host", self._moved)
        if self.arm in self.bot.service.after_commit:
            self.bot.service.after_commit.remove(self.arm)
        self._closed = True
        tasks = [*self._tasks.values(), *([self._restore] if self._restore is not None else [])]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _after_start(self) -> None:
        await self.bot.wait_until_ready()
        for live in self.bot.service.games():
            self.arm(live)

    def arm(self, live: LiveGame) -> None:
        """(Re)consider a game's roll call; called after every commit."""
        if self._closed or pending(live) is None:
            return
        self._wake.setdefault(live.id, asyncio.Event()).set()
        task = self._tasks.get(live.id)
        if task is None or task.done():
            self._tasks[live.id] = asyncio.create_task(
                self._run(live.id), name=f"attendance-{live.id}"
            )

    async def _run(self, game_id: int) -> None:
        wake = self._wake.setdefault(game_id, asyncio.Event())
        backoff = Backoff(f"game {game_id}: closing the roll call")
        while not self._closed:
            wake.clear()
            check = pending(self.bot.service.find(game_id))
            if check is None:
                return
            delay = float(check["until"]) - self.bot.clock()
            if delay <= 0:
                try:
                    await self._close(game_id, int(check["round"]))
                except (NoGame, GameBroken):
                    return
                except Exception as error:
                    delay = backoff.failed(error)
                else:
                    backoff.succeeded()
                    continue
            await self.bot.storage.health.sleep(wake, delay)

    async def _close(self, game_id: int, round_: int) -> None:
        """Time is up: who was asked, is still in the lobby and did not answer, leaves it."""

        def change(live: LiveGame) -> list[OutboxItem]:
            check = pending(live)
            if check is None or int(check["round"]) != round_:
                return []
            del live.record.lobby["attendance"]
            missing = {int(p) for p in check["asked"]} - {int(p) for p in check["confirmed"]}
            players = live.record.lobby["players"]
            dropped = [int(p["id"]) for p in players if int(p["id"]) in missing]
            live.record.lobby["players"] = [p for p in players if int(p["id"]) not in missing]
            if dropped:
                text = phrase(
                    live,
                    "attendance.dropped",
                    count=len(dropped),
                    players=listing(live.language, [mention(str(p)) for p in dropped], 1500),
                )
            else:
                text = phrase(live, "attendance.all_here")
            log.info("game %s: roll call over; %s dropped", live.id, dropped or "nobody")
            channel = live.record.lobby.get("channel_id")
            closed = {**ask_payload(live, check), "components": [], "allowed_mentions": NO_PINGS}
            items = lobby_edit(live) + [Edit(f"attendance:{round_}", closed).item()]
            if channel is not None:
                items.append(Send({"content": text, "allowed_mentions": NO_PINGS}, channel).item())
            return items

        await self.bot.service.update(game_id, change)

    @app_commands.command(
        name=key_str("cmd.host.attendance.name"),
        description=key_str("cmd.host.attendance.description"),
    )
    @app_commands.rename(within=key_str("opt.within.name"))
    @app_commands.describe(within=key_str("opt.within.description"))
    async def attendance(
        self, interaction: discord.Interaction, within: app_commands.Range[str, 1, 40] | None = None
    ) -> None:
        if interaction.guild_id is None:
            raise UserError("error.guild_only")
        live = await self.bot.service.open_game(interaction.guild_id)
        if live is None:
            raise UserError("error.no_game")
        await require_host(self.bot, interaction, live)
        if live.broken is not None:
            raise GameBroken()
        seconds = parse_duration(within) if within is not None else DEFAULT_WITHIN
        if not SHORTEST <= seconds <= LONGEST:
            raise UserError("error.bad_within", value=within or "—")
        issued = round(self.bot.clock() * 1000)

        def change(live: LiveGame) -> list[OutboxItem]:
            if live.record.state != GameState.LOBBY:
                raise UserError("error.not_lobby")
            running = pending(live)
            if running is not None:
                raise UserError(
                    "error.attendance_running", deadline=f"<t:{int(running['until'])}:T>"
                )
            asked = [int(p["id"]) for p in live.record.lobby.get("players", [])]
            if not asked:
                raise UserError("error.attendance_empty")
            check: Attendance = {
                "round": issued,
                "until": issued / 1000 + seconds,
                "asked": asked,
                "confirmed": [],
            }
            live.record.lobby["attendance"] = check
            channel = live.record.lobby.get("channel_id")
            if channel is None:
                return []
            return [Send(ask_payload(live, check), channel, ref=f"attendance:{issued}").item()]

        if not await self.bot.service.update(
            live.id, change, interaction_id=interaction.id, answer=InteractionAnswer(interaction)
        ):
            return
        log.info("game %s: roll call asked by %s for %s s", live.id, interaction.user.id, seconds)
        await answer(
            interaction,
            phrase(
                seen_by(live, interaction),
                "attendance.asked",
                deadline=f"<t:{int(issued / 1000 + seconds)}:T>",
                duration=duration_text(seen_by(live, interaction).language, seconds),
            ),
        )

    async def _here(self, interaction: discord.Interaction, parts: list[str]) -> None:
        """ "I'm here" pressed."""
        game_id, round_ = int(parts[0]), int(parts[1])
        live = (
            await self.bot.service.open_game(interaction.guild_id) if interaction.guild_id else None
        )
        check = pending(live) if live is not None and live.id == game_id else None
        if live is None or check is None or int(check["round"]) != round_:
            raise UserError("error.attendance_over")
        user = interaction.user.id
        if user not in {int(p) for p in check["asked"]}:
            raise UserError("error.attendance_not_asked")

        def change(live: LiveGame) -> list[OutboxItem]:
            check = pending(live)
            if check is None or int(check["round"]) != round_:
                raise UserError("error.attendance_over")
            if user not in check["confirmed"]:
                check["confirmed"].append(user)
            return []

        if await self.bot.service.update(
            live.id, change, interaction_id=interaction.id, answer=InteractionAnswer(interaction)
        ):
            await answer(interaction, phrase(seen_by(live, interaction), "attendance.confirmed"))


async def setup(bot: ProkuratorBot) -> None:
    await bot.add_cog(AttendanceCog(bot))


__all__ = ["AttendanceCog", "ask_payload", "pending"]
