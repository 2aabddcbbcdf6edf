"""Route templates like ``/channels/{channel_id}/messages`` and the request/answer types of handlers."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import DiscordError, field_error, invalid_form_body
from .recording import CallRecord, MultipartPart

_PLACEHOLDER = re.compile(r"\{(\w+)\}")


@dataclass
class RestRequest:
    """What a handler gets: the parsed request and its record."""

    method: str
    path: str
    route: str
    params: dict[str, str]
    query: dict[str, str]
    headers: dict[str, str]
    json: Any
    parts: list[MultipartPart]
    record: CallRecord

    def snowflake(self, name: str) -> int:
        """A path parameter as an id; a malformed one is a 404 like Discord's."""
        raw = self.params[name]
        if not raw.isdigit():
            raise DiscordError(404, 0, "404: Not Found")
        return int(raw)

    def body(self) -> dict[str, Any]:
        """The JSON object body (``{}`` when there is none)."""
        if self.json is None:
            return {}
        if not isinstance(self.json, dict):
            raise invalid_form_body(
                {
                    "_errors": [
                        {
                            "code": "DICT_TYPE_CONVERT",
                            "message": "Only dictionaries may be used in a DictType",
                        }
                    ]
                }
            )
        return self.json

    def flag(self, name: str) -> bool:
        """A boolean query parameter (``true``, ``True``, ``1``)."""
        return self.query.get(name, "").lower() in ("1", "true")


@dataclass
class RestResponse:
    """What a handler may return when a plain JSON value (200) or None (204) is not enough."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[RestRequest], Awaitable[Any]]


@dataclass
class Route:
    """A method and path template served by a handler."""

    method: str
    template: str
    handler: Handler
    auth: bool
    pattern: re.Pattern[str]
    placeholders: int


class Router:
    """Finds the handler of a request; literal segments win over placeholders."""

    def __init__(self) -> None:
        self._routes: list[Route] = []

    def add(self, method: str, template: str, handler: Handler, *, auth: bool = True) -> None:
        """Serves ``method template`` with ``handler`` (``auth=False`` for webhook-token routes)."""
        regex = (
            "^"
            + _PLACEHOLDER.sub(
                lambda m: f"(?P<{m.group(1)}>[^/]+)",
                re.escape(template).replace(r"\{", "{").replace(r"\}", "}"),
            )
            + "$"
        )
        route = Route(
            method=method,
            template=template,
            handler=handler,
            auth=auth,
            pattern=re.compile(regex),
            placeholders=len(_PLACEHOLDER.findall(template)),
        )
        self._routes.append(route)
        self._routes.sort(key=lambda r: r.placeholders)

    def routes(self) -> list[tuple[str, str]]:
        """Every (method, template) served."""
        return [(route.method, route.template) for route in self._routes]

    def resolve(self, method: str, path: str) -> tuple[Route | None, dict[str, str], bool]:
        """The route and its parameters; the last item says whether the path exists with another method."""
        other_method = False
        for route in self._routes:
            match = route.pattern.match(path)
            if match is None:
                continue
            if route.method != method:
                other_method = True
                continue
            return route, match.groupdict(), False
        return None, {}, other_method


def require(condition: bool, field_name: str, code: str, message: str) -> None:
    """Raises a 400 50035 for one field unless ``condition`` holds."""
    if not condition:
        raise invalid_form_body({field_name: field_error(code, message)})
