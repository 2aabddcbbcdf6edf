"""One member's share of a game: a limit on how fast he may send it commands.

Each member has, in each game, a bucket of ``fairness.burst`` commands that refills at
``fairness.per_minute`` (a token bucket): a person playing never meets it, a flood (a mafia
member's 500 ``/elect`` in 10 s) is refused past the burst, in the member's language with
when to try again, before it reaches the game's lock, its log or its outbox. A command takes
its place in the bucket as it arrives (so a flood sent all at once is held too) and gives it
back once it turns out to have changed nothing (refused, read only, a repeated choice): what
counts is what a game stores and announces. The buckets live in memory: a restart gives
everybody a full one, which only lets through one more burst.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from discord import app_commands

from bot.config import Fairness

log = logging.getLogger(__name__)

#: buckets kept before the full ones are forgotten (a full bucket is the same as none)
KEEP = 10_000


class TooFast(app_commands.CheckFailure):
    """A member sent a game more commands than his bucket holds; ``seconds`` until his next
    one is accepted (the catalogue's ``error.too_fast``, a plural by ``count``)."""

    def __init__(self, seconds: int) -> None:
        super().__init__(f"too fast: try again in {seconds} s")
        self.key = "error.too_fast"
        self.params = {"count": seconds}


@dataclass
class _Bucket:
    tokens: float
    at: float
    refused: int = 0
    """Commands refused since the last one accepted (the log names the first and the count)."""


class CommandLimit:
    """Token buckets by (game, member); see the module docstring."""

    def __init__(self, settings: Fairness, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.burst = settings.burst
        self.rate = settings.per_minute / 60.0
        self.clock = clock
        self._buckets: dict[tuple[int, int], _Bucket] = {}

    def admit(self, game_id: int, member_id: int) -> None:
        """Take one command of the member's bucket in this game.

        Raises:
            TooFast: the bucket is empty; says in how many seconds it holds one again.
        """
        if self.burst <= 0:
            return
        now = self.clock()
        key = (game_id, member_id)
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= KEEP:
                self._forget_full(now)
            bucket = self._buckets[key] = _Bucket(float(self.burst), now)
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.at) * self.rate)
        bucket.at = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            if bucket.refused:
                log.info(
                    "game %s: member %s is accepted again after %d refused command(s)",
                    game_id,
                    member_id,
                    bucket.refused,
                )
                bucket.refused = 0
            return
        if not bucket.refused:
            log.info(
                "game %s: member %s sends commands faster than %s a minute past a burst of %s: "
                "refused until his bucket refills",
                game_id,
                member_id,
                self.rate * 60,
                self.burst,
            )
        bucket.refused += 1
        raise TooFast(max(1, math.ceil((1.0 - bucket.tokens) / self.rate)))

    def refund(self, game_id: int, member_id: int) -> None:
        """Give back the command :meth:`admit` took for one that changed nothing (refused, read
        only, a repeat): only what a game takes counts against a member."""
        bucket = self._buckets.get((game_id, member_id))
        if bucket is not None:
            bucket.tokens = min(float(self.burst), bucket.tokens + 1.0)

    def _forget_full(self, now: float) -> None:
        for key, bucket in list(self._buckets.items()):
            if bucket.tokens + (now - bucket.at) * self.rate >= self.burst:
                del self._buckets[key]
