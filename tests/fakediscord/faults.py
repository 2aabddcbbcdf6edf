"""Injected REST faults: errors, rate limits, latency and calls that never answer."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field


@dataclass
class Fault:
    """A rule that changes how the fake answers matching REST calls.

    ``kind`` is ``"fail"`` (answer with ``status``), ``"delay"`` (answer
    normally after ``seconds``) or ``"hang"`` (never answer until
    :meth:`release` or the fake closes). ``count`` is how many matching calls
    it still affects (None: every one).
    """

    kind: str
    method: str | None
    pattern: re.Pattern[str]
    count: int | None
    status: int = 500
    code: int = 0
    message: str | None = None
    retry_after: float = 0.05
    global_: bool = False
    seconds: float = 0.0
    hits: int = 0
    """How many calls this fault has shaped so far."""
    _released: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    def matches(self, method: str, path: str, route: str) -> bool:
        """Whether the call is one this fault is about (ignores the remaining count)."""
        if self.method is not None and self.method not in ("*", method):
            return False
        return bool(self.pattern.fullmatch(path) or self.pattern.fullmatch(route))

    @property
    def active(self) -> bool:
        """Whether it will still affect a matching call."""
        return self.count is None or self.hits < self.count

    def release(self) -> None:
        """Lets calls held by a ``"hang"`` fault go on (they are then answered normally)."""
        self._released.set()

    async def wait_released(self) -> None:
        """Blocks until :meth:`release` is called."""
        await self._released.wait()


class FaultInjector:
    """The list of faults, in the order they were added."""

    def __init__(self) -> None:
        self.faults: list[Fault] = []

    def add(self, fault: Fault) -> Fault:
        """Adds a fault and returns it."""
        self.faults.append(fault)
        return fault

    def clear(self) -> None:
        """Removes every fault, releasing held calls first."""
        for fault in self.faults:
            fault.release()
        self.faults.clear()

    def take(self, method: str, path: str, route: str) -> tuple[list[Fault], Fault | None]:
        """The delays and the first fail-or-hang fault that apply to this call, counted as used."""
        delays: list[Fault] = []
        blocking: Fault | None = None
        for fault in self.faults:
            if not fault.active or not fault.matches(method, path, route):
                continue
            if fault.kind == "delay":
                fault.hits += 1
                delays.append(fault)
            elif blocking is None:
                fault.hits += 1
                blocking = fault
        return delays, blocking


def compile_path(path_regex: str) -> re.Pattern[str]:
    """Compiles a fault's path pattern (matched against the path or the route template)."""
    return re.compile(path_regex)
