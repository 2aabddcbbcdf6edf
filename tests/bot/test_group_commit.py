"""Group commit: commands that arrive together are committed in one transaction, each answered
only after the commit that holds it; a group that fails is tried again one write at a time.

Another connection holds the database's write lock (as another process would) so that commits
wait, and the group writer's COMMIT is counted (or made to fail): the only places the test
reaches inside storage; everything else is observed through the service, the
storage's reads and plain sqlite3 on the file.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.config import Config
from bot.service import Applied, GameService, LiveGame, NotStored
from bot.storage import OutboxItem, Storage
from rules import Nominate, deal
from rules.events import Event

CITIES = {"A": [f"a{i}" for i in range(6)], "B": [f"b{i}" for i in range(6)]}


def announce(live: LiveGame, events: list[Event]) -> list[OutboxItem]:
    return [OutboxItem("send", {"channel_id": live.id}, {"content": e.kind}) for e in events]


async def open_service(path: Path, synchronous: str = "FULL") -> GameService:
    storage = await Storage.open(path, synchronous=synchronous)
    service = GameService(storage, Config(database=path), clock=lambda: 1000.0)  # type: ignore[arg-type]
    service.render = announce
    return service


async def games(service: GameService, count: int) -> list[LiveGame]:
    made = []
    for guild in range(1, count + 1):
        live = await service.create(guild, 99, {"players": []})
        await service.start(live.id, deal(CITIES, 5), 5)
        made.append(live)
    return made


class CommitGate:
    """Another process holds the database's write lock until the gate opens, so the storage's
    commits wait (the first on its thread, the rest queued behind it); counts the COMMITs of
    the storage's group writer, and makes them fail while ``fail`` is set."""

    def __init__(self, storage: Storage, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.other.execute("BEGIN IMMEDIATE")  # the other process's write lock
        self.begun = 0
        self.waits = 0
        self.fail: Exception | None = None
        group = storage._group
        assert group is not None
        real_commit: Callable[[], None] = group.commit
        real_submit = group.submit

        def commit() -> None:
            self.begun += 1
            if self.fail is not None:
                raise self.fail
            real_commit()

        def submit(*args: Any) -> None:
            self.waits += 1
            real_submit(*args)

        monkeypatch.setattr(group, "commit", commit)
        monkeypatch.setattr(group, "submit", submit)

    async def until_waiting(self) -> None:
        """Until the storage's first write waits for the other process's lock."""
        while not self.waits:
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.05)  # the thread is in SQLite's busy wait

    def open(self) -> None:
        """The other process commits (nothing) and lets the lock go."""
        self.other.execute("COMMIT")
        self.other.close()


def logged(path: Path, game_id: int) -> list[tuple[int, str, int | None]]:
    """The game's command log as the file holds it: (seq, verb, interaction id)."""
    with sqlite3.connect(path) as db:
        return [
            (seq, command.split('"verb":"')[1].split('"')[0], interaction)
            for seq, command, interaction in db.execute(
                "SELECT seq, command, interaction_id FROM commands WHERE game_id = ? ORDER BY seq",
                (game_id,),
            )
        ]


def stored_outbox(path: Path, game_id: int) -> list[tuple[int | None, str]]:
    with sqlite3.connect(path) as db:
        return [
            (seq, payload)
            for seq, payload in db.execute(
                "SELECT seq, payload FROM outbox WHERE game_id = ? AND seq IS NOT NULL ORDER BY id",
                (game_id,),
            )
        ]


async def test_commands_arriving_during_a_commit_share_the_next_and_return_only_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "db.sqlite3"
    service = await open_service(path)
    first, second, third = await games(service, 3)
    storage = service.storage
    groups = storage.group_commits
    gate = CommitGate(storage, path, monkeypatch)

    alone = asyncio.create_task(
        service.apply(first.id, Nominate("a0", "a1"), source="player", interaction_id=101)
    )
    await gate.until_waiting()  # the first command's commit is under way
    together = [
        asyncio.create_task(
            service.apply(
                live.id, Nominate("a2", "a3"), source="player", interaction_id=interaction
            )
        )
        for live, interaction in ((second, 102), (third, 103))
    ]
    await asyncio.sleep(0.05)
    assert not any(task.done() for task in [alone, *together]), "answered before the commit"
    # what is not committed is not there, for the storage's reads as for another process
    assert await storage.commands(second.id) == [] and logged(path, second.id) == []

    gate.open()
    applied: list[Applied] = await asyncio.gather(alone, *together)
    assert [[e.kind for e in a.events] for a in applied] == [["nominated"]] * 3
    assert gate.begun == 2, "the two commands that came during the first commit share the next"
    assert storage.group_commits == groups + 2
    assert logged(path, first.id) == [(1, "nominate", 101)]
    assert logged(path, second.id) == [(1, "nominate", 102)]
    assert logged(path, third.id) == [(1, "nominate", 103)]
    for live in (first, second, third):  # each command's announcement is stored with it
        assert [seq for seq, _ in stored_outbox(path, live.id)] == [1]
    await storage.close()


async def test_a_group_whose_commit_fails_answers_none_and_stores_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "db.sqlite3"
    service = await open_service(path)
    first, second, third = await games(service, 3)
    storage = service.storage
    before = {live.id: live.game.to_dict() for live in (second, third) if live.game}
    gate = CommitGate(storage, path, monkeypatch)

    blocker = asyncio.create_task(service.apply(first.id, Nominate("a0", "a1"), source="player"))
    await gate.until_waiting()
    together = [
        asyncio.create_task(
            service.apply(
                live.id, Nominate("a2", "a3"), source="player", interaction_id=200 + live.id
            )
        )
        for live in (second, third)
    ]
    await asyncio.sleep(0.05)
    gate.fail = sqlite3.OperationalError("disk I/O error")  # the disk fails under the group
    gate.open()
    outcomes = await asyncio.gather(blocker, *together, return_exceptions=True)
    # each is refused as not stored, the disk's error its cause
    assert all(
        isinstance(outcome, NotStored) and isinstance(outcome.__cause__, sqlite3.OperationalError)
        for outcome in outcomes
    ), outcomes
    for live in (second, third):
        assert logged(path, live.id) == [] and stored_outbox(path, live.id) == []
        assert live.game is not None and live.game.to_dict() == before[live.id]

    gate.fail = None  # the disk is back: the same commands are taken as new
    applied = await service.apply(
        second.id, Nominate("a2", "a3"), source="player", interaction_id=202
    )
    assert [e.kind for e in applied.events] == ["nominated"]
    assert logged(path, second.id) == [(1, "nominate", 202)]
    await storage.close()


async def test_a_repeated_interaction_in_a_group_is_refused_alone_and_the_others_stand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "db.sqlite3"
    service = await open_service(path)
    first, second, third = await games(service, 3)
    await service.apply(second.id, Nominate("a0", "a1"), source="player", interaction_id=777)
    await service.storage.close()

    # a new process: Discord delivers interaction 777 again, in a group with another command
    service = await open_service(path)
    await service.restore()
    storage = service.storage
    gate = CommitGate(storage, path, monkeypatch)
    blocker = asyncio.create_task(service.apply(first.id, Nominate("a0", "a1"), source="player"))
    await gate.until_waiting()
    repeated = asyncio.create_task(
        service.apply(second.id, Nominate("a2", "a3"), source="player", interaction_id=777)
    )
    other = asyncio.create_task(
        service.apply(third.id, Nominate("a2", "a3"), source="player", interaction_id=778)
    )
    await asyncio.sleep(0.05)
    gate.open()
    await blocker
    assert (await repeated).duplicate
    assert [e.kind for e in (await other).events] == ["nominated"]
    assert logged(path, second.id) == [(1, "nominate", 777)]
    assert logged(path, third.id) == [(1, "nominate", 778)]
    live = service.live(second.id)
    assert live.game is not None and live.record.command_count == 1
    await storage.close()


async def test_outbox_marks_are_committed_before_they_return(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "db.sqlite3"
    service = await open_service(path)
    (live,) = await games(service, 1)
    storage = service.storage
    items = await storage.pending_outbox(live.id)
    gate = CommitGate(storage, path, monkeypatch)
    marks = [
        asyncio.create_task(storage.outbox_sent(item, 9000 + n)) for n, item in enumerate(items[:2])
    ]
    await gate.until_waiting()
    await asyncio.sleep(0.05)
    assert not any(mark.done() for mark in marks)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM outbox WHERE state = 'sent'").fetchone()[0] == 0
    gate.open()
    await asyncio.gather(*marks)
    with sqlite3.connect(path) as db:
        sent = db.execute(
            "SELECT id, message_id FROM outbox WHERE state = 'sent' ORDER BY id"
        ).fetchall()
    assert sent == [(items[0].id, 9000), (items[1].id, 9001)]
    await storage.close()


async def test_with_nothing_else_writing_a_command_is_committed_before_the_loop_turns(
    tmp_path: Path,
) -> None:
    """With ``synchronous=NORMAL`` (no fsync at COMMIT) the commit runs on the loop's thread (no
    trip to a thread and back): by the time any other task runs again, the command is in the
    file and its caller has its answer."""
    path = tmp_path / "db.sqlite3"
    service = await open_service(path, "NORMAL")
    (live,) = await games(service, 1)
    turned: list[bool] = []

    async def other_task() -> None:
        turned.append(True)

    other = asyncio.create_task(other_task())  # runs at the loop's next turn
    applied = await service.apply(
        live.id, Nominate("a0", "a1"), source="player", interaction_id=901
    )
    assert turned == [], "the loop turned before the command was committed"
    assert [e.kind for e in applied.events] == ["nominated"]
    assert logged(path, live.id) == [(1, "nominate", 901)]
    await other
    await service.storage.close()


async def test_a_durable_commit_waits_for_its_fsync_off_the_loop_and_answers_once_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``synchronous=FULL`` COMMIT waits for the disk: it runs on the group writer's thread,
    so the loop goes on meanwhile (here a COMMIT held 0.2 s on that thread lets another task run
    many times), and the caller is answered only once the command is in the file."""
    path = tmp_path / "db.sqlite3"
    service = await open_service(path)
    (live,) = await games(service, 1)
    group = service.storage._group
    assert group is not None and not group.inline
    real_commit, on_loop = group.commit, []
    loop_thread = threading.get_ident()

    def slow_commit() -> None:  # a slow disk's fsync
        on_loop.append(threading.get_ident() == loop_thread)
        time.sleep(0.2)
        real_commit()

    monkeypatch.setattr(group, "commit", slow_commit)
    turns = 0
    done = asyncio.Event()

    async def other_task() -> None:
        nonlocal turns
        while not done.is_set():
            turns += 1
            await asyncio.sleep(0)

    other = asyncio.create_task(other_task())
    applied = await service.apply(
        live.id, Nominate("a0", "a1"), source="player", interaction_id=902
    )
    done.set()
    await other
    assert on_loop == [False] and turns > 10, (on_loop, turns)
    assert [e.kind for e in applied.events] == ["nominated"]
    assert logged(path, live.id) == [(1, "nominate", 902)]
    await service.storage.close()


def test_a_write_committed_alone_before_another_process_took_the_lock_is_not_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The group fails, its writes are tried one by one, and another process takes the write
    lock between two of them: the one committed is done, the rest is left to try again."""
    from bot.storage import Busy, GroupWriter

    path = tmp_path / "db.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
    writer = GroupWriter(str(path))
    writer.open()
    other: list[sqlite3.Connection] = []
    real = writer._transaction
    tries: list[int] = []

    def transaction(statements: Any) -> None:
        tries.append(len(statements[0][1]))
        if len(tries) == 1:  # the whole group: a row of it is refused
            raise sqlite3.IntegrityError("refused")
        if len(tries) == 3:  # between the first and the second alone, another process writes
            other.append(sqlite3.connect(path, isolation_level=None))
            other[0].execute("BEGIN IMMEDIATE")
        real(statements)

    monkeypatch.setattr(writer, "_transaction", transaction)
    insert = "INSERT INTO t (x) VALUES (?)"
    outcomes, commits = writer.write([[(insert, [(1,)])], [(insert, [(2,)])], [(insert, [(3,)])]])
    assert outcomes[0] is None and commits == 1
    assert isinstance(outcomes[1], Busy) and isinstance(outcomes[2], Busy)
    other[0].execute("ROLLBACK")
    other[0].close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT x FROM t").fetchall() == [(1,)]
    writer.close()
