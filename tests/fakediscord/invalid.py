"""Discord's invalid-request limit: 401, 403 and 429 answers counted per 10 minutes.

Discord blocks an IP that makes 10,000 invalid requests within 10 minutes
(topics/rate-limits.mdx, "Invalid Request Limit"): requests answered 401, 403
or 429, a 429 whose ``X-RateLimit-Scope`` is ``shared`` excepted. The block
takes the bot down for every server it serves, so the suite holds the bot to
1 % of that (:data:`BUDGET`): the pytest plugin (:mod:`.plugin`) fails a test
in which any fake counted more than that in any 10 minutes of its clock
(:attr:`InvalidRequests.clock`, ``time.monotonic`` unless a test gives one),
unless the test is marked ``@pytest.mark.invalid_requests(N)`` with a budget
of its own (a test of the fake itself that makes refusals on purpose).
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Mapping

#: Discord's window for the invalid-request limit (seconds)
WINDOW = 600.0
#: Discord's limit in that window (an IP past it is blocked)
DISCORD_LIMIT = 10_000
#: what a test may make in any window: 1 % of Discord's limit
BUDGET = 100

#: every counter made in this process and not yet read (the plugin reads, and forgets, those made
#: during a test; a counter holds only its times, not its fake)
COUNTERS: dict[int, InvalidRequests] = {}
_made = 0


def is_invalid(status: int, headers: Mapping[str, str]) -> bool:
    """Whether Discord counts an answer against the invalid-request limit."""
    if status in (401, 403):
        return True
    return status == 429 and headers.get("X-RateLimit-Scope") != "shared"


class InvalidRequests:
    """The invalid requests one fake answered, by the time of its clock."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        global _made
        self.clock = clock
        """The fake's clock (seconds): a test with a clock of its own sets it."""
        self.times: list[float] = []
        """When each invalid request was answered, in order."""
        self.routes: list[str] = []
        """What each was: ``METHOD route -> status``."""
        _made += 1
        self.serial = _made
        COUNTERS[_made] = self

    def note(self, status: int, headers: Mapping[str, str], what: str) -> None:
        """Count one answer if Discord would count it."""
        if is_invalid(status, headers):
            self.times.append(self.clock())
            self.routes.append(what)

    @property
    def total(self) -> int:
        """Every invalid request so far."""
        return len(self.times)

    def recent(self, window: float = WINDOW) -> int:
        """Those of the last ``window`` seconds."""
        return len(self.times) - bisect.bisect_left(self.times, self.clock() - window)

    def peak(self, window: float = WINDOW) -> int:
        """The most counted in any ``window`` seconds (a sliding window)."""
        most, start = 0, 0
        for end, moment in enumerate(self.times):
            while moment - self.times[start] >= window:
                start += 1
            most = max(most, end - start + 1)
        return most

    def summary(self, limit: int = 10) -> str:
        """The commonest invalid requests, for a failing test's message."""
        counts: dict[str, int] = {}
        for what in self.routes:
            counts[what] = counts.get(what, 0) + 1
        common = sorted(counts.items(), key=lambda pair: -pair[1])[:limit]
        return "\n".join(f"{count:6d}  {what}" for what, count in common)


def made_since(serial: int) -> list[InvalidRequests]:
    """The counters made after the ``serial``-th, forgotten from now on."""
    return [COUNTERS.pop(key) for key in sorted(COUNTERS) if key > serial]


def made_so_far() -> int:
    """How many counters were made in this process."""
    return _made
