"""The strict fake: each rule of Discord it enforces refuses a wrong request and lets a right one pass.

Requests are made with plain HTTP (aiohttp) so that each body is exactly the
one under test; discord.py is used where its own behaviour is the point.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.fakediscord import (
    ChannelType,
    FakeDiscord,
    StandardGuild,
    build_standard_guild,
    strict_helpers,
)
from tests.fakediscord.spec import default_spec, locate_spec, spec_status
from tests.fakediscord.strict_helpers import SEND, VIEW, Rest, leaf, needs_spec, refused

rest = strict_helpers.rest


# the OpenAPI spec -------------------------------------------------------------------------


@needs_spec
def test_every_route_the_fake_serves_is_in_the_spec(fake_discord: FakeDiscord) -> None:
    spec = fake_discord.spec
    assert spec is not None
    missing = []
    for method, template in fake_discord.router.routes():
        concrete = "/".join("1" if part.startswith("{") else part for part in template.split("/"))
        operation, _, _ = spec.find(method, concrete)
        if operation is None:
            missing.append(f"{method} {template}")
    assert missing == []


@needs_spec
async def test_a_route_discord_does_not_have_is_404(fake_guild: StandardGuild, rest: Rest) -> None:
    async def made_up(request: Any) -> Any:
        return {"ok": True}

    fake_guild.fake.router.add("GET", "/channels/{channel_id}/made-up", made_up)
    status, answer = await rest.call("GET", f"/channels/{fake_guild.text_channel.id}/made-up")
    assert (status, answer["code"]) == (404, 0)
    record = fake_guild.fake.last_call("GET", "/channels/{channel_id}/made-up")
    assert [v.rule for v in record.violations] == ["route"]


@needs_spec
async def test_path_and_query_parameters(fake_guild: StandardGuild, rest: Rest) -> None:
    status, answer = await rest.call("GET", "/channels/general")
    refused(status, answer, "channel_id", code="NUMBER_TYPE_COERCE")
    assert leaf(answer, "channel_id")[0]["message"] == 'Value "general" is not snowflake.'
    channel = fake_guild.text_channel.id
    status, answer = await rest.call(
        "GET", f"/channels/{channel}/messages", params={"limit": "500"}
    )
    refused(status, answer, "limit", code="NUMBER_TYPE_MAX")
    status, answer = await rest.call(
        "GET", f"/channels/{channel}/messages", params={"limit": "ten"}
    )
    refused(status, answer, "limit", code="NUMBER_TYPE_COERCE")
    status, answer = await rest.call(
        "GET", f"/guilds/{fake_guild.guild.id}", params={"with_counts": "perhaps"}
    )
    refused(status, answer, "with_counts", code="BASE_TYPE_BOOLEAN")
    status, answer = await rest.call(
        "GET", f"/channels/{channel}/messages", params={"limit": "100", "before": "1"}
    )
    assert status == 200 and answer == []


@needs_spec
async def test_json_body_constraints(fake_guild: StandardGuild, rest: Rest) -> None:
    channel = fake_guild.text_channel.id
    status, answer = await rest.call(
        "POST", f"/channels/{channel}/messages", {"embeds": [{"title": "t" * 257}]}
    )
    refused(status, answer, "embeds", "0", "title", code="BASE_TYPE_MAX_LENGTH")
    status, answer = await rest.call(
        "POST", f"/guilds/{fake_guild.guild.id}/channels", {"name": "x", "type": 3}
    )
    refused(status, answer, "type")
    row = {
        "type": 1,
        "components": [{"type": 3, "custom_id": "pick", "options": [{"label": "only a label"}]}],
    }
    status, answer = await rest.call("POST", f"/channels/{channel}/messages", {"components": [row]})
    refused(
        status,
        answer,
        "components",
        "0",
        "components",
        "0",
        "options",
        "0",
        "value",
        code="BASE_TYPE_REQUIRED",
    )
    status, answer = await rest.call(
        "POST", f"/channels/{channel}/messages", {"components": [{"type": 99}]}
    )
    refused(status, answer, "components", "0", code="UNION_TYPE_CHOICES")
    status, answer = await rest.call(
        "POST", f"/channels/{channel}/messages", {"content": "fine", "tts": False}
    )
    assert status == 200 and answer["content"] == "fine"


@needs_spec
async def test_multipart_payload_json_is_checked(fake_guild: StandardGuild, rest: Rest) -> None:
    form = aiohttp.FormData()
    form.add_field(
        "payload_json",
        json.dumps({"content": "map", "attachments": [{"id": 0, "description": "d" * 1025}]}),
    )
    form.add_field("files[0]", b"\x89PNG", filename="map.png", content_type="image/png")
    status, answer = await rest.call(
        "POST", f"/channels/{fake_guild.text_channel.id}/messages", form=form
    )
    refused(status, answer, "attachments", "0", "description", code="BASE_TYPE_MAX_LENGTH")


@needs_spec
async def test_the_documented_quirks_pass_and_nothing_else(
    fake_guild: StandardGuild, rest: Rest
) -> None:
    fake = fake_guild.fake
    gid = fake_guild.guild.id
    category = fake.create_channel(gid, "Game", ChannelType.GUILD_CATEGORY)
    body: dict[str, Any] = {
        "name": "city",
        "parent_id": category.id,  # a snowflake as a JSON number
        "permission_overwrites": [
            {"id": gid, "type": 0, "allow": "0", "deny": str(VIEW)},  # permission sets as strings
            {"id": fake.bot_user.id, "type": 1, "allow": str(VIEW | SEND), "deny": "0"},
        ],
    }
    status, answer = await rest.call("POST", f"/guilds/{gid}/channels", body)
    assert status == 201, answer
    assert fake.last_call("POST", "/guilds/{guild_id}/channels").violations == []
    form = aiohttp.FormData()
    form.add_field("payload_json", json.dumps({"attachments": [{"id": 0, "filename": "a.txt"}]}))
    form.add_field("files[0]", b"text", filename="a.txt", content_type="text/plain")
    status, answer = await rest.call("POST", f"/channels/{answer['id']}/messages", form=form)
    assert status == 200 and answer["attachments"][0]["filename"] == "a.txt"
    body["permission_overwrites"][0]["deny"] = "1024 or so"
    status, answer = await rest.call("POST", f"/guilds/{gid}/channels", body)
    refused(status, answer, "permission_overwrites", "0", "deny", code="STRING_TYPE_REGEX")
    body["permission_overwrites"][0]["deny"] = "1024"
    body["parent_id"] = -5
    status, answer = await rest.call("POST", f"/guilds/{gid}/channels", body)
    refused(status, answer, "parent_id")


@needs_spec
def test_answers_are_checked_against_the_response_schema() -> None:
    spec = default_spec()
    assert spec is not None
    operation, _, _ = spec.find("GET", "/channels/1")
    assert operation is not None
    assert [
        (v.dotted, v.rule) for v in spec.check_response(operation, 200, {"id": "1", "type": 0})
    ] == [("flags", "required")]
    assert [v.rule for v in spec.check_response(operation, 200, {"id": "1", "type": "text"})] == [
        "oneOf"
    ]
    assert spec.check_response(operation, 404, {"message": "Unknown Channel", "code": 10003}) == []
    assert [v.rule for v in spec.check_response(operation, 201, {})] == ["status"]


def test_without_the_spec_the_check_says_it_was_skipped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FAKEDISCORD_OPENAPI", "off")
    assert locate_spec()[0] is None
    assert "skipped" in spec_status()
    monkeypatch.setenv("FAKEDISCORD_OPENAPI", str(tmp_path / "nowhere.json"))
    assert locate_spec()[0] is None and "does not exist" in spec_status()


async def test_without_the_spec_the_hand_written_rules_hold() -> None:
    fake = FakeDiscord(openapi=None)
    world = build_standard_guild(fake)
    await fake.start()
    try:
        async with aiohttp.ClientSession() as session:
            rest = Rest(fake, session)
            status, answer = await rest.call(
                "POST", f"/channels/{world.text_channel.id}/messages", {"content": "x" * 2001}
            )
            refused(status, answer, "content", code="BASE_TYPE_MAX_LENGTH")
            status, _ = await rest.call(
                "POST", f"/channels/{world.text_channel.id}/messages", {"content": "x" * 2000}
            )
            assert status == 200
    finally:
        await fake.close()


# hand-written message rules (checked with the spec off, so that they are what refuses) --------


def _button(custom_id: str, **extra: Any) -> dict[str, Any]:
    return {"type": 2, "style": 1, "label": "Go", "custom_id": custom_id, **extra}


def _row(*children: dict[str, Any]) -> dict[str, Any]:
    return {"type": 1, "components": list(children)}


def _select(options: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"type": 3, "custom_id": "pick", "options": options, **extra}


_FIELD = {"name": "n", "value": "v"}

WRONG_MESSAGES: list[tuple[str, dict[str, Any], tuple[str, ...], str]] = [
    ("content over 2000", {"content": "x" * 2001}, ("content",), "BASE_TYPE_MAX_LENGTH"),
    ("11 embeds", {"embeds": [{"title": "t"}] * 11}, ("embeds",), "BASE_TYPE_MAX_LENGTH"),
    (
        "embeds over 6000 in all",
        {"embeds": [{"description": "d" * 4000}, {"description": "d" * 2001}]},
        ("embeds",),
        "MAX_EMBED_SIZE_EXCEEDED",
    ),
    (
        "26 fields",
        {"embeds": [{"fields": [_FIELD] * 26}]},
        ("embeds", "0", "fields"),
        "BASE_TYPE_MAX_LENGTH",
    ),
    (
        "field value over 1024",
        {"embeds": [{"fields": [{"name": "n", "value": "v" * 1025}]}]},
        ("embeds", "0", "fields", "0", "value"),
        "BASE_TYPE_MAX_LENGTH",
    ),
    (
        "blank field name",
        {"embeds": [{"fields": [{"name": "  ", "value": "v"}]}]},
        ("embeds", "0", "fields", "0", "name"),
        "BASE_TYPE_REQUIRED",
    ),
    (
        "6 action rows",
        {"components": [_row(_button(f"b{i}")) for i in range(6)]},
        ("components",),
        "BASE_TYPE_MAX_LENGTH",
    ),
    (
        "6 buttons in a row",
        {"components": [_row(*[_button(f"b{i}") for i in range(6)])]},
        ("components", "0", "components"),
        "BASE_TYPE_BAD_LENGTH",
    ),
    (
        "a select beside a button",
        {"components": [_row(_select([{"label": "a", "value": "a"}]), _button("b"))]},
        ("components", "0", "components"),
        "COMPONENT_LAYOUT_WIDTH_EXCEEDED",
    ),
    (
        "custom_id over 100",
        {"components": [_row(_button("c" * 101))]},
        ("components", "0", "components", "0", "custom_id"),
        "BASE_TYPE_BAD_LENGTH",
    ),
    (
        "custom_id twice",
        {"components": [_row(_button("same")), _row(_button("same"))]},
        ("components", "1", "components", "0", "custom_id"),
        "COMPONENT_CUSTOM_ID_DUPLICATED",
    ),
    (
        "component id twice",
        {"components": [_row(_button("a", id=7), _button("b", id=7))]},
        ("components", "0", "components", "1", "id"),
        "COMPONENT_ID_DUPLICATED",
    ),
    (
        "label over 80",
        {"components": [_row(_button("b", label="l" * 81))]},
        ("components", "0", "components", "0", "label"),
        "BASE_TYPE_MAX_LENGTH",
    ),
    (
        "link button with a custom_id",
        {
            "components": [
                _row(
                    {
                        "type": 2,
                        "style": 5,
                        "label": "Docs",
                        "url": "https://discord.com",
                        "custom_id": "x",
                    }
                )
            ]
        },
        ("components", "0", "components", "0", "custom_id"),
        "BUTTON_COMPONENT_CUSTOM_ID_FORBIDDEN",
    ),
    (
        "26 options",
        {"components": [_row(_select([{"label": str(i), "value": str(i)} for i in range(26)]))]},
        ("components", "0", "components", "0", "options"),
        "BASE_TYPE_BAD_LENGTH",
    ),
    (
        "option label over 100",
        {"components": [_row(_select([{"label": "l" * 101, "value": "v"}]))]},
        ("components", "0", "components", "0", "options", "0", "label"),
        "BASE_TYPE_BAD_LENGTH",
    ),
    (
        "option description over 100",
        {"components": [_row(_select([{"label": "l", "value": "v", "description": "d" * 101}]))]},
        ("components", "0", "components", "0", "options", "0", "description"),
        "BASE_TYPE_MAX_LENGTH",
    ),
    (
        "option value twice",
        {
            "components": [
                _row(_select([{"label": "a", "value": "v"}, {"label": "b", "value": "v"}]))
            ]
        },
        ("components", "0", "components", "0", "options", "1", "value"),
        "SELECT_COMPONENT_OPTION_VALUE_DUPLICATED",
    ),
    (
        "placeholder over 150",
        {"components": [_row(_select([{"label": "a", "value": "a"}], placeholder="p" * 151))]},
        ("components", "0", "components", "0", "placeholder"),
        "BASE_TYPE_MAX_LENGTH",
    ),
    (
        "min_values above max_values",
        {
            "components": [
                _row(
                    _select(
                        [{"label": "a", "value": "a"}, {"label": "b", "value": "b"}],
                        min_values=2,
                        max_values=1,
                    )
                )
            ]
        },
        ("components", "0", "components", "0", "min_values"),
        "SELECT_COMPONENT_MIN_VALUES_TOO_LARGE",
    ),
    (
        "101 users to mention",
        {"content": "hi", "allowed_mentions": {"users": [str(i) for i in range(1, 102)]}},
        ("allowed_mentions", "users"),
        "BASE_TYPE_MAX_LENGTH",
    ),
    (
        "parse users with a user list",
        {"content": "hi", "allowed_mentions": {"parse": ["users"], "users": ["1"]}},
        ("allowed_mentions",),
        "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE",
    ),
    (
        "an attachment that was not uploaded",
        {"content": "hi", "attachments": [{"id": "3", "filename": "ghost.png"}]},
        ("attachments", "0", "id"),
        "ATTACHMENT_NOT_FOUND",
    ),
]


@pytest.mark.parametrize(
    ("body", "path", "code"),
    [case[1:] for case in WRONG_MESSAGES],
    ids=[case[0] for case in WRONG_MESSAGES],
)
async def test_message_rules_refuse(body: dict[str, Any], path: tuple[str, ...], code: str) -> None:
    fake = FakeDiscord(openapi=None)
    world = build_standard_guild(fake)
    await fake.start()
    try:
        async with aiohttp.ClientSession() as session:
            status, answer = await Rest(fake, session).call(
                "POST", f"/channels/{world.text_channel.id}/messages", body
            )
        refused(status, answer, *path, code=code)
        assert fake.messages(world.text_channel.id) == []
    finally:
        await fake.close()


async def test_right_messages_pass_at_the_limits(fake_guild: StandardGuild, rest: Rest) -> None:
    channel = fake_guild.text_channel.id
    select = _select(
        [{"label": "l" * 100, "value": str(i), "description": "d" * 100} for i in range(25)],
        placeholder="p" * 150,
    )
    bodies = [
        {"content": "x" * 2000, "allowed_mentions": {"parse": ["users", "roles"], "users": []}},
        {
            "embeds": [
                {
                    "title": "t" * 256,
                    "description": "d" * 4096,
                    "fields": [{"name": "n" * 256, "value": "v" * 1024}],
                }
            ]
        },
        {
            "components": [
                _row(*[_button(f"{row}-{i}", label="l" * 80) for i in range(5)]) for row in range(4)
            ]
            + [_row(select)]
        },
        {
            "content": "mentions",
            "allowed_mentions": {"users": [str(i) for i in range(1, 101)], "roles": []},
        },
    ]
    for body in bodies:
        status, answer = await rest.call("POST", f"/channels/{channel}/messages", body)
        assert status == 200, answer
    stored = fake_guild.fake.messages(channel)[2]
    ids = [c["id"] for row in stored.components for c in [row, *row["components"]]]
    assert len(ids) == len(set(ids)) == 5 + 21, "Discord numbers every component of the message"


async def test_ephemeral_is_dropped_from_a_channel_message(
    fake_guild: StandardGuild, rest: Rest
) -> None:
    status, answer = await rest.call(
        "POST",
        f"/channels/{fake_guild.text_channel.id}/messages",
        {"content": "x", "flags": 1 << 6},
    )
    assert status == 200 and answer["flags"] == 0
    assert not fake_guild.fake.messages(fake_guild.text_channel.id)[0].ephemeral


async def test_eleven_files_are_refused(fake_guild: StandardGuild, rest: Rest) -> None:
    form = aiohttp.FormData()
    form.add_field("payload_json", json.dumps({"content": "files"}))
    for index in range(11):
        form.add_field(f"files[{index}]", b"x", filename=f"{index}.txt", content_type="text/plain")
    status, answer = await rest.call(
        "POST", f"/channels/{fake_guild.text_channel.id}/messages", form=form
    )
    assert status == 400 and answer["code"] == 50035, answer
