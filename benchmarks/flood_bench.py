"""One mafioso's flood of ``/elect`` against another city's announcement.

The real bot against the local fake Discord (both in this process, as the suite runs them),
one game of two cities: a mafioso of the first sends ``--flood`` ``/elect`` at once, each
another choice than the one standing (so none is a mere repeat), then a resident of the
second city nominates. Printed: how many of the flood were stored and refused, the posts
they made, how many of those went out before the second city's nomination, and how long the
nomination's post took to reach Discord after its command was answered. ``--burst 0``
shows the bot without the per-member limit.

Run: ``python benchmarks/flood_bench.py`` (a few seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.config import Config, Fairness  # noqa: E402
from tests.harness import NO_TIMERS, bot_table  # noqa: E402


async def measure(flood: int, burst: int) -> None:
    config = Config(timers=NO_TIMERS, fairness=replace(Fairness(), burst=burst))
    # without the limit, answers come past Discord's 3 s: the fake refuses them (counted below)
    async with bot_table(players=16, config=config, refusals=True) as table:
        table.bot.outbox.edit_interval = 0.02
        live = await table.new_game(cities="Верона, Падуя", mafiosi=2, maniac=False)
        game = table.game
        flooder, other = game.living_mafiosi("Верона")
        await table.drain()
        start = len(table.fake.calls())
        sent = [
            await table.slash(
                table.name(flooder),
                "elect",
                {"player": other if i % 2 == 0 else flooder},
                wait=False,
            )
            for i in range(flood)
        ]
        for result in sent:
            await result.wait_answered(60.0)
        unanswered = sum(1 for result in sent if result.callback is None)
        nominator, nominee = [
            p for p in game.alive("Падуя") if game.status_of(p).value == "citizen"
        ][:2]
        nominated = await table.slash(table.name(nominator), "nominate", {"player": nominee})
        await nominated.wait_callback()
        answered = time.perf_counter()
        padua = f"/channels/{table.city_channel('Падуя')}/messages"
        await table.fake.wait_until(
            lambda: any(c.path == padua for c in table.fake.calls()[start:]),
            120.0,
            "no nomination post",
        )
        reached = time.perf_counter()
        await table.drain()
        stored = sum(
            1 for r in await table.bot.storage.commands(live.id) if r.command["verb"] == "elect"
        )
        posts = [
            c
            for c in table.fake.calls()[start:]
            if c.method == "POST"
            and c.route == "/channels/{channel_id}/messages"
            and c.status == 200
        ]
        before = next(i for i, c in enumerate(posts) if c.path == padua)
        print(
            f"burst {burst or 'off'}: {flood} /elect sent, {stored} stored, {flood - stored} refused; "
            f'{unanswered} never answered ("interaction failed"); {len(posts) - 1} flood posts (mafia room + log), '
            f"{before} of them before the other city's nomination, which reached Discord "
            f"{1000 * (reached - answered):.0f} ms after its answer"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flood", type=int, default=200, help="/elect sent at once (default 200)")
    parser.add_argument(
        "--burst",
        type=int,
        action="append",
        help="fairness.burst to measure (repeatable; default: 20 and 0, the limit off)",
    )
    args = parser.parse_args()
    for burst in args.burst or [Fairness().burst, 0]:
        asyncio.run(measure(args.flood, burst))


if __name__ == "__main__":
    main()
