"""The game service: the only way the cogs touch a game.

One asyncio lock per game, so concurrent interactions are applied in order.
A command is validated by the rules, committed with its outbox (and, now and
then, a snapshot), and only then are its effects announced. An interaction
Discord delivers twice is applied once.

**What the sender saw.** A command whose meaning depends on the stage (the
host's "next stage", the timer's "time is up") carries the stage it is meant
for (:class:`Seen`): the stage it names, or the moment Discord created its
interaction. Under the game's lock a command for a stage the game has left,
or sent before the current stage began, is refused (:class:`MovedOn`) and
changes nothing: two "next" at once move the game on once.

**Answer first where Discord needs it.** Discord takes an interaction's
answer for 3 s after it was created. A command whose interaction is older
than :data:`DEFER_AFTER` (from its snowflake's time), or that has to wait for
the game's lock, is acknowledged ("thinking…") *before* it is committed, and
answered by editing that message after the commit. If Discord no longer
accepts the acknowledgement, the command is not applied (:class:`Expired`):
the player sees "interaction failed" and nothing counted. A young command
that finds the lock free is committed first and answered at once (one REST
call); if that answer still fails, the command stands and the log says so.

**Storage faults.** Each snapshot is stored with a SHA-256 checksum of its
text and the version of the rules that wrote it. At load a snapshot is used
only if its checksum holds, it parses, and the log replays to it: from the
snapshot before it (at most ``snapshot_every`` commands, so loading stays
cheap), or from the setup when the rules changed since it was written or it
is the first. A snapshot failing any of these is logged and the whole log is
replayed instead. A game whose log does not replay (an unreadable row, a
command the rules refuse) is loaded as **broken**: its host is told in the
game's log channel (or the lobby's channel), every command in it is refused
with the catalogue's "this game is broken", and only closing it (``/host
end``) is accepted, so the guild can play again.

**A change counts once it is stored.** Before a command (or a change of the record, or a
start) touches a game in memory, what memory holds is kept (:class:`Before`: the record,
the rules' state, the votes' times), and if the commit fails the game is put back exactly as
it was, which is what the database holds, whatever the database is doing meanwhile (it may
be down: nothing is read back from it). The sender is told his command did not count
(:class:`NotStored`); a timer's deadline is tried again after its back-off. A transaction
that failed is rolled back whole, so memory and database agree again at once. Only when
PostgreSQL went while COMMIT was on its way may the command stand after all
(:class:`Unconfirmed`; or a change failed for an unforeseen reason): then the game is read
again from the database before its next change (``stale``), and a reload that finds the
database still down refuses the change as not stored, memory untouched. When the database
is back, the game goes on from its log.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
import logging
import pickle
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Protocol

import aiosqlite

from bot.config import Config
from bot.errors import UserError
from bot.i18n import t
from bot.storage import (
    OPEN_STATES,
    CommitUnknown,
    DamagedLog,
    GameRecord,
    OutboxItem,
    Storage,
    StoredSnapshot,
    is_storage_failure,
)
from rules import (
    Command,
    EndDay,
    EndNight,
    Event,
    ExecuteByLot,
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

#: an interaction older than this (seconds since Discord created it) is acknowledged before
#: its command is committed: Discord refuses answers after 3 s, and the commit, the answer's
#: trip and a clock a little off must fit in what is left
DEFER_AFTER = 1.5


class NoGame(Exception):
    """No such game, or it is not running."""


class MovedOn(UserError):
    """The command was meant for a stage the game has already left; nothing changed."""

    def __init__(self) -> None:
        super().__init__("error.moved_on")


class JustBegan(MovedOn):
    """A person's stage move sent within moments of the timer beginning the stage it would end:
    he could not have seen that stage yet; nothing changed. ``stage`` is the stage the timer
    began (``day 1 voting``), ``late`` how many seconds after its start the command was sent."""

    def __init__(self, stage: str, late: float) -> None:
        super().__init__()
        self.stage = stage
        self.late = late


class GameBroken(UserError):
    """The game's log no longer replays: only closing it is accepted."""

    def __init__(self) -> None:
        super().__init__("error.game_broken")


class NotStored(UserError):
    """The database failed to store the change: nothing of it counts, memory is as before."""

    def __init__(self) -> None:
        super().__init__("error.not_stored")


class Unconfirmed(UserError):
    """The database went while the change was being committed: it may stand or not; the game
    is read again from the database before its next change."""

    def __init__(self) -> None:
        super().__init__("storage.unconfirmed")


class Expired(Exception):
    """Discord no longer accepts the interaction's answer: the command was not applied."""


class Broken(Exception):
    """A stored game cannot be rebuilt; ``key`` and ``params`` say why, in the catalogue."""

    def __init__(self, key: str, **params: Any) -> None:
        super().__init__(f"{key} {params}")
        self.key = key
        self.params = params


@dataclass(frozen=True)
class Seen:
    """What a command's sender saw: the stage he names (``day 1 discussion``) and/or when he
    sent it (unix time, from his interaction's snowflake). Either may be unknown."""

    stage: str | None = None
    at: float | None = None
    settle: float = 0.0
    """A person's stage move that names no stage: refused (:class:`JustBegan`) when sent less
    than this many seconds after the timer began the current stage (the game's lobby keeps
    when, as ``timer_began``)."""


class Answer(Protocol):
    """The interaction a command came with, as far as the service needs it."""

    @property
    def sent_at(self) -> float:
        """Unix time Discord created the interaction."""
        ...

    @property
    def deferred(self) -> bool:
        """Whether it is acknowledged already."""
        ...

    async def defer(self) -> bool:
        """Acknowledge it now ("thinking…"); False if Discord refused."""
        ...


@cache
def rules_version() -> str:
    """A digest of the rules' source: a snapshot written by other rules is checked by a
    full replay."""
    digest = hashlib.sha256()
    folder = resources.files("rules")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".py"):
            digest.update(entry.name.encode())
            digest.update(entry.read_bytes())
    return digest.hexdigest()[:16]


@dataclass
class LiveGame:
    """A game in memory: its stored record and, once dealt, the rules' game."""

    record: GameRecord
    game: Game | None = None
    language: str = "ru"
    holds: set[str] = field(default_factory=set)
    deferred: list[tuple[Command, str, str | None]] = field(default_factory=list)
    broken: Broken | None = None
    """Why the stored game cannot be played on (None: it can)."""
    tick_times: dict[int, float] = field(default_factory=dict)
    """Wall time (unix) of the accepted commands that still matter, by the rules' tick: the
    standing votes' (the rules count time in ticks; the ballot shows clock times)."""
    stale: bool = False
    """A commit of this game failed: read it again from the database before its next change."""

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
class Before:
    """A game in memory as it was before a change (what the database holds), put back when the
    change is not stored. Kept on every change, so kept cheaply (some 30 µs, a tenth of
    :func:`copy.deepcopy`'s time for a running game's record): the record pickled (plain data
    of this process, read back only here), the rules' state as its plain data (the
    round-tripping form the snapshots use); each is rebuilt only when put back."""

    record: bytes
    game: dict[str, Any] | None
    tick_times: dict[int, float]

    @classmethod
    def of(cls, live: LiveGame) -> Before:
        """What ``live`` holds now."""
        game = live.game.to_dict() if live.game is not None else None
        return cls(pickle.dumps(live.record, protocol=pickle.HIGHEST_PROTOCOL), game, dict(live.tick_times))

    def put_back(self, live: LiveGame) -> None:
        """Make ``live`` hold it again."""
        live.record = pickle.loads(self.record)
        live.game = Game.from_dict(self.game) if self.game is not None else None
        live.tick_times = dict(self.tick_times)


@dataclass(frozen=True)
class Applied:
    """The outcome of :meth:`GameService.apply`."""

    events: list[Event]
    duplicate: bool = False
    deferred: bool = False
    seq: int | None = None
    repeated: bool = False
    """A player's choice that stood already as it is: not applied, nothing announced."""


class Renderer(Protocol):
    """Turns rule events into outbox items (messages, permission changes)."""

    def __call__(self, live: LiveGame, events: list[Event]) -> list[OutboxItem]: ...


Listener = Callable[[LiveGame, list[Event]], Awaitable[None]]
Observer = Callable[[LiveGame, list[Event], float], None]
"""Sees a command's events with the wall time it was accepted, before they are rendered and
stored (what the game remembers of it beyond the rules' state: when each vote came)."""


def timer_mark(began: float | None) -> Callable[[LiveGame, list[Event]], list[OutboxItem]]:
    """The ``after`` of a timer's move (:meth:`GameService.apply`): if the stage changed from the
    one that began at ``began``, the lobby keeps that the timer began this one
    (``timer_began``), so that a person's move sent moments later is refused (:class:`JustBegan`)."""

    def mark(live: LiveGame, events: list[Event]) -> list[OutboxItem]:
        if live.record.stage_since != began:
            live.record.lobby["timer_began"] = live.record.stage_since
        return []

    return mark


def nothing_to_render(live: LiveGame, events: list[Event]) -> list[OutboxItem]:
    """The renderer used until the Discord layer installs its own."""
    return []


#: the stages a timer ends, by their timer's name (``execution``: how long a day waits for an
#: absent host's ``/host execute`` before the city executes by lot)
TIMED_STAGES = {Stage.DISCUSSION: "discussion", Stage.VOTING: "voting", Stage.NIGHT: "night",
                Stage.EXECUTION: "execution"}


def command_for_deadline(stage: Stage) -> Command | None:
    """What the timer does when a stage's time is up (what the host would do)."""
    if stage is Stage.DISCUSSION:
        return StartVoting()
    if stage is Stage.VOTING:
        return EndDay()
    if stage is Stage.NIGHT:
        return EndNight()
    if stage is Stage.EXECUTION:
        return ExecuteByLot()
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
        # Discord's clock, not the game's (which tests and benchmarks replace): a command's
        # snowflake time is compared with the moment its stage began
        self.wall: Clock = time.time
        self._live: dict[int, LiveGame] = {}
        self._guild_games: dict[int, list[int]] = {}
        """guild id -> its loaded games' ids, in the order they were loaded (for open_game)."""
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

    def find(self, game_id: int) -> LiveGame | None:
        """A loaded game, or None."""
        return self._live.get(game_id)

    def games(self) -> list[LiveGame]:
        """Every loaded game."""
        return list(self._live.values())

    async def language(self, guild_id: int) -> str:
        """The guild's language (the configured default until set)."""
        return await self.storage.guild_language(guild_id) or self.config.language

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
            if live.record.state == "running" and live.game and name in live.game.players:
                return live
        return None

    # ------------------------------------------------------------------ restore

    async def restore(self) -> list[LiveGame]:
        """Load every open game: snapshot + replay of the log after it (see the module docstring)."""
        restored = []
        for record in await self.storage.open_games():
            try:
                restored.append(await self._load(record))
            except Exception:
                log.exception("game %s could not be restored; it stays stored as it is", record.id)
        return restored

    async def _load(self, record: GameRecord) -> LiveGame:
        live = LiveGame(record, language=await self.language(record.guild_id))
        if record.damaged is not None:
            live.broken = Broken("broken.unreadable_game")
        elif record.state == "running" and record.setup is not None and record.seed is not None:
            try:
                live.game = await self._rebuild(record)
            except Broken as why:
                live.broken = why
            else:
                for restorer in self.restorers:
                    await restorer(live)
        self._keep(live)
        if live.broken is not None:
            log.error("game %s is broken and can only be closed: %s", record.id, live.broken)
            await self._tell_broken(live)
        return live

    async def _tell_broken(self, live: LiveGame) -> None:
        """Tell the host, once per reason, in the game's log channel or else the lobby's."""
        assert live.broken is not None
        why = t(live.language, live.broken.key, **live.broken.params)
        key = f"broken:{live.id}"
        if await self.storage.meta(key) == why:
            return
        channel = live.record.channels.get("log") or live.record.lobby.get("channel_id")
        if channel:
            text = t(live.language, "broken.notice", game=live.id, reason=why)
            await self.storage.add_outbox(live.id, [OutboxItem(
                "send", {"channel_id": int(channel)}, {"content": text, "allowed_mentions": {"parse": []}})])
        await self.storage.set_meta(key, why)
        self._committed(live)

    async def finished_game(self, record: GameRecord) -> Game:
        """A finished game (no longer in memory) as its log makes it.

        Raises:
            Broken: the setup, or a command of the log, does not replay.
        """
        return await self._rebuild(record)

    async def _rebuild(self, record: GameRecord) -> Game:
        """The game as its log makes it, through its newest sound snapshot.

        Raises:
            Broken: the setup, or a command of the log, does not replay.
        """
        assert record.setup is not None and record.seed is not None
        try:
            setup = Setup.from_dict(record.setup)
            Game.create(setup, record.seed)
        except (RuleError, KeyError, TypeError, ValueError) as error:
            log.error("game %s: its setup does not make a game: %s", record.id, error)
            raise Broken("broken.setup") from None

        def fresh() -> Game:
            return Game.create(setup, int(record.seed or 0))

        stored = await self.storage.snapshots(record.id, limit=2)
        game, after = fresh(), 0
        latest = self._snapshot_game(record.id, stored[0]) if stored else None
        if latest is not None:
            newest = stored[0]
            previous = None
            if len(stored) > 1 and newest.rules_version == rules_version():
                previous = self._snapshot_game(record.id, stored[1], quiet=True)
            base, base_seq = (previous, stored[1].seq) if previous is not None else (fresh(), 0)
            replayed, _ = await self._replay(record.id, base, base_seq, upto=newest.seq)
            if replayed != latest and base_seq:
                replayed, _ = await self._replay(record.id, fresh(), 0, upto=newest.seq)
            if replayed != latest:
                log.error("game %s: snapshot %s disagrees with the replay of its log; the log wins",
                          record.id, newest.seq)
            game, after = replayed, newest.seq
        game, last = await self._replay(record.id, game, after)
        record.command_count = last
        return game

    def _snapshot_game(self, game_id: int, snapshot: StoredSnapshot, *, quiet: bool = False) -> Game | None:
        """The game a stored snapshot holds, or None (logged) if it is not sound."""
        level = logging.DEBUG if quiet else logging.WARNING
        if snapshot.checksum is None:  # written before snapshots had checksums: expected once
            log.info("game %s: snapshot %s has no checksum; the log is replayed", game_id, snapshot.seq)
            return None
        if not snapshot.intact:
            log.log(level, "game %s: snapshot %s does not match its checksum; the log is replayed",
                    game_id, snapshot.seq)
            return None
        try:
            return Game.from_dict(json.loads(snapshot.text))
        except (RuleError, KeyError, TypeError, ValueError) as error:
            log.log(level, "game %s: snapshot %s is unreadable (%s); the log is replayed",
                    game_id, snapshot.seq, error)
            return None

    async def _replay(self, game_id: int, game: Game, after: int, upto: int | None = None) -> tuple[Game, int]:
        """Apply the log's commands after ``after`` (up to ``upto``) to ``game``; returns it and
        the last seq applied.

        Raises:
            Broken: a row is unreadable or the rules refuse a command.
        """
        try:
            rows = await self.storage.commands(game_id, after, upto)
        except DamagedLog as error:
            log.error("%s", error)
            raise Broken("broken.unreadable_command", seq=error.seq) from None
        last = after
        for row in rows:
            try:
                command = command_from_dict(row.command)
            except (RuleError, KeyError, TypeError, ValueError) as error:
                log.error("game %s: stored command %s is unreadable: %r", game_id, row.seq, error)
                raise Broken("broken.unreadable_command", seq=row.seq) from None
            try:
                game.apply(command)
            except RuleError as error:
                log.error("game %s: stored command %s is refused on replay (%s)", game_id, row.seq, error)
                raise Broken("broken.refused_command", seq=row.seq, code=error.code) from None
            last = row.seq
        return game, last

    # ------------------------------------------------------------------ lobby

    async def create(
        self,
        guild_id: int,
        host_id: int,
        lobby: dict[str, Any],
        *,
        interaction_id: int | None = None,
        outbox: Callable[[LiveGame], list[OutboxItem]] | None = None,
        answer: Answer | None = None,
    ) -> LiveGame:
        """Open a lobby; ``outbox`` renders what to announce once the game has its id, and it
        is committed with the game.

        Raises:
            bot.storage.GameExists: the guild already has an open game.
            Expired: Discord no longer accepts the interaction; nothing was stored.
        """
        await self._answer_first(answer, None)
        language = await self.language(guild_id)

        def render(record: GameRecord) -> list[OutboxItem]:
            assert outbox is not None
            return outbox(LiveGame(record, language=language))

        record = await self.storage.create_game(
            guild_id, host_id, lobby, interaction_id=interaction_id, now=self.clock(),
            outbox=render if outbox is not None else None,
        )
        live = LiveGame(record, language=language)
        self._keep(live)
        self._remember(interaction_id)
        self._committed(live)
        return live

    async def update(
        self,
        game_id: int,
        change: Callable[[LiveGame], list[OutboxItem]],
        *,
        interaction_id: int | None = None,
        cancel_lane: str | None = None,
        answer: Answer | None = None,
    ) -> bool:
        """Change a game's record (lobby, channels...) under its lock and store it.

        ``change`` mutates ``live.record`` and returns what to announce; it may
        raise to refuse, and then nothing is stored (the record is reloaded).
        ``cancel_lane`` gives up the game's pending outbox items of that lane in
        the same commit. A broken game takes only a change that closes it.
        Returns False if the interaction was already applied.

        Raises:
            GameBroken: the game is broken and the change does not close it.
            Expired: Discord no longer accepts the interaction; nothing changed.
        """
        lock = self.lock(game_id)
        await self._answer_first(answer, lock)
        async with lock:
            await self._answer_first(answer, None)
            if self._seen(interaction_id):
                return False
            live = await self._fresh(self.live(game_id))
            before = Before.of(live)
            try:
                items = change(live)
                if live.broken is not None and live.record.open:
                    raise GameBroken()
                await self.storage.save_game(
                    live.record, interaction_id=interaction_id, outbox=items, cancel_lane=cancel_lane,
                    now=self.clock(),
                )
            except aiosqlite.IntegrityError:
                log.info("game %s: interaction %s was applied before; not again", game_id, interaction_id)
                before.put_back(live)
                return False
            except BaseException as error:
                raise self._undo(live, before, error, "a change of its record") from error
            self._remember(interaction_id)
            if live.record.state not in OPEN_STATES:
                self._drop(game_id)
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
            GameBroken: the stored game is broken.
        """
        async with self.lock(game_id):
            live = await self._fresh(self.live(game_id))
            if live.broken is not None:
                raise GameBroken()
            if from_state is not None and live.record.state != from_state:
                raise NoGame(game_id)
            game = Game.create(setup, seed)
            before = Before.of(live)
            record = live.record
            try:
                record.setup, record.seed = setup.to_dict(), seed
                record.state, record.command_count = "running", 0
                live.game = game
                items = prepare(live) if prepare is not None else []
                events = game.opening_events()
                self._stage_began(live)  # before rendering: the first announcement shows the deadline
                items.extend(self.render(live, events))
                await self.storage.save_game(
                    record, interaction_id=interaction_id, outbox=items, now=self.clock()
                )
            except BaseException as error:
                raise self._undo(live, before, error, "the deal") from error
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
        seen: Seen | None = None,
        answer: Answer | None = None,
        after: Callable[[LiveGame, list[Event]], list[OutboxItem]] | None = None,
    ) -> Applied:
        """Validate, commit and announce one command.

        ``extra_outbox`` is committed with the command, after what its events
        render (a last word's recording, say); ``after`` sees the game once the command is
        applied, may change the game's record (stored with the command) and returns more
        items for the same commit. ``seen`` is what its sender saw
        (checked under the lock); ``answer`` its interaction, acknowledged
        before the commit when Discord needs it (see the module docstring).

        Raises:
            RuleError: the rules refuse it; nothing changes.
            NoGame: the game is not running.
            MovedOn: it was meant for a stage the game has left (or is a timer's move while
                the host has paused the game); nothing changes.
            GameBroken: the game is broken.
            Expired: Discord no longer accepts the interaction; nothing changes.
        """
        lock = self.lock(game_id)
        await self._answer_first(answer, lock)
        async with lock:
            await self._answer_first(answer, None)
            live = await self._fresh(self.live(game_id))
            if live.broken is not None:
                raise GameBroken()
            if live.game is None or live.record.state != "running":
                raise NoGame(game_id)
            if self._seen(interaction_id):
                log.info("game %s: interaction %s delivered again; applied once", game_id, interaction_id)
                return Applied([], duplicate=True)
            self._check_seen(live, seen, command)
            if source == "player" and live.game.repeats(command):
                log.info("game %s: %s repeats a standing choice; not applied again", game_id, command)
                return Applied([], repeated=True)
            if source == "timer" and live.record.lobby.get("paused") and command == command_for_deadline(live.game.stage):
                # the host paused while this deadline waited for the lock: the clock stands
                log.info("game %s: the timer's %s came after the pause; not applied", game_id, command)
                raise MovedOn()
            if isinstance(command, EndDay) and live.holds:
                live.game.check(command)
                live.deferred.append((command, source, live.stage_key()))
                log.info("game %s: the day's end waits for %s", game_id, sorted(live.holds))
                return Applied([], deferred=True)
            applied = await self._commit(live, command, source, interaction_id, extra_outbox or [], after)
        await self._notify(live, applied.events)
        return applied

    async def _answer_first(self, answer: Answer | None, lock: asyncio.Lock | None) -> None:
        """Acknowledge the interaction now if it is old, or (``lock`` given) must wait for it.

        Raises:
            Expired: Discord refused the acknowledgement.
        """
        if answer is None or answer.deferred:
            return
        waits = lock is not None and lock.locked()
        if not waits and self.wall() - answer.sent_at <= DEFER_AFTER:
            return
        if not await answer.defer():
            raise Expired()

    def _check_seen(self, live: LiveGame, seen: Seen | None, command: Command) -> None:
        if seen is None:
            return
        current = live.stage_key()
        since = live.record.stage_since
        named = seen.stage is not None and seen.stage != current
        # in whole milliseconds, as snowflakes count: a command sent in the millisecond the
        # stage began is taken as sent after it
        earlier = seen.at is not None and since is not None and int(seen.at * 1000) < int(since * 1000)
        if named or earlier:
            log.info("game %s: %s was meant for %s; the game is at %s: refused",
                     live.id, command, seen.stage or f"the stage before {since}", current)
            raise MovedOn()
        by_timer = since is not None and live.record.lobby.get("timer_began") == since
        if seen.stage is None and seen.at is not None and by_timer and current is not None:
            assert since is not None
            late = (int(seen.at * 1000) - int(since * 1000)) / 1000  # in whole ms, as above
            if late < seen.settle:
                log.info("game %s: %s sent %.3f s after the timer began %s: refused as unseen",
                         live.id, command, late, current)
                raise JustBegan(current, late)

    async def _commit(
        self, live: LiveGame, command: Command, source: str, interaction_id: int | None,
        extra_outbox: list[OutboxItem],
        after: Callable[[LiveGame, list[Event]], list[OutboxItem]] | None = None,
    ) -> Applied:
        before = Before.of(live)
        game, record = live.game, live.record
        assert game is not None
        stage_before = live.stage_key()
        events = game.apply(command)  # refused: nothing changed
        record.command_count += 1
        now = self.clock()
        try:
            for observe in self.observers:
                observe(live, events, now)
            changed = live.stage_key() != stage_before
            if changed:
                self._stage_began(live)
            if game.over:
                record.state = "over"
            items = self.render(live, events) + extra_outbox
            if after is not None:
                items += after(live, events)
            every = self.config.snapshot_every
            snapshot = game.to_dict() if record.command_count % every == 0 else None
            seq = await self.storage.append_command(
                record, command_to_dict(command), source=source, interaction_id=interaction_id,
                outbox=items, snapshot=snapshot, rules_version=rules_version(),
                record_changed=changed or game.over or after is not None, now=now,
            )
        except aiosqlite.IntegrityError:
            log.info("game %s: interaction %s was applied before; not again", live.id, interaction_id)
            before.put_back(live)
            return Applied([], duplicate=True)
        except BaseException as error:
            raise self._undo(live, before, error, f"command {command}") from error
        self._remember(interaction_id)
        if game.over:
            self._drop(live.id)
        self._committed(live)
        return Applied(events, seq=seq)

    def _undo(self, live: LiveGame, before: Before, error: BaseException, what: str) -> BaseException:
        """A change that was not stored: put the game back as it was (see the module docstring)
        and return what to raise in its place."""
        before.put_back(live)
        if isinstance(error, (aiosqlite.IntegrityError, UserError, RuleError, NoGame, Expired)):
            return error  # refused before anything was stored
        if isinstance(error, CommitUnknown):
            live.stale = True
            log.error("game %s: the database went while %s was being committed (%r); it may "
                      "stand: the game is read again before its next change", live.id, what, error)
            return Unconfirmed()
        if is_storage_failure(error):  # rolled back (a transaction is all or nothing)
            log.error("game %s: %s could not be stored (%r); nothing of it counts, the game is "
                      "as before", live.id, what, error)
            return NotStored()
        live.stale = True  # a bug, or a cancellation while the commit ran on: read it again
        log.error("game %s: %s failed (%r); the game is read again before its next change",
                  live.id, what, error, exc_info=error)
        return error

    async def _fresh(self, live: LiveGame) -> LiveGame:
        """The game, read again from the database first if a commit of it failed.

        Raises:
            NotStored: the database still fails (memory is left as it is).
            NoGame: the database no longer has it open.
        """
        if not live.stale:
            return live
        try:
            await self._reload(live)
            if live.game is not None and live.broken is None:
                for restorer in self.restorers:
                    await restorer(live)
        except BaseException as error:
            if is_storage_failure(error):
                log.warning("game %s: still cannot read it from the database (%r); refused",
                            live.id, error)
                raise NotStored() from error
            raise
        live.stale = False
        log.info("game %s: read again from the database after a failed commit (%s commands)",
                 live.id, live.record.command_count)
        if self.find(live.id) is not live:
            raise NoGame(live.id)
        return live

    async def _reload(self, live: LiveGame) -> None:
        record = await self.storage.game(live.id)
        if record is None:
            self._drop(live.id)
            return
        game = None
        if record.state == "running" and live.broken is None:
            try:
                game = await self._rebuild(record)
            except Broken as why:
                live.broken = why
                log.error("game %s became broken on reload: %s", live.id, why)
        # swapped in at once: nothing sees the game half reloaded
        live.record, live.game = record, game

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
        """Drop a hold; a day's end that waited for it is applied now (if the game is still at
        the stage it was meant for)."""
        live = self._live.get(game_id)
        if live is None:
            return
        live.holds.discard(key)
        if live.holds or not live.deferred:
            return
        waiting, live.deferred = live.deferred, []
        command, source, stage = waiting[0]
        after = timer_mark(live.record.stage_since) if source == "timer" else None
        try:
            await self.apply(game_id, command, source=source, seen=Seen(stage=stage), after=after)
        except (RuleError, MovedOn, GameBroken, NoGame) as error:
            log.info("game %s: the deferred %s is no longer possible: %s", game_id, command, error)
        except (NotStored, Unconfirmed):
            # the database failed: the day's end is handed to the timer (a deadline due now, in
            # memory, as the deferral itself), which tries again until it is stored
            live = self._live.get(game_id)
            if live is not None and live.stage_key() == stage:
                live.record.deadline, live.record.deadline_stage = self.clock(), stage
                self._committed(live)
            log.warning("game %s: the deferred %s could not be stored; the timer takes it over",
                        game_id, command)

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

    def _stage_began(self, live: LiveGame) -> None:
        """A new stage: when it began (by Discord's clock) and, if timed, its deadline."""
        live.record.stage_since = self.wall()
        duration = self.stage_duration(live)
        record = live.record
        paused = record.lobby.get("paused")
        if isinstance(paused, dict):  # paused by the host: the new stage waits, its time kept
            paused.update(stage=live.stage_key(), remaining=duration if duration > 0 else None)
            record.deadline, record.deadline_stage, record.reminders_sent = None, None, []
            return
        record.deadline = self.clock() + duration if duration > 0 else None
        record.deadline_stage = live.stage_key() if duration > 0 else None
        record.reminders_sent = []

    async def mark_reminder(self, game_id: int, offset: int, items: Iterable[OutboxItem], *,
                            stage: str | None, deadline: float | None) -> bool:
        """Announce a reminder once: stored with the offset it belongs to, if the game still has
        the deadline (``stage``, ``deadline``) it was worked out for."""
        async with self.lock(game_id):
            live = self._live.get(game_id)
            if live is None or offset in live.record.reminders_sent:
                return False
            if (live.record.deadline_stage, live.record.deadline) != (stage, deadline):
                return False  # the stage moved on while the reminder waited for the lock
            live.record.reminders_sent.append(offset)
            try:
                await self.storage.save_game(live.record, outbox=list(items), now=self.clock())
            except BaseException:
                live.record.reminders_sent.remove(offset)
                raise
            self._committed(live)
            return True
