"""The fake Discord against the real discord.py: a small bot defined here drives every feature."""

from __future__ import annotations

import hashlib
import time

import discord
import pytest
from discord.http import Route

from tests.fakediscord import (
    FakeDiscord,
    StandardGuild,
    Upload,
    minibot,
    running_client,
)
from tests.fakediscord.minibot import MiniBot

pytestmark = [
    pytest.mark.filterwarnings("error::ResourceWarning"),
    pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning"),
]

no_leftover_tasks = minibot.no_leftover_tasks
bot = minibot.bot


# login and the gateway ------------------------------------------------------------------


async def test_login_identify_and_guild_cache(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    assert bot.user is not None and bot.user.id == fake.bot_user.id
    assert bot.application_id == fake.application_id
    assert [c.route for c in fake.calls()[:2]] == ["/users/@me", "/oauth2/applications/@me"]
    guild = bot.get_guild(fake_guild.guild.id)
    assert guild is not None and guild.name == "Mafia Club"
    assert guild.owner_id == fake_guild.owner.id
    assert guild.preferred_locale is discord.Locale.russian
    assert {m.name for m in guild.members} == {
        "prokurator",
        "host",
        "alice",
        "boris",
        "vera",
        "gleb",
        "dasha",
    }
    assert guild.chunked
    assert fake.gateway.count("identify") == 1
    identify = next(d for _, op, d in fake.gateway.received if op == 2)
    assert identify["intents"] & (1 << 1), "the members intent was asked for"
    assert any(op == 8 for _, op, _ in fake.gateway.received), (
        "discord.py chunked the members with op 8"
    )
    assert isinstance(guild.get_channel(fake_guild.text_channel.id), discord.TextChannel)
    assert isinstance(guild.get_channel(fake_guild.voice_channel.id), discord.VoiceChannel)
    assert guild.me.top_role.name == "Prokurator"


async def test_wrong_token_is_refused(fake_discord: FakeDiscord) -> None:
    from tests.fakediscord import point_discord_py_at

    point_discord_py_at(fake_discord.api_base, fake_discord.gateway_url)
    client = discord.Client(intents=discord.Intents.default())
    try:
        with pytest.raises(discord.LoginFailure):
            await client.login("not-the-token")
    finally:
        await client.close()
    assert fake_discord.last_call("GET", "/users/@me").status == 401


async def test_sync_sends_localized_commands_and_gets_ids(
    fake_guild: StandardGuild, bot: MiniBot
) -> None:
    fake = fake_guild.fake
    put = fake.last_call("PUT", "/applications/{application_id}/guilds/{guild_id}/commands")
    by_name = {command["name"]: command for command in put.json}
    assert set(by_name) == {
        "ping",
        "mafia",
        "slow",
        "vote",
        "form",
        "upload",
        "card",
        "broken",
        "sleepy",
    }
    assert by_name["mafia"]["name_localizations"] == {"ru": "мафия"}
    assert by_name["mafia"]["description_localizations"] == {"ru": "Игры в мафию"}
    new = next(o for o in by_name["mafia"]["options"] if o["name"] == "new")
    assert new["name_localizations"] == {"ru": "новая"}
    stored = fake.state.guild_commands[fake_guild.guild.id]
    fetched = await bot.tree.fetch_commands(guild=discord.Object(fake_guild.guild.id))
    assert {c.id for c in fetched} == set(stored)
    assert {c.name for c in fetched} == set(by_name)


async def test_invalid_command_names_are_refused_like_discord(
    fake_guild: StandardGuild, bot: MiniBot
) -> None:
    route = Route(
        "PUT",
        "/applications/{application_id}/guilds/{guild_id}/commands",
        application_id=fake_guild.fake.application_id,
        guild_id=fake_guild.guild.id,
    )
    bad = [{"name": "Mafia Game", "description": "x", "name_localizations": {"ru": "Мафия"}}]
    with pytest.raises(discord.HTTPException) as caught:
        await bot.http.request(route, json=bad)
    assert caught.value.code == 50035
    assert "name" in caught.value.text and "name_localizations" in caught.value.text


# interactions ------------------------------------------------------------------------


async def test_slash_command_answer(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    alice = fake_guild.player("alice")
    result = await fake.slash(fake_guild.guild.id, alice.id, "ping")
    assert result.callback_type == 4
    assert result.content == "pong"
    assert not result.ephemeral
    message = result.original
    assert message is not None and message.channel_id == fake_guild.text_channel.id
    assert message.interaction_metadata is not None and message.interaction_metadata["user"][
        "id"
    ] == str(alice.id)
    assert fake.messages(fake_guild.text_channel.id, kind="interaction") == [message]
    assert any(e.data["id"] == str(message.id) for e in fake.gateway.events("MESSAGE_CREATE"))


async def test_subcommand_with_typed_and_resolved_options(
    fake_guild: StandardGuild, bot: MiniBot
) -> None:
    fake = fake_guild.fake
    boris = fake_guild.player("boris")
    result = await fake.slash(
        fake_guild.guild.id,
        fake_guild.owner.id,
        "mafia new",
        {"cities": 3, "host": boris, "secret": True},
        locale="ru",
    )
    assert result.content == "cities=3 host=Boris secret=True locale=ru"
    assert result.ephemeral
    assert fake.messages(fake_guild.text_channel.id) == [result.original]
    assert fake.state.channel_messages(fake_guild.text_channel.id) == []
    sent = result.payload["data"]
    assert sent["options"][0]["name"] == "new" and sent["options"][0]["type"] == 1
    assert sent["resolved"]["members"][str(boris.id)]["roles"] == []
    with pytest.raises(ValueError, match="unknown option"):
        await fake.slash(
            fake_guild.guild.id,
            boris.id,
            "mafia new",
            {"cities": 2, "host": boris, "colour": "red"},
        )
    with pytest.raises(ValueError, match="above"):
        await fake.slash(fake_guild.guild.id, boris.id, "mafia new", {"cities": 9, "host": boris})
    with pytest.raises(ValueError, match="missing required"):
        await fake.slash(fake_guild.guild.id, boris.id, "mafia new", {"cities": 2})


async def test_deferred_answer_then_followups(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    result = await fake.slash(fake_guild.guild.id, fake_guild.player("vera").id, "slow")
    assert result.callback_type == 5 and result.deferred
    original = await result.wait_original()
    assert original.content == "done slowly"
    assert original.ephemeral, "a followup after an ephemeral deferral keeps it ephemeral"
    assert not original.loading
    assert original.edits and original.edits[0]["flags"] & (1 << 7), (
        "it was first a loading message"
    )
    followups = await result.wait_followups(1)
    assert [m.content for m in followups] == ["one more thing"]
    assert followups[0].ephemeral and followups[0].kind == "followup"
    posts = fake.calls("POST", "/webhooks/{application_id}/{interaction_token}")
    assert [c.query.get("wait") for c in posts] == ["1", "1"]


async def test_button_click_and_select(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    vote = await fake.slash(fake_guild.guild.id, fake_guild.owner.id, "vote")
    message = vote.original
    assert message is not None and message.custom_ids() == ["vote:yes", "vote:pick"]
    picked = await fake.select(message, "vote:pick", ["boris"], fake_guild.player("alice").id)
    assert picked.content == "picked boris" and picked.ephemeral
    click = await fake.click(message, "vote:yes", fake_guild.player("boris").id)
    assert click.callback_type == 7
    assert message.content == "boris voted yes"
    assert message.components == []
    assert message.edits[0]["content"] == "Vote now"
    assert any(e.data["id"] == str(message.id) for e in fake.gateway.events("MESSAGE_UPDATE"))
    with pytest.raises(ValueError, match="no component"):
        await fake.click(message, "vote:yes", fake_guild.player("boris").id)


async def test_autocomplete_choices(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    result = await fake.autocomplete(
        fake_guild.guild.id, fake_guild.player("gleb").id, "mafia join", "city", "mi"
    )
    assert result.callback_type == 8
    assert result.choices == [{"name": "Minsk", "value": "Minsk"}]
    joined = await fake.slash(
        fake_guild.guild.id, fake_guild.player("gleb").id, "mafia join", {"city": "Minsk"}
    )
    assert joined.content == "joined Minsk"


async def test_modal_round_trip(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    opened = await fake.slash(fake_guild.guild.id, fake_guild.player("dasha").id, "form")
    assert opened.callback_type == 9
    assert opened.modal is not None and opened.modal["title"] == "Your name"
    submitted = await fake.submit_modal(opened, {"modal:name": "Dasha"})
    assert submitted.content == "hello Dasha"
    with pytest.raises(ValueError, match="no input"):
        await fake.submit_modal(opened, {"modal:name": "Dasha", "modal:age": "7"})


async def test_attachment_option_is_downloadable(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    data = bytes(range(256)) * 40
    result = await fake.slash(
        fake_guild.guild.id,
        fake_guild.player("alice").id,
        "upload",
        {"file": Upload("notes.bin", data, "application/octet-stream")},
    )
    assert result.content == f"notes.bin {len(data)} {hashlib.sha256(data).hexdigest()[:12]}"
    download = fake.last_call("GET", "/attachments/{channel_id}/{attachment_id}/{filename}")
    assert download.status == 200


async def test_files_in_interaction_answers_and_edits(
    fake_guild: StandardGuild, bot: MiniBot
) -> None:
    fake = fake_guild.fake
    result = await fake.slash(fake_guild.guild.id, fake_guild.player("gleb").id, "card")
    assert result.callback is not None and result.callback.files[0].data == b"role:doctor"
    followups = await result.wait_followups(1)
    await fake.wait_until(lambda: followups[0].content == "extra, edited")
    original = result.original
    assert original is not None and original.ephemeral
    assert original.content == "your card (updated)"
    assert [(a.filename, a.data) for a in original.attachments] == [("card2.txt", b"role:sheriff")]
    assert original.edits[0]["attachments"] == ["card.txt"]
    patch = fake.last_call(
        "PATCH", "/webhooks/{application_id}/{interaction_token}/messages/@original"
    )
    assert [part.name for part in patch.parts] == ["payload_json", "files[0]"]
    edit = fake.last_call(
        "PATCH", "/webhooks/{application_id}/{interaction_token}/messages/{message_id}"
    )
    assert edit.params["message_id"] == str(followups[0].id)


async def test_duplicate_delivery_is_refused_on_second_ack(
    fake_guild: StandardGuild, bot: MiniBot
) -> None:
    fake = fake_guild.fake
    result = await fake.slash(fake_guild.guild.id, fake_guild.player("alice").id, "ping")
    await fake.resend(result, wait=True)
    assert result.deliveries == 2
    assert [a.status for a in result.attempts] == [200, 400]
    assert result.attempts[1].error_code == 40060
    assert len(fake.messages(fake_guild.text_channel.id)) == 1


async def test_refused_callback_returns_at_once(fake_guild: StandardGuild, bot: MiniBot) -> None:
    fake = fake_guild.fake
    started = time.monotonic()
    result = await fake.slash(fake_guild.guild.id, fake_guild.player("alice").id, "broken")
    assert time.monotonic() - started < 1.0
    assert result.callback is None
    assert [(a.status, a.error_code) for a in result.attempts] == [(400, 50035)]
    assert "code 50035" in result.describe()


async def test_disallowed_privileged_intent_closes_with_4014(fake_discord: FakeDiscord) -> None:
    fake_discord.gateway.allowed_privileged_intents = 0
    with pytest.raises(discord.PrivilegedIntentsRequired):
        async with running_client(fake_discord, MiniBot()):
            pass


async def test_late_acknowledgement_is_unknown_interaction(
    fake_guild: StandardGuild, bot: MiniBot
) -> None:
    fake = fake_guild.fake
    fake.interaction_ack_deadline = 0.05
    result = await fake.slash(
        fake_guild.guild.id, fake_guild.player("alice").id, "sleepy", wait=False
    )
    await fake.wait_until(lambda: bot.late_error is not None)
    assert bot.late_error == 10062
    assert result.callback is None and result.attempts[0].status == 404
