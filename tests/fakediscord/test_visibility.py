"""Hidden channels, threads, the audit log and what each member's client receives."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import discord
import pytest_asyncio

from tests.fakediscord import (
    ChannelType,
    FakeDiscord,
    Overwrite,
    Permission,
    StandardGuild,
    running_client,
)
from tests.fakediscord.models import CHANNEL_FLAG_OBFUSCATED, HIDDEN_CHANNEL_NAME

VIEW = int(Permission.VIEW_CHANNEL)
SEND = int(Permission.SEND_MESSAGES)
HISTORY = int(Permission.READ_MESSAGE_HISTORY)


def _hidden(payload: dict[str, Any], guild_id: int) -> bool:
    return (
        payload["name"] == HIDDEN_CHANNEL_NAME
        and bool(payload["flags"] & CHANNEL_FLAG_OBFUSCATED)
        and payload["permission_overwrites"]
        == [{"id": str(guild_id), "type": 0, "allow": "0", "deny": str(VIEW)}]
    )


def _sent(fake: FakeDiscord, name: str, channel_id: int) -> dict[str, Any]:
    if name == "GUILD_CREATE":
        guild_create = fake.gateway.events("GUILD_CREATE")[-1].data
        return next(c for c in guild_create["channels"] if c["id"] == str(channel_id))
    return [e.data for e in fake.gateway.events(name) if e.data["id"] == str(channel_id)][-1]


@pytest_asyncio.fixture
async def client(fake_guild: StandardGuild) -> AsyncIterator[discord.Client]:
    """A plain discord.py client, connected after the test's world was built (see its use)."""
    bot = discord.Client(intents=discord.Intents.default())
    async with running_client(fake_guild.fake, bot):
        yield bot


async def test_the_bot_gets_hidden_channels_obfuscated(fake_guild: StandardGuild) -> None:
    fake = fake_guild.fake
    gid = fake_guild.guild.id
    alice = fake_guild.players[0].id
    category = fake.create_channel(
        gid, "Night", ChannelType.GUILD_CATEGORY, overwrites=[Overwrite(gid, 0, deny=VIEW)]
    )
    room = fake.create_channel(
        gid,
        "mafia-room",
        parent_id=category.id,
        topic="the mafia",
        overwrites=[Overwrite(gid, 0, deny=VIEW), Overwrite(alice, 1, allow=VIEW)],
    )
    bot = discord.Client(intents=discord.Intents.default())
    async with running_client(fake, bot):
        sent = _sent(fake, "GUILD_CREATE", room.id)
        assert _hidden(sent, gid) and sent["topic"] is None
        assert (sent["id"], sent["type"], sent["position"], sent["parent_id"]) == (
            str(room.id),
            0,
            room.position,
            str(category.id),
        )
        assert _hidden(_sent(fake, "GUILD_CREATE", category.id), gid)
        cached = bot.get_channel(room.id)
        assert isinstance(cached, discord.TextChannel) and cached.name == HIDDEN_CHANNEL_NAME
        assert str(alice) not in str(cached.overwrites), "the roster does not reach the bot"
        listed = await bot.http.get_all_guild_channels(gid)
        assert {c["id"] for c in listed} == {
            str(fake_guild.text_channel.id),
            str(fake_guild.voice_channel.id),
        }

        fake.set_overwrite(room.id, Overwrite(fake.bot_user.id, 1, allow=VIEW))
        updated = _sent(fake, "CHANNEL_UPDATE", room.id)
        assert updated["name"] == "mafia-room" and not updated["flags"] & CHANNEL_FLAG_OBFUSCATED
        category_update = _sent(fake, "CHANNEL_UPDATE", category.id)
        assert category_update["name"] == "Night", (
            "a category is viewable through a viewable channel"
        )
        await fake.wait_until(lambda: cached.name == "mafia-room")
        listed = await bot.http.get_all_guild_channels(gid)
        assert {str(room.id), str(category.id)} <= {c["id"] for c in listed}

        fake.delete_overwrite(room.id, fake.bot_user.id)
        assert _hidden(_sent(fake, "CHANNEL_UPDATE", room.id), gid)


async def test_a_role_change_reveals_a_channel_to_the_bot(
    fake_guild: StandardGuild, client: discord.Client
) -> None:
    fake = fake_guild.fake
    gid = fake_guild.guild.id
    seer = fake.create_role(gid, "Seer")
    room = fake.create_channel(
        gid, "secret", overwrites=[Overwrite(gid, 0, deny=VIEW), Overwrite(seer.id, 0, allow=VIEW)]
    )
    assert _hidden(_sent(fake, "CHANNEL_CREATE", room.id), gid)
    fake.add_member_role(gid, fake.bot_user.id, seer.id)
    assert _sent(fake, "CHANNEL_UPDATE", room.id)["name"] == "secret"


async def test_the_http_api_never_obfuscates(
    fake_guild: StandardGuild, client: discord.Client
) -> None:
    fake = fake_guild.fake
    gid = fake_guild.guild.id
    guild = client.get_guild(gid)
    assert guild is not None
    made = await guild.create_text_channel(
        "no-entry", overwrites={guild.default_role: discord.PermissionOverwrite(view_channel=False)}
    )
    answer = fake.last_call("POST", "/guilds/{guild_id}/channels").response
    assert answer["name"] == "no-entry" and not answer["flags"] & CHANNEL_FLAG_OBFUSCATED
    assert _hidden(_sent(fake, "CHANNEL_CREATE", made.id), gid), (
        "but the gateway does: the bot cannot view it"
    )


async def test_client_view_of_hidden_rooms_roles_and_messages(fake_guild: StandardGuild) -> None:
    fake = fake_guild.fake
    gid = fake_guild.guild.id
    alice, boris, vera, gleb = (m.id for m in fake_guild.players[:4])
    city = fake.create_role(gid, "Verona")
    for member in (alice, boris, vera):
        fake.add_member_role(gid, member, city.id)
    room = fake.create_channel(
        gid,
        "mafia-verona",
        topic="Alice and Boris",
        overwrites=[
            Overwrite(gid, 0, deny=VIEW),
            Overwrite(alice, 1, allow=VIEW | SEND | HISTORY),
            Overwrite(boris, 1, allow=VIEW | SEND | HISTORY),
        ],
    )
    fake.post_message(room.id, alice, "we kill Vera tonight")
    admin = fake.create_role(gid, "Admin", permissions=int(Permission.ADMINISTRATOR))
    fake.add_member_role(gid, gleb, admin.id)

    outsider = fake.client_view(vera)
    assert not outsider.sees(room.id)
    hidden = outsider.channel(room.id)
    assert hidden is not None and _hidden(hidden, gid) and hidden["topic"] is None
    assert str(alice) not in json.dumps(hidden) and str(boris) not in json.dumps(hidden), (
        "no roster in the room's object"
    )
    assert not outsider.contains("we kill Vera")
    assert not outsider.contains("Alice and Boris")
    assert sorted(outsider.role_members(city.id)) == sorted(str(m) for m in (alice, boris, vera)), (
        "role membership is public"
    )
    assert outsider.audit_log == [] and not outsider.can_read_audit_log

    insider = fake.client_view(boris)
    assert insider.sees(room.id) and insider.contains("we kill Vera")
    overwrites = insider.channel(room.id)["permission_overwrites"]  # type: ignore[index]
    assert {o["id"] for o in overwrites} == {str(gid), str(alice), str(boris)}

    administrator = fake.client_view(gleb)
    assert (
        administrator.administrator
        and administrator.sees(room.id)
        and administrator.contains("we kill Vera")
    )


async def test_the_audit_log_shows_who_was_let_in_to_those_who_may_read_it(
    fake_guild: StandardGuild,
) -> None:
    fake = fake_guild.fake
    gid = fake_guild.guild.id
    alice, boris, vera = (m.id for m in fake_guild.players[:3])
    auditor = fake.create_role(gid, "Auditor", permissions=int(Permission.VIEW_AUDIT_LOG))
    fake.add_member_role(gid, vera, auditor.id)
    reason = "Mafia room of Верона"
    async with aiohttp.ClientSession(headers={"Authorization": f"Bot {fake.token}"}) as session:
        body = {
            "name": "room",
            "permission_overwrites": [
                {"id": str(gid), "type": 0, "allow": "0", "deny": str(VIEW)},
                {"id": str(fake.bot_user.id), "type": 1, "allow": str(VIEW | SEND), "deny": "0"},
                {"id": str(alice), "type": 1, "allow": str(VIEW | SEND), "deny": "0"},
            ],
        }
        headers = {"X-Audit-Log-Reason": urllib.parse.quote(reason)}
        async with session.post(
            f"{fake.api_base}/guilds/{gid}/channels", json=body, headers=headers
        ) as response:
            room = await response.json()
        put = {"type": 1, "allow": str(VIEW), "deny": "0"}
        async with session.put(
            f"{fake.api_base}/channels/{room['id']}/permissions/{boris}",
            json=put,
            headers={"X-Audit-Log-Reason": "joined"},
        ) as response:
            assert response.status == 204
        async with session.get(f"{fake.api_base}/guilds/{gid}/audit-logs") as response:
            assert response.status == 403, "the bot's invite has no View Audit Log"
    entries = fake.client_view(vera).audit_log
    created = next(e for e in entries if e["action_type"] == 10)
    assert created["reason"] == reason and created["target_id"] == room["id"]
    let_in = next(c for c in created["changes"] if c["key"] == "permission_overwrites")["new_value"]
    assert str(alice) in {o["id"] for o in let_in}
    added = next(e for e in entries if e["action_type"] == 13)
    assert added["options"] == {"id": str(boris), "type": "1"} and added["reason"] == "joined"
    assert fake.client_view(boris).audit_log == []

    bot_role = fake.state.bot_role(gid)
    assert bot_role is not None
    fake.set_bot_permissions(gid, bot_role.permissions | int(Permission.VIEW_AUDIT_LOG))
    async with (
        aiohttp.ClientSession(headers={"Authorization": f"Bot {fake.token}"}) as session,
        session.get(
            f"{fake.api_base}/guilds/{gid}/audit-logs", params={"action_type": "13"}
        ) as response,
    ):
        served = await response.json()
    assert [e["options"]["id"] for e in served["audit_log_entries"]] == [str(boris)]
    assert served["users"][0]["id"] == str(fake.bot_user.id)


async def test_role_changes_are_logged(fake_guild: StandardGuild, client: discord.Client) -> None:
    fake = fake_guild.fake
    gid = fake_guild.guild.id
    guild = client.get_guild(gid)
    assert guild is not None
    dead = await guild.create_role(name="Dead", reason="game 7")
    member = guild.get_member(fake_guild.players[0].id) or await guild.fetch_member(
        fake_guild.players[0].id
    )
    await member.add_roles(dead, reason="died at night")
    entries = fake.audit_log.of_guild(gid)
    assert [(e.action_type, e.reason) for e in entries[:2]] == [
        (25, "died at night"),
        (30, "game 7"),
    ]
    assert entries[0].changes == [
        {"key": "$add", "new_value": [{"id": str(dead.id), "name": "Dead"}]}
    ]


async def test_threads_are_seen_by_who_may_see_them(
    fake_guild: StandardGuild, client: discord.Client
) -> None:
    fake = fake_guild.fake
    alice, boris, vera = (m.id for m in fake_guild.players[:3])
    general = fake_guild.text_channel.id
    public = fake.create_thread(general, "open talk", owner_id=alice)
    private = fake.create_thread(general, "plot", owner_id=alice, private=True, members=[boris])
    fake.post_message(private.id, boris, "only us")
    assert {t["id"] for t in fake.client_view(vera).threads} == {str(public.id)}
    boris_view = fake.client_view(boris)
    assert {t["id"] for t in boris_view.threads} == {str(public.id), str(private.id)}
    assert boris_view.contains("only us") and not fake.client_view(vera).contains("only us")
    assert [e.data["id"] for e in fake.gateway.events("THREAD_CREATE")] == [str(public.id)], (
        "the bot is not in the private one"
    )
    fake.add_thread_member(private.id, fake.bot_user.id)
    assert fake.gateway.events("THREAD_CREATE")[-1].data["id"] == str(private.id)

    thread = await client.http.start_thread_without_message(
        general, name="bot thread", auto_archive_duration=1440, type=11
    )
    assert thread["type"] == 11 and fake.channel(int(thread["id"])).owner_id == fake.bot_user.id
    sent = await client.http.send_message(
        int(thread["id"]), params=discord.http.handle_message_parameters(content="in the thread")
    )
    assert fake.message(int(sent["id"])).channel_id == int(thread["id"])
    fake.set_overwrite(
        general, Overwrite(fake.bot_user.id, 1, deny=int(Permission.SEND_MESSAGES_IN_THREADS))
    )
    try:
        await client.http.send_message(
            int(thread["id"]), params=discord.http.handle_message_parameters(content="no")
        )
    except discord.Forbidden as error:
        assert error.code == 50013
    else:
        raise AssertionError("Send Messages in Threads is what a thread asks for")
