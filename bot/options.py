"""Slash command options checked by the bot itself, not only by Discord's client.

Discord's client keeps a user to an option's choices, its range and its
length, but an interaction can be crafted, and discord.py hands a command
whatever it received (``app_commands.Range`` and ``choices`` only describe the
option to Discord). The command tree's interaction check
(:func:`options_within_limits`) compares every option of a slash command
with the limits its own declaration gives Discord, before the command runs:
one place, so no command can forget it. A refused option gets the
catalogue's "this option takes ..." privately and runs nothing.

Durations (``/host timer``, ``/host extend``, ``/host setup leave_strike``) are
text options read here by :func:`parse_duration`: ``90s``, ``10m``, ``1h``,
``1h30m`` and plain seconds, with the Russian units as well (``10м``, ``1ч``,
``30с``, ``10 мин``). No well-kept library reads both languages' units
(``pytimeparse`` knows English only), so this is a small grammar of its own.
"""

from __future__ import annotations

import logging
from typing import Any

import discord
from discord import app_commands
from discord.enums import AppCommandOptionType

from bot.collector import release_when_done
from bot.durations import MAX_DURATION, BadDuration, normalised, seconds_in
from bot.errors import UserError
from bot.i18n import t

log = logging.getLogger(__name__)

NUMBERS = (AppCommandOptionType.integer, AppCommandOptionType.number)


class OptionRefused(app_commands.CheckFailure):
    """A slash command option outside what the command declares; ``key`` and ``params`` are
    the catalogue's text for the user."""

    def __init__(self, key: str, **params: Any) -> None:
        super().__init__(key)
        self.key = key
        self.params = params


def option_problem(parameter: app_commands.Parameter, value: Any) -> OptionRefused | None:
    """Why ``value`` is not something ``parameter`` takes, or None if it is."""

    def refused(key: str, **params: Any) -> OptionRefused:  # named only when refused
        option_key = (
            parameter.locale_name.extras.get("key") if parameter.locale_name is not None else None
        )
        return OptionRefused(key, option=parameter.display_name, option_key=option_key, **params)

    choices = [choice.value for choice in parameter.choices]
    if choices and value not in choices:
        return refused("error.option_choice")
    kind = parameter.type
    if kind in NUMBERS:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return refused("error.option_type")
        low, high = parameter.min_value, parameter.max_value
        if (low is not None and value < low) or (high is not None and value > high):
            return refused(
                "error.option_range",
                low="…" if low is None else low,
                high="…" if high is None else high,
            )
    elif kind is AppCommandOptionType.string:
        if not isinstance(value, str):
            return refused("error.option_type")
        low, high = parameter.min_value, parameter.max_value  # a string's are its length
        if (low is not None and len(value) < low) or (high is not None and len(value) > high):
            return refused(
                "error.option_length",
                low=0 if low is None else int(low),
                high="…" if high is None else int(high),
            )
    elif kind is AppCommandOptionType.boolean and not isinstance(value, bool):
        return refused("error.option_type")
    return None


async def options_within_limits(interaction: discord.Interaction) -> bool:
    """The command tree's interaction check: refuse a slash command whose options break its
    own declaration (autocomplete, still being typed, is let through).

    Raises:
        OptionRefused: naming the first such option.
    """
    # the first thing the tree runs for an interaction: its cycle is broken when the task ends
    release_when_done(interaction)
    if interaction.type is not discord.InteractionType.application_command:
        return True
    command = interaction.command
    if not isinstance(command, app_commands.Command):
        return True
    given = dict(iter(interaction.namespace))
    for parameter in command.parameters:
        if parameter.display_name not in given:
            continue
        problem = option_problem(parameter, given[parameter.display_name])
        if problem is not None:
            log.info(
                "refused /%s by %s: option %s = %r (%s)",
                command.qualified_name,
                interaction.user.id,
                parameter.display_name,
                given[parameter.display_name],
                problem.key,
            )
            raise problem
    return True


def parse_duration(text: str, *, allow_zero: bool = False) -> int:
    """Seconds in a duration such as ``90``, ``90s``, ``10m``, ``1h30m``, ``10м``, ``1ч 30мин``
    (:func:`bot.durations.seconds_in`, the parser the configuration's timers share).

    Raises:
        UserError: ``error.bad_duration`` naming what was typed (and ``0`` unless ``allow_zero``).
    """
    try:
        return seconds_in(text, allow_zero=allow_zero)
    except BadDuration:
        value = normalised(text)
        raise UserError(
            "error.bad_duration", value=value[:40] or "—", limit=MAX_DURATION // 86400
        ) from None


def duration_text(language: str, seconds: int) -> str:
    """``5400`` → "1 час 30 минут" (each unit by its plural form)."""
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    parts = [
        t(language, f"duration.{unit}", count=count)
        for unit, count in (("hours", hours), ("minutes", minutes), ("seconds", secs))
        if count
    ]
    return " ".join(parts) or t(language, "duration.seconds", count=0)
