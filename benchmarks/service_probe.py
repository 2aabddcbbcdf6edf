"""The bot as ``python -m bot run`` runs it, counting what its commands cost inside the process.

``benchmarks/service_bench.py --probe`` starts the bot through this module and marks the
sections it measures with signals: SIGUSR1 begins one (the counters start from zero),
SIGUSR2 ends it and appends one JSON line to the file ``$BENCH_PROBE_OUT``:

- ``statements``: SQL statements SQLite ran (every connection's trace callback: BEGIN and
  COMMIT count, a statement of an ``executemany`` counts once per row);
- ``trips``: calls carried to aiosqlite's threads (each costs the caller turns of the loop);
- ``groups`` and ``group_seconds``: group commits (:class:`bot.storage.GroupWriter`) and the
  time spent in them, their COMMIT's fsync included (on the writer's thread with
  ``synchronous=full``), and the longest;
- ``gc``: the garbage collector's collections in the section, per generation, with the time
  they stopped the process (the longest too);
- ``lag``: the event loop's lateness, sampled every 5 ms: how often and how long it stood still,
  and (``stall_cpu``) how much of the stalls of 10 ms or more the loop's thread spent running
  (the rest it waited for a CPU).

``$BENCH_CPROFILE=PREFIX`` also profiles the event loop's thread in each section, into
``PREFIX.<n>.prof`` (``python -m pstats``). The probe adds to the bot's work (the trace
callback, the loop sampler): the bench prints its CPU figures from a run without it.
Without ``$BENCH_PROBE_OUT`` nothing is counted.

``$BENCH_VARIANT`` (names separated by commas) changes the bot for an A/B run of the bench
(``--variants``): ``uvloop`` runs it on uvloop's event loop instead of asyncio's own;
``orjson`` has :mod:`bot.storage` write and read its JSON columns (the outbox's targets and
payloads, the games' records) with orjson instead of the standard library's encoder;
``eager`` has discord.py parse the message each answer created, as it does by itself (the bot
leaves it unparsed: :mod:`bot.callbacks`).
"""

from __future__ import annotations

import asyncio
import cProfile
import gc
import json
import os
import signal
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiosqlite  # noqa: E402

from bot import storage  # noqa: E402

VARIANTS = ("uvloop", "orjson", "eager")


class Counters:
    """What one section cost; reset at its beginning."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.statements = 0
            self.trips = 0
            self.groups = 0
            self.group_seconds = 0.0
            self.group_longest = 0.0
            self.gc: dict[int, list[float]] = {0: [], 1: [], 2: []}
            self.lags: list[float] = []
            self.stall_cpu = 0.0
            self.slow: dict[str, list[tuple[float, float]]] = {"commit": [], "loop": []}
            """(began, seconds) by time.monotonic (the bench's clock too) of each group commit
            and each stall of the loop over :data:`SLOW`."""

    def figures(self) -> dict[str, Any]:
        with self.lock:
            pauses = [pause for generation in self.gc.values() for pause in generation]
            return {
                "statements": self.statements,
                "trips": self.trips,
                "groups": self.groups,
                "group_seconds": round(self.group_seconds, 4),
                "group_longest_ms": round(1000 * self.group_longest, 2),
                "gc": {str(g): len(p) for g, p in self.gc.items()},
                "gc_seconds": round(sum(pauses), 4),
                "gc_longest_ms": round(1000 * max(pauses, default=0.0), 2),
                "lags_over_5ms": sum(1 for lag in self.lags if lag > 0.005),
                "lags_over_20ms": sum(1 for lag in self.lags if lag > 0.020),
                "lag_longest_ms": round(1000 * max(self.lags, default=0.0), 2),
                "stall_cpu": round(self.stall_cpu, 4),
                "slow": {
                    kind: [(round(at, 4), round(spent, 4)) for at, spent in spans]
                    for kind, spans in self.slow.items()
                },
            }


#: a group commit or a stall of the loop this long (seconds) is listed with its time
SLOW = 0.010
COUNTERS = Counters()
SECTION: dict[str, Any] = {"on": False, "profile": None, "number": 0}


def _count_statement(_sql: str) -> None:
    if SECTION["on"]:
        with COUNTERS.lock:
            COUNTERS.statements += 1


_connect = sqlite3.connect


def _traced_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
    connection = _connect(*args, **kwargs)
    connection.set_trace_callback(_count_statement)
    return connection


_execute = aiosqlite.Connection._execute


async def _counted_execute(self: aiosqlite.Connection, fn: Any, *args: Any, **kwargs: Any) -> Any:
    if SECTION["on"]:
        with COUNTERS.lock:
            COUNTERS.trips += 1
    return await _execute(self, fn, *args, **kwargs)


_write = storage.GroupWriter.write


def _timed_write(self: storage.GroupWriter, writes: Any) -> Any:
    began = time.monotonic()
    try:
        return _write(self, writes)
    finally:
        spent = time.monotonic() - began
        if SECTION["on"]:
            with COUNTERS.lock:
                COUNTERS.groups += 1
                COUNTERS.group_seconds += spent
                COUNTERS.group_longest = max(COUNTERS.group_longest, spent)
                if spent >= SLOW:
                    COUNTERS.slow["commit"].append((began, spent))


_collecting: dict[str, float] = {}


def _on_gc(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        _collecting["at"] = time.perf_counter()
    elif SECTION["on"] and "at" in _collecting:
        with COUNTERS.lock:
            COUNTERS.gc[info["generation"]].append(time.perf_counter() - _collecting.pop("at"))


def install_counters() -> None:
    """Count what the sections cost (see the module docstring)."""
    sqlite3.connect = _traced_connect  # type: ignore[assignment]
    aiosqlite.Connection._execute = _counted_execute  # type: ignore[method-assign]
    storage.GroupWriter.write = _timed_write  # type: ignore[method-assign]
    gc.callbacks.append(_on_gc)
    signal.signal(signal.SIGUSR1, _begin)
    signal.signal(signal.SIGUSR2, _end)
    asyncio.run = _run_with_sampler  # type: ignore[assignment]


def apply_variants(names: list[str]) -> None:
    """Change the bot as ``$BENCH_VARIANT`` asks (see the module docstring)."""
    unknown = set(names) - set(VARIANTS)
    if unknown:
        raise SystemExit(
            f"BENCH_VARIANT: unknown {', '.join(sorted(unknown))} (known: {', '.join(VARIANTS)})"
        )
    if "eager" in names:
        import bot.bot  # noqa: F401  (it makes answers lazy as it is imported)
        from bot.callbacks import parse_answers_lazily

        parse_answers_lazily(False)
    if "uvloop" in names:
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    if "orjson" in names:
        import types

        import orjson

        def dumps(value: Any) -> str:
            return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()

        fast = types.SimpleNamespace(loads=orjson.loads, dumps=json.dumps)
        for module in vars(storage).values():  # each part of the package that reads or writes JSON
            if isinstance(module, types.ModuleType) and module.__name__.startswith("bot.storage."):
                if hasattr(module, "_dumps"):
                    module._dumps = dumps  # type: ignore[attr-defined]
                if hasattr(module, "json"):
                    module.json = fast  # type: ignore[attr-defined]


def _begin(*_: Any) -> None:
    COUNTERS.reset()
    SECTION["on"] = True
    if os.environ.get("BENCH_CPROFILE"):
        profile = cProfile.Profile(time.thread_time)  # the loop thread's CPU, not the wall
        profile.enable()
        SECTION["profile"] = profile


def _end(*_: Any) -> None:
    SECTION["on"] = False
    profile = SECTION["profile"]
    SECTION["number"] += 1
    if profile is not None:
        profile.disable()
        profile.dump_stats(f"{os.environ['BENCH_CPROFILE']}.{SECTION['number']}.prof")
        SECTION["profile"] = None
    with open(os.environ["BENCH_PROBE_OUT"], "a") as out:
        out.write(json.dumps(COUNTERS.figures()) + "\n")


async def _sample_lag(every: float = 0.005) -> None:
    while True:
        began, used = time.monotonic(), time.thread_time()
        await asyncio.sleep(every)
        if SECTION["on"]:
            late = time.monotonic() - began - every
            COUNTERS.lags.append(late)
            if late >= SLOW:
                with COUNTERS.lock:
                    COUNTERS.slow["loop"].append((began + every, late))
                    # what the loop's thread ran meanwhile: a stall longer than that waited
                    # for a CPU (the machine's other processes had it)
                    COUNTERS.stall_cpu += min(late, time.thread_time() - used)


_run = asyncio.run


def _run_with_sampler(main: Any, **kwargs: Any) -> Any:
    async def with_sampler() -> Any:
        sampler = asyncio.create_task(_sample_lag())
        try:
            return await main
        finally:
            sampler.cancel()

    return _run(with_sampler(), **kwargs)


def main() -> int:
    if os.environ.get("BENCH_PROBE_OUT"):
        install_counters()
    apply_variants([name for name in os.environ.get("BENCH_VARIANT", "").split(",") if name])
    from bot.cli import main as cli

    return cli(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
