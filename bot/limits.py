"""Discord's size limits, and the two ways the bot keeps within them: split, or summarise.

Discord refuses a message whose content passes 2,000 characters, a custom id
past 100, a button label past 80, a select with more than 25 options or an
option label past 100 (Discord's "Message" and "Component" references). A
message that tells everything (a summary, the host's deal) is **split** into
several with :func:`chunks`, never in the middle of a mention or a timestamp;
a message the bot edits in place (the lobby, a ballot) **summarises** long
lists with :func:`listing`: the names that fit, then "and N more".
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

from bot.i18n import t

CONTENT = 2000
"""Characters in a message's content."""
CUSTOM_ID = 100
"""Characters in a component's custom id."""
BUTTON_LABEL = 80
"""Characters in a button's label."""
SELECT_OPTIONS = 25
"""Options in a select menu (and choices in an autocomplete answer)."""
OPTION_LABEL = 100
"""Characters in a select option's label or value, an autocomplete choice's name or value."""
PLACEHOLDER = 150
"""Characters in the hint a select menu shows before a choice (its "placeholder")."""
CITY_NAME = 40
"""Characters in a city's name: it goes into channel names, texts and tables."""
CITIES = 10
"""Cities in one game."""

#: what a split must never cut: mentions, custom emoji, timestamps, links
_UNBREAKABLE = re.compile(r"<[@#&:a-zA-Z!][^<>\s]*>|https?://\S+")


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis, never inside a mention."""
    if len(text) <= limit:
        return text
    cut = limit - 1
    for match in _UNBREAKABLE.finditer(text):
        if match.start() < cut < match.end():
            cut = match.start()
            break
    while cut > 0 and (_clings(text[cut]) or text[cut - 1] == ZWJ):
        cut -= 1  # never between a letter and its marks, nor inside an emoji's joined sequence
    return text[:cut].rstrip(" ,;") + "…"


ZWJ = "\u200d"
"""The zero-width joiner: what joins 👨 👩 👧 into one family emoji."""


def _clings(char: str) -> bool:
    """A character that belongs with the one before it: a combining mark, a joiner, a variation
    selector, an emoji skin tone."""
    return (
        unicodedata.category(char).startswith("M")
        or char in (ZWJ, "\u200c")
        or "\ufe00" <= char <= "\ufe0f"
        or "\U0001f3fb" <= char <= "\U0001f3ff"
    )


def _split_line(line: str, limit: int) -> list[str]:
    """A line longer than ``limit`` in pieces, broken after a comma or a space, outside mentions."""
    pieces: list[str] = []
    while len(line) > limit:
        protected = [(m.start(), m.end()) for m in _UNBREAKABLE.finditer(line)]
        cut = 0
        for index in range(limit, 0, -1):
            if line[index - 1] in ", " and not any(start < index < end for start, end in protected):
                cut = index
                break
        if cut == 0:  # one unbreakable run longer than the limit: cut it anyway
            cut = limit
        pieces.append(line[:cut].rstrip())
        line = line[cut:].lstrip(", ")
    if line:
        pieces.append(line)
    return pieces


def chunks(lines: Iterable[str], limit: int = CONTENT) -> list[str]:
    """Lines joined into messages of at most ``limit`` characters each.

    A line never straddles two messages unless it alone is longer than the
    limit; then it is broken after a comma or a space, never inside a mention.
    """
    result: list[str] = []
    current = ""
    for whole in lines:
        for line in _split_line(whole, limit):
            if current and len(current) + 1 + len(line) > limit:
                result.append(current)
                current = line
            else:
                current = f"{current}\n{line}" if current else line
    if current:
        result.append(current)
    return result


def sections(parts: Sequence[Sequence[str]], limit: int = CONTENT) -> list[str]:
    """Parts of lines as messages: all in one when they fit in one, else each part starting a
    message of its own (a summary's votes never spill in after its roll)."""
    together = chunks([line for part in parts for line in part], limit)
    if len(together) <= 1:
        return together
    return [chunk for part in parts for chunk in chunks(part, limit)]


def packed(blocks: Sequence[Sequence[str]], limit: int = CONTENT) -> list[str]:
    """Blocks of lines (each a heading and its lines: a city's roll) as messages: whole blocks
    share a message while they fit, a block starts the next message when it does not, and only a
    block longer than a whole message is cut, between its lines, each later piece opening with
    the block's heading again (a reader who lands there knows whose lines they are)."""
    result: list[str] = []
    current = ""
    for block in blocks:
        text = "\n".join(block)
        if len(text) <= limit:
            if current and len(current) + 1 + len(text) > limit:
                result.append(current)
                current = ""
            current = f"{current}\n{text}" if current else text
            continue
        if current:
            result.append(current)
        heading, rest = block[0], list(block[1:])
        if not rest or len(heading) > limit // 2:  # nothing to repeat it over: cut as lines
            pieces = chunks(block, limit)
        else:
            pieces = [f"{heading}\n{piece}" for piece in chunks(rest, limit - len(heading) - 1)]
        result.extend(pieces[:-1])
        current = pieces[-1]
    if current:
        result.append(current)
    return result


def block_sections(parts: Sequence[Sequence[Sequence[str]]], limit: int = CONTENT) -> list[str]:
    """:func:`sections` of parts made of blocks (:func:`packed`): all in one message when all
    fits in one, else each part from a message of its own, cut only between blocks."""
    together = [block for part in parts for block in part]
    if len("\n".join(line for block in together for line in block)) <= limit:
        return packed(together, limit)
    return [message for part in parts for message in packed(part, limit)]


def listing(language: str, items: Sequence[str], budget: int, *, separator: str = ", ") -> str:
    """As many of ``items`` as fit in ``budget`` characters, then "and N more" (a CLDR plural).

    Always within the budget; an empty list gives an empty string.
    """
    whole = separator.join(items)
    if len(whole) <= budget:
        return whole
    shown = 0
    used = 0
    for item in items:  # the most that fit, leaving room for the shortest possible tail
        cost = len(item) + (len(separator) if shown else 0)
        if used + cost > budget:
            break
        used += cost
        shown += 1
    while shown >= 0:
        more = t(language, "list.more", count=len(items) - shown)
        text = f"{separator.join(items[:shown])} {more}" if shown else more
        if len(text) <= budget:
            return text
        shown -= 1
    return clip(t(language, "list.more", count=len(items)), budget)
