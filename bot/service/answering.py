"""When an interaction's one answer is still in time, and when it must be acknowledged first.

Discord takes an interaction's first answer for :data:`ANSWER_WITHIN` seconds after it created
the interaction (its snowflake's time). A command answered after its commit costs one call; one
acknowledged before it ("thinking…") and edited after costs two, so the service acknowledges
first only when the answer would not be in time otherwise: when what is left of the 3 s, less
:data:`ANSWER_MARGIN` for the answer's trip, is less than what a command takes now from its
lock to its answer (:attr:`AnswerTime.cost`, the recent commands' longest, fading).

The age is read on this machine's clock against Discord's snowflake. A clock behind Discord's
would make interactions look younger than they are, so the service notes how late each one
reaches it: one that seems to arrive before Discord made it shows the clock is behind by at
least that much, and ages are read that much older. Only up to :data:`MOST_BEHIND`: a snowflake
further in the future is not a clock a little off (a made-up time, a clock a day wrong, which
NTP is for), and is left out. A clock ahead only makes interactions look older: acknowledged
first a little early, never too late.
"""

from __future__ import annotations

import collections

#: Discord takes an interaction's first answer this long after it created it (seconds)
ANSWER_WITHIN = 3.0
#: kept free of it for the answer's trip to Discord and a little more (seconds)
ANSWER_MARGIN = 0.5
#: the most this machine's clock is taken to be behind Discord's (seconds)
MOST_BEHIND = 1.0
#: how many interactions' arrivals the clock's lag is read from
ARRIVALS = 256
#: how fast a slow command is forgotten: each command's time counts, and the longest one fades
#: by this factor at every command after it
FADE = 0.9


class AnswerTime:
    """The service's reading of Discord's deadline for first answers (see the module docstring)."""

    def __init__(self) -> None:
        self.cost = 0.0
        """What a command took lately from its game's lock to its answer (seconds, fading)."""
        self._lags: collections.deque[float] = collections.deque(maxlen=ARRIVALS)

    def heard(self, sent_at: float, now: float) -> None:
        """An interaction Discord created at ``sent_at`` reached the service at ``now``."""
        self._lags.append(now - sent_at)

    def took(self, seconds: float) -> None:
        """A command held its game's lock ``seconds``."""
        self.cost = max(seconds, self.cost * FADE)

    @property
    def behind(self) -> float:
        """How far this machine's clock is taken to be behind Discord's (seconds)."""
        earliest = min((lag for lag in self._lags if lag >= -MOST_BEHIND), default=0.0)
        return max(0.0, -earliest)

    def age(self, sent_at: float, now: float) -> float:
        """How old an interaction created at ``sent_at`` (Discord's time) is at ``now``."""
        return now - sent_at + self.behind

    def left(self, sent_at: float, now: float) -> float:
        """How long a command may still wait before its commit begins and be answered in time
        with one call (0 or less: acknowledge it first)."""
        return ANSWER_WITHIN - ANSWER_MARGIN - self.cost - self.age(sent_at, now)


__all__ = ["ANSWER_MARGIN", "ANSWER_WITHIN", "MOST_BEHIND", "AnswerTime"]
