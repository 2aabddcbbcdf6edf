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
import datetime
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable
from typing import Any, TypeVar

import aiohttp
import discord
from discord.http import Route
from discord.utils import time_snowflake

from bot.config import Config
from bot.storage import LANES, OutboxItem, Storage, is_storage_failure

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
#: the clocks of the bot and Discord may differ: history is read from this much before an item
CLOCK_MARGIN = 120.0
#: pages of 100 messages read at most when looking for a message already posted
HISTORY_PAGES = 20

#: kinds that create something on Discord without a nonce: after a lost answer, look first
CREATES = frozenset({"create_role", "create_channel"})
#: kinds that post a message (with a nonce)
POSTS = frozenset({"send", "voice"})

#: Discord's flag of a voice message
VOICE_MESSAGE_FLAG = 1 << 13
#: Discord's codes for a member or role that is not there (nothing to change then)
UNKNOWN_MEMBER, UNKNOWN_ROLE = 10007, 10011

Handler = Callable[[OutboxItem], Awaitable[int | None]]
Adopter = Callable[[OutboxItem], Awaitable[int | None]]
FailureHook = Callable[[OutboxItem, BaseException], Awaitable[None]]
IdleHook = Callable[[int, str], Awaitable[None]]

T = TypeVar("T")


class PermanentFailure(Exception):
    """Discord refused an item for good (403, 404, a bad request)."""


class NotMadeYet(Exception):
    """An item names a role or channel whose making is still pending in the provisioning lane
    (a spectators' role asked for just before the end locks the channels): tried again later."""


def is_transient(error: BaseException) -> bool:
    """Whether an error is worth trying again: rate limits, server errors, network faults, hangs,
    and the bot's own database failing under a handler that reads it (PostgreSQL down)."""
    if isinstance(error, discord.DiscordServerError | aiohttp.ClientError | asyncio.TimeoutError | NotMadeYet):
        return True
    if is_storage_failure(error):
        return True
    if isinstance(error, discord.HTTPException):
        return error.status == 429 or error.status >= 500
    return isinstance(error, OSError | discord.GatewayNotFound)


def custom_ids(components: Iterable[Any]) -> list[str]:
    """The custom ids of a message's components, rows flattened, in order."""
    found: list[str] = []
    for row in components or []:
        for component in row.get("components", []) if isinstance(row, dict) else []:
            if component.get("custom_id"):
                found.append(str(component["custom_id"]))
    return found


class Outbox:
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
        for game_id in await self.storage.games_in_state("starting"):
            self.kick(game_id, ("provision",))

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
            except Exception:
                # the database (a full disk, say): nothing is lost, it is all still pending
                log.exception("outbox lane %s of game %s failed; trying again in %.1f s", lane, game_id, delay)
                await self._back_off(wake, delay)
                delay = min(delay * 2, BACKOFF_MAX)

    @staticmethod
    async def _back_off(wake: asyncio.Event, delay: float) -> None:
        """Wait ``delay`` seconds, or less if new items are stored for the lane meanwhile: a new
        item is a new reason to try (the database may have room again)."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(wake.wait(), delay)

    async def _carry_out(self, items: list[OutboxItem], fetched: int) -> None:
        latest: dict[str, int] = {item.target["ref"]: item.id for item in items if item.kind == "edit"}
        # a later pending edit of the same message replaces an earlier one
        replaced = [item for item in items if item.kind == "edit" and latest[item.target["ref"]] != item.id]
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
            log.error("outbox item %s of game %s has unknown kind %r", item.id, item.game_id, item.kind)
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
            try:
                result: int | None = None
                adopted = False
                stale_nonce = first is not None and time.time() - first > self.nonce_trust
                adopter = self.adopters.get(item.kind)
                if adopter is not None and (doubt or (item.kind in POSTS and stale_nonce)):
                    result = await adopter(item)
                    adopted = result is not None
                    if adopted:
                        log.info("outbox item %s (%s) of game %s was carried out already: %s adopted",
                                 item.id, item.kind, item.game_id, result)
                doubt = False
                if not adopted:
                    first = first if first is not None else time.time()
                    # each call of the outbox's own handlers has its timeout; this bounds the rest
                    result = await self._timed(handler(item), HANDLER_TIMEOUT)
            except Exception as error:
                if is_transient(error):
                    log.warning(
                        "outbox item %s (%s) of game %s: %s; retrying in %.1f s",
                        item.id, item.kind, item.game_id, repr(error), delay,
                    )
                    # a lost answer to a create may hide a success: look before making it again
                    # (only a 429 says for sure that nothing was done)
                    refused = isinstance(error, discord.HTTPException) and error.status == 429
                    doubt = doubt or (item.kind in CREATES and not refused)
                    with contextlib.suppress(Exception):  # only a count: never worth stopping for
                        await self.storage.outbox_retry(item, repr(error))
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, BACKOFF_MAX)
                    continue
                log.error(
                    "outbox item %s (%s) of game %s refused by Discord: %s",
                    item.id, item.kind, item.game_id, error,
                )
                await self._mark_failed(item, repr(error))
                for hook in list(self.failure_hooks):
                    try:
                        await hook(item, error)
                    except Exception:
                        log.exception("reporting a failed outbox item")
                return False
            ref = item.target.get("ref") if item.kind == "send" else None
            channel = item.target.get("channel_id")
            remembered = (str(ref), int(channel)) if ref and channel and result else None
            if remembered is not None and result is not None:
                self._refs[(item.game_id, remembered[0])] = (remembered[1], result)
            key = item.target.get("key")
            if key and result is not None:
                self._ids.setdefault(item.game_id, {})[str(key)] = result
            await self._mark(item, result, remembered)
            return True
        return False

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

    async def _mark(self, item: OutboxItem, result: int | None, ref: tuple[str, int] | None) -> None:
        """Store that Discord accepted the item, however long the database refuses (a full disk):
        carrying it out again could post it twice once the nonce is forgotten."""
        await self._store_mark(item, "done", lambda: self.storage.outbox_sent(item, result, ref))

    async def _mark_failed(self, item: OutboxItem, error: str) -> None:
        """Store that Discord refused the item for good, however long the database refuses: the
        failure is reported (to the host, by the hooks) only once it is stored."""
        await self._store_mark(item, "failed", lambda: self.storage.outbox_failed(item, error))

    async def _store_mark(self, item: OutboxItem, what: str, store: Callable[[], Awaitable[None]]) -> None:
        """Run ``store`` until the database takes it, logging and backing off meanwhile; a new
        item of the lane cuts the wait short (it may find room the previous try did not)."""
        wake = self._wake.setdefault((item.game_id, item.queue), asyncio.Event())
        delay = BACKOFF_START
        while True:
            try:
                await store()
                return
            except Exception:
                if self._closed:
                    raise
                log.exception("outbox item %s of game %s: could not mark it %s; again in %.1f s",
                              item.id, item.game_id, what, delay)
                wake.clear()
                await self._back_off(wake, delay)
                delay = min(delay * 2, BACKOFF_MAX)

    async def _timed(self, call: Coroutine[Any, Any, T], seconds: float | None = None) -> T:
        """One call, given up (as a transient fault) after ``seconds`` (the call timeout)."""
        return await asyncio.wait_for(call, self.call_timeout if seconds is None else seconds)

    async def ids(self, game_id: int) -> dict[str, int]:
        """What the game's provisioning made: the key of each role and channel → its id."""
        known = self._ids.get(game_id)
        if known is None:
            known = await self.storage.provisioned(game_id)
            self._ids[game_id] = known
        return known

    def forget(self, game_id: int) -> None:
        """Drop what is remembered of a game's provisioning (it was rolled back)."""
        self._ids.pop(game_id, None)

    async def _being_made(self, game_id: int, key: Any) -> bool:
        """Whether the provisioning lane still has the making of ``key`` pending (or has just made
        it: its mark may have been stored after the look that missed it). Pending first: an item
        goes from pending to sent, so one no longer pending is made by the second look."""
        if any(item.kind in CREATES and item.target.get("key") == key
               for item in await self.storage.pending_outbox(game_id, 1000, lane="provision")):
            return True
        return key in await self.storage.provisioned(game_id)

    async def _resolve(self, game_id: int, value: Any) -> int:
        """An id given as is, or the key of something the game's provisioning made."""
        if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
            return int(value)
        known = await self.ids(game_id)
        if value not in known:
            self._ids.pop(game_id, None)
            known = await self.ids(game_id)
        if value not in known:
            raise PermanentFailure(f"game {game_id}: {value!r} was never made")
        return known[value]

    # ------------------------------------------------------------------ messages

    async def _channel_for(self, target: dict[str, Any]) -> int:
        if "channel_id" in target:
            return int(target["channel_id"])
        data = await self._timed(self.http.start_private_message(int(target["user_id"])))
        return int(data["id"])

    async def _send(self, item: OutboxItem) -> int | None:
        channel_id = await self._channel_for(item.target)
        payload = dict(item.payload)
        payload["nonce"] = f"ob{item.id}"
        payload["enforce_nonce"] = True
        route = Route("POST", "/channels/{channel_id}/messages", channel_id=channel_id)
        data = await self._timed(self.http.request(route, json=payload))
        return int(data["id"])

    async def _edit(self, item: OutboxItem) -> int | None:
        ref = self._refs.get((item.game_id, item.target["ref"]))
        if ref is None:
            ref = await self.storage.message_ref(item.game_id, item.target["ref"])
        if ref is None:
            log.warning("edit of unknown message %r in game %s skipped", item.target["ref"], item.game_id)
            return None
        key = (item.game_id, item.target["ref"])
        wait = self._last_edit.get(key, 0.0) + self.edit_interval - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
            if await self.storage.newer_edit_pending(item):
                return ref[1]  # the newer edit carries the newer content
        channel_id, message_id = ref
        route = Route(
            "PATCH", "/channels/{channel_id}/messages/{message_id}",
            channel_id=channel_id, message_id=message_id,
        )
        try:
            await self._timed(self.http.request(route, json=item.payload))
        finally:
            self._last_edit[key] = time.monotonic()
        return message_id

    async def _adopt_message(self, item: OutboxItem) -> int | None:
        """The bot's message already posted for this item, if any (see the module docstring)."""
        if self.self_id is None:
            return None
        channel_id = await self._channel_for(item.target)
        after = time_snowflake(_utc(item.created_at - CLOCK_MARGIN))
        messages = await self._recent(channel_id, after)
        matching = [m for m in messages if self._is_posted(item, m)]
        if not matching:
            return None
        taken = await self.storage.claimed(int(m["id"]) for m in matching)
        for message in matching:
            if int(message["id"]) not in taken:
                return int(message["id"])
        return None

    async def _recent(self, channel_id: int, after: int) -> list[dict[str, Any]]:
        """The channel's messages after ``after``, oldest first (kept for the items that follow)."""
        cached = self._history.get(channel_id)
        if cached is not None and cached[0] <= after:
            return [m for m in cached[1] if int(m["id"]) > after]
        found: dict[int, dict[str, Any]] = {}
        cursor = after
        for _ in range(HISTORY_PAGES):
            page = await self._timed(self.http.logs_from(channel_id, 100, after=cursor))
            for message in page:
                found[int(message["id"])] = message
            if len(page) < 100:
                break
            cursor = max(int(message["id"]) for message in page)
        messages = [found[key] for key in sorted(found)]
        self._history[channel_id] = (after, messages)
        return messages

    def _is_posted(self, item: OutboxItem, message: dict[str, Any]) -> bool:
        """Whether ``message`` is what ``item`` posts: the bot's own, no interaction's answer, the
        same content and components (a voice item: an audio attachment)."""
        author = message.get("author") or {}
        if str(author.get("id")) != str(self.self_id):
            return False
        if message.get("interaction_metadata") or message.get("interaction") or message.get("webhook_id"):
            return False
        if item.kind == "voice":
            attachments = message.get("attachments") or []
            return bool(attachments) and (
                bool(int(message.get("flags") or 0) & VOICE_MESSAGE_FLAG)
                or message.get("content", "") == str(item.payload.get("fallback") or "")
            )
        payload = item.payload
        return (
            # Discord trims a message's content: compare what it keeps
            str(message.get("content") or "").strip() == str(payload.get("content") or "").strip()
            and custom_ids(message.get("components") or []) == custom_ids(payload.get("components") or [])
            and len(message.get("embeds") or []) == len(payload.get("embeds") or [])
        )

    # ------------------------------------------------------------------ permissions

    async def _overwrite(self, item: OutboxItem) -> int | None:
        target = item.target
        channel_id = await self._resolve(item.game_id, target["channel_id"])
        target_id = await self._resolve(item.game_id, target["id"])
        if item.payload.get("delete"):
            # an overwrite already gone is what was asked for
            with contextlib.suppress(discord.NotFound):
                await self._timed(self.http.delete_channel_permissions(channel_id, target_id))
        else:
            await self._timed(self.http.edit_channel_permissions(
                channel_id, target_id,
                str(item.payload.get("allow", "0")), str(item.payload.get("deny", "0")),
                int(target.get("type", 1)),
            ))
        return None

    async def _member_role(self, item: OutboxItem) -> int | None:
        target = item.target
        guild_id, user_id = int(target["guild_id"]), int(target["user_id"])
        role_id = await self._resolve(item.game_id, target["role"])
        call = self.http.add_role if item.payload.get("add", True) else self.http.remove_role
        try:
            await self._timed(call(guild_id, user_id, role_id))
        except discord.NotFound as error:
            # a member who left the server has no roles to change; a role gone was removed
            if error.code not in (UNKNOWN_MEMBER, UNKNOWN_ROLE):
                raise
            log.info("game %s: role %s of member %s not changed: %s", item.game_id, role_id, user_id, error)
        return None

    # ------------------------------------------------------------------ roles and channels

    async def _create_role(self, item: OutboxItem) -> int | None:
        payload = item.payload
        data = await self._timed(self.http.create_role(
            int(item.target["guild_id"]), reason=payload.get("reason"), name=payload["name"],
            permissions=str(payload.get("permissions", "0")), mentionable=bool(payload.get("mentionable", False)),
            hoist=bool(payload.get("hoist", False)),
        ))
        return int(data["id"])

    async def _adopt_role(self, item: OutboxItem) -> int | None:
        """The game's role made before its answer was heard: the same name, not another item's."""
        roles = await self._timed(self.http.get_roles(int(item.target["guild_id"])))
        matching = [int(role["id"]) for role in roles if role.get("name") == item.payload["name"]]
        taken = await self.storage.claimed(matching)
        return next((role_id for role_id in matching if role_id not in taken), None)

    async def _create_channel(self, item: OutboxItem) -> int | None:
        payload = item.payload
        options: dict[str, Any] = {"name": payload["name"]}
        if payload.get("parent") is not None:
            options["parent_id"] = str(await self._resolve(item.game_id, payload["parent"]))
        if payload.get("topic"):
            options["topic"] = payload["topic"]
        options["permission_overwrites"] = [
            {"id": str(await self._resolve(item.game_id, overwrite["target"])), "type": overwrite["type"],
             "allow": str(overwrite["allow"]), "deny": str(overwrite["deny"])}
            for overwrite in payload.get("overwrites", [])
        ]
        data = await self._timed(self.http.create_channel(
            int(item.target["guild_id"]), int(payload["type"]), reason=payload.get("reason"), **options
        ))
        return int(data["id"])

    async def _adopt_channel(self, item: OutboxItem) -> int | None:
        """The game's channel made before its answer was heard: the same type and parent, and the
        same topic (a text channel: Discord rewrites their names) or name, not another item's."""
        payload = item.payload
        parent = None
        if payload.get("parent") is not None:
            parent = await self._resolve(item.game_id, payload["parent"])
        channels = await self._timed(self.http.get_all_guild_channels(int(item.target["guild_id"])))
        matching = []
        for channel in channels:
            found_parent = channel.get("parent_id")
            if int(channel.get("type", -1)) != int(payload["type"]):
                continue
            if (int(found_parent) if found_parent else None) != parent:
                continue
            if payload.get("topic"):
                if channel.get("topic") != payload["topic"]:
                    continue
            elif channel.get("name") != payload["name"]:
                continue
            matching.append(int(channel["id"]))
        taken = await self.storage.claimed(matching)
        return next((channel_id for channel_id in matching if channel_id not in taken), None)

    async def _delete_channel(self, item: OutboxItem) -> int | None:
        channel_id = await self._resolve(item.game_id, item.target["channel_id"])
        # a channel already gone is what was asked for
        with contextlib.suppress(discord.NotFound):
            await self._timed(self.http.delete_channel(channel_id))
        return None

    async def _delete_role(self, item: OutboxItem) -> int | None:
        role_id = await self._resolve(item.game_id, item.target["role"])
        with contextlib.suppress(discord.NotFound):
            await self._timed(self.http.delete_role(int(item.target["guild_id"]), role_id))
        return None

    async def _sweep(self, item: OutboxItem) -> int | None:
        """Remove duplicates of what a provisioning made: a create whose answer was lost and that
        was made again, yet reached Discord later after all. They bear the plan's names (channels
        in the game's category, or a second category of its name) but no item has their id.

        With ``rollback`` in the payload (the last step of a start called off) everything bearing
        the plan's names goes that no item has made: a create that was under way when the start
        was called off and whose answer was lost (the process died) made something no item knows.
        What an item made is removed by the rollback's own deletes (one made since the rollback
        was planned too: ``cogs.host``), so it is not removed twice (a 404 from Discord)."""
        guild_id = int(item.target["guild_id"])
        payload = item.payload
        channels = await self._timed(self.http.get_all_guild_channels(guild_id))
        roles = await self._timed(self.http.get_roles(guild_id))
        names = set(payload.get("roles", []))
        doubles = [int(role["id"]) for role in roles if role.get("name") in names]
        categories = {int(c["id"]) for c in channels
                      if int(c.get("type", -1)) == 4 and c.get("name") == payload["category_name"]}
        parents = set(categories)
        if payload.get("category") is not None:
            parents.add(await self._resolve(item.game_id, payload["category"]))
        marks = set(payload.get("topics", [])) | set(payload.get("names", []))
        found = [int(c["id"]) for c in channels if c.get("parent_id") and int(c["parent_id"]) in parents
                 and (c.get("topic") in marks or c.get("name") in marks)]
        taken = await self.storage.claimed([*doubles, *categories, *found])
        for role_id in (role for role in doubles if role not in taken):
            log.warning("game %s: removing a duplicate role %s", item.game_id, role_id)
            with contextlib.suppress(discord.NotFound):
                await self._timed(self.http.delete_role(guild_id, role_id))
        for channel_id in [c for c in found if c not in taken] + [c for c in categories if c not in taken]:
            log.warning("game %s: removing a duplicate channel %s", item.game_id, channel_id)
            with contextlib.suppress(discord.NotFound):
                await self._timed(self.http.delete_channel(channel_id))
        return None

    async def _edit_channel(self, item: OutboxItem) -> int | None:
        channel_id = await self._resolve(item.game_id, item.target["channel_id"])
        payload = dict(item.payload)
        if "permission_overwrites" in payload:
            # a role made mid-game (a quiet twin, the spectators') is named by its key until made
            overwrites = []
            for overwrite in payload["permission_overwrites"]:
                try:
                    target = await self._resolve(item.game_id, overwrite["id"])
                except PermanentFailure:
                    if await self._being_made(item.game_id, overwrite["id"]):
                        raise NotMadeYet(f"game {item.game_id}: {overwrite['id']!r} is being made") from None
                    raise
                overwrites.append({**overwrite, "id": str(target)})
            payload["permission_overwrites"] = overwrites
        await self._timed(self.http.edit_channel(channel_id, **payload))
        return None


def _utc(seconds: float) -> datetime.datetime:
    """A unix time as an aware datetime (never before Discord's epoch)."""
    return datetime.datetime.fromtimestamp(max(seconds, 1_420_070_400.0), tz=datetime.UTC)
