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
answer for 3 s after it was created. A command is committed first and answered
after with one call whenever that is still in time: when what is left of the
3 s (from its snowflake's time, read on a clock that may be a little behind
Discord's), less a margin for the answer's trip, covers what a command takes
now from its lock to its answer (:mod:`bot.service.answering`). Only one that
would not be in time, already or while it waits for the game's lock (the wait
is cut short then), is acknowledged ("thinking…") *before* it is committed,
and answered by editing that message after the commit: two calls. If Discord
no longer accepts the acknowledgement, the command is not applied
(:class:`Expired`): the player sees "interaction failed" and nothing counted.
If a one-call answer still fails, the command stands and the log says so.

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
start) touches a game in memory, what undoes it is kept (:class:`Before`, by what changes:
the rules' game and the votes' times note each change; the record keeps its fields, and its
contents whole for a change that may touch them, which the commit writes whole anyway: an
observer or renderer changes a record's contents only with a command that moves the stage or
ends the game, the commands whose record is stored), and if the commit fails the game is put
back exactly as it was, which is what the database holds, whatever the database is doing meanwhile (it may
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

import logging
from collections.abc import Callable, Iterable

import aiosqlite

from bot.errors import UserError
from bot.service.admission import GameAdmission
from bot.service.live import (
    RECENT_INTERACTIONS,
    TIMED_STAGES,
    Answer,
    Applied,
    Before,
    Broken,
    Clock,
    Expired,
    GameBroken,
    Held,
    JustBegan,
    Listener,
    LiveGame,
    MovedOn,
    NoGame,
    NotStored,
    Observer,
    Renderer,
    Seen,
    Unconfirmed,
    command_for_deadline,
    last_word_hold,
    nothing_to_render,
    rules_version,
    timer_mark,
)
from bot.storage import (
    OPEN_STATES,
    CommitUnknown,
    GameRecord,
    GameState,
    OutboxItem,
    is_storage_failure,
)
from bot.storage.shapes import Lobby
from rules import (
    Command,
    Event,
    Game,
    RuleError,
    Setup,
    command_to_dict,
)

log = logging.getLogger(__name__)

__all__ = [
    "Answer",
    "Applied",
    "Before",
    "Broken",
    "Clock",
    "Expired",
    "GameBroken",
    "GameService",
    "Held",
    "JustBegan",
    "Listener",
    "LiveGame",
    "MovedOn",
    "NoGame",
    "NotStored",
    "Observer",
    "RECENT_INTERACTIONS",
    "Renderer",
    "Seen",
    "TIMED_STAGES",
    "Unconfirmed",
    "command_for_deadline",
    "last_word_hold",
    "nothing_to_render",
    "rules_version",
    "timer_mark",
]


class GameService(GameAdmission):
    """Hosts every game of the process; see the module docstring."""

    async def create(
        self,
        guild_id: int,
        host_id: int,
        lobby: Lobby,
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
        await self._answer_first(answer)
        language = await self.language(guild_id)

        def render(record: GameRecord) -> list[OutboxItem]:
            assert outbox is not None
            return outbox(LiveGame(record, language=language))

        record = await self.storage.create_game(
            guild_id,
            host_id,
            lobby,
            interaction_id=interaction_id,
            now=self.clock(),
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
        async with self._locked(game_id, answer, interaction_id):
            if self._seen(interaction_id):
                return False
            live = await self._fresh(self.live(game_id))
            before = Before.of(live)
            try:
                items = change(live)
                if live.broken is not None and live.record.open:
                    raise GameBroken()
                await self.storage.save_game(
                    live.record,
                    interaction_id=interaction_id,
                    outbox=items,
                    cancel_lane=cancel_lane,
                    now=self.clock(),
                )
            except aiosqlite.IntegrityError as error:
                before.put_back(live)
                await self._refused_write(live, interaction_id, error)
                return False
            except BaseException as error:
                raise self._undo(live, before, error, "a change of its record") from error
            before.keep(live)
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
        from_state: GameState | None = None,
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
                record.state, record.command_count = GameState.RUNNING, 0
                live.game = game
                items = prepare(live) if prepare is not None else []
                events = game.opening_events()
                self._stage_began(
                    live
                )  # before rendering: the first announcement shows the deadline
                items.extend(self.render(live, events))
                await self.storage.save_game(
                    record, interaction_id=interaction_id, outbox=items, now=self.clock()
                )
            except BaseException as error:
                raise self._undo(live, before, error, "the deal") from error
            before.keep(live)
            self._remember(interaction_id)
            self._committed(live)
        await self._notify(live, events)
        return events

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
            Held: the game stands still: the bot lacks a server permission it needs
                (``standstill``); nothing changes.
            MovedOn: it was meant for a stage the game has left (or is a timer's move while
                the host has paused the game); nothing changes.
            GameBroken: the game is broken.
            Expired: Discord no longer accepts the interaction; nothing changes.
        """
        async with self._locked(game_id, answer, interaction_id):
            live = await self._fresh(self.live(game_id))
            not_applied = self._not_applied(live, command, source, interaction_id, seen)
            if not_applied is not None:
                return not_applied
            applied = await self._commit(
                live, command, source, interaction_id, extra_outbox or [], after
            )
        await self._notify(live, applied.events)
        return applied

    async def _commit(
        self,
        live: LiveGame,
        command: Command,
        source: str,
        interaction_id: int | None,
        extra_outbox: list[OutboxItem],
        after: Callable[[LiveGame, list[Event]], list[OutboxItem]] | None = None,
    ) -> Applied:
        before, events, changed = Before.applying(live, command, after=after is not None)
        game, record = live.game, live.record
        assert game is not None
        record_changed = before.image is not None  # kept whole: it is stored whole
        record.command_count += 1
        now = self.clock()
        try:
            for observe in self.observers:
                observe(live, events, now)
            if changed:
                self._stage_began(live)
            if game.over:
                record.state = GameState.OVER
            items = self.render(live, events) + extra_outbox
            if after is not None:
                items += after(live, events)
            every = self.config.snapshot_every
            snapshot = game.to_dict() if record.command_count % every == 0 else None
            seq = await self.storage.append_command(
                record,
                command_to_dict(command),
                source=source,
                interaction_id=interaction_id,
                outbox=items,
                snapshot=snapshot,
                rules_version=rules_version(),
                record_changed=record_changed,
                now=now,
            )
        except aiosqlite.IntegrityError as error:
            before.put_back(live)
            await self._refused_write(live, interaction_id, error)
            return Applied([], duplicate=True)
        except BaseException as error:
            raise self._undo(live, before, error, f"command {command}") from error
        before.keep(live)
        self._remember(interaction_id)
        if game.over:
            self._drop(live.id)
        self._committed(live)
        return Applied(events, seq=seq)

    async def _refused_write(
        self, live: LiveGame, interaction_id: int | None, error: BaseException
    ) -> None:
        """A constraint refused a change of the game (put back already): returns if its
        interaction was applied before (Discord delivered it twice); else the database holds
        something this process did not write (another process wrote the game), so the game is
        read again before its next change and the change is refused as not stored (a timer
        backs off rather than firing again at once).

        Raises:
            NotStored: it was not a repeated interaction.
        """
        if interaction_id is not None:
            try:
                repeated = await self.storage.interaction_seen(interaction_id)
            except Exception:  # the database answered the write just now: trust its index
                repeated = True
            if repeated:
                log.info(
                    "game %s: interaction %s was applied before; not again", live.id, interaction_id
                )
                return
        live.stale = True
        log.error(
            "game %s: the database refused a change (%s): it holds what this process did not "
            "write (another process on the same database?); the game is read again",
            live.id,
            error,
        )
        raise NotStored() from error

    def _undo(
        self, live: LiveGame, before: Before, error: BaseException, what: str
    ) -> BaseException:
        """A change that was not stored: put the game back as it was (see the module docstring)
        and return what to raise in its place."""
        before.put_back(live)
        if isinstance(error, (aiosqlite.IntegrityError, UserError, RuleError, NoGame, Expired)):
            return error  # refused before anything was stored
        if isinstance(error, CommitUnknown):
            live.stale = True
            log.error(
                "game %s: the database went while %s was being committed (%r); it may "
                "stand: the game is read again before its next change",
                live.id,
                what,
                error,
            )
            return Unconfirmed()
        if is_storage_failure(error):  # rolled back (a transaction is all or nothing)
            log.error(
                "game %s: %s could not be stored (%r); nothing of it counts, the game is as before",
                live.id,
                what,
                error,
            )
            return NotStored()
        live.stale = True  # a bug, or a cancellation while the commit ran on: read it again
        log.error(
            "game %s: %s failed (%r); the game is read again before its next change",
            live.id,
            what,
            error,
            exc_info=error,
        )
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
                log.warning(
                    "game %s: still cannot read it from the database (%r); refused", live.id, error
                )
                raise NotStored() from error
            raise
        live.stale = False
        log.info(
            "game %s: read again from the database after a failed commit (%s commands)",
            live.id,
            live.record.command_count,
        )
        if self.find(live.id) is not live:
            raise NoGame(live.id)
        return live

    async def _reload(self, live: LiveGame) -> None:
        record = await self.storage.game(live.id)
        if record is None:
            self._drop(live.id)
            return
        game = None
        if record.state == GameState.RUNNING and live.broken is None:
            try:
                game = await self._rebuild(record)
            except Broken as why:
                live.broken = why
                log.error("game %s became broken on reload: %s", live.id, why)
        # swapped in at once: nothing sees the game half reloaded
        live.record, live.game = record, game

    async def _notify(self, live: LiveGame, events: list[Event]) -> None:
        for listener in self.listeners:
            try:
                await listener(live, events)
            except Exception:
                log.exception("listener failed for game %s", live.id)

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
        except Held as held:
            # the game stands still: the day's end waits on, applied by the release that comes
            # when it may move again (:mod:`bot.powers` releases its own key then)
            live = self._live.get(game_id)
            if live is not None:
                live.deferred = waiting + live.deferred
            log.info("game %s: the deferred %s waits: %s", game_id, command, held.key)
        except (RuleError, MovedOn, GameBroken, NoGame) as error:
            log.info("game %s: the deferred %s is no longer possible: %s", game_id, command, error)
        except (NotStored, Unconfirmed):
            # the database failed: the day's end is handed to the timer (a deadline due now, in
            # memory, as the deferral itself), which tries again until it is stored
            live = self._live.get(game_id)
            if live is not None and live.stage_key() == stage:
                live.record.deadline, live.record.deadline_stage = self.clock(), stage
                self._committed(live)
            log.warning(
                "game %s: the deferred %s could not be stored; the timer takes it over",
                game_id,
                command,
            )

    async def mark_reminder(
        self,
        game_id: int,
        offset: int,
        items: Iterable[OutboxItem],
        *,
        stage: str | None,
        deadline: float | None,
    ) -> bool:
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
