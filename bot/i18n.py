"""Languages: every player-facing string is a key in the Russian and English catalogues.

Catalogues are flat JSON files ``bot/locales/{ru,en}.json`` of key → text
with ``{name}`` fields filled in at run time. A text that holds a number is
an object of CLDR plural forms instead (``{"one": "{count} голос", "few":
"{count} голоса", "many": "{count} голосов", "other": "{count} голоса"}``;
English needs ``one`` and ``other``); the form is chosen by Babel's plural
rules for the language from the parameter named ``count`` (or the one named
by the object's ``"by"`` entry). Slash command names, descriptions and choices
are localised through :class:`bot.translator.CatalogueTranslator`, which looks
up the key given in a ``locale_str``'s extras.

This module does not import discord.py: ``mafia-bot simulate`` writes its
transcript from these catalogues, and discord.py with aiohttp would be most
of its start-up time.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from enum import Enum
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from babel import Locale

if TYPE_CHECKING:
    import discord
    from discord import app_commands

    from bot.service import LiveGame

log = logging.getLogger(__name__)

LANGUAGES = ("ru", "en")
DEFAULT = "ru"


Entry = str | dict[str, str]


@cache
def catalogue(language: str) -> dict[str, Entry]:
    """The catalogue of a language: key → text, or key → plural forms."""
    text = (resources.files("bot") / "locales" / f"{language}.json").read_text(encoding="utf-8")
    data: dict[str, Entry] = json.loads(text)
    return data


@cache
def plural_tags(language: str) -> frozenset[str]:
    """The CLDR plural categories of a language, ``other`` included."""
    return Locale.parse(language).plural_form.tags | {"other"}


@cache
def _plural_rule(language: str) -> Callable[[float], str]:
    """Babel's CLDR plural rule of a language (parsing the locale each time cost more than the
    rule itself)."""
    rule: Callable[[float], str] = Locale.parse(language).plural_form
    return rule


def warm_up() -> None:
    """Load the catalogues and Babel's plural rules of every language now (at start): the first
    plural of a language otherwise costs the command that needs it some 30 ms of locale data."""
    for language in LANGUAGES:
        catalogue(language)
        plural_category(language, 1)


def plural_category(language: str, number: float) -> str:
    """The CLDR plural category of ``number`` in ``language`` (``one``, ``few``, ``many``, ``other``)."""
    return _plural_rule(language)(number)


def _form(language: str, entry: Entry, params: dict[str, Any]) -> str:
    if isinstance(entry, str):
        return entry
    value: Any = params.get(entry.get("by", "count"))
    try:
        number = float(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        number = None
    if number is None:
        return entry["other"]
    number = int(number) if number.is_integer() else number
    return entry.get(plural_category(language, number), entry["other"])


def no_fallback(language: str, name: str) -> str | None:
    """Leave an unfilled field as it is."""
    return None


#: fills a field that no caller gave, from the language and its name (None: left as is); the
#: bot's composition installs one that turns ``{cmd_vote}`` into the command's mention
#: (:func:`use_fallback`, from :func:`bot.wiring.wire`)
fallback: Callable[[str, str], str | None] = no_fallback


def use_fallback(fill: Callable[[str, str], str | None]) -> None:
    """Fill the fields no caller gave with ``fill`` from now on."""
    global fallback
    fallback = fill


class _Missing(dict[str, Any]):
    def __init__(self, params: dict[str, Any], language: str) -> None:
        super().__init__(params)
        self.language = language

    def __missing__(self, key: str) -> str:
        found = fallback(self.language, key)
        return found if found is not None else "{" + key + "}"


def t(language: str, key: str, /, **params: Any) -> str:
    """The text of ``key`` in ``language`` with ``params`` filled in.

    A key missing in the language falls back to Russian, then to the key
    itself (logged): players never see a traceback for a missing string.
    """
    language = language if language in LANGUAGES else DEFAULT
    entry = catalogue(language).get(key)
    if entry is None:
        log.error("missing text %r in %r", key, language)
        language, entry = DEFAULT, catalogue(DEFAULT).get(key, key)
    return _form(language, entry, params).format_map(_Missing(params, language))


def phrase(live: LiveGame, key: str, **params: Any) -> str:
    """A text in the game's language."""
    return t(live.language, key, **params)


def phase_words(language: str, phase: str) -> str:
    """A phase as the rules name it (``day 2``) in words."""
    kind, number = phase.split()
    return t(language, f"phase_name.{kind}", number=number)


def winner_words(language: str, winner: str) -> str:
    """A winner as the rules name it in words: a city's side (``Verona:honest``), or a side
    that plays alone, by its name alone."""
    if ":" not in winner:
        return t(language, f"winner.{winner}")
    city, side = winner.rsplit(":", 1)
    return t(language, f"winner.{side}", city=city)


def mention(player: str) -> str:
    """A mention of the player (rendered as his name; announcements never ping)."""
    return f"<@{player}>" if player.isdigit() else player


#: a message's ``allowed_mentions`` that pings nobody
NO_PINGS: dict[str, Any] = {"parse": []}


def has(key: str) -> bool:
    """Whether both catalogues have ``key``."""
    return all(key in catalogue(language) for language in LANGUAGES)


def language_of_locale(locale: discord.Locale | str | None) -> str | None:
    """``ru`` or ``en`` for a Discord locale, None for others."""
    if locale is None:
        return None
    value = str(locale.value) if isinstance(locale, Enum) else str(locale)  # a discord.Locale
    if value.startswith("ru"):
        return "ru"
    if value.startswith("en"):
        return "en"
    return None


def reader_language(locale: discord.Locale | str | None) -> str:
    """The language a member reads, from his client's locale (an interaction's ``locale``) or
    a server's preferred locale: Russian for ``ru``, English for every other (Discord has no
    catalogue of ours in them, and English is the one most read)."""
    return "ru" if language_of_locale(locale) == "ru" else "en"


def key_str(key: str) -> app_commands.locale_str:
    """A command string from the catalogue key ``key``: its default (what Discord shows every
    client outside Russian and English) is the English catalogue's text, and its localisations
    come from the catalogues too (:class:`bot.translator.CatalogueTranslator`). English is
    written once, in ``en.json``.

    Raises:
        KeyError: the English catalogue has no such text (at import: a command cannot be
        declared with a text the catalogue lacks).
    """
    from discord import app_commands

    entry = catalogue("en")[key]
    if not isinstance(entry, str):
        raise KeyError(f"{key}: a command's text must be one string, not plural forms")
    return app_commands.locale_str(entry, key=key)
