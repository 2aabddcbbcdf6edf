"""Records of every REST call the fake answered, and ways to find them."""

from __future__ import annotations

import fcntl
import json
import os
import re
import threading
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .spec import Violation

RECORD_ENV = "FAKEDISCORD_RECORD"
"""Environment variable: a file the fake appends one JSON line per REST call to."""
RECORD_FILES_ENV = "FAKEDISCORD_RECORD_FILES"
"""Environment variable: a directory every uploaded file is saved in (``<line>-<part name><suffix>``)."""


@dataclass
class MultipartPart:
    """One part of a ``multipart/form-data`` body."""

    name: str
    filename: str | None
    content_type: str | None
    data: bytes

    @property
    def json(self) -> Any:
        """The part parsed as JSON (for ``payload_json``)."""
        return json.loads(self.data)


@dataclass
class CallRecord:
    """One REST request and the fake's answer.

    ``path`` is relative to the API base (``/channels/1/messages``) or, for
    files served by the fake CDN, starts with ``/attachments/``; ``route`` is
    the template with placeholders (``/channels/{channel_id}/messages``).
    ``json`` is the JSON body, or the ``payload_json`` part of a multipart
    body; ``parts`` holds every multipart part with its bytes.
    """

    method: str
    path: str
    route: str
    params: dict[str, str]
    query: dict[str, str]
    headers: dict[str, str]
    json: Any
    parts: list[MultipartPart]
    time: float
    status: int = 0
    response: Any = None
    response_headers: dict[str, str] = field(default_factory=dict)
    duration: float = 0.0
    fault: str | None = None
    """Set when an injected fault shaped the answer: ``"fail 429"``, ``"hang"``, ``"delay 0.2"``."""
    notes: list[str] = field(default_factory=list)
    spec_route: str | None = None
    """The path template of the spec's operation (``/webhooks/{webhook_id}/{webhook_token}``)."""
    violations: list[Violation] = field(default_factory=list)
    """What the OpenAPI spec refused in the request (the answer was then 400 50035)."""
    response_violations: list[Violation] = field(default_factory=list)
    """Where the fake's own answer disagreed with the spec's response schema (a bug of the fake)."""

    @property
    def ok(self) -> bool:
        """Whether the answer was 2xx."""
        return 200 <= self.status < 300

    @property
    def files(self) -> list[MultipartPart]:
        """The multipart parts that carry a file."""
        return [part for part in self.parts if part.filename is not None]

    @property
    def audit_reason(self) -> str | None:
        """The ``X-Audit-Log-Reason`` header, decoded."""
        reason = self.headers.get("X-Audit-Log-Reason")
        return None if reason is None else urllib.parse.unquote(reason)

    @property
    def error_code(self) -> int | None:
        """Discord's error ``code`` of an error answer."""
        if isinstance(self.response, dict) and not self.ok:
            code = self.response.get("code")
            return int(code) if code is not None else None
        return None

    def __str__(self) -> str:
        return f"{self.method} {self.path} -> {self.status}"


class Recorder:
    """Keeps every :class:`CallRecord` in arrival order."""

    def __init__(self) -> None:
        self.records: list[CallRecord] = []

    def add(self, record: CallRecord) -> None:
        """Appends a record (done by the server when a request arrives)."""
        self.records.append(record)

    def clear(self) -> None:
        """Forgets every record so far."""
        self.records.clear()

    def find(
        self,
        method: str | None = None,
        route: str | None = None,
        *,
        path: str | None = None,
        status: int | None = None,
        since: float | None = None,
    ) -> list[CallRecord]:
        """Records matching all the given filters.

        ``route`` is compared with the template exactly
        (``"/channels/{channel_id}/messages"``); ``path`` is a regular
        expression that must match the whole concrete path; ``since`` is a
        ``time.monotonic()`` value.
        """
        pattern = re.compile(path) if path is not None else None
        found: list[CallRecord] = []
        for record in self.records:
            if method is not None and record.method != method.upper():
                continue
            if route is not None and record.route != route:
                continue
            if pattern is not None and not pattern.fullmatch(record.path):
                continue
            if status is not None and record.status != status:
                continue
            if since is not None and record.time < since:
                continue
            found.append(record)
        return found

    def describe(self, records: list[CallRecord] | None = None) -> str:
        """One line per record, for assertion messages."""
        return "\n".join(str(record) for record in (self.records if records is None else records))


class RecordFile:
    """Appends one JSON line per REST call to a file, safely shared by every fake writing to it.

    Fakes in one process share the writer of a path (a lock orders their
    lines); fakes in other processes are kept out by an exclusive ``flock``
    while a line is written, and the line number is recounted from the file
    whenever it grew behind this writer's back. With ``files_dir`` every
    uploaded file is saved there as ``<line>-<part name><suffix>``
    (``17-files[0].ogg``).
    """

    _writers: dict[tuple[str, str | None], RecordFile] = {}
    _writers_lock = threading.Lock()

    def __init__(self, path: Path, files_dir: Path | None) -> None:
        self.path = path
        self.files_dir = files_dir
        self._lock = threading.Lock()
        self._known_size = 0
        self._known_lines = 0

    @classmethod
    def from_environment(cls) -> RecordFile | None:
        """The writer ``$FAKEDISCORD_RECORD`` (and ``$FAKEDISCORD_RECORD_FILES``) ask for, if any."""
        target = os.environ.get(RECORD_ENV)
        if not target:
            return None
        files = os.environ.get(RECORD_FILES_ENV) or None
        key = (str(Path(target).resolve()), str(Path(files).resolve()) if files else None)
        with cls._writers_lock:
            writer = cls._writers.get(key)
            if writer is None:
                writer = cls(Path(key[0]), Path(key[1]) if key[1] else None)
                cls._writers[key] = writer
            return writer

    def append(self, entry: dict[str, Any], uploads: list[MultipartPart]) -> int:
        """Writes one record (and its uploaded files); returns its line number (from 1)."""
        line = (json.dumps(entry, ensure_ascii=False, default=str) + "\n").encode()
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a+b") as handle:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
                try:
                    size = handle.seek(0, os.SEEK_END)
                    if size < self._known_size:
                        self._known_size = self._known_lines = 0
                    if size != self._known_size:
                        handle.seek(self._known_size)
                        self._known_lines += handle.read(size - self._known_size).count(b"\n")
                    number = self._known_lines + 1
                    handle.seek(0, os.SEEK_END)
                    handle.write(line)
                    handle.flush()
                    self._known_size = size + len(line)
                    self._known_lines = number
                    if self.files_dir is not None and uploads:
                        self.files_dir.mkdir(parents=True, exist_ok=True)
                        for part in uploads:
                            suffix = Path(part.filename or "").suffix
                            (self.files_dir / f"{number}-{part.name}{suffix}").write_bytes(
                                part.data
                            )
                finally:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return number


def record_entry(record: CallRecord) -> dict[str, Any]:
    """The JSON object ``FAKEDISCORD_RECORD`` keeps for a call."""
    return {
        "method": record.method,
        "path": record.path,
        "route": record.spec_route or record.route,
        "query": record.query,
        "json": record.json,
        "multipart": bool(record.parts),
        "parts": [
            {
                "name": part.name,
                "filename": part.filename,
                "content_type": part.content_type,
                "size": len(part.data),
            }
            for part in record.parts
        ],
        "status": record.status,
        "response": record.response,
        "fault": record.fault,
        "test": os.environ.get("PYTEST_CURRENT_TEST"),
    }
