"""Languages: every player-facing string is a key in the Russian and English catalogues.

Catalogues are flat JSON files ``bot/locales/{ru,en}.json`` of key → text
with ``{name}`` fields filled in at run time. Slash command names, descriptions and choices
are localised through :class:`CatalogueTranslator`, which looks up the key
given in a ``locale_str``'s extras.
"""

from __future__ import annotations

import json
import logging
from functools import cache
from importlib import resources
from typing import Any

import discord
from discord import app_commands

log = logging.getLogger(__name__)

LANGUAGES = ("ru", "en")
DEFAULT = "ru"


@cache
def catalogue(language: str) -> dict[str, str]:
    """The catalogue of a language."""
    text = (resources.files("bot") / "locales" / f"{language}.json").read_text(encoding="utf-8")
    data: dict[str, str] = json.loads(text)
    return data


class _Missing(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def t(language: str, key: str, /, **params: Any) -> str:
    """The text of ``key`` in ``language`` with ``params`` filled in.

    A key missing in the language falls back to Russian, then to the key
    itself (logged): players never see a traceback for a missing string.
    """
    text = catalogue(language if language in LANGUAGES else DEFAULT).get(key)
    if text is None:
        log.error("missing text %r in %r", key, language)
        text = catalogue(DEFAULT).get(key, key)
    return text.format_map(_Missing(params))


def has(key: str) -> bool:
    """Whether both catalogues have ``key``."""
    return all(key in catalogue(language) for language in LANGUAGES)


def language_of_locale(locale: discord.Locale | str | None) -> str | None:
    """``ru`` or ``en`` for a Discord locale, None for others."""
    if locale is None:
        return None
    value = locale.value if isinstance(locale, discord.Locale) else str(locale)
    if value.startswith("ru"):
        return "ru"
    if value.startswith("en"):
        return "en"
    return None


def key_str(default: str, key: str) -> app_commands.locale_str:
    """A command string whose localisations come from the catalogue key ``key``."""
    return app_commands.locale_str(default, key=key)


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
        return catalogue(language).get(key)
