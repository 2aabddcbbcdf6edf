"""Durations as people write them: ``90``, ``90s``, ``10m``, ``1h30m``, ``10м``, ``1ч 30мин``.

One parser for every place that takes one: the commands' options (``/host timer``,
``/mafia schedule``...: :func:`bot.options.parse_duration`, which refuses in the member's
language) and the configuration file's timers (:mod:`bot.config`). It imports nothing of the
bot, so the configuration reads without it.
"""

from __future__ import annotations

import re

#: the longest duration an option takes, seconds (a week)
MAX_DURATION = 604800
#: a unit's spellings (casefolded) → seconds
UNITS = {
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours", "ч", "час", "часа", "часов"), 3600),
    **dict.fromkeys(
        ("m", "min", "mins", "minute", "minutes", "м", "мин", "минута", "минуты", "минут"), 60
    ),
    **dict.fromkeys(
        ("s", "sec", "secs", "second", "seconds", "с", "сек", "секунда", "секунды", "секунд"), 1
    ),
}
_PART = re.compile(r"(\d{1,7})\s*([^\d\s.,]+)\.?")


class BadDuration(ValueError):
    """Not a duration, or not one within the limits."""


def normalised(text: str) -> str:
    """The text as the parser reads it: spaces collapsed, case folded."""
    return " ".join(str(text).split()).casefold()


def seconds_in(text: str | int, *, allow_zero: bool = False, most: int = MAX_DURATION) -> int:
    """Seconds in a duration: a whole number of seconds, or units each at most once, the larger
    first (``1h30m``, ``1ч 30мин``), within ``most``.

    Raises:
        BadDuration: it is none of those, is above ``most``, or is 0 unless ``allow_zero``.
    """
    if isinstance(text, bool):
        raise BadDuration(text)
    value = str(text) if isinstance(text, int) else normalised(text)
    if value.isdigit() and len(value) <= 7:
        seconds = int(value)
    else:
        seconds, last, position = 0, None, 0
        for match in _PART.finditer(value):
            if value[position : match.start()].strip():
                raise BadDuration(text)
            unit = UNITS.get(match.group(2))
            if unit is None or (last is not None and unit >= last):
                raise BadDuration(text)
            seconds += int(match.group(1)) * unit
            last, position = unit, match.end()
        if last is None or value[position:].strip():
            raise BadDuration(text)
    if seconds > most or (seconds == 0 and not allow_zero):
        raise BadDuration(text)
    return seconds


__all__ = ["MAX_DURATION", "UNITS", "BadDuration", "normalised", "seconds_in"]
