"""What members typed (nicknames, city names, titles), as a message shows it: as written.

Discord renders a message's text as markdown and turns ``<@id>``, ``<#id>``, ``<t:…>``,
``</cmd:id>`` and ``@everyone`` into mentions, channels, times and commands; a right-to-left
override (U+202E) turns the rest of the line round. A name passed through :func:`shown` does
none of that: markdown and mentions are escaped, the directional controls dropped. Labels and
menu options, which Discord never renders, take the name as it is.
"""

from __future__ import annotations

import re

import discord

#: the invisible controls that reorder text (the bidirectional embeddings, overrides and
#: isolates, and the marks): dropped, so a name cannot turn the line after it round
BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: what Discord makes a mention, a channel, a role, a time, a command or an emoji of
DISCORD_CODE = re.compile(r"<(?=[@#:/]|t:|a:)")


def shown(text: str) -> str:
    """``text`` (a member's name, or what he typed) as a message shows it: as written, never as
    markdown (code fences, masked links, headings), a mention, a channel, a time or a command,
    and never turning the line round."""
    plain = BIDI.sub("", str(text))
    escaped = discord.utils.escape_markdown(plain).replace("`", "\\`").replace("\\\\`", "\\`")
    return DISCORD_CODE.sub(r"\\<", discord.utils.escape_mentions(escaped))


__all__ = ["BIDI", "shown"]
