"""SQLite's quick reads (:mod:`bot.storage.quick`): the reads on a command's way to its answer
are made on the loop's own thread, with no turn of the loop; when the file is locked they are
made on the reader's thread instead, which waits for the lock, and the answer is the same.

"No turn of the loop" is observed directly: the read's coroutine, sent into once, finishes
(a read on aiosqlite's thread suspends until the thread answers).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from bot.storage import OutboxItem, Storage
from bot.storage.quick import QuickReader

T = TypeVar("T")


def at_once(coroutine: Coroutine[Any, Any, T]) -> T:
    """The coroutine's result if it finishes without suspending; fails the test if it waits."""
    try:
        coroutine.send(None)
    except StopIteration as finished:
        return finished.value  # type: ignore[no-any-return]
    coroutine.close()
    raise AssertionError("the read waited for a turn of the loop")


async def opened(tmp_path: Path) -> tuple[Storage, int]:
    storage = await Storage.open(tmp_path / "db.sqlite3")
    game_id = (await storage.create_game(1, 99, {"players": []})).id
    await storage.add_outbox(
        game_id,
        [OutboxItem("send", {"channel_id": 5}, {"content": f"line {n}"}) for n in range(3)],
    )
    made = await storage.add_schedule(7, 9, 1, "next", 200.0, now=0.0, most=10)
    assert made is not None
    await storage.set_schedule(made, "scheduled", event_id=made)
    return storage, game_id


async def test_a_commands_reads_are_made_without_a_turn_of_the_loop(tmp_path: Path) -> None:
    storage, game_id = await opened(tmp_path)
    try:
        pending = at_once(storage.pending_outbox(game_id))
        assert [item.payload["content"] for item in pending] == ["line 0", "line 1", "line 2"]
        assert [item.id for item in pending] == [
            item.id for item in await storage.outbox_items(game_id)
        ]
        found = at_once(storage.next_schedule(7))
        assert found is not None and found["title"] == "next"
        assert at_once(storage.next_schedule(8)) is None
        # what another connection commits is seen by the next quick read
        with sqlite3.connect(tmp_path / "db.sqlite3") as other:
            other.execute("UPDATE outbox SET state = 'sent' WHERE id = ?", (pending[0].id,))
        assert [item.id for item in at_once(storage.pending_outbox(game_id))] == [
            item.id for item in pending[1:]
        ]
    finally:
        await storage.close()


class Failing:
    """A connection whose every read fails with one of SQLite's own errors: "database is
    locked" (SQLITE_BUSY) as a reader meets it while another process holds the file in
    exclusive mode, or a damaged file's."""

    def __init__(self, error: sqlite3.Error) -> None:
        self.error = error
        self.tries = 0

    def execute(self, *_: Any) -> Any:
        self.tries += 1
        raise self.error


def busy_error(tmp_path: Path) -> sqlite3.OperationalError:
    """A genuine SQLITE_BUSY, from a file another connection holds exclusively."""
    path = tmp_path / "locked.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    reader = sqlite3.connect(path, isolation_level=None, timeout=0)
    try:
        reader.execute("SELECT * FROM t")
    except sqlite3.OperationalError as error:
        assert error.sqlite_errorcode & 0xFF == 5
        return error
    finally:
        reader.close()
        holder.close()
    raise AssertionError("the file was not locked")


@contextlib.asynccontextmanager
async def failing_quick_reads(
    tmp_path: Path, error: sqlite3.Error
) -> AsyncIterator[tuple[Storage, int, Failing, list[int]]]:
    """The storage of :func:`opened` whose quick reads fail with ``error``: it, its game, the
    failing connection, and the game's pending items as read before."""
    storage, game_id = await opened(tmp_path)
    quick = storage._quick
    assert isinstance(quick, QuickReader)
    expected = [item.id for item in at_once(storage.pending_outbox(game_id))]
    failing = Failing(error)
    quick._connection = failing  # type: ignore[assignment]
    try:
        yield storage, game_id, failing, expected
    finally:
        quick._connection = None
        await storage.close()


async def test_a_locked_file_is_read_on_the_readers_thread_with_the_same_answer(
    tmp_path: Path,
) -> None:
    async with failing_quick_reads(tmp_path, busy_error(tmp_path)) as (
        storage,
        game_id,
        locked,
        expected,
    ):
        read = storage.pending_outbox(game_id)
        with pytest.raises(AssertionError, match="waited"):
            at_once(read)  # it went to the reader's thread
        assert [item.id for item in await storage.pending_outbox(game_id)] == expected
        found = await storage.next_schedule(7)
        assert found is not None and found["title"] == "next"
        assert locked.tries == 3
        assert not storage.health.down


def damaged_error(tmp_path: Path) -> sqlite3.DatabaseError:
    """A genuine error of a damaged file (SQLITE_NOTADB)."""
    path = tmp_path / "damaged.sqlite3"
    path.write_bytes(b"not a database, " * 512)
    reader = sqlite3.connect(path)
    try:
        reader.execute("SELECT * FROM outbox")
    except sqlite3.DatabaseError as error:
        return error
    finally:
        reader.close()
    raise AssertionError("the file was read")


async def test_a_damaged_file_fails_the_read_as_any_read_and_is_not_read_twice(
    tmp_path: Path,
) -> None:
    async with failing_quick_reads(tmp_path, damaged_error(tmp_path)) as (
        storage,
        game_id,
        damaged,
        _,
    ):
        with pytest.raises(sqlite3.DatabaseError, match="not a database"):
            await storage.pending_outbox(game_id)
        assert damaged.tries == 1
        assert storage.health.down  # what falls due now waits for the database, as on any read
