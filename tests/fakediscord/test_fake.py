"""The fake Discord against the real discord.py: a small bot defined here drives every feature."""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import io
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import discord
import pytest
import pytest_asyncio
from discord import app_commands
from discord.app_commands import locale_str
from discord.ext import commands
from discord.http import Route

from tests.fakediscord import (
    DEFAULT_BOT_PERMISSIONS,
    ChannelType,
    FakeDiscord,
    Overwrite,
    Permission,
    StandardGuild,
    Upload,
    running_client,
)
from tests.fakediscord.permissions import ALL_PERMISSIONS, apply_overwrites, base_permissions
from tests.fakediscord.server import PATIENCE

pytestmark = [
    pytest.mark.filterwarnings("error::ResourceWarning"),
    pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning"),
]

CITIES = ["Moscow", "Minsk", "Murmansk", "Kazan"]


@pytest_asyncio.fixture(autouse=True)
async def no_leftover_tasks() -> AsyncIterator[None]:
    """After the bot and the fake closed, nothing of theirs may still run."""
    yield
    current = asyncio.current_task()
    leftovers = [task for task in asyncio.all_tasks() if task is not current and not task.done()]
    if leftovers:
        # discord.py's own short timers (the 0.05 s wait for more guilds) may still be finishing.
        await asyncio.wait(leftovers, timeout=1.0)
    still_running = [task for task in leftovers if not task.done()]
    assert not still_running, still_running


RUSSIAN = {
    "mafia": "мафия",
    "Mafia games": "Игры в мафию",
    "new": "новая",
    "Start a game": "Начать игру",
}


class RussianTranslator(app_commands.Translator):
    """Translates the few strings of the test bot into Russian."""

    async def translate(
        self,
        string: locale_str,
        locale: discord.Locale,
        context: app_commands.TranslationContextTypes,
    ) -> str | None:
        if locale is discord.Locale.russian:
            return RUSSIAN.get(string.message)
        return None


class VoteView(discord.ui.View):
    """A button that rewrites its message and a select that answers privately."""

    def __init__(self) -> None:
        super().__init__(timeout=None)

    @discord.ui.button(label="Yes", custom_id="vote:yes", style=discord.ButtonStyle.success)
    async def yes(
        self, interaction: discord.Interaction, button: discord.ui.Button[VoteView]
    ) -> None:
        await interaction.response.edit_message(
            content=f"{interaction.user.name} voted yes", view=None
        )

    @discord.ui.select(
        custom_id="vote:pick",
        options=[
            discord.SelectOption(label="Alice", value="alice"),
            discord.SelectOption(label="Boris", value="boris"),
        ],
    )
    async def pick(
        self, interaction: discord.Interaction, select: discord.ui.Select[VoteView]
    ) -> None:
        await interaction.response.send_message(f"picked {select.values[0]}", ephemeral=True)


class NameModal(discord.ui.Modal, title="Your name"):
    """A one-field modal."""

    name: discord.ui.TextInput[NameModal] = discord.ui.TextInput(
        label="Name", custom_id="modal:name"
    )

    async def on_submit(self, interaction: discord.Interaction) -> None:
        await interaction.response.send_message(f"hello {self.name.value}")


class MiniBot(commands.Bot):
    """The minimal bot the fake is tested with."""

    def __init__(self) -> None:
        intents = discord.Intents.default()
        intents.members = True
        super().__init__(command_prefix=commands.when_mentioned, intents=intents)
        self.seen_events: list[str] = []
        self.late_error: int | None = None
        self.voice_updates: list[tuple[int, int | None]] = []
        self._add_commands()

    async def setup_hook(self) -> None:
        await self.tree.set_translator(RussianTranslator())

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        """discord.py waits 5 s before every IDENTIFY but the first; tests need not."""

    async def on_voice_state_update(
        self, member: discord.Member, before: discord.VoiceState, after: discord.VoiceState
    ) -> None:
        self.voice_updates.append((member.id, after.channel.id if after.channel else None))

    async def on_resumed(self) -> None:
        self.seen_events.append("resumed")

    def _add_commands(self) -> None:
        tree = self.tree

        @tree.command(name="ping", description="Ping the bot")
        async def ping(interaction: discord.Interaction) -> None:
            await interaction.response.send_message("pong")

        mafia = app_commands.Group(name=locale_str("mafia"), description=locale_str("Mafia games"))

        @mafia.command(name=locale_str("new"), description=locale_str("Start a game"))
        async def new(
            interaction: discord.Interaction,
            cities: app_commands.Range[int, 1, 4],
            host: discord.Member,
            secret: bool = False,
        ) -> None:
            await interaction.response.send_message(
                f"cities={cities} host={host.display_name} secret={secret} locale={interaction.locale.value}",
                ephemeral=secret,
            )

        @mafia.command(name="join", description="Join a city")
        async def join(interaction: discord.Interaction, city: str) -> None:
            await interaction.response.send_message(f"joined {city}")

        @join.autocomplete("city")
        async def join_city(
            interaction: discord.Interaction, current: str
        ) -> list[app_commands.Choice[str]]:
            return [
                app_commands.Choice(name=c, value=c)
                for c in CITIES
                if c.lower().startswith(current.lower())
            ]

        tree.add_command(mafia)

        @tree.command(name="slow", description="Answer later")
        async def slow(interaction: discord.Interaction) -> None:
            await interaction.response.defer(thinking=True, ephemeral=True)
            await asyncio.sleep(0.01)
            await interaction.followup.send("done slowly")
            await interaction.followup.send("one more thing", ephemeral=True)

        @tree.command(name="vote", description="Start a vote")
        async def vote(interaction: discord.Interaction) -> None:
            await interaction.response.send_message("Vote now", view=VoteView())

        @tree.command(name="form", description="Ask for a name")
        async def form(interaction: discord.Interaction) -> None:
            await interaction.response.send_modal(NameModal())

        @tree.command(name="upload", description="Read a file")
        async def upload(interaction: discord.Interaction, file: discord.Attachment) -> None:
            data = await file.read()
            digest = hashlib.sha256(data).hexdigest()[:12]
            await interaction.response.send_message(f"{file.filename} {len(data)} {digest}")

        @tree.command(name="card", description="Your role card")
        async def card(interaction: discord.Interaction) -> None:
            first = discord.File(io.BytesIO(b"role:doctor"), filename="card.txt")
            await interaction.response.send_message("your card", file=first, ephemeral=True)
            second = discord.File(io.BytesIO(b"role:sheriff"), filename="card2.txt")
            await interaction.edit_original_response(
                content="your card (updated)", attachments=[second]
            )
            extra = await interaction.followup.send("extra", wait=True)
            await extra.edit(content="extra, edited")

        @tree.command(name="broken", description="Answers with an invalid embed")
        async def broken(interaction: discord.Interaction) -> None:
            await interaction.response.send_message(
                embed=discord.Embed(title="Votes").add_field(name="x", value="")
            )

        @tree.command(name="sleepy", description="Answers too late")
        async def sleepy(interaction: discord.Interaction) -> None:
            await asyncio.sleep(0.2)
            try:
                await interaction.response.send_message("too late")
            except discord.NotFound as error:
                self.late_error = error.code


@pytest_asyncio.fixture
async def bot(fake_guild: StandardGuild) -> AsyncIterator[MiniBot]:
    """The test bot, logged in to the fake, its commands synced to the standard guild."""
    client = MiniBot()
    async with running_client(fake_guild.fake, client):
        guild = discord.Object(fake_guild.guild.id)
        client.tree.copy_global_to(guild=guild)
        await client.tree.sync(guild=guild)
        yield client


def _text_channel(bot: MiniBot, world: StandardGuild) -> discord.TextChannel:
    channel = bot.get_channel(world.text_channel.id)
    assert isinstance(channel, discord.TextChannel)
    return channel


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


async def test_an_enforced_nonce_gives_back_the_first_message(fake_guild):
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
