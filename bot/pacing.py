"""Keeping under Discord's global rate limit: at most so many REST calls a second.

Discord lets a bot make 50 requests a second in all, besides each route's own
limit; interaction endpoints (the answer to an interaction, its follow-ups
and edits) are not counted (docs: Rate Limits, "Global Rate Limit"). Past it
Discord answers 429, and 10,000 answers of 401, 403 or 429 in 10 minutes get
the bot's address banned for a while. discord.py waits out a global 429 once
it has one, but it does not pace its calls to avoid them, and 200 games
announcing at once make over 150 calls a second.

So every call through discord.py's HTTP client (everything but the
interaction endpoints, which discord.py sends through its webhook adapter)
first waits for its place, in the order they asked: ``limit`` calls per
``window`` seconds, evenly spaced, a few at once (:class:`Pacer`). The window
is a little longer than Discord's second, for the trip a call takes to reach
Discord. A process that serves some of the bot's shards takes their share of
the limit (:func:`share`), so processes that split a bot stay under it
together.
Neither discord.py nor any library keeps a client under a global limit
ahead of time, so it is written here.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

#: Discord's global limit for a bot: requests a second
GLOBAL_LIMIT = 50

#: the window the limit is counted over: Discord's second and a margin for the trip
WINDOW = 1.1

#: how many calls may begin at once, ahead of the even pace
BURST = 4


def share(limit: int, shard_ids: Sequence[int] | None, shard_count: int | None) -> int:
    """This process's part of the bot's limit: all of it, or the share of the shards it serves
    (at least one call a window)."""
    if not shard_ids or not shard_count or shard_count <= 1:
        return limit
    return max(1, limit * len(set(shard_ids)) // shard_count)


class Pacer:
    """Calls spaced evenly: one every ``window / limit`` seconds, a few (``burst``) at once.

    Bursts matter beyond Discord's count: a window that let its whole limit through at once
    would start 50 calls in one turn of the event loop, and every command answered in that
    turn would wait for them. Evenly spaced, the calls cost the loop a little at a time.
    Over any ``window`` at most ``limit + burst`` calls begin; over any second, with the
    defaults, at most 49 (the generic cell rate algorithm of ATM networks, GCRA).
    """

    def __init__(
        self,
        limit: int,
        window: float = WINDOW,
        *,
        burst: int = BURST,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        if limit < 1:
            raise ValueError("a pacer lets at least one call through a window")
        self.limit = limit
        self.window = window
        self.burst = burst
        self.clock = clock
        self.sleep = sleep
        """Waits as long on ``clock`` (a test's fake clock comes with its own)."""
        self._due = 0.0
        """When the next call would begin if calls went at the even pace (GCRA's TAT)."""
        self._turn = asyncio.Lock()
        self.waited = 0
        """How many calls had to wait for their place."""

    @property
    def spacing(self) -> float:
        """Seconds between two calls at the even pace."""
        return self.window / self.limit

    async def place(self) -> None:
        """Wait until a call may begin, and count it as begun."""
        if not self._turn.locked() and self._take():
            return
        async with self._turn:
            self.waited += 1
            while not self._take():
                await self.sleep(self._due - (self.burst - 1) * self.spacing - self.clock())

    def _take(self) -> bool:
        """Begin a call now if its place has come."""
        now = self.clock()
        due = max(self._due, now)
        if due - now > (self.burst - 1) * self.spacing + 1e-9:
            return False
        self._due = due + self.spacing
        return True


def pace(request: Callable[..., Awaitable[Any]], pacer: Pacer) -> Callable[..., Awaitable[Any]]:
    """``request`` (discord.py's ``HTTPClient.request``), each call first taking a place."""

    async def paced(route: Any, **options: Any) -> Any:
        await pacer.place()
        return await request(route, **options)

    functools.update_wrapper(paced, request, assigned=(), updated=())  # __wrapped__ alone
    return paced
