"""The reconnects of a recording's voice link after one drop (:class:`Attempts`): one at a
time, each a task of its own, so that the recorder can give them up at any moment."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable

from .receiver import ReceivingVoiceClient

__all__ = ["Attempts"]

_log = logging.getLogger(__name__)


class Attempts:
    """The reconnects of one drop: at most one under way, each a task of its own."""

    def __init__(self, now: float, limit: int) -> None:
        self.made = 0
        self.limit = limit
        self.problems: list[str] = []
        self.next_at = now
        self.task: asyncio.Task[ReceivingVoiceClient] | None = None

    def idle(self, now: float) -> bool:
        """Whether a new attempt may start now (none under way, the backoff over)."""
        return self.task is None and now >= self.next_at

    def start(self, attempt: Awaitable[ReceivingVoiceClient]) -> None:
        self.made += 1
        self.task = asyncio.ensure_future(attempt)

    def finished(self, retry_at: float) -> ReceivingVoiceClient | None:
        """The new connection of an attempt that succeeded; a failed one counted (the next
        not before ``retry_at``); None while one is under way or none was made."""
        task = self.task
        if task is None or not task.done():
            return None
        self.task = None
        if task.cancelled():
            self.problems.append("cancelled")
        elif (error := task.exception()) is not None:
            self.problems.append(
                f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
            )
            _log.warning("Voice reconnect %d of %d failed: %r", self.made, self.limit, error)
        else:
            return task.result()
        self.next_at = retry_at
        return None

    def failure(self, why: str) -> str:
        """The log's sentence for a link given up."""
        detail = "the voice connection dropped"
        if why:
            detail += f" and was {why}"
        if self.problems:
            detail += f"; {self.made} reconnects failed: {'; '.join(self.problems)}"
        elif self.made:
            detail += f"; {self.made} reconnects made"
        return detail

    def cancel(self) -> None:
        """Give up the attempt under way, not waiting for it: discord.py may take its own
        timeout to wind a connection up (its half-made connection is left to the caller)."""
        task, self.task = self.task, None
        if task is None:
            return
        _abandoned.add(task)
        task.add_done_callback(_forget)
        task.cancel()


_abandoned: set[asyncio.Task[ReceivingVoiceClient]] = set()
"""Attempts given up and still winding down (kept referenced until they end)."""


def _forget(task: asyncio.Task[ReceivingVoiceClient]) -> None:
    _abandoned.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved: never "exception was never retrieved"
