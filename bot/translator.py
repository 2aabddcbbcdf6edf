"""Slash commands in the players' language, from the catalogues of :mod:`bot.i18n`."""

from __future__ import annotations

import discord
from discord import app_commands

from bot.i18n import catalogue, language_of_locale


class CatalogueTranslator(app_commands.Translator):
    """Localises slash commands from the catalogues: Russian and English (both variants)."""

    async def translate(
        self,
        string: app_commands.locale_str,
        locale: discord.Locale,
        context: app_commands.TranslationContextTypes,
    ) -> str | None:
        key = string.extras.get("key")
        language = language_of_locale(locale)
        if key is None or language is None:
            return None
        entry = catalogue(language).get(key)
        return entry if isinstance(entry, str) else None
