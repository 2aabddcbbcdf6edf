"""Member lookups over the gateway, batched per guild and paced per shard.

After a restart the bot's cache knows no member, and the footprint's reconciler asks Discord for
each open game's players (Request Guild Members, op 8, by ``user_ids``). Sent as asked, a
restart with hundreds of open games on a shard spends discord.py's gateway budget (110 sends a
minute of Discord's 120) in seconds, and discord.py then holds *every* send until the minute
ends, a voice state update (op 4) included: no last word could start. So every lookup goes
through :class:`MemberRequests`:

- the ids asked for one guild are merged while they wait, and sent as one request of up to 100
  ids (Discord's limit), members already cached left out;
- each shard sends at most :data:`PER_MINUTE` requests in any :data:`WINDOW` seconds, which keeps
  room within discord.py's 110 for heartbeats, presence and voice: a voice join never waits
  behind member requests (a request counts from when its answer came, so one discord.py sent
  late, its loop busy at a restart, is never counted as sent earlier than it was);
- a request Discord did not answer in time (discord.py waits 30 s) is asked once more.

Requests by ``user_ids`` are not under Discord's per-guild limit of the all-member form
(``query: ""``), which the bot never sends (``chunk_guilds_at_startup`` is off).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

import discord

log = logging.getLogger(__name__)

#: member requests a shard sends in any :data:`WINDOW` seconds: of discord.py's 110 a minute
#: (Discord's 120 less ten for heartbeats), 30 stay free for voice state and presence updates
PER_MINUTE = 80
#: seconds of the pacing window (Discord counts sends per connection per 60 s)
WINDOW = 60.0
#: ids one Request Guild Members may name (Discord's limit)
IDS_PER_REQUEST = 100
#: times a request Discord did not answer is sent (the first included)
ATTEMPTS = 2


@dataclass
class _Ask:
    """The ids waiting to be asked for in one guild, and who waits for them."""

    guild: discord.Guild
    ids: dict[int, None] = field(default_factory=dict)
    """In the order asked (a dict as an ordered set)."""
    waiters: list[asyncio.Future[None]] = field(default_factory=list)
    pending: int = 0
    """Its requests sent and not answered yet."""
    attempt: int = 1


@dataclass
class _Sent:
    """One request sent: when it counts from (when it was handed to discord.py, then when its
    answer came, which is later than the moment discord.py put it on the socket)."""

    at: float


class _Lane:
    """One shard's queue of guilds and its recent requests."""

    def __init__(self) -> None:
        self.asks: dict[int, _Ask] = {}
        """Guild id → what waits for it, in the order the guilds were first asked for."""
        self.sent: list[_Sent] = []
        self.wake = asyncio.Event()
        self.task: asyncio.Task[None] | None = None


class MemberRequests:
    """Batches and paces the bot's member lookups (see the module docstring).

    ``clock`` and ``sleep`` are the pacing's time (a test passes its own); ``per_window`` and
    ``window`` its budget.
    """

    def __init__(
        self,
        *,
        per_window: int = PER_MINUTE,
        window: float = WINDOW,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self.per_window = per_window
        self.window = window
        self.clock = clock
        self.sleep = sleep
        self._lanes: dict[int, _Lane] = {}
        self._running: set[asyncio.Task[None]] = set()
        self._closed = False
        self.sent = 0
        """Requests sent so far (op 8 frames)."""
        self.paused = 0
        """Times a shard's budget was spent and its next request waited for the window."""

    async def fetch(self, guild: discord.Guild, user_ids: Iterable[int]) -> None:
        """Have these members of ``guild`` in the bot's cache: those not cached are asked for,
        with other lookups of the guild that wait; returns once Discord answered them (or did not
        after :data:`ATTEMPTS`; never raises for Discord).

        Raises:
            asyncio.CancelledError: :meth:`close` was called meanwhile.
        """
        wanted = [uid for uid in dict.fromkeys(user_ids) if guild.get_member(uid) is None]
        if not wanted or self._closed:
            return
        lane = self._lane(guild.shard_id)
        ask = lane.asks.get(guild.id)
        if ask is None:
            ask = lane.asks[guild.id] = _Ask(guild)
        ask.ids.update(dict.fromkeys(wanted))
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        ask.waiters.append(done)
        lane.wake.set()
        await asyncio.shield(done)

    def waiting(self) -> int:
        """Guilds whose members wait to be asked for, over every shard."""
        return sum(len(lane.asks) for lane in self._lanes.values())

    def _lane(self, shard_id: int) -> _Lane:
        lane = self._lanes.get(shard_id)
        if lane is None:
            lane = self._lanes[shard_id] = _Lane()
        if lane.task is None or lane.task.done():
            lane.task = asyncio.create_task(self._drain(lane), name=f"members-shard-{shard_id}")
        return lane

    async def _drain(self, lane: _Lane) -> None:
        """Send the lane's requests one after another within its budget, until it is closed."""
        while not self._closed:
            if not lane.asks:
                lane.wake.clear()
                await lane.wake.wait()
                continue
            await self._turn(lane)
            guild_id = next(iter(lane.asks))
            ask = lane.asks[guild_id]
            ids = list(ask.ids)[:IDS_PER_REQUEST]
            for uid in ids:
                del ask.ids[uid]
            if not ask.ids:  # the guild's last ids: it leaves the queue
                del lane.asks[guild_id]
            ask.pending += 1
            sent = _Sent(self.clock())
            lane.sent.append(sent)
            self.sent += 1
            task = asyncio.create_task(self._send(lane, ask, ids, sent))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def _turn(self, lane: _Lane) -> None:
        """Wait until the lane may send: fewer than ``per_window`` sends in the last window."""
        while True:
            now = self.clock()
            lane.sent = [sent for sent in lane.sent if sent.at > now - self.window]
            if len(lane.sent) < self.per_window:
                return
            self.paused += 1
            await self.sleep(min(sent.at for sent in lane.sent) + self.window - now)

    async def _send(self, lane: _Lane, ask: _Ask, ids: list[int], sent: _Sent) -> None:
        guild = ask.guild
        try:
            await guild.query_members(user_ids=ids, limit=len(ids), cache=True)
        except TimeoutError:
            if ask.attempt < ATTEMPTS and not self._closed:
                log.info("guild %s: members not answered in time; asked once more", guild.id)
                again = lane.asks.setdefault(guild.id, _Ask(guild, attempt=ask.attempt + 1))
                again.ids.update(dict.fromkeys(ids))
                if again is not ask:  # who waits for these ids waits for them to be asked again
                    again.waiters.extend(ask.waiters)
                    ask.waiters = []
                lane.wake.set()
            else:
                log.warning("guild %s: %d member(s) not answered by Discord", guild.id, len(ids))
        except Exception as error:  # a shard closing, a guild gone: the lookup is given up
            log.info("guild %s: members not asked for: %r", guild.id, error)
        finally:
            # counted from now: discord.py may have sent it late (its loop busy), never later
            sent.at = max(sent.at, self.clock())
            ask.pending -= 1
            if not ask.pending and lane.asks.get(guild.id) is not ask:  # all asked and answered
                _release(ask.waiters, closed=self._closed)

    async def close(self) -> None:
        """Stop sending; whoever waits is cancelled (the bot is closing: nothing is to go on
        with the members it asked for)."""
        self._closed = True
        tasks = [lane.task for lane in self._lanes.values() if lane.task is not None]
        for task in [*tasks, *self._running]:
            task.cancel()
        for task in [*tasks, *self._running]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for lane in self._lanes.values():
            for ask in lane.asks.values():
                _release(ask.waiters, closed=True)
            lane.asks.clear()


def _release(waiters: list[asyncio.Future[None]], *, closed: bool = False) -> None:
    """Let whoever waits for these lookups go on (``closed``: cancel them)."""
    for waiter in waiters:
        if waiter.done():
            continue
        if closed:
            waiter.cancel()
        else:
            waiter.set_result(None)
