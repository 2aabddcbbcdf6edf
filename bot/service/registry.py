"""The games a process holds: loaded, locked, found by guild or player; interactions already
applied; holds; the after-commit hooks."""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Awaitable, Callable, Iterable

from bot.config import Config
from bot.service.answering import AnswerTime, Applying
from bot.service.live import (
    RECENT_INTERACTIONS,
    TIMED_STAGES,
    Clock,
    Held,
    Listener,
    LiveGame,
    NoGame,
    Observer,
    Renderer,
    nothing_to_render,
)
from bot.storage import (
    OPEN_STATES,
    GameState,
    Storage,
)
from rules import Command

log = logging.getLogger(__name__)


def _moving(live: LiveGame, command: Command | None) -> Held | None:
    """No game stands still (until the bot installs what says which do)."""
    return None


class GameRegistry:
    """The loaded games and what every part of the service shares."""

    def __init__(self, storage: Storage, config: Config, *, clock: Clock = time.time) -> None:
        self.storage = storage
        self.config = config
        self.clock = clock
        self.render: Renderer = nothing_to_render
        self.listeners: list[Listener] = []
        self.after_commit: list[Callable[[LiveGame], None]] = []
        self.observers: list[Observer] = []
        self.restorers: list[Callable[[LiveGame], Awaitable[None]]] = []
        """Run when a running game is loaded: rebuild what observers keep in memory."""
        # Discord's clock, not the game's (which tests and benchmarks replace): a command's
        # snowflake time is compared with the moment its stage began
        self.wall: Clock = time.time
        self.standstill: Callable[[LiveGame, Command | None], Held | None] = _moving
        """Why a game takes no command now, from anyone (None: it does); the bot installs
        :meth:`bot.powers.Powers.standstill`. Asked of every command under the game's lock."""
        self.answer_time = AnswerTime()
        """When an interaction's one answer is still in time (:mod:`bot.service.answering`)."""
        self.applying = Applying()
        """The players' commands being applied now (what can wait begins between them)."""
        self.locale_language: Callable[[int], str | None] = lambda guild_id: None
        """The language of a guild's preferred locale on Discord (None: not known); the bot
        installs one that reads its guilds."""
        self._live: dict[int, LiveGame] = {}
        self._guild_games: dict[int, list[int]] = {}
        """guild id -> its loaded games' ids, in the order they were loaded (for open_game)."""
        self._locks: dict[int, asyncio.Lock] = {}
        # interactions applied by this process: a repeat is caught without asking the database
        self._recent: set[int] = set()
        self._recent_order: collections.deque[int] = collections.deque()

    def lock(self, game_id: int) -> asyncio.Lock:
        """The game's lock: hold it to read a consistent game across awaits."""
        return self._locks.setdefault(game_id, asyncio.Lock())

    def live(self, game_id: int) -> LiveGame:
        """A loaded game.

        Raises:
            NoGame: it is not loaded (not open, or unknown).
        """
        live = self._live.get(game_id)
        if live is None:
            raise NoGame(game_id)
        return live

    def find(self, game_id: int) -> LiveGame | None:
        """A loaded game, or None."""
        return self._live.get(game_id)

    def games(self) -> list[LiveGame]:
        """Every loaded game."""
        return list(self._live.values())

    def games_of(self, guild_id: int) -> list[LiveGame]:
        """The loaded games of one guild (looked up, not searched: a guild event at start comes
        for every guild of the process)."""
        return [self._live[game_id] for game_id in self._guild_games.get(guild_id, ())]

    async def language(self, guild_id: int) -> str:
        """The guild's language: set by ``/admin language``, else its preferred locale's on
        Discord (:func:`bot.i18n.reader_language`), else the configured default."""
        stored = await self.storage.guild_language(guild_id)
        return stored or self.locale_language(guild_id) or self.config.language

    async def open_game(self, guild_id: int) -> LiveGame | None:
        """The guild's open game. Every open game is in memory (loaded at start, created here)."""
        for game_id in self._guild_games.get(guild_id, ()):
            live = self._live[game_id]
            if live.record.state in OPEN_STATES:
                return live
        return None

    def _keep(self, live: LiveGame) -> None:
        """Hold a loaded game in memory (a game loaded again replaces its old copy)."""
        if live.id not in self._live:
            self._guild_games.setdefault(live.record.guild_id, []).append(live.id)
        self._live[live.id] = live

    def _drop(self, game_id: int) -> None:
        """Let a game go from memory."""
        live = self._live.pop(game_id, None)
        if live is None:
            return
        games = self._guild_games.get(live.record.guild_id, [])
        if game_id in games:
            games.remove(game_id)
        if not games:
            self._guild_games.pop(live.record.guild_id, None)

    async def wants_pings(self, user_id: int) -> bool:
        """Whether the game's roles may ping this user (yes unless he turned pings off)."""
        return user_id not in await self.storage.quiet_users([user_id])

    async def quiet_players(self, user_ids: Iterable[int]) -> set[int]:
        """Which of these users turned pings off."""
        return await self.storage.quiet_users(user_ids)

    def _remember(self, interaction_id: int | None) -> None:
        if interaction_id is None:
            return
        self._recent.add(interaction_id)
        self._recent_order.append(interaction_id)
        if len(self._recent_order) > RECENT_INTERACTIONS:
            self._recent.discard(self._recent_order.popleft())

    def applied(self, interaction_id: int) -> bool:
        """Whether this process applied the interaction (a command stored, a record changed)."""
        return self._seen(interaction_id)

    def _seen(self, interaction_id: int | None) -> bool:
        """Applied by this process? (One applied by an earlier process is caught by the
        database's unique index when it is stored again.)"""
        return interaction_id is not None and interaction_id in self._recent

    def game_of_player(self, user_id: int) -> LiveGame | None:
        """The running game the user plays in, if any."""
        name = str(user_id)
        for live in self._live.values():
            if live.record.state == GameState.RUNNING and live.game and name in live.game.players:
                return live
        return None

    def _committed(self, live: LiveGame) -> None:
        for hook in self.after_commit:
            try:
                hook(live)
            except Exception:
                log.exception("after-commit hook failed for game %s", live.id)

    def hold(self, game_id: int, key: str) -> None:
        """Keep the day from ending (a last word being recorded)."""
        self.live(game_id).holds.add(key)

    def stage_duration(self, live: LiveGame) -> int:
        """Seconds the current stage lasts by timer (0: no timer)."""
        if live.game is None or live.game.over:
            return 0
        name = TIMED_STAGES.get(live.game.stage)
        if name is None:
            return 0
        overrides = live.record.lobby.get("timers", {})
        return int(overrides.get(name, getattr(self.config.timers, name)))

    def _stage_began(self, live: LiveGame) -> None:
        """A new stage: when it began (by Discord's clock) and, if timed, its deadline."""
        live.record.stage_since = self.wall()
        duration = self.stage_duration(live)
        record = live.record
        paused = record.lobby.get("paused")
        if isinstance(paused, dict):  # paused by the host: the new stage waits, its time kept
            paused["stage"] = live.stage_key()
            paused["remaining"] = duration if duration > 0 else None
            record.deadline, record.deadline_stage, record.reminders_sent = None, None, []
            return
        record.deadline = self.clock() + duration if duration > 0 else None
        record.deadline_stage = live.stage_key() if duration > 0 else None
        record.reminders_sent = []
