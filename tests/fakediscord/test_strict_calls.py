"""The strict fake: interaction callbacks, the gateway and the record file, each rule refusing a
wrong request and letting a right one pass (see test_strict.py)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.fakediscord import (
    FakeDiscord,
    StandardGuild,
    build_standard_guild,
    strict_helpers,
)
from tests.fakediscord.interactions import INTERACTION_APPLICATION_COMMAND, INTERACTION_AUTOCOMPLETE
from tests.fakediscord.snowflake import DISCORD_EPOCH_MS
from tests.fakediscord.spec import OpenApiSpec, locate_spec
from tests.fakediscord.strict_helpers import Rest, leaf, needs_spec

rest = strict_helpers.rest


# interaction callbacks ------------------------------------------------------------------------


def _interaction(fake: FakeDiscord, world: StandardGuild, kind: int) -> Any:
    payload = fake.builder.envelope(
        kind,
        guild_id=world.guild.id,
        channel_id=world.text_channel.id,
        user_id=world.players[0].id,
        locale="en-US",
        guild_locale=None,
        interaction_id=None,
    )
    payload["data"] = {"id": "1", "name": "ping", "type": 1, "options": []}
    return fake.open_interaction(payload)


async def test_autocomplete_and_modal_limits(fake_guild: StandardGuild, rest: Rest) -> None:
    fake = fake_guild.fake
    choices = [{"name": f"City {i}", "value": f"c{i}"} for i in range(26)]
    cases: list[tuple[int, dict[str, Any], tuple[str, ...]]] = [
        (INTERACTION_AUTOCOMPLETE, {"type": 8, "data": {"choices": choices}}, ("data", "choices")),
        (
            INTERACTION_AUTOCOMPLETE,
            {"type": 8, "data": {"choices": [{"name": "n" * 101, "value": "v"}]}},
            ("data", "choices", "0", "name"),
        ),
        (
            INTERACTION_AUTOCOMPLETE,
            {"type": 8, "data": {"choices": [{"name": "n", "value": "v" * 101}]}},
            ("data", "choices", "0", "value"),
        ),
        (
            INTERACTION_APPLICATION_COMMAND,
            {
                "type": 9,
                "data": {
                    "custom_id": "m",
                    "title": "t" * 46,
                    "components": [
                        {
                            "type": 1,
                            "components": [{"type": 4, "custom_id": "i", "style": 1, "label": "L"}],
                        }
                    ],
                },
            },
            ("data", "title"),
        ),
        (
            INTERACTION_APPLICATION_COMMAND,
            {"type": 4, "data": {"content": "x" * 2001}},
            ("data", "content"),
        ),
        (INTERACTION_APPLICATION_COMMAND, {"type": 8, "data": {"choices": []}}, ("type",)),
    ]
    for kind, body, path in cases:
        result = _interaction(fake, fake_guild, kind)
        status, answer = await rest.call(
            "POST", f"/interactions/{result.id}/{result.token}/callback", body
        )
        assert status == 400 and answer["code"] == 50035, (body, answer)
        leaf(answer, *path)
        assert result.callback is None
    result = _interaction(fake, fake_guild, INTERACTION_AUTOCOMPLETE)
    status, _ = await rest.call(
        "POST",
        f"/interactions/{result.id}/{result.token}/callback",
        {"type": 8, "data": {"choices": choices[:25]}},
    )
    assert status == 204 and result.callback is not None


async def test_interaction_tokens_expire(fake_guild: StandardGuild, rest: Rest) -> None:
    fake = fake_guild.fake
    result = _interaction(fake, fake_guild, INTERACTION_APPLICATION_COMMAND)
    status, _ = await rest.call(
        "POST", f"/interactions/{result.id}/{result.token}/callback", {"type": 5}
    )
    assert status == 204
    fake.interaction_token_lifetime = 0.0
    status, answer = await rest.call(
        "PATCH",
        f"/webhooks/{fake.application_id}/{result.token}/messages/@original",
        {"content": "late"},
    )
    assert (status, answer["code"]) == (401, 50027)


async def test_the_acknowledgement_deadline_counts_from_the_interactions_creation(
    fake_guild: StandardGuild, rest: Rest
) -> None:
    """Discord's 3 s run from when it created the interaction (its snowflake's time), not from
    when the bot heard of it: one created 3.5 s ago is unknown at once, one 2 s ago is not."""
    fake = fake_guild.fake
    for age, expected in ((3.5, 404), (2.0, 204)):
        payload = fake.builder.envelope(
            INTERACTION_APPLICATION_COMMAND,
            guild_id=fake_guild.guild.id,
            channel_id=fake_guild.text_channel.id,
            user_id=fake_guild.players[0].id,
            locale="en-US",
            guild_locale=None,
            interaction_id=(int((time.time() - age) * 1000) - DISCORD_EPOCH_MS) << 22 | 1,
        )
        payload["data"] = {"id": "1", "name": "ping", "type": 1, "options": []}
        result = fake.open_interaction(payload)
        status, answer = await rest.call(
            "POST", f"/interactions/{result.id}/{result.token}/callback", {"type": 5}
        )
        assert status == expected, (age, answer)
        if expected == 404:
            assert answer["code"] == 10062 and result.callback is None


# the gateway -------------------------------------------------------------------------------


async def _identify(fake: FakeDiscord, ws: aiohttp.ClientWebSocketResponse) -> dict[str, Any]:
    hello = await ws.receive_json()
    assert hello["op"] == 10
    await ws.send_json({"op": 2, "d": {"token": fake.token, "intents": 1, "properties": {}}})
    ready = await ws.receive_json()
    assert ready["t"] == "READY"
    return dict(ready["d"])


async def test_more_than_120_sends_a_minute_close_with_4008(fake_discord: FakeDiscord) -> None:
    fake = fake_discord
    async with aiohttp.ClientSession() as session, session.ws_connect(fake.gateway_url) as ws:
        await _identify(fake, ws)
        for _ in range(119):
            await ws.send_json({"op": 1, "d": None})
        await fake.wait_until(lambda: fake.gateway.history[0].sends == 120)
        assert not ws.closed and fake.gateway.rate_limited == 0
        await ws.send_json({"op": 1, "d": None})
        message = await ws.receive()
        while message.type not in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
            message = await ws.receive()
    assert ws.close_code == 4008
    assert fake.gateway.rate_limited == 1
    assert fake.gateway.sends_per_connection == [121]
    assert fake.gateway.max_sends_in_window == 121
    assert [(c.code, c.by) for c in fake.gateway.closes] == [(4008, "server")]


async def test_a_late_heartbeat_closes_the_connection_and_the_session_resumes(
    fake_discord: FakeDiscord,
) -> None:
    fake = fake_discord
    fake.gateway.heartbeat_interval_ms = 100
    fake.gateway.heartbeat_grace = 0.1
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(fake.gateway_url) as ws:
            ready = await _identify(fake, ws)
            message = await ws.receive()
            while message.type not in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                message = await ws.receive()
        assert ws.close_code == 1000
        assert fake.gateway.heartbeat_timeouts == 1
        assert fake.gateway.max_heartbeat_lateness >= 0.1
        fake.gateway.heartbeat_interval_ms = 41250
        async with session.ws_connect(fake.gateway_url) as ws:
            await ws.receive_json()
            await ws.send_json(
                {"op": 6, "d": {"token": fake.token, "session_id": ready["session_id"], "seq": 1}}
            )
            names = []
            while "RESUMED" not in names:
                names.append((await ws.receive_json()).get("t"))
    assert fake.gateway.count("resume") == 1


async def test_a_punctual_client_is_never_closed(fake_guild: StandardGuild) -> None:
    import discord

    from tests.fakediscord import running_client

    fake = fake_guild.fake
    fake.gateway.heartbeat_interval_ms = 100
    client = discord.Client(intents=discord.Intents.default())
    async with running_client(fake, client):
        await fake.wait_until(lambda: fake.gateway.history[0].heartbeats >= 3, timeout=10)
    assert fake.gateway.heartbeat_timeouts == 0 and fake.gateway.rate_limited == 0
    assert fake.gateway.max_sends_in_window < fake.gateway.send_limit
    assert [c.by for c in fake.gateway.closes] == ["client"]


# the record file ----------------------------------------------------------------------------


async def test_record_file_and_uploads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    record, files = tmp_path / "calls.jsonl", tmp_path / "files"
    monkeypatch.setenv("FAKEDISCORD_RECORD", str(record))
    monkeypatch.setenv("FAKEDISCORD_RECORD_FILES", str(files))
    fakes = [FakeDiscord(), FakeDiscord()]
    worlds = [build_standard_guild(fake) for fake in fakes]
    for fake in fakes:
        await fake.start()
    try:
        async with aiohttp.ClientSession() as session:
            for fake, world in zip(fakes, worlds, strict=True):
                rest = Rest(fake, session)
                await rest.call(
                    "POST", f"/channels/{world.text_channel.id}/messages", {"content": "hello"}
                )
                form = aiohttp.FormData()
                form.add_field(
                    "payload_json",
                    json.dumps(
                        {"content": "voice", "attachments": [{"id": 0, "filename": "v.ogg"}]}
                    ),
                )
                form.add_field(
                    "files[0]", b"OggS" + bytes(20), filename="v.ogg", content_type="audio/ogg"
                )
                await rest.call("POST", f"/channels/{world.text_channel.id}/messages", form=form)
            await asyncio.gather(
                *(
                    Rest(fakes[i % 2], session).call(
                        "GET", f"/channels/{worlds[i % 2].text_channel.id}"
                    )
                    for i in range(20)
                )
            )
    finally:
        for fake in fakes:
            await fake.close()
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(lines) == 24
    first = lines[0]
    assert {"method", "path", "query", "json", "parts", "status", "response"} <= set(first)
    assert (first["method"], first["json"], first["status"]) == ("POST", {"content": "hello"}, 200)
    uploads = [number for number, line in enumerate(lines, start=1) if line["parts"]]
    assert [lines[n - 1]["parts"][1] for n in uploads] == [
        {"name": "files[0]", "filename": "v.ogg", "content_type": "audio/ogg", "size": 24}
    ] * 2
    assert sorted(p.name for p in files.iterdir()) == sorted(f"{n}-files[0].ogg" for n in uploads)
    assert (files / f"{uploads[0]}-files[0].ogg").read_bytes() == b"OggS" + bytes(20)


@needs_spec
def test_spec_check_lists_what_the_spec_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.fakediscord import spec_check

    record = tmp_path / "calls.jsonl"
    entries = [
        {
            "method": "POST",
            "path": "/channels/1/messages",
            "query": {},
            "json": {"content": "ok"},
            "parts": [],
            "status": 200,
            "response": None,
            "test": "t1",
        },
        {
            "method": "POST",
            "path": "/channels/1/messages",
            "query": {},
            "json": {"embeds": [{"title": "t" * 300}]},
            "parts": [],
            "status": 400,
            "test": "t2",
        },
        {
            "method": "GET",
            "path": "/channels/1/messages",
            "query": {"limit": "0"},
            "json": None,
            "parts": [],
            "status": 400,
            "test": "t3",
        },
    ]
    record.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    assert spec_check.main([str(record), "--no-responses"]) == 1
    out = capsys.readouterr().out
    assert "the spec refuses 2" in out
    assert (
        "POST /channels/{channel_id}/messages  body embeds.*.title maxLength BASE_TYPE_MAX_LENGTH"
        in out
    )
    assert "GET /channels/{channel_id}/messages  query limit minimum NUMBER_TYPE_MIN" in out


def test_spec_loads_from_a_file(tmp_path: Path) -> None:
    path, _ = locate_spec()
    if path is None:
        pytest.skip("the OpenAPI spec file is absent")
    spec = OpenApiSpec.load(path)
    assert ("GET", "/channels/{channel_id}") in set(spec.operations())
