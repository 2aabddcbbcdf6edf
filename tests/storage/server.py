"""A throwaway PostgreSQL server for the tests and benchmarks: initdb into a temporary folder,
started on a unix socket of its own, stopped (and the folder removed) at the end.

The server binaries are looked up on PATH, then where Debian's ``postgresql`` package puts them
(``/usr/lib/postgresql/<version>/bin``). As root (initdb refuses root), the server runs as the
``postgres`` user when there is one, else ``nobody``. Each test gets a schema of its own in one
database (``search_path`` in its URL), which is much quicker than a database per test.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path

DATABASE = "prokurator"


def find_binaries() -> Path | None:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``, or None."""
    candidates = []
    found = shutil.which("initdb")
    if found:
        candidates.append(Path(found).resolve().parent)
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        candidates.append(Path(folder))
    for folder in candidates:
        if all((folder / name).exists() for name in ("initdb", "pg_ctl", "postgres")):
            return folder
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_to_completion(coroutine: Callable[[], Coroutine[object, object, object]]) -> None:
    """Run ``coroutine()`` to its end from code that cannot await: here, or on a thread with a
    loop of its own when this thread already runs one (a fixture or a polled condition)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(coroutine())
        return
    failure: list[BaseException] = []

    def work() -> None:
        try:
            asyncio.run(coroutine())
        except BaseException as error:
            failure.append(error)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


class PostgresServer:
    """One running server; :meth:`url` of a fresh schema for each user of it."""

    def __init__(self, binaries: Path, *, durable: bool = False) -> None:
        self.binaries = binaries
        self.folder = Path(tempfile.mkdtemp(prefix="pg-"))
        self.data = self.folder / "data"
        self.socket_dir = self.folder
        self.port = _free_port()
        self.durable = durable
        self._user: pwd.struct_passwd | None = None
        if os.geteuid() == 0:
            for name in ("postgres", "nobody"):
                with contextlib.suppress(KeyError):
                    self._user = pwd.getpwnam(name)
                    break
        self._schemas = itertools.count(1)

    def _run(self, *command: str) -> None:
        def drop_root() -> None:
            if self._user is not None:
                os.setgid(self._user.pw_gid)
                os.setuid(self._user.pw_uid)

        subprocess.run(command, check=True, capture_output=True, preexec_fn=drop_root, timeout=120)

    def start(self) -> None:
        """initdb and start (raises CalledProcessError with the server's words if it cannot)."""
        if self._user is not None:
            os.chown(self.folder, self._user.pw_uid, self._user.pw_gid)
        self._run(
            str(self.binaries / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "--encoding=UTF8",
            "--no-locale",
            "--no-sync",
        )
        self.resume()
        self._psql_free_create()

    def resume(self) -> None:
        """Start the initialised server (again, after :meth:`crash`: it recovers from its WAL)."""
        settings = [
            f"-p {self.port}",
            f"-k {self.socket_dir}",
            "-c listen_addresses=''",
            "-c max_connections=200",
        ]
        if not self.durable:  # the tests: speed over surviving a power loss
            settings += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        self._run(
            str(self.binaries / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.folder / "log"),
            "-w",
            "-t",
            "60",
            "-o",
            " ".join(settings),
            "start",
        )

    def crash(self) -> None:
        """Stop the server at once (``-m immediate``: every process quits without a shutdown
        checkpoint, connections cut mid-statement), keeping its files; :meth:`resume` recovers."""
        self._run(
            str(self.binaries / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"
        )

    def _psql_free_create(self) -> None:
        """CREATE DATABASE through asyncpg (psql may be absent where the server is)."""
        import asyncio

        import asyncpg

        async def create() -> None:
            connection = await asyncpg.connect(
                host=str(self.socket_dir), port=self.port, user="postgres", database="postgres"
            )
            try:
                await connection.execute(f"CREATE DATABASE {DATABASE}")
            finally:
                await connection.close()

        asyncio.run(create())

    def base_url(self, database: str = DATABASE) -> str:
        """The URL of a database on this server (its public schema)."""
        return f"postgresql://postgres@/{database}?host={self.socket_dir}&port={self.port}"

    def new_url(self) -> str:
        """The URL of a new, empty schema (``search_path`` set for every connection to it)."""
        import asyncpg

        schema = f"t{os.getpid()}_{next(self._schemas)}"

        async def create() -> None:
            connection = await asyncpg.connect(self.base_url())
            try:
                await connection.execute(f"CREATE SCHEMA {schema}")
            finally:
                await connection.close()

        run_to_completion(create)
        return f"{self.base_url()}&search_path={schema}"

    def stop(self) -> None:
        """Stop the server (fast: connections are cut) and remove its folder."""
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            self._run(
                str(self.binaries / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"
            )
        shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.contextmanager
def running_server(*, durable: bool = False) -> Iterator[PostgresServer]:
    """A started server, stopped at the end.

    Raises:
        RuntimeError: no server binaries here.
    """
    binaries = find_binaries()
    if binaries is None:
        raise RuntimeError(
            "no PostgreSQL server binaries (initdb, pg_ctl, postgres) on PATH "
            "or in /usr/lib/postgresql/*/bin"
        )
    server = PostgresServer(binaries, durable=durable)
    try:
        server.start()
        yield server
    finally:
        server.stop()
