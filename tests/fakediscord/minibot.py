"""The small bot the fake Discord's own tests drive (test_fake*.py), with the fixtures they share."""

from __future__ import annotations

import asyncio
import hashlib
import io
from collections.abc import AsyncIterator

import discord
import pytest_asyncio
from discord import app_commands
from discord.app_commands import locale_str
from discord.ext import commands

from tests.fakediscord import (
    StandardGuild,
    running_client,
)

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
        self._add_game_commands(self.tree)
        self._add_answer_commands(self.tree)

    def _add_game_commands(self, tree: app_commands.CommandTree[MiniBot]) -> None:
        """/ping and the /mafia group (options, a range, autocomplete, localised names)."""

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

    def _add_answer_commands(self, tree: app_commands.CommandTree[MiniBot]) -> None:
        """Commands answering in every way: later, with a view, a modal, files, in error."""

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
