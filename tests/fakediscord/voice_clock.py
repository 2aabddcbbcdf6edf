"""The clock of a simulated call (:class:`MediaClock`)."""

from __future__ import annotations

import asyncio
import time

# --------------------------------------------------------------------------
# The call's clock


class MediaClock:
    """The clock of a simulated call: real time, jumped forward when speakers run ahead of it.

    :meth:`FakeSpeaker.play` (not ``realtime``) sends every packet at its
    planned time on this clock, jumping it forward instead of waiting, and
    waits until the bot has read the packet before the next jump (see
    :attr:`FakeVoiceServer.receipts`). A bot whose receiver stamps arrivals
    with the same clock then sees three minutes of speech arrive exactly as
    in three minutes of real time, in a second or two. Speakers playing at
    once take turns in time order (:meth:`wait_turn`). Between jumps it runs
    at real speed, so timeouts still expire. Reading it is thread-safe.
    """

    def __init__(self) -> None:
        self._skew = 0.0
        self._due: dict[int, float] = {}
        self._frozen: float | None = None

    def __call__(self) -> float:
        frozen = self._frozen
        return frozen if frozen is not None else time.monotonic() + self._skew

    def freeze(self) -> None:
        """Stop the clock (a packet is on its way): the bot reads it at the time it was sent,
        however long a loaded machine takes to get its reader thread to it."""
        if self._frozen is None:
            self._frozen = self()

    def thaw(self) -> None:
        """Run on at real speed from where :meth:`freeze` stopped."""
        frozen = self._frozen
        if frozen is not None:
            self._skew = frozen - time.monotonic()
            self._frozen = None

    async def wait_turn(self, player: int, when: float) -> None:
        """Wait until ``when`` for ``player``, jumping there once no other player is due sooner.

        Speakers playing at once thus take turns in time order, like a
        discrete-event simulation; none runs ahead of the others' schedule.
        """
        self._due[player] = when
        while when > self():
            if when <= min(self._due.values()):
                self.advance_to(when)
                break
            await asyncio.sleep(0)

    def hold(self, player: int) -> None:
        """``player`` is about to send: nobody jumps past now until it has its turn."""
        self._due[player] = self()

    def rest(self, player: int) -> None:
        """``player`` is not sending for now: others need not wait for it."""
        self._due.pop(player, None)

    def advance_to(self, when: float) -> None:
        """Jump forward to ``when`` (nothing if it is already later)."""
        now = self()
        if when > now:
            self.advance(when - now)

    def advance(self, seconds: float) -> None:
        """Jump forward by ``seconds``."""
        if seconds > 0:
            if self._frozen is not None:
                self._frozen += seconds
            else:
                self._skew += seconds

    async def sleep(self, seconds: float) -> None:
        """Wait until ``seconds`` have passed on this clock (jumps included)."""
        until = self() + seconds
        while self() < until:
            await asyncio.sleep(min(0.005, max(0.0, until - self())))
