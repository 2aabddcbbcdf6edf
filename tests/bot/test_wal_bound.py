"""The WAL stays bounded while writes never stop (issue 20, item 2): SQLite's own checkpoint is
off, and the storage's checkpoint (:meth:`bot.storage.Storage.checkpoint`, which its
background task runs every second or once the WAL passes its limit) copies the WAL to its end
while commits go on, so the next commit starts it over and ``journal_size_limit`` cuts it back,
without the bot ever being idle. ``benchmarks/wal_bench.py`` measures it under the game's load;
here the checkpoints are taken by the test, each beside a commit, so the figure does not depend
on how fast the machine is."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import aiosqlite

from bot.storage import WAL_LIMIT_BYTES, Storage

#: written in all, back to back: fifteen times what the WAL may keep
WRITTEN = 15 * WAL_LIMIT_BYTES
VALUE = 64 * 1024
#: commits between two checkpoints: some 5 MiB of WAL
BETWEEN = 40


async def test_the_wal_stays_bounded_under_writes_that_never_stop(tmp_path: Path):
    database = tmp_path / "bot.db"
    storage = await Storage.open(database, synchronous="NORMAL")
    checkpoints = await aiosqlite.connect(database, isolation_level=None)
    wal = Path(f"{database}-wal")
    largest = 0
    copied_to_the_end = 0
    try:
        await checkpoints.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
        for index in range(WRITTEN // VALUE):
            value = os.urandom(VALUE // 2).hex()  # a fresh set of pages each time
            write = storage.set_meta(f"load:{index % 8}", value)
            if index % BETWEEN == BETWEEN - 1:  # a checkpoint while a commit is under way
                (frames, copied), _ = await asyncio.gather(storage.checkpoint(checkpoints), write)
                copied_to_the_end += frames == copied
            else:
                await write
            assert await storage.meta(f"load:{index % 8}") == value
            largest = max(largest, wal.stat().st_size if wal.exists() else 0)
    finally:
        await checkpoints.close()
        await storage.close()
    assert copied_to_the_end == WRITTEN // VALUE // BETWEEN
    # without the checkpoints the WAL would hold every page written: 60 MiB here
    assert largest < 2 * WAL_LIMIT_BYTES + BETWEEN * 2 * VALUE, (
        f"the WAL reached {largest / 2**20:.1f} MiB"
    )
