"""Slash command options checked by the bot itself, not only by Discord's client.

Discord's client keeps a user to an option's choices, its range and its
length, but an interaction can be crafted, and discord.py hands a command
whatever it received (``app_commands.Range`` and ``choices`` only describe the
option to Discord). The command tree's interaction check
(:func:`options_within_limits`) compares every option of a slash command
with the limits its own declaration gives Discord, before the command runs:
one place, so no command can forget it. A refused option gets the
catalogue's "this option takes ..." privately and runs nothing.
"""

from __future__ import annotations

import logging
from typing import Any

import discord
from discord import app_commands
from discord.enums import AppCommandOptionType

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
    key = parameter.locale_name.extras.get("key") if parameter.locale_name is not None else None
    option = {"option": parameter.display_name, "option_key": key}
    choices = [choice.value for choice in parameter.choices]
    if choices and value not in choices:
        return OptionRefused("error.option_choice", **option)
    kind = parameter.type
    if kind in NUMBERS:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return OptionRefused("error.option_type", **option)
        low, high = parameter.min_value, parameter.max_value
        if (low is not None and value < low) or (high is not None and value > high):
            return OptionRefused("error.option_range", low="…" if low is None else low,
                                 high="…" if high is None else high, **option)
    elif kind is AppCommandOptionType.string:
        if not isinstance(value, str):
            return OptionRefused("error.option_type", **option)
        low, high = parameter.min_value, parameter.max_value  # a string's are its length
        if (low is not None and len(value) < low) or (high is not None and len(value) > high):
            return OptionRefused("error.option_length", low=0 if low is None else int(low),
                                 high="…" if high is None else int(high), **option)
    elif kind is AppCommandOptionType.boolean and not isinstance(value, bool):
        return OptionRefused("error.option_type", **option)
    return None


async def options_within_limits(interaction: discord.Interaction) -> bool:
    """The command tree's interaction check: refuse a slash command whose options break its
    own declaration (autocomplete, still being typed, is let through).

    Raises:
        OptionRefused: naming the first such option.
    """
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
            log.info("refused /%s by %s: option %s = %r (%s)", command.qualified_name, interaction.user.id,
                     parameter.display_name, given[parameter.display_name], problem.key)
            raise problem
    return True
