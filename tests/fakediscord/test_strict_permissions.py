"""The strict fake: Discord's permission rules, each refusing a wrong request and letting a right
one pass (see test_strict.py)."""

from __future__ import annotations

from typing import Any

import aiohttp

from tests.fakediscord import (
    DEFAULT_BOT_PERMISSIONS,
    ChannelType,
    FakeDiscord,
    Overwrite,
    Permission,
    StandardGuild,
    build_standard_guild,
    strict_helpers,
)
from tests.fakediscord.strict_helpers import SEND, VIEW, Rest

rest = strict_helpers.rest


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
