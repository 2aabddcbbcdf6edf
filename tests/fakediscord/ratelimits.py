"""Per-bucket rate-limit bookkeeping and Discord's ``X-RateLimit-*`` headers."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass


@dataclass
class _Window:
    used: int
    resets_at: float


class RateLimits:
    """Counts calls per bucket (route template + major parameters) in fixed windows.

    Every answer carries ``X-RateLimit-Limit/Remaining/Reset/Reset-After/Bucket``
    computed from the count, like Discord's. With ``enforce`` set, a call past
    the limit gets a real 429 (discord.py waits for the reset itself when
    ``Remaining`` reaches 0, so a well-behaved client never sees it). The
    default limit is generous so that tests stay fast.
    """

    def __init__(self, limit: int = 50, window: float = 1.0, *, enforce: bool = True) -> None:
        self.limit = limit
        self.window = window
        self.enforce = enforce
        self._windows: dict[tuple[str, str], _Window] = {}

    @staticmethod
    def bucket_hash(route: str) -> str:
        """A stable opaque bucket id for a route template."""
        return hashlib.sha1(route.encode()).hexdigest()[:32]

    def hit(self, route: str, major: str) -> tuple[dict[str, str], float | None]:
        """Counts one call; returns its headers and, if it is over the limit, the retry delay."""
        now = time.monotonic()
        key = (route, major)
        window = self._windows.get(key)
        if window is None or now >= window.resets_at:
            window = _Window(used=0, resets_at=now + self.window)
            self._windows[key] = window
        window.used += 1
        reset_after = max(window.resets_at - now, 0.0)
        remaining = max(self.limit - window.used, 0)
        headers = {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(remaining),
            "X-RateLimit-Reset": f"{time.time() + reset_after:.3f}",
            "X-RateLimit-Reset-After": f"{reset_after:.3f}",
            "X-RateLimit-Bucket": self.bucket_hash(route),
        }
        over = self.enforce and window.used > self.limit
        return headers, (reset_after if over else None)

    def reset(self) -> None:
        """Forgets all counts."""
        self._windows.clear()


def is_interaction_endpoint(template: str) -> bool:
    """Whether a route is one of the interaction endpoints (the callback, and the webhook
    routes an interaction's token opens), which Discord leaves out of the global limit."""
    return template.startswith("/interactions/") or "{interaction_token}" in template


class GlobalLimit:
    """Discord's global rate limit: ``limit`` requests of a bot in each ``window`` (fixed
    windows, as :class:`RateLimits` counts), the interaction endpoints left out ("Interaction
    endpoints are not bound to the bot's Global Rate Limit"). With ``enforce`` set, a request
    past it is answered 429 with ``global: true``; ``rejected`` counts those."""

    def __init__(self, limit: int = 50, window: float = 1.0, *, enforce: bool = True) -> None:
        self.limit = limit
        self.window = window
        self.enforce = enforce
        self.rejected = 0
        self.most_in_window = 0
        """The most requests counted in one window so far."""
        self._window = _Window(used=0, resets_at=0.0)

    def hit(self, template: str) -> float | None:
        """Counts one request; the seconds to wait if it is over the limit (else None)."""
        if is_interaction_endpoint(template):
            return None
        now = time.monotonic()
        if now >= self._window.resets_at:
            self._window = _Window(used=0, resets_at=now + self.window)
        self._window.used += 1
        self.most_in_window = max(self.most_in_window, self._window.used)
        if self.enforce and self._window.used > self.limit:
            self.rejected += 1
            return max(self._window.resets_at - now, 0.001)
        return None
