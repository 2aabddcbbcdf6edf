"""Turns to IDENTIFY on the gateway, shared by every process of the bot.

Discord lets each ``max_concurrency`` bucket (a shard's bucket is ``shard_id % max_concurrency``)
IDENTIFY once every 5 seconds, across every process that runs the bot's shards; an IDENTIFY that
comes sooner gets an Invalid Session and must be made again. discord.py keeps the pause between
the shards of one process only: processes that share a database and start together would
identify at the same moment.

:class:`IdentifyTurns` gives each IDENTIFY its turn. On PostgreSQL the turns are kept in the
database every process shares: the last turn of each bucket is the ``meta`` row
``identify:<bucket>`` holding the server's clock (``clock_timestamp()``, one clock for every
host) when it was taken, and taking a turn holds a transaction-level advisory lock of the bucket
while it reads and writes that row, so two processes never take the same 5 seconds. With SQLite
one process owns the database (and its shards): the turns are kept in memory.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.storage import Storage

log = logging.getLogger(__name__)

#: seconds between two IDENTIFYs of one bucket (Discord's rule)
IDENTIFY_INTERVAL = 5.0
#: seconds added to each turn: the way from taking a turn to Discord receiving the IDENTIFY
#: differs between processes (a loaded host, a farther network); Discord counts on arrival
MARGIN = 0.5
#: seconds between two turns of one bucket
TURN = IDENTIFY_INTERVAL + MARGIN
#: the advisory lock of bucket ``b`` is ``IDENTIFY_LOCK + b`` ("PRID" in ASCII; the migrations'
#: lock in bot/postgres.py is another number)
IDENTIFY_LOCK = 0x50524944
#: the meta row of a bucket's last turn
KEY = "identify:{bucket}"


class IdentifyTurns:
    """Each IDENTIFY's turn (see the module docstring). ``storage`` None or SQLite: in memory.

    ``sleep`` and ``clock`` are the waiting's time (a test passes its own; the database's
    turns read the server's clock).
    """

    def __init__(
        self,
        storage: Storage | None,
        *,
        max_concurrency: int = 1,
        interval: float = TURN,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.storage = storage
        self.max_concurrency = max(1, max_concurrency)
        self.interval = interval
        self.sleep = sleep
        self.clock = clock
        self._last: dict[int, float] = {}
        self._local = asyncio.Lock()
        self.waited = 0.0
        """Seconds spent waiting for turns so far."""
        self.taken: list[tuple[int, float]] = []
        """Each turn taken: (bucket, when: ``clock`` in memory, the server's clock if shared)."""

    @property
    def shared(self) -> bool:
        """Whether the turns are kept in a database other processes share (PostgreSQL)."""
        return self.storage is not None and self.storage.dialect == "postgresql"

    def bucket(self, shard_id: int | None) -> int:
        """A shard's identify bucket (no shard: shard 0's)."""
        return (shard_id or 0) % self.max_concurrency

    async def take(self, shard_id: int | None) -> float:
        """Wait for this shard's turn to IDENTIFY and take it; the seconds waited."""
        if self.interval <= 0:
            return 0.0
        bucket, waited = self.bucket(shard_id), 0.0
        async with self._local:  # this process's shards one at a time
            while True:
                wait = await (self._claim_either(bucket) if self.shared else self._claim(bucket))
                if wait <= 0:
                    break
                waited += wait
                await self.sleep(wait)
        self.waited += waited
        return waited

    async def _claim_either(self, bucket: int) -> float:
        """The shared turn, or this process's own while the database does not answer (a
        shard reconnecting during an outage still identifies: at worst Discord refuses it once
        and it identifies again at its next turn)."""
        try:
            return await self._claim_shared(bucket)
        except Exception as error:  # the database is away: the next turn tries it again
            log.warning(
                "identify turns: the database did not answer (%r); this process's own", error
            )
            return await self._claim(bucket)

    async def _claim(self, bucket: int) -> float:
        """Take the bucket's turn in memory: 0, or the seconds until it may be taken."""
        now = self.clock()
        last = self._last.get(bucket)
        if last is not None and now - last < self.interval:
            return last + self.interval - now
        self._last[bucket] = now
        self.taken.append((bucket, now))
        return 0.0

    async def _claim_shared(self, bucket: int) -> float:
        """Take the bucket's turn in the shared database: 0, or the seconds until it may be."""
        assert self.storage is not None
        key = KEY.format(bucket=bucket)
        async with self.storage.transaction() as db:
            await db.execute("SELECT pg_advisory_xact_lock(?)", (IDENTIFY_LOCK + bucket,))
            async with db.execute(
                "SELECT extract(epoch FROM clock_timestamp())::float8, "
                "(SELECT value FROM meta WHERE key = ?)",
                (key,),
            ) as cursor:
                row = await cursor.fetchone()
            assert row is not None  # a SELECT without FROM returns its one row
            now, stored = float(row[0]), row[1]
            last = _seconds(stored)
            # a turn further ahead than one interval is no turn (a clock set back, a bad row)
            if last is not None and now - self.interval < last <= now + self.interval:
                return last + self.interval - now
            await db.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, repr(now)),
            )
        self.taken.append((bucket, now))
        return 0.0


def _seconds(value: object) -> float | None:
    """A stored turn's time, None when there is none or it is not a number."""
    try:
        return float(str(value)) if value is not None else None
    except ValueError:
        return None
