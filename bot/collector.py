"""Short garbage-collector pauses for a process that keeps many games in memory.

CPython's full collection walks every tracked object not frozen. The bot
freezes what it built at start (``gc.freeze()`` once ready), but the games
opened later (their rules' state, records, members, Discord's caches) are
walked again by every full collection: at 200 running games one took 70 ms
of CPU (over 100 ms on a busy machine), and every command waiting meanwhile
waited as long.

So what survives a full collection is frozen too, just after it: the next
one walks only what came since. A frozen object is still freed when its last
reference goes (reference counting); only a reference cycle among frozen
objects would wait, so once an hour everything is unfrozen and collected in
one go (one long pause an hour instead of several a minute), then frozen
again. The standard library has the two calls this needs (``gc.freeze`` and
``gc.unfreeze``); no library schedules them, so it is written here.

The youngest generation is collected after :data:`YOUNG_THRESHOLD` new objects,
not CPython's 700. With 700, and every survivor frozen, the older
generations filled up again within a second and a half; under 300 commands a
second the loop stood still for 20–56 ms around each of those collections,
and the commands it held waited as long (p99 33–61 ms at 200 games). With
20,000 a young collection took 5–10 ms every two seconds or so and no older
one ran in the 14 s of play (p99 7–22 ms over three runs; 10,000 and a full
collection made only once a minute did not do better: 9–52 ms).

Most of what those young collections freed was discord.py's interactions: an
``Interaction`` caches its ``InteractionResponse``, which points back at it
(and an original response it fetched points back through its state). The
cycle keeps the interaction, its member, user, namespace and options alive
after the command until a collection finds them: some 13,000 objects every
two seconds at 300 commands a second, freed in one pause of 10–30 ms.
:func:`release_when_done` breaks that cycle once the task that handles an
interaction ends (the command tree's and the components' interaction checks
call it, the first thing discord.py runs for each), so reference counting
frees each interaction as its command ends. discord.py has no hook at the
end of an interaction's handling, and nothing of it uses the interaction
after that task: the release drops its two cached links, no more. With it,
the 14 s of a 200-game day saw one or two young collections (0 objects
freed, 7–16 ms) instead of six (6,000–14,000 freed, 6–31 ms); a threshold of
5,000 then gave eight collections of 2–11 ms and no better latency.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from typing import Any

log = logging.getLogger(__name__)

#: how often frozen objects are given back to a full collection (cycles among them are freed)
THAW_EVERY = 3600.0

#: new objects between two collections of the youngest generation (CPython's default: 700)
YOUNG_THRESHOLD = 20_000


def release_when_done(interaction: Any) -> None:
    """When the current task ends, break ``interaction``'s reference cycle (see above)."""
    task = asyncio.current_task()
    if task is not None:
        task.add_done_callback(lambda _task: _release(interaction))


def _release(interaction: Any) -> None:
    # the cached response (InteractionResponse._parent is the interaction) and the
    # original response (its state's _interaction): discord.py makes new ones if asked again
    with contextlib.suppress(AttributeError):
        del interaction._cs_response
    with contextlib.suppress(AttributeError):
        interaction._original_response = None


class CollectorPolicy:
    """Freezes the survivors of each full collection; thaws and collects all now and then."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        thaw_every: float = THAW_EVERY,
        clock: Any = time.monotonic,
    ) -> None:
        self.loop = loop
        self.thaw_every = thaw_every
        self.clock = clock
        self.frozen_after = 0
        """How many full collections were followed by a freeze."""
        self._thawed_at = clock()
        self._installed = False
        self._thresholds: tuple[int, int, int] | None = None

    def install(self) -> None:
        """Start: freeze what lives now, and after every full collection from here on."""
        if self._installed:
            return
        self._installed = True
        gc.collect()
        gc.freeze()
        self._thresholds = gc.get_threshold()
        gc.set_threshold(YOUNG_THRESHOLD, *self._thresholds[1:])
        gc.callbacks.append(self._after)

    def uninstall(self) -> None:
        """Stop freezing (what is frozen stays so until :meth:`thaw`)."""
        if self._installed:
            gc.callbacks.remove(self._after)
            if self._thresholds is not None:
                gc.set_threshold(*self._thresholds)
            self._installed = False

    def _after(self, phase: str, info: dict[str, int]) -> None:
        if phase != "stop" or info.get("generation") != 2:
            return
        # not from inside the collection (it may run in any thread): on the loop, right after;
        # a loop already closed means the process is ending
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self._freeze)

    def _freeze(self) -> None:
        if self.clock() - self._thawed_at >= self.thaw_every:
            self.thaw()
            return
        gc.freeze()
        self.frozen_after += 1

    def thaw(self) -> None:
        """Give every frozen object back to the collector, collect everything, freeze again."""
        began = time.perf_counter()
        gc.unfreeze()
        freed = gc.collect()
        gc.freeze()
        self._thawed_at = self.clock()
        log.info(
            "full collection of everything: %d freed in %.0f ms",
            freed,
            (time.perf_counter() - began) * 1000,
        )
