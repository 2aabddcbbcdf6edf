"""The outbox: what the bot must do on Discord, stored with the command that caused it.

An item is marked sent only after Discord accepted it. A crash or a Discord
error (429, 5xx, timeout) leaves it pending, and it is tried again, in
order, per game. A message is sent with a nonce that Discord enforces
(``enforce_nonce``), so an item that reached Discord just before a crash is
not posted a second time when it is retried. Edits of the same message are
coalesced: only the newest pending edit is sent, at most one per
``edit_interval`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import discord
from discord.http import Route

from bot.storage import OutboxItem, Storage

log = logging.getLogger(__name__)

# One retry after another: 0.5 s, 1 s, 2 s ... up to a minute.
BACKOFF_START = 0.5
BACKOFF_MAX = 60.0

Handler = Callable[[OutboxItem], Awaitable[int | None]]


class PermanentFailure(Exception):
    """Discord refused an item for good (403, 404, a bad request)."""


def is_transient(error: BaseException) -> bool:
    """Whether an error is worth trying again: rate limits, server errors, network faults."""
    if isinstance(error, discord.DiscordServerError | aiohttp.ClientError | asyncio.TimeoutError):
        return True
    if isinstance(error, discord.HTTPException):
        return error.status == 429 or error.status >= 500
    return isinstance(error, OSError | discord.GatewayNotFound)


class Outbox:
    """Sends pending outbox items in order, one worker task per game."""

    def __init__(
        self,
        storage: Storage,
        http: discord.http.HTTPClient,
        *,
        edit_interval: float = 1.5,
        on_failure: Callable[[OutboxItem, BaseException], Awaitable[None]] | None = None,
    ) -> None:
        self.storage = storage
        self.http = http
        self.edit_interval = edit_interval
        self.on_failure = on_failure
        self._workers: dict[int, asyncio.Task[None]] = {}
        self._wake: dict[int, asyncio.Event] = {}
        self._last_edit: dict[tuple[int, str], float] = {}
        # delivered items not yet marked sent, per game; messages remembered for edits
        self._done: dict[int, list[tuple[OutboxItem, int | None, tuple[str, int] | None]]] = {}
        self._refs: dict[tuple[int, str], tuple[int, int]] = {}
        self._closed = False
        self.handlers: dict[str, Handler] = {
            "send": self._send,
            "edit": self._edit,
            "overwrite": self._overwrite,
            "delete_channel": self._delete_channel,
            "edit_channel": self._edit_channel,
        }

    def kick(self, game_id: int) -> None:
        """Make sure a worker sends the game's pending items."""
        if self._closed:
            return
        self._wake.setdefault(game_id, asyncio.Event()).set()
        worker = self._workers.get(game_id)
        if worker is None or worker.done():
            self._workers[game_id] = asyncio.create_task(
                self._work(game_id), name=f"outbox-{game_id}"
            )

    async def start(self) -> None:
        """Resume every game that has pending items (after a restart)."""
        for game_id in await self.storage.games_with_pending_outbox():
            self.kick(game_id)

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

    async def _work(self, game_id: int) -> None:
        wake = self._wake.setdefault(game_id, asyncio.Event())
        try:
            while not self._closed:
                wake.clear()
                await self._flush(game_id)
                items = await self.storage.pending_outbox(game_id)
                if not items:
                    return
                latest: dict[str, int] = {
                    item.target["ref"]: item.id for item in items if item.kind == "edit"
                }
                for item in items:
                    if item.kind == "edit" and latest[item.target["ref"]] != item.id:
                        # a later pending edit of the same message replaces this one
                        self._done.setdefault(game_id, []).append((item, None, None))
                        continue
                    await self._deliver(item)
        finally:
            with contextlib.suppress(Exception):
                await self._flush(game_id)

    async def _flush(self, game_id: int) -> None:
        """Mark what was delivered as sent, in one transaction.

        Marks are written per batch rather than per item: an item delivered
        but not yet marked when the process dies is delivered again, and
        Discord gives back the message its nonce already created.
        """
        done = self._done.pop(game_id, [])
        if done:
            await self.storage.outbox_sent_many(done)

    async def _deliver(self, item: OutboxItem) -> None:
        handler = self.handlers.get(item.kind)
        delay = BACKOFF_START
        while not self._closed:
            if handler is None:
                await self.storage.outbox_failed(item, f"unknown kind {item.kind!r}")
                log.error("outbox item %s of game %s has unknown kind %r", item.id, item.game_id, item.kind)
                return
            try:
                message_id = await handler(item)
            except Exception as error:
                if is_transient(error):
                    log.warning(
                        "outbox item %s (%s) of game %s: %s; retrying in %.1f s",
                        item.id, item.kind, item.game_id, error, delay,
                    )
                    await self.storage.outbox_retry(item, repr(error))
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, BACKOFF_MAX)
                    continue
                log.error(
                    "outbox item %s (%s) of game %s refused by Discord: %s",
                    item.id, item.kind, item.game_id, error,
                )
                await self.storage.outbox_failed(item, repr(error))
                if self.on_failure is not None:
                    try:
                        await self.on_failure(item, error)
                    except Exception:
                        log.exception("reporting a failed outbox item")
                return
            ref = item.target.get("ref") if item.kind == "send" else None
            channel = item.target.get("channel_id")
            remembered = (ref, int(channel)) if ref and channel and message_id else None
            if remembered is not None:
                self._refs[(item.game_id, remembered[0])] = (remembered[1], int(message_id or 0))
            self._done.setdefault(item.game_id, []).append((item, message_id, remembered))
            return

    # ------------------------------------------------------------------ handlers

    async def _channel_for(self, target: dict[str, Any]) -> int:
        if "channel_id" in target:
            return int(target["channel_id"])
        data = await self.http.start_private_message(int(target["user_id"]))
        return int(data["id"])

    async def _send(self, item: OutboxItem) -> int | None:
        channel_id = await self._channel_for(item.target)
        payload = dict(item.payload)
        payload["nonce"] = f"ob{item.id}"
        payload["enforce_nonce"] = True
        route = Route("POST", "/channels/{channel_id}/messages", channel_id=channel_id)
        data = await self.http.request(route, json=payload)
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
            await self.http.request(route, json=item.payload)
        finally:
            self._last_edit[key] = time.monotonic()
        return message_id

    async def _overwrite(self, item: OutboxItem) -> int | None:
        target = item.target
        if item.payload.get("delete"):
            await self.http.delete_channel_permissions(int(target["channel_id"]), int(target["id"]))
        else:
            await self.http.edit_channel_permissions(
                int(target["channel_id"]), int(target["id"]),
                str(item.payload.get("allow", "0")), str(item.payload.get("deny", "0")),
                int(target.get("type", 1)),
            )
        return None

    async def _delete_channel(self, item: OutboxItem) -> int | None:
        # a channel already gone is what was asked for
        with contextlib.suppress(discord.NotFound):
            await self.http.delete_channel(int(item.target["channel_id"]))
        return None

    async def _edit_channel(self, item: OutboxItem) -> int | None:
        await self.http.edit_channel(int(item.target["channel_id"]), **item.payload)
        return None
