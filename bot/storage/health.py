"""Whether the database takes writes: one log line when it stops, one when it is back, and a
wake for every loop that waits for it.

The storage tells :class:`Health` the outcome of its writes (and the failures of its reads).
The first failure of an outage is logged, once; while the outage lasts a small write is tried
every :data:`PROBE_SECONDS` (:meth:`bot.storage.base.StorageBase.probe`), and the first write
that succeeds, the probe's or any other, ends it: it is logged, and every loop that sleeps is
woken, so what fell due meanwhile runs within seconds of the database's return rather than after
a back-off's worth of waiting (a minute for a deadline, an hour for a transcript, before). Every
loop that waits for something to fall due sleeps in :meth:`Health.sleep` (the phase timers, the
leave strikes, the hostless lobbies, the roll calls, the scheduled games, the outbox's lanes,
the transcripts' keeper): the wake is in the sleep itself, so a new loop has no list to join and
forget.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from bot.storage.records import is_storage_failure

log = logging.getLogger(__name__)

#: how often a write is tried while the database fails (seconds)
PROBE_SECONDS = 1.0
#: an outage that begins this soon after the last one ended (seconds) makes the probe wait
#: twice as long as it did, up to :data:`PROBE_MAX`: a database that takes the probe and
#: refuses the rest wakes the loops ever less often, never in a spin
FLAP_SECONDS = 30.0
PROBE_MAX = 60.0

Listener = Callable[[], None]


class Health:
    """The database's health as its writes show it (see the module docstring)."""

    def __init__(self, *, probe_every: float = PROBE_SECONDS) -> None:
        self.probe_every = probe_every
        self.probe: Callable[[], Awaitable[None]] | None = None
        """The small write tried while the database fails (the storage sets it)."""
        self.down_since: float | None = None
        """When the outage began (``time.monotonic``), or None while writes succeed."""
        self.outages = 0
        """How many outages began (each logged once)."""
        self.watching = False
        """Whether the database is open (what fails while it opens is the opening's error)."""
        self.interval = probe_every
        """How long the probe waits now between two tries (longer while the database flaps)."""
        self._ended_at: float | None = None
        self._listeners: list[Listener] = []
        self._sleepers: dict[asyncio.Event, int] = {}
        """The events of the loops sleeping in :meth:`sleep` (how many sleep on each)."""
        self._prober: asyncio.Task[None] | None = None

    @property
    def down(self) -> bool:
        """Whether the last write failed (and none succeeded since)."""
        return self.down_since is not None

    def on_back(self, listener: Listener) -> None:
        """Call ``listener`` (no arguments) each time the database is back after an outage."""
        self._listeners.append(listener)

    def forget(self, listener: Listener) -> None:
        """Stop calling ``listener``."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    def failed(self, error: BaseException) -> None:
        """A write (or read) failed: a failure of the database begins an outage (logged once);
        a refusal (a constraint, a busy player) or a bug is not one."""
        if not self.watching or not is_storage_failure(error) or self.down_since is not None:
            return
        self.down_since = time.monotonic()
        self.outages += 1
        flapping = self._ended_at is not None and self.down_since - self._ended_at < FLAP_SECONDS
        self.interval = min(self.interval * 2, PROBE_MAX) if flapping else self.probe_every
        log.warning(
            "the database fails (%r): what falls due waits for it and runs as soon as it is "
            "back (a write is tried every %g s; logged once until then)",
            error,
            self.interval,
        )
        self._start_probing()

    def ok(self) -> None:
        """A write succeeded: an outage ends (logged once), and whatever waits is woken."""
        if self.down_since is None:
            return
        self._ended_at = time.monotonic()
        lasted = self._ended_at - self.down_since
        self.down_since = None
        log.warning("the database is back after %.1f s: what fell due runs now", lasted)
        for sleeper in list(self._sleepers):
            sleeper.set()
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:
                log.exception("waking a loop after the database came back")

    async def sleep(self, wake: asyncio.Event, timeout: float | None) -> bool:
        """Sleep until ``wake`` is set, ``timeout`` seconds pass (None: no limit) or the
        database comes back after an outage (which sets ``wake``); whether ``wake`` was set.

        Every loop that waits for something to fall due (a deadline, a strike, a scheduled game,
        an outbox item, a transcript) sleeps here, so the database's return wakes it at once:
        there is nothing for a loop to join, hence nothing to forget
        (``tests/bot/test_recovery.py`` checks that no such loop sleeps elsewhere)."""
        self._sleepers[wake] = self._sleepers.get(wake, 0) + 1
        try:
            await asyncio.wait_for(wake.wait(), timeout)
        except TimeoutError:
            return False
        finally:
            left = self._sleepers.pop(wake) - 1
            if left:
                self._sleepers[wake] = left
        return True

    async def wait(self, timeout: float) -> bool:
        """Sleep ``timeout`` seconds, less if the database comes back meanwhile (a back-off);
        whether it came back."""
        return await self.sleep(asyncio.Event(), timeout)

    def close(self) -> None:
        """Stop probing (the storage is closing)."""
        if self._prober is not None:
            self._prober.cancel()
            self._prober = None

    def _start_probing(self) -> None:
        if self.probe is None or (self._prober is not None and not self._prober.done()):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a synchronous caller): the next write tells
            return
        self._prober = loop.create_task(self._probe_until_back(), name="database-probe")

    async def _probe_until_back(self) -> None:
        while self.down_since is not None and self.probe is not None:
            await asyncio.sleep(self.interval)
            if self.down_since is None:
                return
            with contextlib.suppress(Exception):  # still down: the write told :meth:`failed`
                await self.probe()
