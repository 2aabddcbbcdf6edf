"""``mafia-bot simulate`` speed on a ~10,000-step scenario of 1,000 players.

Writes the game of ``rules_bench.py`` (10 cities of 100 players, everyone
acting every phase, seeded) as a scenario file: its cities with every
resident's status and the first ``STEPS`` accepted commands as steps. Then
runs ``python -m bot simulate FILE --json`` as a user does, several times,
and prints:

- the wall time of the whole command and of a bare ``python -c pass``;
- net steps per second: the steps over the command's time less the bare
  interpreter's (the file read, the parse, the imports and the rules);
- in-process, the same file's time split into the YAML parse and the rest.

Run: ``python benchmarks/simulate_bench.py [STEPS]``
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import fields
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from rules_bench import SEED, record_game  # noqa: E402

from bot.simulate import load_file, simulate  # noqa: E402
from rules import HostCommand, PlayerCommand  # noqa: E402
from rules.scenario import HOST  # noqa: E402

STEPS = 10_000
RUNS = 5
ROOT = Path(__file__).resolve().parent.parent


def scenario_text(steps: int) -> str:
    """The recorded game's setup and first ``steps`` commands as a scenario file."""
    game, log = record_game()
    lines: list[str] = []
    for command in log[:steps]:
        words = [str(getattr(command, f.name)) for f in fields(command) if f.name != "actor"]
        if isinstance(command, PlayerCommand):
            lines.append(" ".join([command.actor, command.verb, *words]))
        elif isinstance(command, HostCommand):
            lines.append(" ".join([HOST, command.verb, *words]))
    data = {
        "seed": SEED,
        "cities": {
            city.name: {player: status.value for player, status in city.residents}
            for city in game.setup.cities
        },
        "steps": lines,
    }
    return yaml.safe_dump(data, sort_keys=False, width=1000)


def wall(argv: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env, cwd=ROOT)
    return time.perf_counter() - start


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else STEPS
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "big.yaml"
        text = scenario_text(steps)
        path.write_text(text, encoding="utf-8")
        count = len(load_file(path)[1])
        print(
            f"scenario: 10 cities x 100 players, {count:,} steps, {len(text) / 1e6:.2f} MB of YAML; "
            f"libyaml {'available' if yaml.__with_libyaml__ else 'MISSING'}; load {os.getloadavg()[0]:.2f}"
        )
        bare = statistics.median(wall([sys.executable, "-c", "pass"]) for _ in range(RUNS))
        runs = [
            wall([sys.executable, "-m", "bot", "simulate", str(path), "--json"])
            for _ in range(RUNS)
        ]
        median = statistics.median(runs)
        print(
            f"python -m bot simulate --json: {median:.3f} s median of {RUNS} (best {min(runs):.3f} s); "
            f"bare interpreter {bare:.3f} s"
        )
        print(
            f"net: {count / (median - bare):,.0f} steps/s median (best {count / (min(runs) - bare):,.0f})"
        )
        parses, totals = [], []
        for _ in range(RUNS):
            start = time.perf_counter()
            load_file(path)
            parses.append(time.perf_counter() - start)
            start = time.perf_counter()
            simulate(path, as_json=True)
            totals.append(time.perf_counter() - start)
        parse, total = statistics.median(parses), statistics.median(totals)
        print(
            f"in process: {total * 1000:.0f} ms a run, of which reading and parsing the file "
            f"{parse * 1000:.0f} ms ({parse / total:.0%}); {count / total:,.0f} steps/s"
        )


if __name__ == "__main__":
    main()
