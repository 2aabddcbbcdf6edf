"""One process owns its database (issue 29): a second ``mafia-bot run`` on it exits with status 2
and one line naming the holder (host, pid, since when), before it touches the database; the
startup line says which database it is and what it holds; an empty file where the database
should be, and a database written by a newer version, are refused in one line."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bot.config import shown_database
from bot.storage import Storage, StorageError, is_postgres
from bot.storage import owner as ownership
from bot.storage.migrations import migration_files
from bot.storage.owner import FileOwnership, Held, Holder, ServerOwnership
from tests.storage.plugin import raw

ROOT = Path(__file__).resolve().parents[2]
#: nothing listens there: a run that gets past the database fails to reach Discord (status 1)
NOWHERE = "http://127.0.0.1:9/api/v10"


def run_bot(folder: Path, database: Path | str, *extra: str) -> subprocess.CompletedProcess[str]:
    """``python -m bot run`` on ``database`` with a token and a Discord that is not there."""
    config = folder / "run.yaml"
    config.write_text(f"database: {json.dumps(str(database))}\nlog_level: INFO\n")
    env = {
        **os.environ,
        "DISCORD_TOKEN": "not-a-token",
        "DISCORD_API_BASE": NOWHERE,
        "DISCORD_GATEWAY_URL": "ws://127.0.0.1:9",
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.run(
        [sys.executable, "-m", "bot", "run", "--config", str(config), *extra],
        env=env,
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def tables(database: Path | str) -> set[str]:
    if is_postgres(database):
        rows = await raw(
            database,
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema()",
        )
    else:
        if not Path(database).exists():
            return set()
        rows = await raw(database, "SELECT name FROM sqlite_master WHERE type = 'table'")
    return {row[0] for row in rows}


async def test_a_second_run_exits_2_naming_the_holder_before_it_touches_the_database(
    database, tmp_path
):
    holder = Holder("the-first-host", 4242, 1_800_000_000.0)
    if is_postgres(database):
        owned: object = await ServerOwnership.take(database, shown_database(database), None)
    else:
        owned = FileOwnership.take(Path(database), holder=holder)
    try:
        result = await asyncio.to_thread(run_bot, tmp_path, database)
    finally:
        await owned.release()  # type: ignore[attr-defined]
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("mafia-bot run: ") and "in use by another bot process" in lines[0]
    if is_postgres(database):  # named from the server's view of the holding connection
        assert f"pid {os.getpid()} on {socket.gethostname()} since 20" in lines[0]
    else:
        assert str(Path(database).absolute()) in lines[0]
        assert "pid 4242 on the-first-host since 2027-01-15 08:00:00 UTC" in lines[0]
    assert await tables(database) == set()  # it stopped before opening the database


async def test_the_lock_is_held_until_released_and_names_this_process(database):
    first = await ownership.take(database, shown_database(database), None, None)
    assert first is not None
    try:
        with pytest.raises(Held, match=rf"pid {os.getpid()} on {socket.gethostname()}"):
            await ownership.take(database, shown_database(database), None, None)
        if not is_postgres(database):
            note = json.loads(ownership.lock_path(Path(database)).read_text())
            assert (note["pid"], note["host"]) == (os.getpid(), socket.gethostname())
    finally:
        await first.release()
    again = await ownership.take(database, shown_database(database), None, None)
    assert again is not None and again.held
    await again.release()


async def test_a_killed_holder_lets_the_database_go(database, tmp_path):
    """The OS (SQLite) or the server (PostgreSQL) lets the lock go when its process dies."""
    script = (
        "import asyncio, sys\n"
        "from bot.storage import owner\n"
        "async def main():\n"
        "    await owner.take(sys.argv[1], 'db', None, None)\n"
        "    print('held', flush=True)\n"
        "    await asyncio.sleep(600)\n"
        "asyncio.run(main())\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script, str(database)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert process.stdout is not None
        assert await asyncio.to_thread(process.stdout.readline) == "held\n"
        with pytest.raises(Held, match=f"pid {process.pid}"):
            await ownership.take(database, "db", None, None)
    finally:
        process.kill()
        process.wait(30)
    for _ in range(200):  # the server sees the connection end a moment after the kill
        try:
            owned = await ownership.take(database, "db", None, None)
        except Held:
            await asyncio.sleep(0.05)
            continue
        assert owned is not None
        await owned.release()
        return
    raise AssertionError("the lock of a killed process was never let go")


async def test_postgresql_processes_on_other_shards_share_the_database_and_not_a_shard(
    postgres_url, postgres_server
):
    shown = shown_database(postgres_url)
    zero = await ownership.take(postgres_url, shown, [0], 2)
    one = await ownership.take(postgres_url, shown, [1], 2)
    assert zero is not None and one is not None
    try:
        with pytest.raises(Held, match=r"\(shard 1\) is in use by another bot process"):
            await ownership.take(postgres_url, shown, [1], 2)
        with pytest.raises(Held, match="is in use by another bot process"):
            await ownership.take(postgres_url, shown, None, None)  # every shard: refused
        # another schema of the same server database is another bot's: no conflict
        other = await ownership.take(postgres_server.new_url(), shown, None, None)
        assert other is not None
        await other.release()
    finally:
        await zero.release()
        await one.release()
    whole = await ownership.take(postgres_url, shown, [0, 1], 2)  # both shards: the whole
    assert whole is not None
    try:
        with pytest.raises(Held):
            await ownership.take(postgres_url, shown, [0], 2)
    finally:
        await whole.release()


async def test_an_empty_file_is_refused_unless_accepted(tmp_path):
    database = tmp_path / "prokurator.sqlite3"
    database.write_bytes(b"")
    refused = await asyncio.to_thread(run_bot, tmp_path, database)
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        f"mafia-bot run: {database} is an empty file, not the bot's database (a restore gone "
        "wrong, or started from another working directory?): put the database back, or start a "
        "new one in it with --accept-empty-database"
    ]
    assert database.read_bytes() == b""
    accepted = await asyncio.to_thread(run_bot, tmp_path, database, "--accept-empty-database")
    assert accepted.returncode == 1  # on to Discord, which is not there
    assert f"database {database}: a new database, created now" in accepted.stderr


async def test_the_startup_line_names_the_database_and_counts_its_games(database, tmp_path):
    shown = shown_database(database)
    storage = await Storage.open(database)
    try:
        line = await ownership.startup_line(database, shown, storage)
        assert line.startswith(f"database {ownership.named(database, shown)}: a new database")
        await storage.create_game(1, 2, {"players": []}, now=1.0)
        await storage.create_game(3, 4, {"players": []}, now=1.0)
    finally:
        await storage.close()
    storage = await Storage.open(database)
    try:
        line = await ownership.startup_line(database, shown, storage)
    finally:
        await storage.close()
    version = max(version for version, _, _ in migration_files())
    where = str(Path(database).absolute()) if not is_postgres(database) else "PostgreSQL "
    assert line.startswith(f"database {where}")
    assert line.endswith(f": 2 game(s), 2 of them open (schema version {version})")
    if not is_postgres(database):  # and the bot says it when it starts
        result = await asyncio.to_thread(run_bot, tmp_path, database)
        assert f"INFO    bot: database {where}: 2 game(s), 2 of them open" in result.stderr


async def test_a_database_of_a_newer_version_is_refused_before_anything_is_written(
    database, tmp_path
):
    storage = await Storage.open(database)
    await storage.close()
    newer = max(version for version, _, _ in migration_files()) + 7
    await raw(
        database,
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
        (newer, f"V{newer}__future.sql", 1.0),
    )
    before = await raw(database, "SELECT version FROM schema_migrations ORDER BY version")
    image = None if is_postgres(database) else Path(database).read_bytes()
    with pytest.raises(StorageError, match=f"schema is version {newer}, newer than"):
        await Storage.open(database)
    assert await raw(database, "SELECT version FROM schema_migrations ORDER BY version") == before
    if image is not None:
        assert Path(database).read_bytes() == image
        result = await asyncio.to_thread(run_bot, tmp_path, database)
        assert result.returncode == 2
        assert len(result.stderr.splitlines()) == 1
        assert f"schema is version {newer}, newer than this version" in result.stderr


async def test_a_second_run_beside_a_running_bot_exits_2_and_the_first_serves_on(
    database, tmp_path
):
    """Two real ``mafia-bot run`` on one database (the same shard): the second stops with one line
    naming the first's pid; the first, untouched, goes on answering."""
    from tests.fakediscord import FakeDiscord
    from tests.storage.test_processes import ShardProcess, lobby_of, open_game
    from tests.storage.test_shards import guilds_on_every_shard, shard_of

    fake = FakeDiscord()
    worlds = await guilds_on_every_shard(fake, 2)
    world = next(w for w in worlds if shard_of(w.guild.id, 2) == 0)
    await fake.start()
    first = ShardProcess(fake, tmp_path, str(database), 0)
    try:
        await first.start()
        assert first.process is not None
        second = await asyncio.to_thread(
            run_bot, tmp_path, database, "--shards", "0", "--shard-count", "2"
        )
        assert second.returncode == 2, second.stderr
        (line,) = second.stderr.splitlines()
        assert f"is in use by another bot process (pid {first.process.pid} on " in line
        assert first.process.poll() is None
        game = await open_game(fake, world, database)
        await lobby_of(fake, world, game)  # the first one still serves
    finally:
        first.stop()
        await fake.close()
