"""The game service: the only way the cogs touch a game.

One asyncio lock per game, so concurrent interactions are applied in order.
A command is validated by the rules, committed with its outbox (and, now and
then, a snapshot), and only then are its effects announced. An interaction
Discord delivers twice is applied once.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiosqlite

from bot.config import Config
from bot.storage import OPEN_STATES, GameRecord, OutboxItem, Storage
from rules import (
    Command,
    EndDay,
    EndNight,
    Event,
    Game,
    RuleError,
    Setup,
    Stage,
    StartVoting,
    command_from_dict,
    command_to_dict,
)

log = logging.getLogger(__name__)

Clock = Callable[[], float]

#: how many interaction ids a process remembers to catch repeats without the database
RECENT_INTERACTIONS = 50_000


class NoGame(Exception):
    """No such game, or it is not running."""


@dataclass
class LiveGame:
    """A game in memory: its stored record and, once dealt, the rules' game."""

    record: GameRecord
    game: Game | None = None
    language: str = "ru"
    holds: set[str] = field(default_factory=set)
    deferred: list[tuple[Command, str]] = field(default_factory=list)
    tick_times: dict[int, float] = field(default_factory=dict)
    """Wall time (unix) of the accepted commands that still matter, by the rules' tick: the
    standing votes' (the rules count time in ticks; the ballot shows clock times)."""

    @property
    def id(self) -> int:
        """The game's id."""
        return self.record.id

    def stage_key(self) -> str | None:
        """The current stage as text, e.g. ``day 1 voting``, or None outside play."""
        if self.game is None or self.game.over:
            return None
        return f"{self.game.phase} {self.game.stage.value}"


@dataclass(frozen=True)
class Applied:
    """The outcome of :meth:`GameService.apply`."""

    events: list[Event]
    duplicate: bool = False
    deferred: bool = False
    seq: int | None = None


class Renderer(Protocol):
    """Turns rule events into outbox items (messages, permission changes)."""

    def __call__(self, live: LiveGame, events: list[Event]) -> list[OutboxItem]: ...


Listener = Callable[[LiveGame, list[Event]], Awaitable[None]]
Observer = Callable[[LiveGame, list[Event], float], None]
"""Sees a command's events with the wall time it was accepted, before they are rendered and
stored (what the game remembers of it beyond the rules' state: when each vote came)."""


def nothing_to_render(live: LiveGame, events: list[Event]) -> list[OutboxItem]:
    """The renderer used until the Discord layer installs its own."""
    return []


TIMED_STAGES = {Stage.DISCUSSION: "discussion", Stage.VOTING: "voting", Stage.NIGHT: "night"}


def command_for_deadline(stage: Stage) -> Command | None:
    """What the timer does when a stage's time is up (what the host would do)."""
    if stage is Stage.DISCUSSION:
        return StartVoting()
    if stage is Stage.VOTING:
        return EndDay()
    if stage is Stage.NIGHT:
        return EndNight()
    return None


class GameService:
    """Hosts every game of the process; see the module docstring."""

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
        self._live: dict[int, LiveGame] = {}
        self._locks: dict[int, asyncio.Lock] = {}
        # interactions applied by this process: a repeat is caught without asking the database
        self._recent: set[int] = set()
        self._recent_order: collections.deque[int] = collections.deque()

    # ------------------------------------------------------------------ access

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

    def games(self) -> list[LiveGame]:
        """Every loaded game."""
        return list(self._live.values())

    async def language(self, guild_id: int) -> str:
        """The guild's language (the configured default until set)."""
        return await self.storage.guild_language(guild_id) or self.config.language

    async def open_game(self, guild_id: int) -> LiveGame | None:
        """The guild's open game. Every open game is in memory (loaded at start, created here)."""
        for live in self._live.values():
            if live.record.guild_id == guild_id and live.record.state in OPEN_STATES:
                return live
        return None

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

    def _seen(self, interaction_id: int | None) -> bool:
        """Applied by this process? (One applied by an earlier process is caught by the
        database's unique index when it is stored again.)"""
        return interaction_id is not None and interaction_id in self._recent

    def game_of_player(self, user_id: int) -> LiveGame | None:
        """The running game the user plays in, if any."""
        name = str(user_id)
        for live in self._live.values():
            if live.record.state == "running" and live.game and name in live.game.players:
                return live
        return None

    # ------------------------------------------------------------------ restore

    async def restore(self) -> list[LiveGame]:
        """Load every open game: snapshot + replay of the log after it."""
        restored = []
        for record in await self.storage.open_games():
            try:
                restored.append(await self._load(record))
            except Exception:
                log.exception("game %s could not be restored; it stays stored as it is", record.id)
        return restored

    async def _load(self, record: GameRecord) -> LiveGame:
        live = LiveGame(record, language=await self.language(record.guild_id))
        if record.state == "running" and record.setup is not None and record.seed is not None:
            live.game = await self._rebuild(record)
            for restorer in self.restorers:
                await restorer(live)
        self._live[record.id] = live
        return live

    async def _rebuild(self, record: GameRecord) -> Game:
        assert record.setup is not None and record.seed is not None
        snapshot = await self.storage.latest_snapshot(record.id)
        if snapshot is None:
            game, after = Game.create(Setup.from_dict(record.setup), record.seed), 0
        else:
            after, state = snapshot
            game = Game.from_dict(state)
        for row in await self.storage.commands(record.id, after):
            try:
                game.apply(command_from_dict(row.command))
            except RuleError as error:
                log.error("game %s: stored command %s refused on replay (%s)", record.id, row.seq, error)
            after = row.seq
        record.command_count = after
        return game

    # ------------------------------------------------------------------ lobby

    async def create(
        self,
        guild_id: int,
        host_id: int,
        lobby: dict[str, Any],
        *,
        interaction_id: int | None = None,
        outbox: Callable[[LiveGame], list[OutboxItem]] | None = None,
    ) -> LiveGame:
        """Open a lobby; ``outbox`` renders what to announce once the game has its id.

        Raises:
            bot.storage.GameExists: the guild already has an open game.
        """
        record = await self.storage.create_game(
            guild_id, host_id, lobby, interaction_id=interaction_id, now=self.clock()
        )
        live = LiveGame(record, language=await self.language(guild_id))
        self._live[record.id] = live
        if outbox is not None:
            items = outbox(live)
            if items:
                await self.storage.add_outbox(record.id, items)
                self._committed(live)
        return live

    async def update(
        self,
        game_id: int,
        change: Callable[[LiveGame], list[OutboxItem]],
        *,
        interaction_id: int | None = None,
        cancel_lane: str | None = None,
    ) -> bool:
        """Change a game's record (lobby, channels...) under its lock and store it.

        ``change`` mutates ``live.record`` and returns what to announce; it may
        raise to refuse, and then nothing is stored (the record is reloaded).
        ``cancel_lane`` gives up the game's pending outbox items of that lane in
        the same commit. Returns False if the interaction was already applied.
        """
        async with self.lock(game_id):
            if self._seen(interaction_id):
                return False
            live = self.live(game_id)
            try:
                items = change(live)
                await self.storage.save_game(
                    live.record, interaction_id=interaction_id, outbox=items, cancel_lane=cancel_lane,
                    now=self.clock(),
                )
            except aiosqlite.IntegrityError:
                log.info("game %s: interaction %s was applied before; not again", game_id, interaction_id)
                await self._reload(live)
                return False
            except BaseException:
                await self._reload(live)
                raise
            self._remember(interaction_id)
            if live.record.state not in OPEN_STATES:
                self._live.pop(game_id, None)
            self._committed(live)
            return True

    async def start(
        self,
        game_id: int,
        setup: Setup,
        seed: int,
        *,
        prepare: Callable[[LiveGame], list[OutboxItem]] | None = None,
        interaction_id: int | None = None,
        from_state: str | None = None,
    ) -> list[Event]:
        """Deal the game: lobby (or ``starting``) → running; returns the opening events.

        ``prepare`` may fill ``live.record.channels`` and returns items to
        announce before the opening events.

        Raises:
            RuleError: the setup is not sound (nothing changes).
            NoGame: the game is not in ``from_state`` (when given).
        """
        async with self.lock(game_id):
            live = self.live(game_id)
            if from_state is not None and live.record.state != from_state:
                raise NoGame(game_id)
            game = Game.create(setup, seed)
            record = live.record
            try:
                record.setup, record.seed = setup.to_dict(), seed
                record.state, record.command_count = "running", 0
                live.game = game
                items = prepare(live) if prepare is not None else []
                events = game.opening_events()
                self._arm_deadline(live)  # before rendering: the first announcement shows it
                items.extend(self.render(live, events))
                await self.storage.save_game(
                    record, interaction_id=interaction_id, outbox=items, now=self.clock()
                )
            except BaseException:
                await self._reload(live)
                raise
            self._remember(interaction_id)
            self._committed(live)
        await self._notify(live, events)
        return events

    # ------------------------------------------------------------------ play

    async def apply(
        self,
        game_id: int,
        command: Command,
        *,
        source: str,
        interaction_id: int | None = None,
        extra_outbox: list[OutboxItem] | None = None,
    ) -> Applied:
        """Validate, commit and announce one command.

        ``extra_outbox`` is committed with the command, after what its events
        render (a last word's recording, say).

        Raises:
            RuleError: the rules refuse it; nothing changes.
            NoGame: the game is not running.
        """
        async with self.lock(game_id):
            live = self.live(game_id)
            if live.game is None or live.record.state != "running":
                raise NoGame(game_id)
            if self._seen(interaction_id):
                log.info("game %s: interaction %s delivered again; applied once", game_id, interaction_id)
                return Applied([], duplicate=True)
            if isinstance(command, EndDay) and live.holds:
                live.game.check(command)
                live.deferred.append((command, source))
                log.info("game %s: the day's end waits for %s", game_id, sorted(live.holds))
                return Applied([], deferred=True)
            applied = await self._commit(live, command, source, interaction_id, extra_outbox or [])
        await self._notify(live, applied.events)
        return applied

    async def _commit(
        self, live: LiveGame, command: Command, source: str, interaction_id: int | None,
        extra_outbox: list[OutboxItem],
    ) -> Applied:
        game, record = live.game, live.record
        assert game is not None
        stage_before = live.stage_key()
        events = game.apply(command)
        record.command_count += 1
        now = self.clock()
        try:
            for observe in self.observers:
                observe(live, events, now)
            changed = live.stage_key() != stage_before
            if changed:
                self._arm_deadline(live)
            if game.over:
                record.state = "over"
            items = self.render(live, events) + extra_outbox
            every = self.config.snapshot_every
            snapshot = game.to_dict() if record.command_count % every == 0 else None
            seq = await self.storage.append_command(
                record, command_to_dict(command), source=source, interaction_id=interaction_id,
                outbox=items, snapshot=snapshot, record_changed=changed or game.over,
                now=now,
            )
        except aiosqlite.IntegrityError:
            log.info("game %s: interaction %s was applied before; not again", live.id, interaction_id)
            await self._reload(live)
            return Applied([], duplicate=True)
        except BaseException:
            log.exception("game %s: command %s could not be stored; state reloaded", live.id, command)
            await self._reload(live)
            raise
        self._remember(interaction_id)
        if game.over:
            self._live.pop(live.id, None)
        self._committed(live)
        return Applied(events, seq=seq)

    async def _reload(self, live: LiveGame) -> None:
        record = await self.storage.game(live.id)
        if record is None:
            self._live.pop(live.id, None)
            return
        live.record = record
        live.game = await self._rebuild(record) if record.state == "running" else None

    def _committed(self, live: LiveGame) -> None:
        for hook in self.after_commit:
            try:
                hook(live)
            except Exception:
                log.exception("after-commit hook failed for game %s", live.id)

    async def _notify(self, live: LiveGame, events: list[Event]) -> None:
        for listener in self.listeners:
            try:
                await listener(live, events)
            except Exception:
                log.exception("listener failed for game %s", live.id)

    # ------------------------------------------------------------------ holds

    def hold(self, game_id: int, key: str) -> None:
        """Keep the day from ending (a last word being recorded)."""
        self.live(game_id).holds.add(key)

    async def release(self, game_id: int, key: str) -> None:
        """Drop a hold; a day's end that waited for it is applied now."""
        live = self._live.get(game_id)
        if live is None:
            return
        live.holds.discard(key)
        if live.holds or not live.deferred:
            return
        waiting, live.deferred = live.deferred, []
        command, source = waiting[0]
        try:
            await self.apply(game_id, command, source=source)
        except RuleError as error:
            log.info("game %s: the deferred %s is no longer possible: %s", game_id, command, error)

    # ------------------------------------------------------------------ deadlines

    def stage_duration(self, live: LiveGame) -> int:
        """Seconds the current stage lasts by timer (0: no timer)."""
        if live.game is None or live.game.over:
            return 0
        name = TIMED_STAGES.get(live.game.stage)
        if name is None:
            return 0
        overrides = live.record.lobby.get("timers", {})
        return int(overrides.get(name, getattr(self.config.timers, name)))

    def _arm_deadline(self, live: LiveGame) -> None:
        duration = self.stage_duration(live)
        record = live.record
        record.deadline = self.clock() + duration if duration > 0 else None
        record.deadline_stage = live.stage_key() if duration > 0 else None
        record.reminders_sent = []

    async def set_deadline(self, game_id: int, deadline: float | None) -> None:
        """Move the current stage's deadline (the host's ``/host timer``)."""
        async with self.lock(game_id):
            live = self.live(game_id)
            live.record.deadline = deadline
            live.record.deadline_stage = live.stage_key() if deadline is not None else None
            live.record.reminders_sent = []
            await self.storage.save_game(live.record, now=self.clock())
            self._committed(live)

    async def mark_reminder(self, game_id: int, offset: int, items: Iterable[OutboxItem]) -> bool:
        """Announce a reminder once: stored with the offset it belongs to."""
        async with self.lock(game_id):
            live = self._live.get(game_id)
            if live is None or offset in live.record.reminders_sent:
                return False
            live.record.reminders_sent.append(offset)
            await self.storage.save_game(live.record, outbox=list(items), now=self.clock())
            self._committed(live)
            return True
