"""How steady this machine's CPUs are, with nothing of the bot running.

One process per CPU (pinned) does the same small piece of pure-Python work
every 2 ms and times it: wall clock and the thread's own CPU time. On a
steady machine the piece always costs about the same. A *slow window* is a
stretch where it costs more than :data:`SLOW` times its median **in CPU
time**: the thread was running, yet got a fraction of its usual speed (a
thread that merely waited for a busy CPU shows wall time, not CPU time).
Windows on all CPUs at once, at a steady period, come from below the
operating system (the host the virtual machine runs on): no process of the
machine can cause them or avoid them.

Why it matters for ``service_bench.py``: in a slow window every command in
flight stalls, and the ones that arrive meanwhile queue up. At 300 commands a
second, a window of 80 ms every 1.5 s puts some 5 % of the commands into it
or into the backlog after it, so the p99 of the day is the window's length,
whatever the bot does. The bench runs :class:`Sampler` alongside the day and
prints the windows it saw, so its figures can be read against the machine.

Run: ``python benchmarks/machine_noise.py`` (20 s; ``--seconds N``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import os
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

#: a piece of work costs this many times its median CPU time, or more: it ran in a slow window
SLOW = 4.0
#: slow pieces closer than this (seconds) belong to one window
MERGE = 0.05
#: windows closer than this (seconds) are one episode (they come in twos and threes)
EPISODE = 0.5


def piece() -> int:
    """The unit of work: about 0.2 ms of the interpreter on this machine."""
    total = 0
    for i in range(3000):
        total += i * i
    return total


def sample(
    seconds: float, every: float, stop: list[bool] | None = None
) -> list[tuple[float, float, float]]:
    """(monotonic start, wall ms, CPU ms) of one piece every ``every`` s for ``seconds``
    (or until ``stop`` holds True)."""
    rows = []
    end = time.monotonic() + seconds
    while time.monotonic() < end and not (stop and stop[0]):
        began, cpu = time.monotonic(), time.thread_time()
        piece()
        rows.append((began, (time.monotonic() - began) * 1000, (time.thread_time() - cpu) * 1000))
        time.sleep(every)
    return rows


@dataclass
class Window:
    start: float
    end: float
    slowdown: float
    """The median piece's CPU time over the window's pieces' (how many times slower)."""

    @property
    def ms(self) -> float:
        return (self.end - self.start) * 1000


def windows(rows: list[tuple[float, float, float]]) -> list[Window]:
    """The slow windows in one sampler's rows."""
    if not rows:
        return []
    median = statistics.median(cpu for _, _, cpu in rows)
    found: list[tuple[float, float, list[float]]] = []
    for began, wall, cpu in rows:
        if cpu < SLOW * median:
            continue
        end = began + wall / 1000
        if found and began - found[-1][1] < MERGE:
            found[-1] = (found[-1][0], end, found[-1][2] + [cpu])
        else:
            found.append((began, end, [cpu]))
    return [Window(start, end, statistics.median(cpus) / median) for start, end, cpus in found]


def describe(found: list[Window], seconds: float) -> str:
    """One line: how many windows, how long, how often, how slow."""
    if not found:
        return f"no slow window in {seconds:.0f} s"
    lengths = [w.ms for w in found]
    episodes = [found[0].start]
    for a, b in itertools.pairwise(found):
        if b.start - a.end >= EPISODE:
            episodes.append(b.start)
    gaps = [b - a for a, b in itertools.pairwise(episodes)]
    period = (
        f", in {len(episodes)} episodes one every {statistics.median(gaps):.2f} s (median)"
        if gaps
        else ""
    )
    share = sum(lengths) / 1000 / seconds * 100
    return (
        f"{len(found)} slow windows in {seconds:.0f} s{period}; {statistics.median(lengths):.0f} ms "
        f"(median) to {max(lengths):.0f} ms long, {share:.1f} % of the time; inside them the CPU ran "
        f"{statistics.median(w.slowdown for w in found):.0f} times slower"
    )


def _pinned(cpu: int, seconds: float, every: float, queue: multiprocessing.Queue) -> None:
    os.sched_setaffinity(0, {cpu})
    queue.put((cpu, sample(seconds, every)))


class Sampler:
    """A sampler in a process of its own, beside a benchmark: :meth:`stop` returns its windows."""

    def __init__(self, every: float = 0.005) -> None:
        self.every = every
        self.process: subprocess.Popen[str] | None = None

    def start(self, seconds: float = 600.0) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--seconds",
                str(seconds),
                "--every",
                str(self.every),
                "--rows",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )

    def stop(self) -> list[Window]:
        """Stop sampling; the windows seen."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        out, _ = self.process.communicate(timeout=60)
        return windows([tuple(row) for row in json.loads(out)])  # type: ignore[misc]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--every", type=float, default=0.002, help="seconds between two pieces")
    parser.add_argument(
        "--rows", action="store_true", help="print one sampler's rows as JSON (for Sampler)"
    )
    args = parser.parse_args()
    if args.rows:
        stop = [False]
        signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
        print(json.dumps(sample(args.seconds, args.every, stop)))
        return
    cpus = sorted(os.sched_getaffinity(0))
    queue: multiprocessing.Queue = multiprocessing.Queue()
    workers = [
        multiprocessing.Process(target=_pinned, args=(cpu, args.seconds, args.every, queue))
        for cpu in cpus
    ]
    for worker in workers:
        worker.start()
    results = dict(queue.get() for _ in workers)
    for worker in workers:
        worker.join()
    found = {cpu: windows(rows) for cpu, rows in results.items()}
    for cpu, rows in sorted(results.items()):
        walls = sorted(wall for _, wall, _ in rows)
        print(
            f"CPU {cpu}: {len(rows)} pieces, median {statistics.median(walls):.2f} ms, "
            f"p99 {walls[int(0.99 * len(walls))]:.2f} ms, max {walls[-1]:.2f} ms"
        )
        print(f"  {describe(found[cpu], args.seconds)}")
    if len(found) > 1:
        first, *others = (found[cpu] for cpu in sorted(found))
        shared = sum(
            1
            for w in first
            if all(any(o.start < w.end and w.start < o.end for o in other) for other in others)
        )
        print(
            f"windows of CPU {cpus[0]} that every other CPU had at the same time: {shared} of {len(first)}"
        )


if __name__ == "__main__":
    main()
