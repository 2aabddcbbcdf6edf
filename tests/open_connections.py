"""A pytest plugin: no test may leave an aiosqlite connection open, and the run always exits.

Each aiosqlite connection runs its queries on a thread of its own that is not
a daemon; one never closed keeps the interpreter waiting for it at exit, and
the test process (CI's job) hangs after the last test. So:

* after each test (its fixtures torn down), a connection thread the test
  started that is still running fails the test at teardown, naming it; the
  thread is then stopped (its queue given aiosqlite's own stop request), so
  the rest of the run and its exit go on;
* at the end of the session, any connection thread still running (one made
  by a module or session fixture, say) is reported and stopped the same way
  and the run fails; if a thread that is not a daemon still runs after that,
  it is named and the process exits without waiting for it.

Loaded for the whole suite by ``tests/conftest.py`` (or ``-p tests.open_connections``).
"""

from __future__ import annotations

import concurrent.futures.thread
import os
import sys
import threading
from collections.abc import Iterator

import aiosqlite.core
import pytest

#: how long a closed connection's thread may take to finish after the test (it ends on its own)
GRACE = 2.0


def connection_threads() -> set[threading.Thread]:
    """The running worker threads of aiosqlite connections."""
    worker = aiosqlite.core._connection_worker_thread
    return {
        thread
        for thread in threading.enumerate()
        if getattr(thread, "_target", None) is worker and thread.is_alive()
    }


def stop(threads: set[threading.Thread]) -> None:
    """Ask each connection thread to close its connection and end, as ``Connection.stop`` does."""
    for thread in threads:
        queue = thread._args[0]  # type: ignore[attr-defined]  # the connection's request queue
        queue.put_nowait((None, _close_and_stop))
    for thread in threads:
        thread.join(GRACE)


def _close_and_stop() -> object:
    return aiosqlite.core._STOP_RUNNING_SENTINEL


def still_running(threads: set[threading.Thread]) -> set[threading.Thread]:
    """Those of ``threads`` that have not ended within the grace period."""
    for thread in threads:
        thread.join(GRACE / max(1, len(threads)))
    return {thread for thread in threads if thread.is_alive()}


@pytest.fixture(autouse=True)
def aiosqlite_connections_closed(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails the test if it leaves an aiosqlite connection open (see the module docstring)."""
    before = connection_threads()
    yield
    left = still_running(connection_threads() - before)
    if left:
        stop(left)
        pytest.fail(
            f"{request.node.nodeid} left {len(left)} aiosqlite connection(s) open "
            f"(close them: an open one keeps the test process from exiting)",
            pytrace=False,
        )


#: connections pytest-xdist's workers found still open at their end (in the controller)
_left_in_workers: list[int] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop and report connection threads still running at the end; the run then fails. In a
    pytest-xdist worker, the count goes to the controller, whose run fails."""
    left = still_running(connection_threads())
    if left:
        stop(left)
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["open_connections"] = len(left)
        return
    count = len(left) + sum(_left_in_workers)
    if count:
        sys.stderr.write(
            f"\n{count} aiosqlite connection(s) were still open at the end of the run "
            f"(a module or session fixture did not close them); they were stopped\n"
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """In pytest-xdist's controller: what a finished worker found still open."""
    _left_in_workers.append(int(getattr(node, "workeroutput", {}).get("open_connections", 0)))


def pytest_unconfigure(config: pytest.Config) -> None:
    """The last word: a thread that is not a daemon and still runs would hang the exit; name it
    and leave without waiting for it."""
    pooled = concurrent.futures.thread._worker  # an executor's workers end at exit when told to
    waiting = [
        thread
        for thread in threading.enumerate()
        if thread is not threading.main_thread()
        and not thread.daemon
        and thread.is_alive()
        and getattr(thread, "_target", None) is not pooled
    ]
    for thread in waiting:
        thread.join(GRACE)
    waiting = [thread for thread in waiting if thread.is_alive()]
    if waiting:
        names = ", ".join(thread.name for thread in waiting)
        sys.stderr.write(
            f"\nthreads still running at exit: {names}; exiting without waiting for them\n"
        )
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(int(pytest.ExitCode.TESTS_FAILED))
