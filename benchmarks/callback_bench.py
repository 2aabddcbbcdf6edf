"""What an interaction's answer costs the bot in discord.py's parse of Discord's reply, A/B in one run.

Discord answers an interaction's callback (asked ``with_response``, as discord.py always
asks) with the message the answer created. discord.py builds an ``InteractionMessage`` of it
at once; the bot leaves it unparsed unless read (:mod:`bot.callbacks`). This takes one real
answer's reply (``/mafia status`` answered by the bot against the local fake Discord), then
builds the response object from it both ways, in alternating rounds, and prints the CPU of
each (``time.thread_time``: this thread's alone).

Run: ``python benchmarks/callback_bench.py`` (a few seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.callbacks import EAGER, LazyCallbackResponse  # noqa: E402
from tests.harness import bot_table  # noqa: E402


async def one_reply() -> tuple[dict[str, Any], Any, Any, Any]:
    """A real reply to a callback, with the interaction and state discord.py built it for."""
    kept: list[tuple[dict[str, Any], Any]] = []
    update = LazyCallbackResponse._update

    def keep(self: Any, data: Any) -> None:
        kept.append((data, self))
        update(self, data)

    LazyCallbackResponse._update = keep  # type: ignore[method-assign]
    try:
        async with bot_table(players=4) as table:
            result = await table.slash("p0", "mafia status")
            await result.wait_callback()
    finally:
        LazyCallbackResponse._update = update  # type: ignore[method-assign]
    data, response = kept[0]
    return data, response._parent, response._state, response.type


def per_answer_us(kind: Any, reply: tuple[dict[str, Any], Any, Any, Any], count: int) -> float:
    data, parent, state, response_type = reply
    began = time.thread_time()
    for _ in range(count):
        kind(data=data, parent=parent, state=state, type=response_type)
    return 1e6 * (time.thread_time() - began) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--count", type=int, default=2000, help="answers built per round and way")
    args = parser.parse_args()
    reply = asyncio.run(one_reply())
    eager, lazy = [], []
    for _ in range(args.rounds):
        eager.append(per_answer_us(EAGER, reply, args.count))
        lazy.append(per_answer_us(LazyCallbackResponse, reply, args.count))
    print(
        f"an answer's reply ({len(str(reply[0]))} characters of JSON as parsed), built "
        f"{args.rounds} x {args.count} times each way, alternating:"
    )
    print(
        f"  discord.py's own (the message parsed): median {statistics.median(eager):.1f} µs "
        f"(min {min(eager):.1f}, max {max(eager):.1f})"
    )
    print(
        f"  bot.callbacks (parsed when read): median {statistics.median(lazy):.1f} µs "
        f"(min {min(lazy):.1f}, max {max(lazy):.1f}); saved "
        f"{statistics.median(eager) - statistics.median(lazy):.1f} µs an answer"
    )


if __name__ == "__main__":
    main()
