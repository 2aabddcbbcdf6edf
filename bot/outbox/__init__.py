"""The outbox: what the bot must do on Discord, stored with the command that caused it.

Items go in three lanes per game, each carried out in order by a task of its
own, so one never waits for another: ``provision`` (a game's roles and
channels being made, or removed again), ``permissions`` (overwrites and the
game roles of members: the executed lose their pen at once) and ``messages``
(posts, edits, voice messages, and deleting channels after the last words
said in them).

Exactly once, never stalled:

* every item is marked done, with the id Discord returned (message, role,
  channel), right after Discord accepted it, in its own transaction;
* every call has a timeout (:attr:`Outbox.call_timeout`); a hang, like a 429,
  a 5xx or a network fault, is retried with backoff, and a hanging call of one
  lane holds up nothing in the others;
* an item that may have reached Discord without its mark being stored (it was
  pending when an earlier process stopped, or a call of it timed out) is
  *adopted* rather than made again (a role or channel pending from an earlier
  process only once that process's calls would have timed out: one of them
  may still land; a rollback's sweep that gave up such creates waits as
  long): a message is sent with a nonce Discord
  enforces (``enforce_nonce``), which covers a retry within Discord's nonce
  memory; past that memory, and after a restart, the channel's recent
  history is read for the bot's own message with that content, posted after
  the item was stored and not returned to any other item (Discord does not
  keep nonces on stored messages, so the content is what identifies it). A
  role or channel being made is looked up by its deterministic name (a text
  channel by its topic, as Discord rewrites text channel names), type and
  parent. Edits, overwrites, role memberships and deletes are idempotent:
  they are simply made again.

Edits of the same message are coalesced: only the newest pending edit is
sent, at most one per ``edit_interval`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable
from typing import Any

import aiohttp
import discord

from bot.config import Config
from bot.outbox.breaker import Breaker
from bot.outbox.calls import (
    CREATES,
    DiscordCalls,
    NotMadeYet,
)
from bot.storage import LANES, GameState, OutboxItem, Storage, is_storage_failure

__all__ = [
    "CALL_TIMEOUT",
    "CREATES",
    "EDIT_INTERVAL",
    "NotMadeYet",
    "Outbox",
    "POSTS",
    "is_transient",
]

log = logging.getLogger(__name__)

# One retry after another: 0.5 s, 1 s, 2 s ... up to a minute.
BACKOFF_START = 0.5
BACKOFF_MAX = 60.0

#: edits of one message go out at most this often (seconds): a burst of them is one edit
EDIT_INTERVAL = 1.5
#: how long one REST call may take before it counts as lost (and is retried); config's ``call_timeout``
CALL_TIMEOUT = float(Config.call_timeout)
#: how long a handler of another module (a voice message upload) may take in all
HANDLER_TIMEOUT = 180.0
#: how long after its first attempt a message's nonce is trusted to stop a second post; Discord
#: remembers enforced nonces for "a few minutes", so this stays well inside that
NONCE_TRUST = 60.0

#: kinds that post a message (with a nonce)
POSTS = frozenset({"send", "voice"})


Handler = Callable[[OutboxItem], Coroutine[Any, Any, int | None]]
Adopter = Callable[[OutboxItem], Awaitable[int | None]]
FailureHook = Callable[[OutboxItem, BaseException], Awaitable[None]]
IdleHook = Callable[[int, str], Awaitable[None]]


def is_transient(error: BaseException) -> bool:
    """Whether an error is worth trying again: rate limits, server errors, network faults, hangs,
    and the bot's own database failing under a handler that reads it (PostgreSQL down)."""
    if isinstance(
        error, discord.DiscordServerError | aiohttp.ClientError | asyncio.TimeoutError | NotMadeYet
    ):
        return True
    if is_storage_failure(error):
        return True
    if isinstance(error, discord.HTTPException):
        return error.status == 429 or error.status >= 500
    return isinstance(error, OSError | discord.GatewayNotFound)


class Outbox(DiscordCalls):
    """Carries out pending outbox items: one task per game and lane (see the module docstring)."""

    def __init__(
        self,
        storage: Storage,
        http: discord.http.HTTPClient,
        *,
        edit_interval: float = EDIT_INTERVAL,
        call_timeout: float = CALL_TIMEOUT,
        self_id: int | None = None,
        on_failure: FailureHook | None = None,
    ) -> None:
        self.storage = storage
        self.http = http
        self.edit_interval = edit_interval
        self.call_timeout = call_timeout
        self.nonce_trust = NONCE_TRUST
        self.self_id = self_id
        """The bot's user id: its own messages are the ones it may adopt."""
        self.failure_hooks: list[FailureHook] = [on_failure] if on_failure is not None else []
        """Called when Discord refuses an item for good (after it is marked failed)."""
        self.idle_hooks: list[IdleHook] = []
        """Called with (game id, lane) each time a lane of a game has nothing left pending."""
        self._started = time.time()
        self._workers: dict[tuple[int, str], asyncio.Task[None]] = {}
        self._wake: dict[tuple[int, str], asyncio.Event] = {}
        self._last_edit: dict[tuple[int, str], float] = {}
        self._refs: dict[tuple[int, str], tuple[int, int]] = {}
        self._ids: dict[int, dict[str, int]] = {}
        self._history: dict[int, tuple[int, list[dict[str, Any]]]] = {}
        self._held: dict[tuple[int, str], int] = {}
        self._given_up: dict[tuple[int, str], int] = {}
        """How many times each lane's pending items were given up (by a hold): a batch fetched
        before the last time is stale."""
        self._closed = False
        self.breaker = Breaker()
        """Holds a guild's items while the bot lacks what they need or Discord keeps refusing
        them there (:mod:`bot.outbox.breaker`)."""
        self.handlers: dict[str, Handler] = {
            "send": self._send,
            "edit": self._edit,
            "overwrite": self._overwrite,
            "delete_channel": self._delete_channel,
            "edit_channel": self._edit_channel,
            "create_role": self._create_role,
            "create_channel": self._create_channel,
            "member_role": self._member_role,
            "delete_role": self._delete_role,
            "sweep": self._sweep,
        }
        self.adopters: dict[str, Adopter] = {
            "send": self._adopt_message,
            "voice": self._adopt_message,
            "create_role": self._adopt_role,
            "create_channel": self._adopt_channel,
        }

    # ------------------------------------------------------------------ workers

    def kick(self, game_id: int, lanes: Iterable[str] | None = None) -> None:
        """Make sure the game's lanes carry out their pending items: those named, else those that
        got items since the last kick."""
        if self._closed:
            return
        for lane in self.storage.new_lanes(game_id) if lanes is None else lanes:
            key = (game_id, lane)
            self._wake.setdefault(key, asyncio.Event()).set()
            worker = self._workers.get(key)
            if worker is None or worker.done():
                self._workers[key] = asyncio.create_task(
                    self._work(game_id, lane), name=f"outbox-{game_id}-{lane}"
                )

    @contextlib.asynccontextmanager
    async def holding(self, game_id: int, lane: str) -> AsyncIterator[None]:
        """While a game's pending items of ``lane`` are being given up (a rollback): its worker
        begins none of them (a call already under way goes on), then looks again."""
        key = (game_id, lane)
        self._held[key] = self._held.get(key, 0) + 1
        self._given_up[key] = self._given_up.get(key, 0) + 1
        try:
            yield
        finally:
            self._held[key] -= 1
            if not self._held[key]:
                del self._held[key]
            self.kick(game_id, (lane,))

    def _given_up_since(self, item: OutboxItem, fetched: int) -> bool:
        """Whether ``item``'s lane was held since its batch was fetched (``fetched``: the lane's
        :attr:`_given_up` count then; no batch is fetched while a lane is held)."""
        return self._given_up.get((item.game_id, item.queue), 0) != fetched

    async def start(self) -> None:
        """Resume every game that has pending items, and every game being started (after a restart)."""
        for game_id in await self.storage.games_with_pending_outbox():
            self.kick(game_id, LANES)
        for game_id in await self.storage.games_in_state(GameState.STARTING):
            self.kick(game_id, ("provision",))

    def idle(self) -> bool:
        """Whether no lane of any game has anything left to carry out."""
        return all(task.done() for task in self._workers.values())

    async def drain(self, timeout: float = 10.0) -> None:
        """Wait until no worker has anything left (tests and shutdown)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            busy = [task for task in self._workers.values() if not task.done()]
            if not busy:
                return
            await asyncio.wait(busy, timeout=max(0.0, deadline - time.monotonic()))

    async def close(self) -> None:
        """Stop every worker; pending items stay stored for the next start."""
        self._closed = True
        for task in self._workers.values():
            task.cancel()
        for task in self._workers.values():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _work(self, game_id: int, lane: str) -> None:
        wake = self._wake.setdefault((game_id, lane), asyncio.Event())
        delay = BACKOFF_START
        while not self._closed:
            wake.clear()
            if (game_id, lane) in self._held:
                await wake.wait()  # the holder kicks the lane when it is done
                continue
            try:
                fetched = self._given_up.get((game_id, lane), 0)
                items = await self.storage.pending_outbox(game_id, lane=lane)
                if items:
                    await self._carry_out(items, fetched)
                    delay = BACKOFF_START
                    continue
                if wake.is_set():
                    continue  # something was stored while we looked
                self._history.clear()
                for hook in list(self.idle_hooks):
                    try:
                        await hook(game_id, lane)
                    except Exception:
                        log.exception("outbox idle hook failed for game %s (%s)", game_id, lane)
                if not wake.is_set():
                    return
            except Exception as error:
                # the database (a full disk, say): nothing is lost, it is all still pending
                self._lane_failed(game_id, lane, error, delay)
                await self._back_off(wake, delay)
                delay = min(delay * 2, BACKOFF_MAX)

    def _lane_failed(self, game_id: int, lane: str, error: BaseException, delay: float) -> None:
        """Log a lane's failure: the database failing is logged once for the outage (by
        :class:`bot.storage.health.Health`), anything else with its traceback."""
        if is_storage_failure(error) and self.storage.health.down:
            log.debug("outbox lane %s of game %s: %r; again in %.1f s", lane, game_id, error, delay)
            return
        log.error(
            "outbox lane %s of game %s failed; trying again in %.1f s",
            lane,
            game_id,
            delay,
            exc_info=error,
        )

    async def _back_off(self, wake: asyncio.Event, delay: float) -> None:
        """Wait ``delay`` seconds, or less if new items are stored for the lane meanwhile (a new
        item is a new reason to try: the database may have room again) or the database is back
        after an outage."""
        await self.storage.health.sleep(wake, delay)

    async def _carry_out(self, items: list[OutboxItem], fetched: int) -> None:
        latest: dict[str, int] = {
            item.target["ref"]: item.id for item in items if item.kind == "edit"
        }
        # a later pending edit of the same message replaces an earlier one
        replaced = [
            item for item in items if item.kind == "edit" and latest[item.target["ref"]] != item.id
        ]
        await self.storage.outbox_superseded(replaced)
        skipped = {item.id for item in replaced}
        for item in items:
            if item.id in skipped:
                continue
            if self._given_up_since(item, fetched):
                return  # given up, or being given up: what is pending is looked up again
            if not await self._deliver(item, fetched):
                return  # refused: what is pending may have changed (a rollback), look again

    async def _deliver(self, item: OutboxItem, fetched: int) -> bool:
        """Carry one item out (retrying what is worth it); False when Discord refused it."""
        handler = self.handlers.get(item.kind)
        if handler is None:
            log.error(
                "outbox item %s of game %s has unknown kind %r", item.id, item.game_id, item.kind
            )
            await self._mark_failed(item, f"unknown kind {item.kind!r}")
            return False
        delay = BACKOFF_START
        # pending when this process started: an earlier one may have carried it out unheard
        doubt = item.created_at < self._started
        if doubt and item.kind in CREATES:
            await self._earlier_calls_over()
        elif doubt and item.kind == "sweep" and item.payload.get("creates_until"):
            await self._creates_over(float(item.payload["creates_until"]))
        first: float | None = None
        while not self._closed:
            if self._given_up_since(item, fetched):
                return False  # given up meanwhile (a retry, a wait): look again
            await self.breaker.gate(item)  # the bot lacks what it needs there, or is refused
            if self._given_up_since(item, fetched):
                return False
            try:
                result: int | None = None
                adopted = False
                stale_nonce = first is not None and time.time() - first > self.nonce_trust
                adopter = self.adopters.get(item.kind)
                if adopter is not None and (doubt or (item.kind in POSTS and stale_nonce)):
                    result = await adopter(item)
                    adopted = result is not None
                    if adopted:
                        log.info(
                            "outbox item %s (%s) of game %s was carried out already: %s adopted",
                            item.id,
                            item.kind,
                            item.game_id,
                            result,
                        )
                doubt = False
                if not adopted:
                    first = first if first is not None else time.time()
                    # each call of the outbox's own handlers has its timeout; this bounds the rest
                    result = await self._timed(handler(item), HANDLER_TIMEOUT)
            except Exception as error:
                if is_transient(error):
                    doubt = await self._retry_later(item, error, doubt, delay)
                    delay = min(delay * 2, BACKOFF_MAX)
                    continue
                if self._kept(item, error):
                    continue  # the gate holds it until the power is given back
                await self._refused(item, error)
                return False
            self.breaker.succeeded(item)
            await self._done(item, result)
            return True
        return False

    def _kept(self, item: OutboxItem, error: BaseException) -> bool:
        """Whether a refused item stays pending: refused for a power the bot is now seen to lack
        (:meth:`bot.outbox.breaker.Breaker.keeps`), it is carried out once that is given back."""
        if not self.breaker.keeps(item, error):
            return False
        log.warning(
            "outbox item %s (%s) of game %s waits for the bot's powers: %s",
            item.id,
            item.kind,
            item.game_id,
            error,
        )
        return True

    async def _retry_later(
        self, item: OutboxItem, error: BaseException, doubt: bool, delay: float
    ) -> bool:
        """Log a transient failure, count it, wait ``delay`` seconds; whether the next try
        must first look for what this one may have made."""
        log.warning(
            "outbox item %s (%s) of game %s: %s; retrying in %.1f s",
            item.id,
            item.kind,
            item.game_id,
            repr(error),
            delay,
        )
        # a lost answer to a create may hide a success: look before making it again
        # (only a 429 says for sure that nothing was done)
        refused = isinstance(error, discord.HTTPException) and error.status == 429
        doubt = doubt or (item.kind in CREATES and not refused)
        with contextlib.suppress(Exception):  # only a count: never worth stopping for
            await self.storage.outbox_retry(item, repr(error))
        if is_storage_failure(error):
            await self.storage.health.wait(delay)  # at once when the database is back
        else:
            await asyncio.sleep(delay)
        return doubt

    async def _refused(self, item: OutboxItem, error: BaseException) -> None:
        """Discord refused the item for good: mark it failed, then tell the failure hooks."""
        log.error(
            "outbox item %s (%s) of game %s refused by Discord: %s",
            item.id,
            item.kind,
            item.game_id,
            error,
        )
        await self._mark_failed(item, repr(error))
        for hook in list(self.failure_hooks):
            try:
                await hook(item, error)
            except Exception:
                log.exception("reporting a failed outbox item")

    async def _done(self, item: OutboxItem, result: int | None) -> None:
        """Discord accepted the item: remember what it made (a message by its ref, a role or
        channel by its key) and mark it done."""
        ref = item.target.get("ref") if item.kind == "send" else None
        channel = item.target.get("channel_id")
        remembered = (str(ref), int(channel)) if ref and channel and result else None
        if remembered is not None and result is not None:
            self._refs[(item.game_id, remembered[0])] = (remembered[1], result)
        key = item.target.get("key")
        if key and result is not None:
            self._ids.setdefault(item.game_id, {})[str(key)] = result
        await self._mark(item, result, remembered)

    async def _creates_over(self, until: float) -> None:
        """A rollback's sweep left by an earlier process, which gave up creates: one of them may be
        under way at Discord still, and swept before it lands it would be left behind. It waits
        until such a call would have timed out (``until``: the rollback's time plus the call
        timeout), however many restarts came since."""
        wait = until - time.time()
        if wait > 0:
            await asyncio.sleep(min(wait, self.call_timeout))

    async def _earlier_calls_over(self) -> None:
        """Wait until a call the earlier process made would have timed out (:attr:`call_timeout`
        after this one started). A create it sent just before it stopped may still be under way at
        Discord: looked up before it lands, it would be missed and made a second time, and the
        first one, landing later, would belong to no game (found by the chaos test). A rollback's
        sweep has a wait of its own (:meth:`_creates_over`)."""
        wait = self._started + self.call_timeout - time.time()
        if wait > 0:
            await asyncio.sleep(wait)

    async def _mark(
        self, item: OutboxItem, result: int | None, ref: tuple[str, int] | None
    ) -> None:
        """Store that Discord accepted the item, however long the database refuses (a full disk):
        carrying it out again could post it twice once the nonce is forgotten."""
        await self._store_mark(item, "done", lambda: self.storage.outbox_sent(item, result, ref))

    async def _mark_failed(self, item: OutboxItem, error: str) -> None:
        """Store that Discord refused the item for good, however long the database refuses: the
        failure is reported (to the host, by the hooks) only once it is stored."""
        await self._store_mark(item, "failed", lambda: self.storage.outbox_failed(item, error))

    async def _store_mark(
        self, item: OutboxItem, what: str, store: Callable[[], Awaitable[None]]
    ) -> None:
        """Run ``store`` until the database takes it, logging and backing off meanwhile; a new
        item of the lane cuts the wait short (it may find room the previous try did not)."""
        wake = self._wake.setdefault((item.game_id, item.queue), asyncio.Event())
        delay = BACKOFF_START
        while True:
            try:
                await store()
                return
            except Exception as error:
                if self._closed:
                    raise
                if not (is_storage_failure(error) and self.storage.health.down):
                    log.exception(
                        "outbox item %s of game %s: could not mark it %s; again in %.1f s",
                        item.id,
                        item.game_id,
                        what,
                        delay,
                    )
                wake.clear()
                await self._back_off(wake, delay)
                delay = min(delay * 2, BACKOFF_MAX)

    # ------------------------------------------------------------------ messages

    # ------------------------------------------------------------------ permissions

    # ------------------------------------------------------------------ roles and channels
