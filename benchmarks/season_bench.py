"""A season's transcripts: how fast a game's history becomes its transcript files.

Builds ``--messages`` (default 100,000) channel messages as Discord's REST API
gives them (a Russian line each, some with an attachment), turns them into the
transcript's lines (:func:`cogs.season.message_lines`) and splits those into
files under Discord's 10 MiB upload (:func:`cogs.season.split_parts`), the
median of 5 runs. Reading the history itself is Discord's: 100 messages a page,
one REST call each, paced by the bot's global limit (``--messages / 100`` calls).

Run: ``python benchmarks/season_bench.py [--messages N]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cogs.season import PART_BYTES, message_lines, split_parts  # noqa: E402


def history(count: int) -> list[dict[str, object]]:
    """``count`` messages of a busy city channel."""
    messages: list[dict[str, object]] = []
    for index in range(count):
        message: dict[str, object] = {
            "id": str(10**17 + index),
            "timestamp": f"2026-12-02T10:{index // 3600 % 60:02d}:{index % 60:02d}.000000+00:00",
            "author": {
                "id": str(index % 30),
                "username": f"player{index % 30}",
                "global_name": f"Игрок {index % 30}",
            },
            "content": f"Я голосую против Игрока {index % 29}: вчера он молчал, а ночью убили двоих. №{index}",
            "attachments": [],
            "embeds": [],
        }
        if index % 500 == 0:
            message["attachments"] = [
                {"filename": "last-word.ogg", "url": f"https://cdn.example/{index}.ogg"}
            ]
        messages.append(message)
    return messages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    args = parser.parse_args()
    messages = history(args.messages)
    times = []
    parts: list[bytes] = []
    for _ in range(5):
        started = time.perf_counter()
        lines = [
            line for message in messages for line in message_lines(message, "ru", readable=True)
        ]
        parts = split_parts(lines, PART_BYTES)
        times.append(time.perf_counter() - started)
    size = sum(len(part) for part in parts)
    print(
        f"{args.messages:,} messages -> {size / 2**20:.1f} MiB of transcript in {len(parts)} file(s) "
        f"(each <= {PART_BYTES / 2**20:.2f} MiB): median {statistics.median(times) * 1000:.0f} ms "
        f"({statistics.median(times) / args.messages * 1e6:.1f} us a message); "
        f"reading it takes {-(-args.messages // 100):,} history pages"
    )


if __name__ == "__main__":
    main()
