"""The fake Discord against the real discord.py (tests/fakediscord/minibot.py): channels, permissions and
messages."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import discord
import pytest
from discord.http import Route

from tests.fakediscord import (
    Overwrite,
    Permission,
    StandardGuild,
    minibot,
)
from tests.fakediscord.minibot import MiniBot, _text_channel
from tests.fakediscord.permissions import ALL_PERMISSIONS, apply_overwrites, base_permissions

pytestmark = [
    pytest.mark.filterwarnings("error::ResourceWarning"),
    pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning"),
]

no_leftover_tasks = minibot.no_leftover_tasks
bot = minibot.bot


# channels, permissions, messages ---------------------------------------------------------


async def test_create_channels_with_overwrites(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    guild = bot.get_guild(fake_guild.guild.id)
    assert guild is not None
    alice = guild.get_member(fake_guild.player("alice").id)
    vera = guild.get_member(fake_guild.player("vera").id)
    assert alice is not None and vera is not None
    # The bot lets itself into the category: edits of a child's overwrites are checked against
    # what the bot may do in the parent category.
    category = await guild.create_category(
        "Город 1",
        overwrites={
            guild.default_role: discord.PermissionOverwrite(view_channel=False),
            guild.me: discord.PermissionOverwrite(view_channel=True, send_messages=True),
        },
    )
    overwrites: dict[
        discord.Role | discord.Member | discord.Object, discord.PermissionOverwrite
    ] = {
        guild.default_role: discord.PermissionOverwrite(view_channel=False),
        guild.me: discord.PermissionOverwrite(view_channel=True, send_messages=True),
        alice: discord.PermissionOverwrite(view_channel=True, send_messages=True),
    }
    channel = await guild.create_text_channel(
        "Город 1 чат", category=category, overwrites=overwrites, topic="City chat"
    )
    voice = await guild.create_voice_channel("Город 1", category=category)

    stored = fake.channel(channel.id)
    assert stored.name == "город-1-чат", "Discord lowercases text channel names and replaces spaces"
    assert stored.parent_id == category.id and stored.topic == "City chat"
    assert {(o.id, o.type) for o in stored.overwrites} == {
        (guild.id, 0),
        (fake.bot_user.id, 1),
        (alice.id, 1),
    }
    assert fake.channel(voice.id).overwrites == fake.channel(category.id).overwrites, (
        "synced with its category"
    )
    body = fake.last_call("POST", "/guilds/{guild_id}/channels", path=r".*").json
    assert body["type"] == 2 and body["parent_id"] == category.id

    cached = await fake.wait_until(lambda: guild.get_channel(channel.id))
    assert isinstance(cached, discord.TextChannel) and cached.category_id == category.id
    assert cached.overwrites_for(alice).send_messages is True
    assert fake.permissions_for(guild.id, channel.id, alice.id) & Permission.SEND_MESSAGES
    assert not fake.permissions_for(guild.id, channel.id, vera.id) & Permission.VIEW_CHANNEL

    await cached.set_permissions(alice, view_channel=True, send_messages=False)
    can = fake.permissions_for(guild.id, channel.id, alice.id)
    assert can & Permission.VIEW_CHANNEL and not can & Permission.SEND_MESSAGES
    put = fake.last_call("PUT", "/channels/{channel_id}/permissions/{overwrite_id}")
    assert put.json["type"] == 1 and int(put.json["deny"]) == Permission.SEND_MESSAGES
    await fake.wait_until(lambda: cached.overwrites_for(alice).send_messages is False)


async def test_fake_and_discord_py_agree_on_permissions(
    fake_guild: StandardGuild, bot: MiniBot
) -> None:
    fake = fake_guild.fake
    gid = fake_guild.guild.id
    dead = fake.create_role(gid, "Dead", permissions=int(Permission.VIEW_CHANNEL))
    mod = fake.create_role(
        gid, "Mod", permissions=int(Permission.MANAGE_MESSAGES | Permission.MUTE_MEMBERS)
    )
    admin = fake.create_role(gid, "Admin", permissions=int(Permission.ADMINISTRATOR))
    alice, boris, vera, gleb, _ = fake_guild.players
    fake.add_member_role(gid, alice.id, dead.id)
    fake.add_member_role(gid, boris.id, mod.id)
    fake.add_member_role(gid, vera.id, admin.id)
    fake.add_member_role(gid, gleb.id, dead.id)
    city = fake.create_channel(
        gid,
        "city",
        overwrites=[
            Overwrite(gid, 0, deny=int(Permission.VIEW_CHANNEL)),
            Overwrite(
                dead.id, 0, allow=int(Permission.VIEW_CHANNEL), deny=int(Permission.SEND_MESSAGES)
            ),
            Overwrite(mod.id, 0, allow=int(Permission.VIEW_CHANNEL | Permission.SEND_MESSAGES)),
            Overwrite(gleb.id, 1, allow=int(Permission.SEND_MESSAGES)),
            # the bot must view the channel, or it gets the channel obfuscated (no overwrites to compare)
            Overwrite(fake.bot_user.id, 1, allow=int(Permission.VIEW_CHANNEL)),
        ],
    )
    guild = bot.get_guild(gid)
    assert guild is not None
    cached = await fake.wait_until(lambda: guild.get_channel(city.id))
    await fake.wait_until(
        lambda: all(len(m.roles) > 1 for m in guild.members if m.id in (alice.id, gleb.id, vera.id))
    )
    assert isinstance(cached, discord.TextChannel)
    # discord.py also hides voice permissions in text channels; Discord's algorithm does not.
    voice_bits = discord.Permissions.voice().value
    for member in [fake_guild.owner, *fake_guild.players]:
        theirs = cached.permissions_for(guild.get_member(member.id)).value  # type: ignore[arg-type]
        ours = fake.permissions_for(gid, city.id, member.id)
        assert ours & ~voice_bits == theirs & ~voice_bits, member.user.username
    assert not fake.permissions_for(gid, city.id, alice.id) & Permission.SEND_MESSAGES, (
        "dead cannot write"
    )
    assert fake.permissions_for(gid, city.id, gleb.id) & Permission.SEND_MESSAGES, (
        "a member overwrite beats roles"
    )
    assert fake.permissions_for(gid, city.id, vera.id) == ALL_PERMISSIONS


def test_permission_algorithm_order() -> None:
    view, send = int(Permission.VIEW_CHANNEL), int(Permission.SEND_MESSAGES)
    base = base_permissions(is_owner=False, everyone_permissions=view | send, role_permissions=[])
    assert base == view | send
    assert (
        base_permissions(is_owner=True, everyone_permissions=0, role_permissions=[])
        == ALL_PERMISSIONS
    )
    assert (
        base_permissions(
            is_owner=False, everyone_permissions=0, role_permissions=[int(Permission.ADMINISTRATOR)]
        )
        == ALL_PERMISSIONS
    )
    overwrites = [
        Overwrite(1, 0, deny=send),
        Overwrite(10, 0, deny=send),
        Overwrite(11, 0, allow=send),
    ]
    with_roles = apply_overwrites(
        base,
        guild_id=1,
        member_id=5,
        member_role_ids=[10, 11],
        overwrites=overwrites,
        is_text_channel=True,
    )
    assert with_roles & send, "within role overwrites, allow wins over deny"
    overwrites.append(Overwrite(5, 1, deny=send))
    assert (
        not apply_overwrites(
            base,
            guild_id=1,
            member_id=5,
            member_role_ids=[10, 11],
            overwrites=overwrites,
            is_text_channel=True,
        )
        & send
    )
    attach = int(Permission.ATTACH_FILES)
    no_send = apply_overwrites(
        base | attach,
        guild_id=1,
        member_id=7,
        member_role_ids=[],
        overwrites=[Overwrite(1, 0, deny=send)],
        is_text_channel=True,
    )
    assert no_send == view, "no SEND_MESSAGES drops ATTACH_FILES in a text channel"
    hidden = apply_overwrites(
        base,
        guild_id=1,
        member_id=7,
        member_role_ids=[],
        overwrites=[Overwrite(1, 0, deny=view)],
        is_text_channel=True,
    )
    assert hidden == 0


async def test_multipart_message_keeps_file_bytes(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    channel = _text_channel(bot, fake_guild)
    data = b"\x89PNG\r\n\x1a\n" + bytes(range(200))
    sent = await channel.send(
        "the map", file=discord.File(io.BytesIO(data), filename="map.png", description="City map")
    )
    stored = fake.message(sent.id)
    assert stored.content == "the map"
    assert [a.filename for a in stored.attachments] == ["map.png"]
    assert stored.attachments[0].data == data
    assert stored.attachments[0].content_type == "image/png"
    assert stored.attachments[0].description == "City map"
    assert sent.attachments[0].size == len(data)
    assert await sent.attachments[0].read() == data
    record = fake.last_call("POST", "/channels/{channel_id}/messages")
    assert [p.name for p in record.parts] == ["payload_json", "files[0]"]
    assert record.files[0].data == data


async def test_native_voice_message_rules(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    route = Route("POST", "/channels/{channel_id}/messages", channel_id=fake_guild.text_channel.id)
    waveform = base64.b64encode(bytes([10, 200, 30])).decode()
    payload = {
        "flags": 1 << 13,
        "attachments": [
            {"id": 0, "filename": "voice-message.ogg", "duration_secs": 1.5, "waveform": waveform}
        ],
    }

    def form(content_type: str) -> list[dict[str, Any]]:
        return [
            {"name": "payload_json", "value": json.dumps(payload)},
            {
                "name": "files[0]",
                "value": b"OggS fake opus",
                "filename": "voice-message.ogg",
                "content_type": content_type,
            },
        ]

    with pytest.raises(discord.HTTPException) as caught:
        await bot.http.request(route, form=form("application/octet-stream"))
    assert caught.value.code == 50160
    data = await bot.http.request(route, form=form("audio/ogg"))
    stored = fake.message(int(data["id"]))
    assert stored.flags == 1 << 13
    assert stored.attachments[0].duration_secs == 1.5
    assert stored.attachments[0].waveform_bytes == bytes([10, 200, 30])
    channel = _text_channel(bot, fake_guild)
    message = await channel.fetch_message(stored.id)
    assert message.attachments[0].is_voice_message()
    with pytest.raises(discord.HTTPException) as caught:
        await message.edit(content="no")
    assert caught.value.code == 50162


async def test_missing_permissions_are_403(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    guild = bot.get_guild(fake_guild.guild.id)
    assert guild is not None
    channel = _text_channel(bot, fake_guild)
    fake.set_bot_permissions(
        guild.id, int(Permission.VIEW_CHANNEL | Permission.READ_MESSAGE_HISTORY)
    )
    fake.update_role(guild.id, guild.id, permissions=int(Permission.VIEW_CHANNEL))
    with pytest.raises(discord.Forbidden) as caught:
        await channel.send("hello")
    assert caught.value.code == 50013 and caught.value.status == 403
    with pytest.raises(discord.Forbidden) as caught:
        await guild.create_text_channel("secret")
    assert caught.value.code == 50013
    fake.set_bot_permissions(
        guild.id,
        int(Permission.VIEW_CHANNEL | Permission.SEND_MESSAGES | Permission.MANAGE_CHANNELS),
    )
    with pytest.raises(discord.Forbidden):
        await channel.send(file=discord.File(__file__))
    with pytest.raises(discord.Forbidden) as caught:
        await guild.create_text_channel(
            "secret",
            overwrites={guild.default_role: discord.PermissionOverwrite(view_channel=False)},
        )
    assert caught.value.code == 50013, "overwrites need MANAGE_ROLES"
    hidden = fake.create_channel(
        guild.id, "hidden", overwrites=[Overwrite(guild.id, 0, deny=int(Permission.VIEW_CHANNEL))]
    )
    with pytest.raises(discord.Forbidden) as caught:
        await bot.http.send_message(
            hidden.id, params=discord.http.handle_message_parameters(content="x")
        )
    assert caught.value.code == 50001
    assert [c.status for c in fake.calls("POST", "/channels/{channel_id}/messages")] == [
        403,
        403,
        403,
    ]


async def test_embed_limits_and_unknown_objects(fake_guild: StandardGuild, bot: MiniBot) -> None:
    channel = _text_channel(bot, fake_guild)
    with pytest.raises(discord.HTTPException) as caught:
        await channel.send(embed=discord.Embed(title="Votes").add_field(name="Alice", value=""))
    assert caught.value.code == 50035 and "fields" in caught.value.text
    with pytest.raises(discord.HTTPException) as caught:
        await channel.send("x" * 2001)
    assert caught.value.code == 50035
    with pytest.raises(discord.NotFound) as missing:
        await bot.fetch_channel(1234)
    assert missing.value.code == 10003
    with pytest.raises(discord.NotFound) as missing_message:
        await channel.fetch_message(1234)
    assert missing_message.value.code == 10008


async def test_direct_messages(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    alice = fake_guild.player("alice")
    user = await bot.fetch_user(alice.id)
    await user.send("your role: doctor")
    assert [m.content for m in fake.messages(dm_user_id=alice.id)] == ["your role: doctor"]
    boris = fake_guild.player("boris")
    boris.user.accepts_dms = False
    with pytest.raises(discord.Forbidden) as caught:
        await (await bot.fetch_user(boris.id)).send("your role: mafia")
    assert caught.value.code == 50007


async def test_member_posts_are_seen_by_the_bot(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    received: list[discord.Message] = []

    async def on_message(message: discord.Message) -> None:
        received.append(message)

    bot.add_listener(on_message)
    fake.post_message(fake_guild.text_channel.id, fake_guild.player("vera").id, "I am the doctor")
    await fake.wait_until(lambda: received)
    assert received[0].author.id == fake_guild.player("vera").id
    assert received[0].content == "", "no MESSAGE_CONTENT intent: content is stripped"
