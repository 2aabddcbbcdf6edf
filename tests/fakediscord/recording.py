"""Records of every REST call the fake answered, and ways to find them."""

from __future__ import annotations

import json
import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Any


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
