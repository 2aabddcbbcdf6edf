"""The guilds' audit logs, for the changes the bot makes through the REST calls the fake serves.

Discord writes an audit log entry for every change a bot makes to channels,
overwrites, roles and members, with the bot as ``user_id`` and the
``X-Audit-Log-Reason`` header as ``reason`` (developers/resources/audit-log.mdx).
Anyone with View Audit Log (or Administrator) reads them, so what a bot
writes there (and which members it let into which channel) is visible to
those members: :meth:`FakeDiscord.client_view` shows them, and
``GET /guilds/{guild_id}/audit-logs`` serves them to a bot that may read them.
Changes made by a test through the :class:`World` methods are not logged: no
REST call, no actor.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .permissions import OVERWRITE_ROLE, Overwrite

CHANNEL_CREATE = 10
CHANNEL_UPDATE = 11
CHANNEL_DELETE = 12
CHANNEL_OVERWRITE_CREATE = 13
CHANNEL_OVERWRITE_UPDATE = 14
CHANNEL_OVERWRITE_DELETE = 15
MEMBER_KICK = 20
MEMBER_UPDATE = 24
MEMBER_ROLE_UPDATE = 25
MEMBER_MOVE = 26
MEMBER_DISCONNECT = 27
ROLE_CREATE = 30
ROLE_UPDATE = 31
ROLE_DELETE = 32
MESSAGE_DELETE = 72
MESSAGE_BULK_DELETE = 73
MESSAGE_PIN = 74
MESSAGE_UNPIN = 75
THREAD_CREATE = 110
THREAD_DELETE = 112


@dataclass
class AuditEntry:
    """One audit log entry (``changes`` and ``options`` as Discord's JSON has them)."""

    id: int
    guild_id: int
    action_type: int
    user_id: int | None
    target_id: int | None
    changes: list[dict[str, Any]] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    reason: str | None = None
    time: float = field(default_factory=time.monotonic)

    def to_payload(self) -> dict[str, Any]:
        """Discord's audit log entry object."""
        payload: dict[str, Any] = {
            "id": str(self.id),
            "action_type": self.action_type,
            "user_id": None if self.user_id is None else str(self.user_id),
            "target_id": None if self.target_id is None else str(self.target_id),
            "changes": self.changes,
        }
        if self.options:
            payload["options"] = self.options
        if self.reason is not None:
            payload["reason"] = self.reason
        return payload


class AuditLog:
    """Every guild's entries, oldest first."""

    def __init__(self) -> None:
        self.entries: list[AuditEntry] = []

    def add(self, entry: AuditEntry) -> AuditEntry:
        """Keeps an entry."""
        self.entries.append(entry)
        return entry

    def of_guild(self, guild_id: int) -> list[AuditEntry]:
        """A guild's entries, newest first (the order Discord lists them in)."""
        return [entry for entry in reversed(self.entries) if entry.guild_id == guild_id]


def change(key: str, old: Any = None, new: Any = None) -> dict[str, Any]:
    """One audit log change (keys absent when the side has no value, as Discord sends them)."""
    item: dict[str, Any] = {"key": key}
    if old is not None:
        item["old_value"] = old
    if new is not None:
        item["new_value"] = new
    return item


def changes_between(
    before: dict[str, Any], after: dict[str, Any], keys: Iterable[str]
) -> list[dict[str, Any]]:
    """The changes of ``keys`` whose values differ between two payloads."""
    return [
        change(key, before.get(key), after.get(key))
        for key in keys
        if before.get(key) != after.get(key)
    ]


def overwrite_options(overwrite: Overwrite, role_name: str | None) -> dict[str, str]:
    """The ``options`` of an overwrite entry: whose overwrite it is (and the role's name)."""
    options = {"id": str(overwrite.id), "type": str(overwrite.type)}
    if overwrite.type == OVERWRITE_ROLE and role_name is not None:
        options["role_name"] = role_name
    return options


def overwrite_changes(before: Overwrite | None, after: Overwrite | None) -> list[dict[str, Any]]:
    """The changes of an overwrite entry."""
    if after is None and before is not None:
        return [
            change("id", str(before.id)),
            change("type", before.type),
            change("allow", str(before.allow)),
            change("deny", str(before.deny)),
        ]
    assert after is not None
    if before is None:
        return [
            change("id", None, str(after.id)),
            change("type", None, after.type),
            change("allow", None, str(after.allow)),
            change("deny", None, str(after.deny)),
        ]
    found = []
    if before.allow != after.allow:
        found.append(change("allow", str(before.allow), str(after.allow)))
    if before.deny != after.deny:
        found.append(change("deny", str(before.deny), str(after.deny)))
    return found
