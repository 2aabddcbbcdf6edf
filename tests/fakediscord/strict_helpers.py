"""What the strict fake's tests (test_strict*.py) share: plain HTTP calls as the bot, and reading
the refusals."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from tests.fakediscord import (
    FakeDiscord,
    Permission,
    StandardGuild,
)
from tests.fakediscord.spec import default_spec

VIEW = int(Permission.VIEW_CHANNEL)
SEND = int(Permission.SEND_MESSAGES)

needs_spec = pytest.mark.skipif(default_spec() is None, reason="the OpenAPI spec file is absent")


class Rest:
    """Plain HTTP calls to the fake's API as the bot."""

    def __init__(self, fake: FakeDiscord, session: aiohttp.ClientSession) -> None:
        self.fake = fake
        self.session = session

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        form: aiohttp.FormData | None = None,
    ) -> tuple[int, Any]:
        """The status and JSON answer (None for an empty one)."""
        sent = {"Authorization": f"Bot {self.fake.token}", **(headers or {})}
        kwargs: dict[str, Any] = {"params": params, "headers": sent}
        if form is not None:
            kwargs["data"] = form
        elif body is not None:
            kwargs["json"] = body
        async with self.session.request(method, self.fake.api_base + path, **kwargs) as response:
            text = await response.text()
            return response.status, json.loads(text) if text else None


@pytest_asyncio.fixture
async def rest(fake_guild: StandardGuild) -> AsyncIterator[Rest]:
    """HTTP as the bot against the standard guild's fake."""
    async with aiohttp.ClientSession() as session:
        yield Rest(fake_guild.fake, session)


def leaf(answer: Any, *path: str) -> list[dict[str, Any]]:
    """The ``_errors`` list at a path of a 50035 answer's errors tree."""
    node = answer["errors"]
    for part in path:
        node = node[part]
    return list(node["_errors"])


def refused(status: int, answer: Any, *path: str, code: str | None = None) -> None:
    """Asserts a 400 50035 naming the field at ``path`` (with that error code, if given)."""
    assert status == 400 and answer["code"] == 50035, (status, answer)
    errors = leaf(answer, *path)
    if code is not None:
        assert code in [error["code"] for error in errors], errors
