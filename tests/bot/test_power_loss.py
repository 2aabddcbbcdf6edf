"""A power cut loses nothing acknowledged: with ``synchronous=FULL`` every command a player was
told about is in the log after the files are put back to their last durable state.

The last durable state is kept as the process runs (:file:`durable_copies.c`, loaded with
LD_PRELOAD: each fsync or fdatasync of the database or its WAL copies that file as it is then).
A process plays a game and says each change it acknowledged (:mod:`tests.bot.acknowledging`),
is SIGKILLed right after its last one, and the database and its WAL are replaced by those
copies (the ``-shm`` index goes: SQLite rebuilds it from the WAL). The old setting,
``synchronous=NORMAL``, is run the same way as the control: it loses what it acknowledged since
its last checkpoint (here: the deal itself), which shows the emulation sees what a power cut
would take. PostgreSQL is not run here: it acknowledges a commit only once its WAL is flushed
(``synchronous_commit`` on, the server's default).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bot.config import Config
from bot.service import GameService
from bot.storage import Storage

ROOT = Path(__file__).resolve().parents[2]
SHIM = Path(__file__).with_name("durable_copies.c")


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build the durable-copies shim")
    built = tmp_path_factory.mktemp("shim") / "durable_copies.so"
    subprocess.run(
        [compiler, "-shared", "-fPIC", "-O2", "-o", str(built), str(SHIM), "-ldl", "-lpthread"],
        check=True,
        capture_output=True,
    )
    return built


def play_and_cut_the_power(
    shim: Path, folder: Path, synchronous: str, count: int, *extra: str
) -> tuple[Path, list[dict]]:
    """Run the acknowledging process to its last command, kill it, put the files back to their
    last durable state; the database's path and what was acknowledged."""
    database, copies = folder / "db.sqlite3", folder / "durable"
    copies.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "LD_PRELOAD": str(shim),
        "DURABLE_WATCH": str(database),
        "DURABLE_COPIES": str(copies),
    }
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.bot.acknowledging",
            str(database),
            synchronous,
            str(count),
            *extra,
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
    )
    acknowledged = []
    try:
        assert child.stdout is not None
        for line in child.stdout:  # each line is written once its change is committed
            said = json.loads(line)
            if said.get("done"):
                break
            acknowledged.append(said)
    finally:
        child.send_signal(signal.SIGKILL)  # the power goes: nothing more reaches the disk
        child.wait(30)
    assert child.returncode == -signal.SIGKILL and acknowledged, "the process stopped by itself"
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{database}{suffix}").unlink(missing_ok=True)
    for suffix in ("", "-wal"):
        if (copies / f"db{suffix}").exists():
            shutil.copyfile(copies / f"db{suffix}", f"{database}{suffix}")
    return database, acknowledged


async def what_survived(database: Path) -> tuple[list[int], dict | None, str | None]:
    """The interactions the log and the game's record hold, the restored game's state, its state."""
    if not database.exists():
        return [], None, None
    storage = await Storage.open(database)
    try:
        record = await storage.game(1)
        if record is None:
            return [], None, None
        logged = [row.interaction_id for row in await storage.commands(1)]
        restored = await GameService(storage, Config(database=database)).restore()
        game = restored[0].game if restored else None
        return logged, game.to_dict() if game is not None else None, record.state
    finally:
        await storage.close()


async def test_with_synchronous_full_no_acknowledged_command_is_lost(shim: Path, tmp_path: Path):
    """Long enough for background checkpoints to run in between (every second)."""
    database, acknowledged = play_and_cut_the_power(shim, tmp_path, "FULL", 300)
    logged, state, game_state = await what_survived(database)
    commands = [said["interaction"] for said in acknowledged if "seq" in said]
    assert game_state == "running"
    assert logged == commands  # every acknowledged command, in order, none more
    assert state == acknowledged[-1]["state"]


async def test_the_control_with_synchronous_normal_loses_what_it_acknowledged(
    shim: Path, tmp_path: Path
):
    database, acknowledged = play_and_cut_the_power(
        shim, tmp_path, "NORMAL", 40, "--no-checkpoints"
    )
    logged, state, game_state = await what_survived(database)
    assert len(acknowledged) == 42
    assert (
        game_state != "running" and logged == [] and state is None
    )  # the deal went with the power
