"""What Discord refused, told in the server's language: never Discord's own English.

Discord answers a refused call with an HTTP status, a JSON error code and an
English message (``400 Bad Request (error code: 30013): Maximum number of
guild channels reached (500)``). The host reads none of that: :func:`failure_of`
turns the refusal into a :class:`Failure`, a catalogue key with parameters,
stored as plain JSON (a rollback resumed after a restart tells it the same),
and :func:`failure_text` writes it in the game's language.

The codes are Discord's "JSON Error Codes" (topics/opcodes-and-status-codes.mdx):
30005 and 30013 the guild's role and channel caps, 50013 a missing permission
(or a role above the bot's: the hierarchy), 50001 no access to a channel,
10003/10007/10008/10011 an unknown channel, member, message or role. A full
category has no code of its own: 400 / 50035 with ``CHANNEL_PARENT_MAX_CHANNELS``
on ``parent_id``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import discord

from bot.channels import permission_names
from bot.i18n import t

MAX_CHANNELS = 500
"""Channels a guild may have, categories included (Discord's cap, error 30013)."""
MAX_CATEGORY_CHANNELS = 50
"""Channels in one category (Discord's cap: 50035 ``CHANNEL_PARENT_MAX_CHANNELS``)."""
MAX_ROLES = 250
"""Roles a guild may have, @everyone included (Discord's cap, error 30005)."""

#: the kinds of outbox items that act on a role that exists (a 403 on them with every permission
#: held is the role hierarchy: Discord lets a bot manage only roles below its own highest)
ROLE_KINDS = frozenset({"member_role", "delete_role", "edit_role"})

#: JSON error code → the failure's key
_BY_CODE = {
    30005: "failure.max_roles",
    30013: "failure.max_channels",
    50001: "failure.missing_access",
    10003: "failure.unknown_channel",
    10007: "failure.unknown_member",
    10008: "failure.unknown_message",
    10011: "failure.unknown_role",
}
#: the limit each cap's text names
_LIMITS = {
    "failure.max_roles": MAX_ROLES,
    "failure.max_channels": MAX_CHANNELS,
    "failure.category_full": MAX_CATEGORY_CHANNELS,
}


@dataclass(frozen=True)
class Failure:
    """A refusal as the host is told it: a catalogue key and its parameters (plain JSON)."""

    key: str
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The failure as a record stores it."""
        return {"key": self.key, "params": dict(self.params)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Failure:
        """A stored failure."""
        return cls(str(data["key"]), dict(data.get("params") or {}))


def form_error_codes(error: discord.HTTPException) -> set[str]:
    """The codes in a 50035's ``errors`` tree (``CHANNEL_PARENT_MAX_CHANNELS``...). discord.py
    keeps the tree only in ``_errors``: its public ``text`` has the English messages without
    their codes."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "_errors" and isinstance(value, list):
                    found.update(str(leaf.get("code")) for leaf in value if isinstance(leaf, dict))
                else:
                    walk(value)

    walk(getattr(error, "_errors", None))
    return found


def failure_of(
    error: BaseException,
    *,
    kind: str | None = None,
    lacking: Sequence[str] = (),
    needs: Sequence[str] = (),
) -> Failure:
    """What a refused call means for the host.

    ``lacking``: Discord's flag names of the server permissions the bot lacks now (a 403 then
    names them); with nothing lacking, a 403 on a role that exists (``kind`` in
    :data:`ROLE_KINDS`) is the hierarchy, on anything else what the call ``needs`` (withheld
    from the bot where the call acts: a channel's or a category's overwrites)."""
    if isinstance(error, asyncio.TimeoutError | TimeoutError):
        return Failure("failure.timeout")
    if not isinstance(error, discord.HTTPException):
        return Failure("failure.other", {"status": "—", "code": "—"})
    status, code = error.status, error.code
    if code in _BY_CODE:
        key = _BY_CODE[code]
        return Failure(key, {"limit": _LIMITS[key]} if key in _LIMITS else {})
    if status == 400 and "CHANNEL_PARENT_MAX_CHANNELS" in form_error_codes(error):
        return Failure("failure.category_full", {"limit": MAX_CATEGORY_CHANNELS})
    if status == 403:
        if lacking:
            return Failure("failure.missing_permissions", {"permissions": list(lacking)})
        if kind in ROLE_KINDS:
            return Failure("failure.hierarchy")
        if needs:
            return Failure("failure.missing_permissions", {"permissions": list(needs)})
        return Failure("failure.channel_permissions")
    if status == 404:
        return Failure("failure.not_found", {"status": status, "code": code})
    if status == 429:
        return Failure("failure.rate_limited")
    if status >= 500:
        return Failure("failure.discord_down", {"status": status})
    return Failure("failure.other", {"status": status, "code": code})


def failure_text(language: str, failure: Failure) -> str:
    """The failure in ``language`` (permissions by the names Discord's client gives them)."""
    params = dict(failure.params)
    if isinstance(params.get("permissions"), list):
        params["permissions"] = permission_names(language, [str(p) for p in params["permissions"]])
    return t(language, failure.key, **params)


def start_refused_text(language: str, failure: Failure) -> str:
    """The host's answer when Discord refused his game's start (all it made is removed): the
    permissions to grant, or what Discord refused and what to do."""
    if failure.key == "failure.missing_permissions":
        names = permission_names(language, [str(p) for p in failure.params.get("permissions", [])])
        return t(language, "error.missing_permissions", permissions=names)
    return t(language, "error.provision_refused", reason=failure_text(language, failure))


def reason_failure(reason: dict[str, Any]) -> Failure:
    """The failure a rollback's stored reason names: ``failure`` (a :class:`Failure`), or as an
    earlier version stored it: ``missing`` (permissions), ``refused`` (Discord's English, not
    shown)."""
    if isinstance(reason.get("failure"), dict):
        return Failure.from_dict(reason["failure"])
    if reason.get("missing"):
        return Failure("failure.missing_permissions", {"permissions": list(reason["missing"])})
    return Failure("failure.other", {"status": "—", "code": "—"})


__all__ = [
    "MAX_CATEGORY_CHANNELS",
    "MAX_CHANNELS",
    "MAX_ROLES",
    "Failure",
    "failure_of",
    "failure_text",
    "form_error_codes",
    "reason_failure",
    "start_refused_text",
]
