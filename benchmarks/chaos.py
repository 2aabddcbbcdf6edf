"""The chaos test, longer: games in several guilds while the bot is SIGKILLed ``--kills`` times.

The same harness as ``tests/chaos/test_chaos.py`` (:mod:`tests.chaos.harness`):
the fake Discord in this process with ``--guilds`` guilds, the bot as its own
process (``python -m bot run``), random legal commands from every guild's host
and players, a SIGKILL every few seconds followed by a restart, and 429s, 5xx,
slow answers, gateway drops and forgotten nonces injected by the fake. Once it
has been killed ``--kills`` times, the bot settles and stops, and the run
prints its figures: kills, faults, commands sent and acknowledged, games,
intents carried out, and what was lost, doubled, orphaned or diverged (each
finding listed). Exit status 1 if anything was.

``--postgres``: the bot's database is a PostgreSQL server this run starts (durable: a commit is
acknowledged once flushed), and ``--pg-crashes N`` stops it at once (``pg_ctl stop -m
immediate``) N times during the run, each time for up to 3 s, then starts it again; the bot
is SIGKILLed ``--kills`` times besides (never while the server is down).

Run: ``python benchmarks/chaos.py --kills 100`` (about ten minutes);
``python benchmarks/chaos.py --postgres --pg-crashes 10 --kills 5``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.chaos.harness import Chaos  # noqa: E402
from tests.harness import SUITE_REST_PER_SECOND  # noqa: E402
from tests.storage.server import PostgresServer, running_server  # noqa: E402


async def main_async(
    kills: int,
    guilds: int,
    players: int,
    seed: int,
    keep: Path | None,
    rest_per_second: int,
    server: PostgresServer | None = None,
    pg_crashes: int = 0,
) -> int:
    postgres = server is not None
    with tempfile.TemporaryDirectory() as folder:
        where = keep or Path(folder)
        where.mkdir(parents=True, exist_ok=True)
        chaos = Chaos(
            where,
            seed,
            guilds=guilds,
            players=players,
            say=print,
            rest_per_second=rest_per_second,
            postgres=server,
        )
        print(
            f"chaos: seed {seed}, {guilds} guilds of {players} players, {kills} kills, "
            + (f"PostgreSQL crashed {pg_crashes} times, " if postgres else "")
            + f"REST at {rest_per_second} a second"
        )
        figures = await chaos.run(kills=kills, pg_crashes=pg_crashes)
    print(
        f"kills {figures.kills}, PostgreSQL crashes {figures.pg_crashes}, faults injected {figures.faults}"
    )
    print(f"commands sent {figures.sent}, acknowledged {figures.acknowledged}")
    print(f"games {figures.games} ({figures.finished} played to the end)")
    print(f"intents carried out {figures.intents}")
    print(
        "host acts answered: "
        + (", ".join(f"{what} {n}" for what, n in sorted(figures.answered.items())) or "none")
    )
    print(
        f"lost {len(figures.lost)}, doubled {len(figures.doubled)}, orphaned {len(figures.orphaned)}, "
        f"diverged {len(figures.diverged)}"
    )
    print(f"elapsed {figures.elapsed:.0f} s")
    for problem in figures.problems:
        print("  " + problem)
    return 1 if figures.problems else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--guilds", type=int, default=3)
    parser.add_argument("--players", type=int, default=8)
    parser.add_argument("--seed", type=int, default=None, help="default: a random one (printed)")
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="a folder to keep the bot's database and log in (default: a temporary one)",
    )
    parser.add_argument(
        "--rest-per-second",
        type=int,
        default=SUITE_REST_PER_SECOND,
        help="the bot's and the fake's global REST limit (Discord's: 50; default: the "
        "suite's raised one)",
    )
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="keep the games in a PostgreSQL server of the run's own (initdb on PATH)",
    )
    parser.add_argument(
        "--pg-crashes",
        type=int,
        default=0,
        help="with --postgres: stop the server at once this many times during the run",
    )
    args = parser.parse_args()
    if args.pg_crashes and not args.postgres:
        parser.error("--pg-crashes needs --postgres")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    # the server is started before the loop runs (its setup runs a loop of its own)
    with running_server(durable=True) if args.postgres else contextlib.nullcontext() as server:
        code = asyncio.run(
            main_async(
                args.kills,
                args.guilds,
                args.players,
                seed,
                args.keep,
                args.rest_per_second,
                server,
                args.pg_crashes,
            )
        )
    sys.exit(code)


if __name__ == "__main__":
    main()
