"""The fake Discord against the real discord.py (tests/fakediscord/minibot.py): faults, rate limits,
reconnects and voice."""

from __future__ import annotations

import asyncio
import datetime
import time
from typing import Any

import discord
import pytest

from tests.fakediscord import (
    DEFAULT_BOT_PERMISSIONS,
    ChannelType,
    Permission,
    StandardGuild,
    minibot,
    running_client,
)
from tests.fakediscord.minibot import MiniBot, _text_channel
from tests.fakediscord.server import PATIENCE

pytestmark = [
    pytest.mark.filterwarnings("error::ResourceWarning"),
    pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning"),
]

no_leftover_tasks = minibot.no_leftover_tasks
bot = minibot.bot


# faults and rate limits ------------------------------------------------------------------


async def test_survives_429_then_succeeds(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    channel = _text_channel(bot, fake_guild)
    fault = fake.fail("POST", r"/channels/\d+/messages", status=429, count=1, retry_after=0.05)
    message = await channel.send("after a rate limit")
    statuses = [c.status for c in fake.calls("POST", "/channels/{channel_id}/messages")]
    assert statuses == [429, 200] and fault.hits == 1
    limited = fake.calls(status=429)[0]
    assert limited.response["retry_after"] == 0.05
    assert limited.response_headers["X-RateLimit-Scope"] == "user"
    assert fake.message(message.id).content == "after a rate limit"
    fake.fail(None, "/channels/{channel_id}/messages", status=429, global_=True)
    await channel.send("after a global rate limit")
    assert fake.calls(status=429)[1].response_headers["X-RateLimit-Global"] == "true"
    assert [c.status for c in fake.calls("POST", "/channels/{channel_id}/messages")] == [
        429,
        200,
        429,
        200,
    ]


async def test_survives_500_but_not_503(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    channel = _text_channel(bot, fake_guild)
    fake.fail("POST", r"/channels/\d+/messages", status=500)
    started = time.monotonic()
    await channel.send("after a server error")
    assert time.monotonic() - started >= 1.0, "discord.py waits a second before retrying a 500"
    assert [c.status for c in fake.calls("POST", "/channels/{channel_id}/messages")] == [500, 200]
    fake.fail("POST", r"/channels/\d+/messages", status=503)
    with pytest.raises(discord.DiscordServerError):
        await channel.send("503 is not retried by discord.py 2.7.1")


async def test_rate_limit_headers_pace_the_client(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    channel = _text_channel(bot, fake_guild)
    fake.rate_limits.limit = 2
    fake.rate_limits.window = 0.3
    started = time.monotonic()
    for index in range(4):
        await channel.send(f"message {index}")
    assert time.monotonic() - started >= 0.25, "discord.py waited for the bucket to reset"
    posts = fake.calls("POST", "/channels/{channel_id}/messages")
    assert [c.status for c in posts] == [200] * 4
    headers = posts[0].response_headers
    assert headers["X-RateLimit-Limit"] == "2" and headers["X-RateLimit-Remaining"] == "1"
    assert headers["X-RateLimit-Bucket"] == posts[1].response_headers["X-RateLimit-Bucket"]


async def test_wait_until_waits_while_the_bot_works_and_no_longer_than_its_patience(
    fake_guild: StandardGuild,
) -> None:
    fake = fake_guild.fake
    loop = asyncio.get_running_loop()
    started = loop.time()

    def at_work() -> bool | None:
        fake.answered += 1  # as if the bot had a call answered since the last look
        return loop.time() - started > 0.15 or None

    assert await fake.wait_until(at_work, 0.05), "three timeouts long, but never idle that long"

    def never_done() -> None:
        fake.answered += 1

    started = loop.time()
    with pytest.raises(TimeoutError):
        await fake.wait_until(never_done, 0.05)
    assert loop.time() - started >= PATIENCE * 0.05 - 0.02
    with pytest.raises(TimeoutError, match="without the bot doing anything"):
        await fake.wait_until(lambda: None, 0.05)  # idle: fails after its timeout


async def test_hanging_call_and_latency(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    channel = _text_channel(bot, fake_guild)
    fault = fake.hang("POST", r"/channels/\d+/messages")
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(channel.send("stuck"), timeout=0.2)
    assert fake.last_call("POST", "/channels/{channel_id}/messages").fault == "hang"
    fault.release()
    fake.delay("POST", r"/channels/\d+/messages", 0.15, count=1)
    started = time.monotonic()
    await channel.send("slow but fine")
    assert time.monotonic() - started >= 0.15


# reconnects and voice --------------------------------------------------------------------


async def test_resume_after_drop_replays_missed_events(
    fake_guild: StandardGuild, bot: MiniBot
) -> None:
    fake = fake_guild.fake
    await fake.drop_gateway()
    created = fake.create_channel(fake_guild.guild.id, "made-while-away")
    await fake.wait_until(lambda: fake.gateway.count("resume") == 1)
    guild = bot.get_guild(fake_guild.guild.id)
    assert guild is not None
    await fake.wait_until(lambda: guild.get_channel(created.id))
    assert fake.gateway.count("identify") == 1
    assert "resumed" in bot.seen_events
    replayed = next(e for e in fake.gateway.log if e.kind == "resume").detail
    assert replayed != "replayed=0"
    result = await fake.slash(fake_guild.guild.id, fake_guild.player("alice").id, "ping")
    assert result.content == "pong"


async def test_invalid_session_makes_the_client_identify_again(
    fake_guild: StandardGuild, bot: MiniBot
) -> None:
    fake = fake_guild.fake
    # the identify limit (5 s a bucket) and that of a guild's member list asked for again (the
    # client chunks the guild at each READY) are tests/fakediscord/test_gateway_limits.py's
    fake.gateway.limits.identify_interval = fake.gateway.limits.all_members_window = 0
    await fake.drop_gateway(resumable=False)
    await fake.wait_until(lambda: fake.gateway.count("identify") == 2)
    assert fake.gateway.count("invalid-session") == 1
    await fake.wait_for_session()
    result = await fake.slash(fake_guild.guild.id, fake_guild.player("alice").id, "ping")
    assert result.content == "pong"


class DummyVoiceServer:
    """Records what the fake asked it to expect."""

    endpoint = "127.0.0.1:9"

    def __init__(self) -> None:
        self.expected: list[tuple[int, int, int, str]] = []

    def expect(self, guild_id: int, channel_id: int, user_id: int, session_id: str) -> str:
        self.expected.append((guild_id, channel_id, user_id, session_id))
        return f"voice-token-{len(self.expected)}"


async def test_bot_voice_state_op4(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    server = DummyVoiceServer()
    fake.voice_server = server
    guild = bot.get_guild(fake_guild.guild.id)
    assert guild is not None
    voice = guild.get_channel(fake_guild.voice_channel.id)
    assert isinstance(voice, discord.VoiceChannel)
    await guild.change_voice_state(channel=voice, self_deaf=True)
    await fake.wait_until(lambda: guild.me.voice is not None and guild.me.voice.channel == voice)
    session = await fake.wait_for_session()
    assert server.expected == [(guild.id, voice.id, fake.bot_user.id, session.session_id)]
    assert fake.voice_requests[-1]["self_deaf"] is True
    server_update = fake.gateway.events("VOICE_SERVER_UPDATE")[-1].data
    assert server_update == {
        "token": "voice-token-1",
        "guild_id": str(guild.id),
        "endpoint": "127.0.0.1:9",
    }
    state_update = fake.gateway.events("VOICE_STATE_UPDATE")[-1].data
    assert state_update["session_id"] == session.session_id and state_update["channel_id"] == str(
        voice.id
    )
    await guild.change_voice_state(channel=None)
    await fake.wait_until(lambda: guild.me.voice is None)
    assert fake.bot_user.id not in fake.guild(guild.id).voice_states
    assert len(server.expected) == 1


async def test_members_join_voice_and_get_muted(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    gid = fake_guild.guild.id
    alice, boris = fake_guild.player("alice"), fake_guild.player("boris")
    fake.set_bot_permissions(gid, DEFAULT_BOT_PERMISSIONS | Permission.MUTE_MEMBERS)
    fake.set_voice_state(gid, alice.id, fake_guild.voice_channel.id)
    await fake.wait_until(lambda: (alice.id, fake_guild.voice_channel.id) in bot.voice_updates)
    guild = bot.get_guild(gid)
    assert guild is not None
    member = guild.get_member(alice.id)
    assert member is not None and member.voice is not None
    await member.edit(mute=True)
    assert fake.member(gid, alice.id).mute
    await fake.wait_until(lambda: member.voice is not None and member.voice.mute)
    not_in_voice = guild.get_member(boris.id)
    assert not_in_voice is not None
    with pytest.raises(discord.HTTPException) as caught:
        await not_in_voice.edit(mute=True)
    assert caught.value.code == 40032
    fake.set_voice_state(gid, alice.id, None)
    await fake.wait_until(lambda: (alice.id, None) in bot.voice_updates)


async def test_channel_kinds_in_state(fake_guild: StandardGuild) -> None:
    fake = fake_guild.fake
    category = fake.create_channel(fake_guild.guild.id, "Game", ChannelType.GUILD_CATEGORY)
    assert category.to_payload()["type"] == 4
    assert "bitrate" in fake_guild.voice_channel.to_payload()
    assert fake.find_channel(fake_guild.guild.id, "general") is fake_guild.text_channel


async def test_roles_follow_the_hierarchy(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    guild = bot.get_guild(fake_guild.guild.id)
    assert guild is not None
    dead = await guild.create_role(name="Dead")
    assert fake.find_role(guild.id, "Dead") is not None
    assert fake.state.role(guild.id, dead.id).position == 1, "new roles start at the bottom"
    bot_role = fake.state.bot_role(guild.id)
    assert bot_role is not None and bot_role.position == 2
    alice = guild.get_member(fake_guild.player("alice").id)
    assert alice is not None
    await alice.add_roles(dead)
    assert dead.id in fake.member(guild.id, alice.id).roles
    await fake.wait_until(lambda: dead in alice.roles)
    boss = fake.create_role(guild.id, "Boss")
    fake.update_role(guild.id, boss.id, position=5)
    cached_boss = await fake.wait_until(lambda: guild.get_role(boss.id))
    with pytest.raises(discord.Forbidden) as caught:
        await alice.add_roles(cached_boss)
    assert caught.value.code == 50013, "a role above the bot's own cannot be given"


async def test_slash_in_dms_and_context_menu(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    alice = fake_guild.player("alice")
    result = await fake.slash(None, alice.id, "ping")
    assert result.content == "pong"
    assert result.original is not None and result.original.is_dm
    assert fake.messages(dm_user_id=alice.id) == [result.original]
    unanswered = await fake.context_menu(
        fake_guild.guild.id, alice.id, "Report", fake_guild.player("boris"), wait=False
    )
    assert unanswered.payload["data"]["type"] == 2
    assert (
        unanswered.payload["data"]["resolved"]["users"][str(fake_guild.player("boris").id)][
            "username"
        ]
        == "boris"
    )


async def test_guild_added_while_connected(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    joined: list[discord.Guild] = []

    async def on_guild_join(guild: discord.Guild) -> None:
        joined.append(guild)

    bot.add_listener(on_guild_join)
    second = fake.create_guild("Second Club")
    await fake.wait_until(lambda: joined)
    assert joined[0].id == second.id and joined[0].me is not None


async def test_op7_reconnect_and_zombie_connection(fake_guild: StandardGuild) -> None:
    fake = fake_guild.fake
    fake.gateway.heartbeat_interval_ms = 50
    client = MiniBot()
    client._connection.heartbeat_timeout = 0.3
    async with running_client(fake, client):
        fake.request_reconnect()
        await fake.wait_until(lambda: fake.gateway.count("resume") == 1)
        fake.gateway.ack_heartbeats = False
        await fake.wait_until(lambda: fake.gateway.count("resume") == 2, timeout=3.0)
        fake.gateway.ack_heartbeats = True
        assert fake.gateway.count("identify") == 1
        result = await fake.slash(fake_guild.guild.id, fake_guild.player("alice").id, "ping")
        assert result.content == "pong"


BOT_SCRIPT = """
import os
import discord
import yarl

discord.http.Route.BASE = os.environ["DISCORD_API_BASE"]
discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(os.environ["DISCORD_GATEWAY_URL"])
client = discord.Client(intents=discord.Intents.default())
tree = discord.app_commands.CommandTree(client)


@tree.command(name="ping", description="Ping")
async def ping(interaction: discord.Interaction) -> None:
    await interaction.response.send_message(f"pong from {os.getpid()}")


client.run(os.environ["DISCORD_TOKEN"], log_handler=None)
"""


async def test_bot_in_a_subprocess_survives_sigkill(
    fake_guild: StandardGuild, tmp_path: Any
) -> None:
    import os
    import sys

    fake = fake_guild.fake
    script = tmp_path / "bot.py"
    script.write_text(BOT_SCRIPT)
    env = {
        **os.environ,
        "DISCORD_API_BASE": fake.api_base,
        "DISCORD_GATEWAY_URL": fake.gateway_url,
        "DISCORD_TOKEN": fake.token,
    }
    alice = fake_guild.player("alice").id
    first = await asyncio.create_subprocess_exec(sys.executable, str(script), env=env)
    second = None
    try:
        session = await fake.wait_for_session(timeout=20)
        answer = await fake.slash(fake_guild.guild.id, alice, "ping", timeout=10)
        assert answer.content == f"pong from {first.pid}"
        first.kill()
        await first.wait()
        await fake.wait_until(lambda: not session.connected)
        second = await asyncio.create_subprocess_exec(sys.executable, str(script), env=env)
        await fake.wait_until(
            lambda: any(s.connected for s in fake.gateway.sessions.values()), timeout=20
        )
        answer = await fake.slash(fake_guild.guild.id, alice, "ping", timeout=10)
        assert answer.content == f"pong from {second.pid}"
        assert fake.gateway.count("identify") == 2
    finally:
        for process in (first, second):
            if process is not None and process.returncode is None:
                process.kill()
                await process.wait()


async def test_timed_out_member_keeps_only_reading(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    guild = bot.get_guild(fake_guild.guild.id)
    assert guild is not None
    vera = guild.get_member(fake_guild.player("vera").id)
    assert vera is not None
    with pytest.raises(discord.Forbidden) as caught:
        await vera.timeout(datetime.timedelta(minutes=5))
    assert caught.value.code == 50013, "the default bot role has no MODERATE_MEMBERS"
    fake.set_bot_permissions(guild.id, DEFAULT_BOT_PERMISSIONS | Permission.MODERATE_MEMBERS)
    await vera.timeout(datetime.timedelta(minutes=5))
    assert fake.member(guild.id, vera.id).timed_out()
    text_id = fake_guild.text_channel.id
    assert (
        fake.permissions_for(guild.id, text_id, vera.id)
        == Permission.VIEW_CHANNEL | Permission.READ_MESSAGE_HISTORY
    )
    await fake.wait_until(lambda: vera.is_timed_out())
    channel = _text_channel(bot, fake_guild)
    assert channel.permissions_for(vera).value == fake.permissions_for(guild.id, text_id, vera.id)
    await vera.timeout(None)
    assert not fake.member(guild.id, vera.id).timed_out()
    owner = guild.get_member(fake_guild.owner.id)
    assert owner is not None
    with pytest.raises(discord.Forbidden):
        await owner.timeout(datetime.timedelta(minutes=1))


class ShardedBot(discord.AutoShardedClient):
    """An auto-sharded client that identifies its shards without discord.py's 5 s pause."""

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        """No pause between IDENTIFYs."""


async def test_auto_sharded_client_gets_each_guild_on_its_shard(fake_guild: StandardGuild) -> None:
    fake = fake_guild.fake
    for index in range(3):
        fake.create_guild(f"Club {index}")
    fake.recommended_shards = 2
    client = ShardedBot(intents=discord.Intents.default())
    async with running_client(fake, client):
        assert client.shard_count == 2
        assert len(client.guilds) == 4
        for guild in client.guilds:
            assert guild.shard_id == (guild.id >> 22) % 2
    assert fake.last_call("GET", "/gateway/bot").status == 200
    assert sorted(session.shard for session in fake.gateway.sessions.values() if session.shard) == [
        (0, 2),
        (1, 2),
    ]


async def test_an_enforced_nonce_gives_back_the_first_message(fake_guild: StandardGuild) -> None:
    """Discord's enforce_nonce: a retried create with the same nonce creates nothing new."""
    import aiohttp

    fake = fake_guild.fake
    channel = fake_guild.text_channel.id
    headers = {"Authorization": f"Bot {fake.token}"}
    body = {"content": "once", "nonce": "ob1", "enforce_nonce": True}
    async with aiohttp.ClientSession(headers=headers) as session:
        first = await (
            await session.post(f"{fake.api_base}/channels/{channel}/messages", json=body)
        ).json()
        again = await (
            await session.post(f"{fake.api_base}/channels/{channel}/messages", json=body)
        ).json()
        loose = await (
            await session.post(
                f"{fake.api_base}/channels/{channel}/messages",
                json={"content": "twice", "nonce": "ob1"},
            )
        ).json()
    assert first["id"] == again["id"]
    assert loose["id"] != first["id"]
    assert [m.content for m in fake.messages(channel)] == ["once", "twice"]
