"""Discord snowflake ids, generated strictly increasing."""

from __future__ import annotations

import datetime
import time

DISCORD_EPOCH_MS = 1_420_070_400_000
"""Milliseconds between the Unix epoch and Discord's epoch (2015-01-01)."""


class SnowflakeGenerator:
    """Makes Discord-shaped snowflakes that grow with every call.

    The upper bits carry the wall-clock time like Discord's, so
    ``discord.utils.snowflake_time`` gives a sensible date; the low bits are a
    counter, and an id is never smaller than or equal to the previous one even
    if the clock stands still or goes back.
    """

    def __init__(self, worker_id: int = 1, process_id: int = 0) -> None:
        self._worker_id = worker_id & 0x1F
        self._process_id = process_id & 0x1F
        self._last = 0

    def next(self) -> int:
        """Returns a new snowflake, greater than every one returned before."""
        elapsed_ms = int(time.time() * 1000) - DISCORD_EPOCH_MS
        candidate = (elapsed_ms << 22) | (self._worker_id << 17) | (self._process_id << 12)
        if candidate <= self._last:
            candidate = self._last + 1
        self._last = candidate
        return candidate


def snowflake_time(snowflake: int) -> datetime.datetime:
    """The UTC time encoded in a snowflake."""
    ms = (snowflake >> 22) + DISCORD_EPOCH_MS
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)


def iso_timestamp(moment: datetime.datetime | None = None) -> str:
    """Discord's ISO-8601 timestamp form, e.g. ``2026-01-02T03:04:05.678000+00:00``."""
    moment = moment or datetime.datetime.now(tz=datetime.UTC)
    return moment.isoformat()
