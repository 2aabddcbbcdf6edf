"""The moonshot benchmark (``benchmarks/scale_bench.py``) at the size CI runs: it plays its
whole course (a bare client, the bot's start with games of every size, the floor, a day of
commands, a restart) and prints every figure the README gives, each beside its yardstick. No
figure is asserted on: a benchmark's numbers are read, not tested (shared CI machines)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_scale_bench_runs_its_whole_course_and_prints_every_figure():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "scale_bench.py"), "--small"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 0, done.stderr[-3000:]
    assert "30 games (10 of 8, 10 of 16, 10 of 30)" in out
    assert "a bare discord.py client:" in out and "RSS" in out
    assert "restored" in out and "ready in" in out
    assert "floor alone (/mafia status, no game)" in out and "p99" in out
    assert "floor in the day" in out and "x the floor's in the day" in out
    assert "expired" in out and "CPU per command" in out and "the fake's own CPU" in out
    assert out.count("gateway:") == 2 and "held by discord.py" in out
    assert "restart: 30 games restored" in out
    # the games are written as the bot leaves them: neither start finds anything to repair
    quiet = "footprint: 0 pass(es) found something to repair, 0 outbox item(s) refused by Discord"
    assert out.count(quiet) == 2, out
