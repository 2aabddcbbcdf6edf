"""``/admin``: the guild's language and host role (members who may manage the server).

Each command stores its own setting alone, so two at once never undo each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.i18n import key_str, t

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot


class AdminCog(commands.Cog):
    """Guild settings."""

    admin = app_commands.Group(
        name=key_str("cmd.admin.name"),
        description=key_str("cmd.admin.description"),
        guild_only=True,
        default_permissions=discord.Permissions(manage_guild=True),
    )

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot

    @admin.command(
        name=key_str("cmd.admin.language.name"),
        description=key_str("cmd.admin.language.description"),
    )
    @app_commands.rename(language=key_str("opt.language.name"))
    @app_commands.describe(language=key_str("opt.language.description"))
    @app_commands.choices(
        language=[
            app_commands.Choice(name=key_str("choice.ru"), value="ru"),
            app_commands.Choice(name=key_str("choice.en"), value="en"),
        ]
    )
    @app_commands.checks.has_permissions(manage_guild=True)
    async def language(self, interaction: discord.Interaction, language: str) -> None:
        assert interaction.guild_id is not None
        # one column each: a /admin hostrole at the same moment is not undone by this
        await self.bot.storage.set_guild_language(interaction.guild_id, language)
        for live in self.bot.service.games_of(interaction.guild_id):
            live.language = language
        await interaction.response.send_message(t(language, "admin.language"), ephemeral=True)

    @admin.command(
        name=key_str("cmd.admin.hostrole.name"),
        description=key_str("cmd.admin.hostrole.description"),
    )
    @app_commands.rename(role=key_str("opt.role.name"))
    @app_commands.describe(role=key_str("opt.role.description"))
    @app_commands.checks.has_permissions(manage_guild=True)
    async def hostrole(
        self, interaction: discord.Interaction, role: discord.Role | None = None
    ) -> None:
        assert interaction.guild_id is not None
        language = await self.bot.service.language(interaction.guild_id)
        await self.bot.storage.set_guild_host_role(
            interaction.guild_id, role.id if role else None, language=language
        )
        language = await self.bot.language_for(interaction)  # the answer is his alone
        key = "admin.hostrole" if role else "admin.hostrole_none"
        await interaction.response.send_message(
            t(language, key, role=role.mention if role else ""),
            ephemeral=True,
            allowed_mentions=discord.AllowedMentions.none(),
        )


async def setup(bot: ProkuratorBot) -> None:
    """Load the cog."""
    await bot.add_cog(AdminCog(bot))
