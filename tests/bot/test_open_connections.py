"""The suite's guard against a test process that never exits (``tests/open_connections.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LEAVES_IT_OPEN = """
import aiosqlite

KEPT = []  # something long-lived holds it, as a bot or a service left running does


async def test_leaves_a_connection_open(tmp_path):
    connection = await aiosqlite.connect(tmp_path / "x.sqlite3")
    await connection.execute("SELECT 1")
    KEPT.append(connection)

async def test_closes_its_connection(tmp_path):
    async with aiosqlite.connect(tmp_path / "y.sqlite3") as connection:
        await connection.execute("SELECT 1")
"""


def run_pytest(folder: Path, *plugins: str) -> subprocess.CompletedProcess[str]:
    arguments = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
        "-o",
        "asyncio_mode=auto",
        str(folder / "test_inner.py"),
    ]
    for plugin in plugins:
        arguments[3:3] = ["-p", plugin]
    return subprocess.run(
        arguments,
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_test_that_leaves_an_aiosqlite_connection_open_fails_by_name_and_the_run_exits(
    tmp_path: Path,
):
    (tmp_path / "test_inner.py").write_text(LEAVES_IT_OPEN)
    done = run_pytest(tmp_path, "tests.open_connections")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert (
        "test_inner.py::test_leaves_a_connection_open left 1 aiosqlite connection(s) open" in output
    )
    assert "2 passed, 1 error" in output, output  # the test passed, its teardown failed


def test_without_the_guard_such_a_run_would_hang(tmp_path: Path):
    """What the guard is for: the same run without it does not exit. Its summary is waited for
    however long a loaded machine takes to get there; then it is given 3 s to exit (a run that
    exits does so in milliseconds after its summary) and stopped."""
    (tmp_path / "test_inner.py").write_text(LEAVES_IT_OPEN)
    arguments = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
        "-o",
        "asyncio_mode=auto",
        str(tmp_path / "test_inner.py"),
    ]
    process = subprocess.Popen(
        arguments,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output = ""
    try:
        assert process.stdout is not None
        for line in process.stdout:
            output += line
            if " passed" in line or " failed" in line or " error" in line:
                break
        try:
            process.wait(3)
        except subprocess.TimeoutExpired:
            hung = True
        else:
            hung = False
    finally:
        process.kill()
        output += process.communicate()[0]
    assert hung, output
    assert "2 passed" in output, output
