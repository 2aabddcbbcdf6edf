"""Discord-shaped REST errors: an HTTP status plus a JSON ``{"code", "message"}`` body."""

from __future__ import annotations

from typing import Any


class DiscordError(Exception):
    """Raised inside a REST handler; the server turns it into Discord's error answer."""

    def __init__(
        self,
        status: int,
        code: int,
        message: str,
        errors: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{status} {code} {message}")
        self.status = status
        self.code = code
        self.message = message
        self.errors = errors

    def body(self) -> dict[str, Any]:
        """The JSON body Discord sends for this error."""
        body: dict[str, Any] = {"message": self.message, "code": self.code}
        if self.errors is not None:
            body["errors"] = self.errors
        return body


def unknown(kind: str) -> DiscordError:
    """404 for an object that does not exist, with Discord's code for its kind."""
    codes = {
        "Account": 10001,
        "Application": 10002,
        "Channel": 10003,
        "Guild": 10004,
        "Member": 10007,
        "Message": 10008,
        "Overwrite": 10009,
        "Role": 10011,
        "User": 10013,
        "Webhook": 10015,
        "interaction": 10062,
        "application command": 10063,
    }
    return DiscordError(404, codes[kind], f"Unknown {kind}")


def missing_permissions() -> DiscordError:
    """403 50013: the bot lacks a permission for this action."""
    return DiscordError(403, 50013, "Missing Permissions")


def missing_access() -> DiscordError:
    """403 50001: the bot cannot see the channel at all."""
    return DiscordError(403, 50001, "Missing Access")


def invalid_form_body(errors: dict[str, Any]) -> DiscordError:
    """400 50035 with Discord's nested ``errors`` object (see :func:`tidy_errors`)."""
    return DiscordError(400, 50035, "Invalid Form Body", tidy_errors(errors))


def tidy_errors(errors: dict[str, Any]) -> dict[str, Any]:
    """The ``errors`` tree in Discord's shape: a node is either a leaf with ``_errors`` or an
    object of children, never both (the spec's ErrorDetails). Where a check found both, the
    node's own errors are kept: they are about the whole value (too many items, too long)."""
    if "_errors" in errors:
        return {"_errors": errors["_errors"]}
    return {
        key: tidy_errors(value) if isinstance(value, dict) else value
        for key, value in errors.items()
    }


def field_error(code: str, message: str) -> dict[str, Any]:
    """One leaf of an ``errors`` object: ``{"_errors": [{"code", "message"}]}``."""
    return {"_errors": [{"code": code, "message": message}]}


def nest(path: list[str | int], leaf: dict[str, Any]) -> dict[str, Any]:
    """Wraps ``leaf`` in the nested dicts Discord uses for a field path like ``embeds.0.title``."""
    result = leaf
    for key in reversed(path):
        result = {str(key): result}
    return result
