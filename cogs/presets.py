"""Presets: named sets of a lobby's settings (roles, rule options, house rules, when the channels
are archived), so a host sets a game up by one name (``/host setup preset:NAME``). A few are built
in; a server saves its own (``/host preset save``, stored by
:meth:`bot.storage.Storage.save_guild_preset`). A preset never holds the cities (they depend on
who came) or the touring order (it names them).

Applying one replaces every setting it covers (what it leaves out goes back to the default), then
the other options of the same ``/host setup`` apply over it. The lobby names the preset, and says
so when the settings have been changed since.
"""

from __future__ import annotations

import copy
from typing import Any

from bot.display import shown
from bot.errors import UserError
from bot.i18n import LANGUAGES, phrase, t
from bot.service import LiveGame
from bot.storage.shapes import Lobby, as_json
from rules import RuleOptions
from rules.table import ROLES, SWITCHABLE

#: the roles a preset may set (``lobby.setup``; the cities are the game's own)
SETUP_KEYS = ("mafiosi", *(status.value for status in SWITCHABLE))
#: the house rules and the lobby's other settings a preset may set (top-level keys of the lobby)
HOUSE_KEYS = (
    "pings",
    "reveal",
    "leave_strike",
    "spectators",
    "archive_after",
    "idle_strike",
    "will",
    "quiet_nights",
)
#: rule options a preset never holds (they name the cities)
GAME_RULES = ("touring_order",)
#: the most presets a server saves (with the built-in ones, what autocomplete can list)
MOST_SAVED = 20
#: the longest name of a saved preset
NAME_LENGTH = 40


def preset_switches(preset: str) -> dict[str, Any]:
    """The roles a built-in preset switches on or off: their declarations' ``presets``."""
    return {row.status.value: row.presets[preset] for row in ROLES if preset in row.presets}


#: the built-in presets: key → settings (see :func:`settings_of`)
BUILTIN: dict[str, dict[str, dict[str, Any]]] = {
    "rules": {"setup": {}, "rules": {}, "house": {}},
    "beginners": {
        "setup": preset_switches("beginners"),
        "rules": {"last_word_seconds": 120},
        "house": {"will": 300},
    },
    "club": {
        "setup": preset_switches("club"),
        "rules": {},
        "house": {
            "will": 500,
            "idle_strike": 2,
            "leave_strike": 600,
            "spectators": "after",
            "quiet_nights": True,
        },
    },
    "night": {"setup": {}, "rules": {"first_phase": "night"}, "house": {}},
}


def settings_of(lobby: Lobby) -> dict[str, dict[str, Any]]:
    """What a preset holds of a lobby's settings: its roles, rule options and house rules."""
    setup = lobby.get("setup", {})
    rules = lobby.get("rules", {})
    return {
        "setup": {key: setup[key] for key in SETUP_KEYS if setup.get(key) is not None},
        "rules": {
            key: value
            for key, value in rules.items()
            if key not in GAME_RULES and value is not None
        },
        "house": {
            key: as_json(lobby)[key] for key in HOUSE_KEYS if as_json(lobby).get(key) is not None
        },
    }


def checked(settings: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A stored preset's settings as the bot can apply them.

    Raises:
        UserError: ``error.preset_unreadable``: a key or value the rules no longer take.
    """
    try:
        setup = dict(settings.get("setup", {}))
        rules = dict(settings.get("rules", {}))
        house = dict(settings.get("house", {}))
        RuleOptions.from_dict(rules)
    except Exception:
        raise UserError("error.preset_unreadable") from None
    if set(setup) - set(SETUP_KEYS) or set(house) - set(HOUSE_KEYS) or set(rules) & set(GAME_RULES):
        raise UserError("error.preset_unreadable")
    return {"setup": setup, "rules": rules, "house": house}


def apply_preset(lobby: Lobby, settings: dict[str, dict[str, Any]]) -> None:
    """Set a lobby's roles, rule options and house rules to a preset's (the rest to defaults)."""
    setup = lobby.setdefault("setup", {})
    for key in SETUP_KEYS:
        setup.pop(key, None)
    setup.update(copy.deepcopy(settings["setup"]))
    rules = lobby.setdefault("rules", {})
    for key in [key for key in rules if key not in GAME_RULES]:
        del rules[key]
    rules.update(copy.deepcopy(settings["rules"]))
    stored = as_json(lobby)
    for key in HOUSE_KEYS:
        stored.pop(key, None)
    stored.update(copy.deepcopy(settings["house"]))


def builtin_name(language: str, key: str) -> str:
    """A built-in preset's name in a language."""
    return t(language, f"preset.{key}")


def builtin_key(text: str) -> str | None:
    """The built-in preset ``text`` names (its key, or its name in any language)."""
    wanted = text.strip().casefold()
    for key in BUILTIN:
        if wanted == key or any(
            wanted == builtin_name(language, key).casefold() for language in LANGUAGES
        ):
            return key
    return None


def lobby_line(live: LiveGame) -> str | None:
    """The lobby's line naming its preset (and whether its settings were changed since)."""
    chosen = live.record.lobby.get("preset")
    if not chosen:
        return None
    name = (
        builtin_name(live.language, chosen["key"]) if chosen.get("key") else shown(chosen["name"])
    )
    line = phrase(live, "lobby.preset", name=name)
    if settings_of(live.record.lobby) != chosen.get("settings"):
        line += phrase(live, "lobby.preset_changed")
    return line


def chosen_preset(
    key: str | None, name: str, settings: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """What a lobby stores of the preset it was set from."""
    lobby: Lobby = {}
    apply_preset(lobby, settings)
    return {"key": key, "name": name, "settings": settings_of(lobby)}


def house_lines(live: LiveGame) -> list[str]:
    """The house rules in force that bind a living player, as the lobby and ``/help`` name them."""
    lobby = live.record.lobby
    lines = []
    if lobby.get("idle_strike"):
        lines.append(phrase(live, "lobby.idle_strike", count=int(lobby["idle_strike"])))
    if lobby.get("quiet_nights"):
        lines.append(phrase(live, "lobby.quiet_nights"))
    return lines


__all__ = [
    "BUILTIN",
    "MOST_SAVED",
    "NAME_LENGTH",
    "apply_preset",
    "builtin_key",
    "builtin_name",
    "checked",
    "chosen_preset",
    "house_lines",
    "lobby_line",
    "settings_of",
]
