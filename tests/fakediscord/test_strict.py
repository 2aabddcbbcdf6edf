"""The strict fake: each rule of Discord it enforces refuses a wrong request and lets a right one pass.

Requests are made with plain HTTP (aiohttp) so that each body is exactly the
one under test; discord.py is used where its own behaviour is the point.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from tests.fakediscord import (
    DEFAULT_BOT_PERMISSIONS,
    ChannelType,
    FakeDiscord,
    Overwrite,
    Permission,
    StandardGuild,
    build_standard_guild,
)
from tests.fakediscord.interactions import INTERACTION_APPLICATION_COMMAND, INTERACTION_AUTOCOMPLETE
from tests.fakediscord.spec import OpenApiSpec, default_spec, locate_spec, spec_status

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
    body = {
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


# permissions --------------------------------------------------------------------------------


def test_the_bot_holds_exactly_its_default_grant(fake_guild: StandardGuild) -> None:
    fake = fake_guild.fake
    assert (
        fake.permissions_for(fake_guild.guild.id, None, fake.bot_user.id)
        == DEFAULT_BOT_PERMISSIONS | fake.guild(fake_guild.guild.id).everyone.permissions
    )
    assert (
        not fake.permissions_for(fake_guild.guild.id, None, fake.bot_user.id)
        & Permission.ADMINISTRATOR
    )


async def test_create_channel_overwrites_only_with_held_bits(
    fake_guild: StandardGuild, rest: Rest
) -> None:
    fake = fake_guild.fake
    gid = fake_guild.guild.id
    assert not fake.permissions_for(gid, None, fake.bot_user.id) & Permission.MANAGE_MESSAGES

    def body(bits: int) -> dict[str, Any]:
        return {
            "name": "room",
            "permission_overwrites": [
                {"id": str(fake_guild.players[0].id), "type": 1, "allow": str(bits), "deny": "0"}
            ],
        }

    for bits in (int(Permission.MANAGE_MESSAGES), int(Permission.MANAGE_ROLES)):
        status, answer = await rest.call("POST", f"/guilds/{gid}/channels", body(VIEW | bits))
        assert (status, answer["code"]) == (403, 50013), Permission(bits).name
    status, _ = await rest.call("POST", f"/guilds/{gid}/channels", body(VIEW | SEND))
    assert status == 201
    fake.set_bot_permissions(gid, int(Permission.ADMINISTRATOR))
    status, _ = await rest.call(
        "POST",
        f"/guilds/{gid}/channels",
        body(VIEW | int(Permission.MANAGE_ROLES | Permission.MANAGE_MESSAGES)),
    )
    assert status == 201, "an administrator may set anything"


async def test_edits_are_checked_against_the_parent_category(
    fake_guild: StandardGuild, rest: Rest
) -> None:
    fake = fake_guild.fake
    gid = fake_guild.guild.id
    alice = fake_guild.players[0].id
    hidden_category = fake.create_channel(
        gid, "Hidden", ChannelType.GUILD_CATEGORY, overwrites=[Overwrite(gid, 0, deny=VIEW)]
    )
    room = fake.create_channel(
        gid,
        "room",
        parent_id=hidden_category.id,
        overwrites=[Overwrite(fake.bot_user.id, 1, allow=VIEW | SEND)],
    )
    put = f"/channels/{room.id}/permissions/{alice}"
    status, answer = await rest.call("PUT", put, {"type": 1, "allow": str(VIEW), "deny": "0"})
    assert (status, answer["code"]) == (403, 50013), (
        "the bot cannot view the parent category, so it holds nothing there"
    )
    fake.set_overwrite(hidden_category.id, Overwrite(fake.bot_user.id, 1, allow=VIEW | SEND))
    status, _ = await rest.call("PUT", put, {"type": 1, "allow": str(VIEW), "deny": str(SEND)})
    assert status == 204
    status, answer = await rest.call(
        "PUT", put, {"type": 1, "allow": str(VIEW | int(Permission.MANAGE_ROLES)), "deny": "0"}
    )
    assert (status, answer["code"]) == (403, 50013), "Manage Roles is for administrators"
    # An overwrite sent back unchanged is no grant, even with bits the bot lacks.
    fake.set_overwrite(
        room.id, Overwrite(fake_guild.players[1].id, 1, allow=int(Permission.MANAGE_MESSAGES))
    )
    current = [o.to_payload() for o in fake.channel(room.id).overwrites]
    status, _ = await rest.call("PATCH", f"/channels/{room.id}", {"permission_overwrites": current})
    assert status == 200
    current[-1]["deny"] = str(int(Permission.MANAGE_WEBHOOKS))
    status, answer = await rest.call(
        "PATCH", f"/channels/{room.id}", {"permission_overwrites": current}
    )
    assert (status, answer["code"]) == (403, 50013)
    # A Manage Roles overwrite in the channel lifts the limits.
    fake.set_overwrite(
        room.id, Overwrite(fake.bot_user.id, 1, allow=VIEW | SEND | int(Permission.MANAGE_ROLES))
    )
    status, _ = await rest.call(
        "PUT", put, {"type": 1, "allow": str(VIEW | int(Permission.MANAGE_WEBHOOKS)), "deny": "0"}
    )
    assert status == 204


def test_voice_channels_have_a_text_chat(fake_guild: StandardGuild) -> None:
    fake = fake_guild.fake
    gid = fake_guild.guild.id
    alice = fake_guild.players[0].id
    voice = fake_guild.voice_channel.id
    sending = int(Permission.ATTACH_FILES | Permission.EMBED_LINKS | Permission.MENTION_EVERYONE)
    fake.update_role(gid, gid, permissions=fake.guild(gid).everyone.permissions | sending)
    assert fake.permissions_for(gid, voice, alice) & sending == sending
    fake.set_overwrite(voice, Overwrite(alice, 1, deny=SEND))
    assert not fake.permissions_for(gid, voice, alice) & sending, (
        "no Send Messages: no files, embeds or mentions in its chat"
    )
    manager = fake.create_role(gid, "Stage manager", permissions=int(Permission.MANAGE_CHANNELS))
    fake.add_member_role(gid, alice, manager.id)
    fake.set_overwrite(voice, Overwrite(alice, 1, deny=int(Permission.CONNECT)))
    assert not fake.permissions_for(gid, voice, alice) & Permission.MANAGE_CHANNELS, (
        "no Connect: no Manage Channels"
    )
    assert fake.permissions_for(gid, fake_guild.text_channel.id, alice) & Permission.MANAGE_CHANNELS


async def test_role_rules(fake_guild: StandardGuild, rest: Rest) -> None:
    fake = fake_guild.fake
    gid = fake_guild.guild.id
    status, answer = await rest.call(
        "POST",
        f"/guilds/{gid}/roles",
        {"name": "Boss", "permissions": str(int(Permission.BAN_MEMBERS))},
    )
    assert (status, answer["code"]) == (403, 50013), "only bits the bot holds"
    status, role = await rest.call(
        "POST", f"/guilds/{gid}/roles", {"name": "City", "permissions": "0"}
    )
    assert status == 200
    status, answer = await rest.call(
        "PATCH",
        f"/guilds/{gid}/roles/{role['id']}",
        {"permissions": str(int(Permission.KICK_MEMBERS))},
    )
    assert (status, answer["code"]) == (403, 50013)
    status, _ = await rest.call(
        "PATCH", f"/guilds/{gid}/roles/{role['id']}", {"permissions": str(VIEW)}
    )
    assert status == 200
    above = fake.create_role(gid, "Above")
    fake.update_role(gid, above.id, position=10)
    alice = fake_guild.players[0].id
    status, answer = await rest.call("PUT", f"/guilds/{gid}/members/{alice}/roles/{above.id}")
    assert (status, answer["code"]) == (403, 50013), "only roles below the bot's highest"
    status, _ = await rest.call("PUT", f"/guilds/{gid}/members/{alice}/roles/{role['id']}")
    assert status == 204
    while len(fake.guild(gid).roles) < 250:
        fake.create_role(gid, f"filler {len(fake.guild(gid).roles)}")
    status, answer = await rest.call("POST", f"/guilds/{gid}/roles", {"name": "one too many"})
    assert (status, answer["code"]) == (400, 30005)


async def test_a_guild_holds_500_channels_categories_included(
    fake_guild: StandardGuild, rest: Rest
) -> None:
    fake = fake_guild.fake
    gid = fake_guild.guild.id
    status, category = await rest.call(
        "POST", f"/guilds/{gid}/channels", {"name": "game", "type": 4}
    )
    assert status == 201
    thread_parent = fake_guild.text_channel.id
    fake.create_channel(gid, "a thread", ChannelType.PUBLIC_THREAD, parent_id=thread_parent)
    while len([c for c in fake.state.guild_channels(gid) if not c.is_thread]) < 499:
        fake.create_channel(
            gid, f"filler {len(fake.state.guild_channels(gid))}", ChannelType.GUILD_CATEGORY
        )
    status, last = await rest.call(
        "POST", f"/guilds/{gid}/channels", {"name": "the 500th", "parent_id": category["id"]}
    )
    assert status == 201, "the thread is not counted"
    for body in ({"name": "one too many"}, {"name": "nor a category", "type": 4}):
        status, answer = await rest.call("POST", f"/guilds/{gid}/channels", body)
        assert (status, answer["code"]) == (400, 30013)
        assert answer["message"] == "Maximum number of guild channels reached (500)"
    status, _ = await rest.call("DELETE", f"/channels/{last['id']}")
    assert status == 200
    status, _ = await rest.call("POST", f"/guilds/{gid}/channels", {"name": "room again"})
    assert status == 201, "a deleted channel frees its place"


async def test_a_category_holds_50_channels(fake_guild: StandardGuild, rest: Rest) -> None:
    fake = fake_guild.fake
    gid = fake_guild.guild.id
    full = fake.create_channel(gid, "full", ChannelType.GUILD_CATEGORY)
    other = fake.create_channel(gid, "other", ChannelType.GUILD_CATEGORY)
    for index in range(49):
        fake.create_channel(gid, f"room {index}", parent_id=full.id)
    status, fiftieth = await rest.call(
        "POST", f"/guilds/{gid}/channels", {"name": "fiftieth", "parent_id": str(full.id)}
    )
    assert status == 201
    status, answer = await rest.call(
        "POST", f"/guilds/{gid}/channels", {"name": "51st", "parent_id": str(full.id), "type": 2}
    )
    assert (status, answer["code"]) == (400, 50035)
    assert answer["errors"]["parent_id"]["_errors"][0]["code"] == "CHANNEL_PARENT_MAX_CHANNELS"
    outside = fake_guild.text_channel.id
    status, answer = await rest.call("PATCH", f"/channels/{outside}", {"parent_id": str(full.id)})
    assert (status, answer["code"]) == (400, 50035), "moving one in counts as well"
    status, answer = await rest.call(
        "PATCH", f"/guilds/{gid}/channels", [{"id": str(outside), "parent_id": str(full.id)}]
    )
    assert (status, answer["code"]) == (400, 50035)
    status, _ = await rest.call(
        "PATCH", f"/channels/{fiftieth['id']}", {"parent_id": str(full.id), "name": "renamed"}
    )
    assert status == 200, "one already inside stays"
    status, _ = await rest.call(
        "PATCH", f"/channels/{fiftieth['id']}", {"parent_id": str(other.id)}
    )
    assert status == 200
    status, _ = await rest.call("PATCH", f"/channels/{outside}", {"parent_id": str(full.id)})
    assert status == 200, "moved out, it left a place"


async def test_reading_a_channels_history(fake_guild: StandardGuild, rest: Rest) -> None:
    """100 a page at most; Read Message History, or no messages; others' text only with the
    Message Content intent enabled for the application."""
    fake = fake_guild.fake
    channel = fake_guild.text_channel.id
    alice = fake_guild.players[0].id
    for index in range(120):
        fake.post_message(channel, alice, f"line {index}")
    path = f"/channels/{channel}/messages"
    for limit in ("101", "0"):
        status, answer = await rest.call("GET", path, params={"limit": limit})
        assert (status, answer["code"]) == (400, 50035), limit
    status, page = await rest.call("GET", path, params={"limit": "100"})
    assert status == 200 and len(page) == 100
    assert {m["content"] for m in page} == {""}, "no Message Content intent: others' text is empty"
    status, older = await rest.call("GET", path, params={"limit": "100", "before": page[-1]["id"]})
    assert len(older) == 20
    fake.state.application_flags |= (
        1 << 19
    )  # GATEWAY_MESSAGE_CONTENT_LIMITED: toggled in the portal
    status, page = await rest.call("GET", path, params={"limit": "1"})
    assert page[0]["content"] == "line 119"
    fake.set_overwrite(
        channel, Overwrite(fake.bot_user.id, 1, deny=int(Permission.READ_MESSAGE_HISTORY))
    )
    status, page = await rest.call("GET", path, params={"limit": "5"})
    assert (status, page) == (200, []), "without Read Message History, no messages"
    fake.set_overwrite(channel, Overwrite(fake.bot_user.id, 1, deny=VIEW))
    status, answer = await rest.call("GET", path, params={"limit": "5"})
    assert status == 403 and answer["code"] in (50001, 50013)


async def test_a_guild_with_everyone_stripped() -> None:
    fake = FakeDiscord()
    world = build_standard_guild(fake, everyone_permissions=0)
    await fake.start()
    try:
        gid = world.guild.id
        general = world.text_channel
        assert fake.permissions_for(gid, general.id, world.players[0].id) == 0
        assert not fake.client_view(world.players[0].id).sees(general.id)
        async with aiohttp.ClientSession() as session:
            status, _ = await Rest(fake, session).call(
                "POST", f"/channels/{general.id}/messages", {"content": "the bot still can"}
            )
        assert status == 200
    finally:
        await fake.close()


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
