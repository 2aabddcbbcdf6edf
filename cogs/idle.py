"""Idle handling the host can leave on (``/host setup idle_strike:N``): at the end of each day,
every living player who made no move in it that the city could see (a nomination, a vote or its
withdrawal, a request for a last word) is warned in his city, and one who let ``N`` days go by so
in a row is struck out by the Procurator (a :class:`rules.ProcuratorKill`, announced as any death).

Only days count, and only public moves: a night move or a role's own move by day is made by a
status, so counting them (or a night without one) would tell the city who holds which. The rules
themselves settle the idle at night.

The counts are replayed from the command log when a day ends, never kept aside, so a restart
changes nothing; the night already handled is stored in the game's record
(``lobby.idle_checked``), so a day is warned about once, and a game loaded at start handles its
night if that had not been done.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from bot.i18n import NO_PINGS, mention, phrase
from bot.outbox.intents import Send
from bot.service import GameBroken, Held, LiveGame, MovedOn, NoGame, Seen
from bot.storage import GameState, OutboxItem
from bot.wiring import Hooks
from cogs.lobby import log_items
from cogs.mentions import command as command_mention
from rules import (
    CastVote,
    Command,
    Game,
    Nominate,
    ProcuratorKill,
    Replace,
    RequestLastWord,
    RuleError,
    Setup,
    Stage,
    Unvote,
    command_from_dict,
)
from rules.events import Event, PhaseStarted

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot
    from bot.storage import Storage

log = logging.getLogger(__name__)

#: the most days the host may let go by before a strike
MOST_DAYS = 10
#: the moves a city sees its residents make
PUBLIC_MOVES = (Nominate, CastVote, Unvote, RequestLastWord)


def idle_strike(live: LiveGame) -> int:
    """Days in a row without a move after which the Procurator strikes a player out (0: never)."""
    return int(live.record.lobby.get("idle_strike") or 0)


def actor_of(command: Command) -> str | None:
    """The player who made a move by ``command`` (a newcomer seated by ``/host replace`` counts
    as having moved: he counts from the phase he came in)."""
    if isinstance(command, Replace):
        return command.new
    actor = getattr(command, "actor", None)
    return str(actor) if actor is not None else None


def begins(events: list[Event], stage: Stage) -> bool:
    """Whether these events begin a stage."""
    return any(isinstance(e, PhaseStarted) and e.stage is stage for e in events)


async def replayed(
    storage: Storage, live: LiveGame
) -> AsyncIterator[tuple[Game, Command | None, list[Event]]]:
    """The game replayed from its log: first the fresh game (no command), then after each command
    the game, the command and its events."""
    record = live.record
    assert record.setup is not None and record.seed is not None
    replay = Game.create(Setup.from_dict(record.setup), record.seed)
    yield replay, None, []
    for row in await storage.commands(live.id):
        command = command_from_dict(row.command)
        events = replay.apply(command)
        yield replay, command, events


async def idle_streaks(storage: Storage, live: LiveGame) -> dict[str, int]:
    """For each living player, how many ended days in a row he made no public move in; players
    at 0 are left out."""
    streaks: dict[str, int] = {}
    residents: set[str] = set()  # who lives through the day under way
    moved: set[str] = set()
    replay: Game | None = None
    async for replay, command, events in replayed(storage, live):
        if isinstance(command, PUBLIC_MOVES):
            moved.add(command.actor)
        elif isinstance(command, Replace):  # the newcomer counts from the day he came in
            streaks.pop(command.old, None)
            residents.discard(command.old)
            residents.add(command.new)
            moved.add(command.new)
        if begins(events, Stage.NIGHT):
            for player in residents:
                streaks[player] = 0 if player in moved else streaks.get(player, 0) + 1
            residents = set()
        if begins(events, Stage.DISCUSSION) or (
            command is None and replay.stage is Stage.DISCUSSION
        ):
            residents, moved = set(replay.alive()), set()
    assert replay is not None
    return {
        player: count for player, count in streaks.items() if count > 0 and replay.is_alive(player)
    }


def warning_items(live: LiveGame, streaks: dict[str, int], limit: int) -> list[OutboxItem]:
    """One warning per city naming its players who let days go by without a move (grouped by how many)."""
    game = live.game
    assert game is not None
    cities: dict[str, Any] = live.record.channels.get("cities", {})
    items = []
    for city in game.cities:
        channel = cities.get(city, {}).get("text")
        rows = sorted(
            ((count, player) for player, count in streaks.items() if game.city_of(player) == city),
            key=lambda row: (-row[0], int(row[1])),
        )
        if channel is None or not rows:
            continue
        lines = []
        for count in sorted({count for count, _ in rows}, reverse=True):
            players = ", ".join(mention(player) for n, player in rows if n == count)
            lines.append(
                phrase(
                    live,
                    "idle.warning",
                    players=players,
                    days=phrase(live, "idle.days", count=count),
                    limit=phrase(live, "idle.days", count=limit),
                )
            )
        lines.append(phrase(live, "idle.what_to_do", help=command_mention(live.language, "help")))
        items.append(
            Send({"content": "\n".join(lines), "allowed_mentions": NO_PINGS}, channel).item()
        )
    return items


class IdleWatch:
    """Warns and strikes out idle players at the end of each day of a game with ``idle_strike`` set."""

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot
        self._tasks: set[asyncio.Task[None]] = set()

    def hooks(self) -> Hooks:
        """After each command, a day that ended is checked; a game loaded at start, its night."""
        return Hooks(listeners=[self.day_ended], restorers=[self.restore])

    async def detach(self) -> None:
        if self.day_ended in self.bot.service.listeners:
            self.bot.service.listeners.remove(self.day_ended)
        if self.restore in self.bot.service.restorers:
            self.bot.service.restorers.remove(self.restore)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def day_ended(self, live: LiveGame, events: list[Event]) -> None:
        """A listener of every commit: the day that just ended is checked at once."""
        if begins(events, Stage.NIGHT):
            await self.check(live.id)

    async def restore(self, live: LiveGame) -> None:
        """A game loaded at start: its night is checked once the bot runs (if not done before)."""
        if (
            idle_strike(live)
            and live.game is not None
            and live.game.stage is Stage.NIGHT
            and live.record.lobby.get("idle_checked") != live.stage_key()
        ):
            task = asyncio.create_task(self.check(live.id), name=f"idle-{live.id}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def check(self, game_id: int) -> None:
        """Warn, then strike out, the idle players of the day that just ended."""
        service = self.bot.service
        live = service.find(game_id)
        if (
            live is None
            or live.game is None
            or live.broken is not None
            or live.record.state != GameState.RUNNING
        ):
            return
        limit = idle_strike(live)
        if not limit:
            return
        async with service.lock(game_id):  # the log and the game as of one moment
            stage = live.stage_key()
            if (
                live.game is None
                or live.game.over
                or live.game.stage is not Stage.NIGHT
                or live.record.lobby.get("idle_checked") == stage
            ):
                return
            streaks = await idle_streaks(self.bot.storage, live)
        struck = sorted((player for player, count in streaks.items() if count >= limit), key=int)
        warned = {player: count for player, count in streaks.items() if count < limit}

        def mark(live: LiveGame) -> list[OutboxItem]:
            if live.stage_key() != stage or live.game is None or live.game.over:
                return []  # moved on meanwhile: the next night is checked on its own
            live.record.lobby["idle_checked"] = stage
            return warning_items(live, warned, limit)

        try:
            await service.update(game_id, mark)
        except (NoGame, GameBroken):
            return
        for player in struck:
            await self._strike(game_id, player, streaks[player], stage)

    async def _strike(self, game_id: int, player: str, count: int, stage: str | None) -> None:
        def after(live: LiveGame, events: list[Event]) -> list[OutboxItem]:
            line = phrase(
                live,
                "idle.struck",
                player=mention(player),
                days=phrase(live, "idle.days", count=count),
            )
            items = log_items(live, line)
            places = live.record.channels.get("cities", {}).get(
                live.game.city_of(player) if live.game else ""
            )
            if places is not None:
                items.append(
                    Send({"content": line, "allowed_mentions": NO_PINGS}, places["text"]).item()
                )
            return items

        try:
            await self.bot.service.apply(
                game_id, ProcuratorKill(player), source="timer", seen=Seen(stage=stage), after=after
            )
            log.info("game %s: %s struck out after %s idle days", game_id, player, count)
        except (RuleError, NoGame, GameBroken, MovedOn, Held) as error:
            log.info("game %s: no idle strike of %s (%s)", game_id, player, error)


__all__ = ["IdleWatch", "actor_of", "begins", "idle_streaks", "idle_strike", "replayed"]
