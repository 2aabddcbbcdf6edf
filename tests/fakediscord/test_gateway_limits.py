"""The fake gateway's limits (``gateway_limits.py``): 120 sends a minute per connection (4008),
one IDENTIFY per 5 s per ``max_concurrency`` bucket (Invalid Session), and Request Guild
Members: 100 ``user_ids``, and the all-member form's per-guild limit (RATE_LIMITED). Time is a
clock the test moves, never the wall's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest_asyncio

from tests.fakediscord import FakeDiscord, StandardGuild
from tests.fakediscord.gateway_limits import ALL_MEMBERS_WINDOW, IDENTIFY_INTERVAL


class Clock:
    """A monotonic clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest_asyncio.fixture
async def clocked(fake_guild: StandardGuild) -> AsyncIterator[tuple[FakeDiscord, Clock]]:
    clock = Clock()
    fake_guild.fake.gateway.limits.clock = clock
    yield fake_guild.fake, clock


async def _hello(ws: aiohttp.ClientWebSocketResponse) -> None:
    assert (await ws.receive_json())["op"] == 10


async def _identify(
    fake: FakeDiscord, ws: aiohttp.ClientWebSocketResponse, shard: list[int] | None = None
) -> dict[str, Any]:
    """Sends IDENTIFY; returns the first frame that answers it (READY or op 9)."""
    data: dict[str, Any] = {"token": fake.token, "intents": 3, "properties": {}}
    if shard is not None:
        data["shard"] = shard
    await ws.send_json({"op": 2, "d": data})
    return dict(await ws.receive_json())


async def _until(ws: aiohttp.ClientWebSocketResponse, names: set[str]) -> dict[str, Any]:
    """The next dispatch whose name is one of ``names`` (others skipped)."""
    while True:
        frame = await ws.receive_json()
        if frame.get("t") in names:
            return dict(frame)


async def _closed(ws: aiohttp.ClientWebSocketResponse) -> int | None:
    message = await ws.receive()
    while message.type not in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
        message = await ws.receive()
    return ws.close_code


async def test_a_second_identify_of_a_bucket_within_5_s_gets_invalid_session(
    clocked: tuple[FakeDiscord, Clock],
) -> None:
    fake, clock = clocked
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(fake.gateway_url) as first,
        session.ws_connect(fake.gateway_url) as second,
    ):
        await _hello(first)
        await _hello(second)
        assert (await _identify(fake, first, [0, 2]))["t"] == "READY"
        clock.now += IDENTIFY_INTERVAL - 0.01
        assert await _identify(fake, second, [1, 2]) == {"op": 9, "d": False}
        clock.now += 0.01
        assert (await _identify(fake, second, [1, 2]))["t"] == "READY"
    assert fake.gateway.limits.identifies_too_soon == 1
    assert fake.gateway.count("identify") == 2
    assert [bucket for _, bucket in fake.gateway.limits.identifies] == [0, 0]


async def test_max_concurrency_buckets_identify_together(
    clocked: tuple[FakeDiscord, Clock],
) -> None:
    fake, _ = clocked
    fake.gateway.limits.max_concurrency = 2
    async with aiohttp.ClientSession() as session:
        status = await session.get(
            f"{fake.api_base}/gateway/bot", headers={"Authorization": f"Bot {fake.token}"}
        )
        assert (await status.json())["session_start_limit"]["max_concurrency"] == 2
        answers = []
        for shard in ([0, 4], [1, 4], [2, 4]):
            async with session.ws_connect(fake.gateway_url) as ws:
                await _hello(ws)
                answer = await _identify(fake, ws, shard)
                answers.append(answer.get("t") or answer["op"])
    # shards 0 and 1 are buckets 0 and 1; shard 2 is bucket 0 again, at the same moment
    assert answers == ["READY", "READY", 9]
    assert fake.gateway.limits.identifies_too_soon == 1


async def test_all_member_requests_are_rate_limited_per_guild(
    clocked: tuple[FakeDiscord, Clock],
) -> None:
    fake, clock = clocked
    guild_id = next(iter(fake.state.guilds))
    everyone = {"guild_id": str(guild_id), "query": "", "limit": 0}
    async with aiohttp.ClientSession() as session, session.ws_connect(fake.gateway_url) as ws:
        await _hello(ws)
        await _identify(fake, ws)
        await ws.send_json({"op": 8, "d": {**everyone, "nonce": "a"}})
        chunk = await _until(ws, {"GUILD_MEMBERS_CHUNK", "RATE_LIMITED"})
        assert chunk["t"] == "GUILD_MEMBERS_CHUNK" and chunk["d"]["nonce"] == "a"
        assert len(chunk["d"]["members"]) == len(fake.state.guilds[guild_id].members)
        clock.now += 10
        await ws.send_json({"op": 8, "d": {**everyone, "nonce": "b"}})
        limited = await _until(ws, {"GUILD_MEMBERS_CHUNK", "RATE_LIMITED"})
        assert limited["t"] == "RATE_LIMITED"
        assert limited["d"] == {
            "opcode": 8,
            "retry_after": ALL_MEMBERS_WINDOW - 10,
            "meta": {"guild_id": str(guild_id), "nonce": "b"},
        }
        # members named by id are not under the all-member limit
        someone = next(iter(fake.state.guilds[guild_id].members))
        await ws.send_json(
            {"op": 8, "d": {"guild_id": str(guild_id), "user_ids": [str(someone)], "nonce": "c"}}
        )
        named = await _until(ws, {"GUILD_MEMBERS_CHUNK", "RATE_LIMITED"})
        assert named["t"] == "GUILD_MEMBERS_CHUNK" and named["d"]["nonce"] == "c"
        assert [m["user"]["id"] for m in named["d"]["members"]] == [str(someone)]
        clock.now += ALL_MEMBERS_WINDOW - 10
        await ws.send_json({"op": 8, "d": {**everyone, "nonce": "d"}})
        again = await _until(ws, {"GUILD_MEMBERS_CHUNK", "RATE_LIMITED"})
        assert again["t"] == "GUILD_MEMBERS_CHUNK" and again["d"]["nonce"] == "d"
    assert fake.gateway.limits.members_rate_limited == 1


async def test_a_member_request_names_at_most_100_users(
    clocked: tuple[FakeDiscord, Clock],
) -> None:
    fake, _ = clocked
    guild_id = next(iter(fake.state.guilds))
    known = [str(uid) for uid in fake.state.guilds[guild_id].members]
    ids = (known + [str(10**17 + n) for n in range(101)])[:101]
    async with aiohttp.ClientSession() as session, session.ws_connect(fake.gateway_url) as ws:
        await _hello(ws)
        await _identify(fake, ws)
        await ws.send_json({"op": 8, "d": {"guild_id": str(guild_id), "user_ids": ids}})
        await ws.send_json(
            {"op": 8, "d": {"guild_id": str(guild_id), "user_ids": ids[:100], "nonce": "ok"}}
        )
        chunk = await _until(ws, {"GUILD_MEMBERS_CHUNK", "RATE_LIMITED"})
    # the request of 101 got no answer: the first answer is the one of 100
    assert chunk["d"]["nonce"] == "ok"
    assert len(chunk["d"]["members"]) + len(chunk["d"]["not_found"]) == 100
    assert fake.gateway.limits.bad_member_requests == 1


async def test_the_send_window_is_60_s_of_the_gateway_clock(
    clocked: tuple[FakeDiscord, Clock],
) -> None:
    fake, clock = clocked
    async with aiohttp.ClientSession() as session, session.ws_connect(fake.gateway_url) as ws:
        await _hello(ws)
        await _identify(fake, ws)  # 1 send
        for _ in range(119):
            await ws.send_json({"op": 1, "d": None})
        await fake.wait_until(lambda: fake.gateway.history[0].sends == 120)
        clock.now += 60  # a new window: another 120 may go
        for _ in range(120):
            await ws.send_json({"op": 1, "d": None})
        await fake.wait_until(lambda: fake.gateway.history[0].sends == 240)
        assert not ws.closed and fake.gateway.rate_limited == 0
        clock.now += 59.9  # still the second window
        await ws.send_json({"op": 1, "d": None})
        assert await _closed(ws) == 4008
    assert fake.gateway.rate_limited == 1
    assert [(c.code, c.by) for c in fake.gateway.closes] == [(4008, "server")]
