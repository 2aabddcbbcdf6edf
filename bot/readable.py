"""Discord's markup made readable outside Discord: what a transcript shows in place of ids.

A message's text holds codes the client draws as names: ``<@id>`` (a member), ``<@&id>`` (a
role), ``<#id>`` (a channel), ``</name sub:id>`` (a command), ``<t:unix:style>`` (a time the
client shows in its reader's zone), ``<:name:id>`` (a custom emoji). A transcript read in a
browser or a text editor has no client to draw them, so :class:`Readable` writes each as the
client would, with the names known when the game's channels were read back, and a time in the
server's time zone. No library does this: discord.py's ``clean_content`` needs the live
``Message`` objects and leaves times and commands as they are.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from babel.dates import format_date, format_datetime, format_time

#: every code :class:`Readable` writes out, one alternative each
MARKUP = re.compile(
    r"<@!?(?P<member>\d+)>"
    r"|<@&(?P<role>\d+)>"
    r"|<#(?P<channel>\d+)>"
    r"|</(?P<command>[^:<>]+):\d+>"
    r"|<t:(?P<time>-?\d+)(?::(?P<style>[tTdDfFR]))?>"
    r"|<a?:(?P<emoji>\w+):\d+>"
)


def zone_of(name: str) -> ZoneInfo:
    """The IANA time zone ``name`` (UTC when unknown: a transcript is never refused for it)."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


@dataclass
class Readable:
    """Names for the ids a game's messages hold, and the zone its times are shown in."""

    language: str
    zone: ZoneInfo = field(default_factory=lambda: ZoneInfo("UTC"))
    members: Mapping[str, str] = field(default_factory=dict)
    roles: Mapping[str, str] = field(default_factory=dict)
    channels: Mapping[str, str] = field(default_factory=dict)

    def text(self, content: str) -> str:
        """``content`` with every code written as the client shows it."""
        return MARKUP.sub(self._one, content)

    def moment(self, when: datetime.datetime, style: str = "f") -> str:
        """A moment in the zone, in the language's own way (Discord's styles: t, T, d, D, f, F;
        R, relative in a client, is written out whole, as a transcript outlives "in 5 minutes")."""
        local = when.astimezone(self.zone)
        locale = self.language
        if style == "t":
            return format_time(local, "short", locale=locale)
        if style == "T":
            return format_time(local, "medium", locale=locale)
        if style == "d":
            return format_date(local, "short", locale=locale)
        if style == "D":
            return format_date(local, "long", locale=locale)
        if style == "F":
            return format_datetime(local, "full", locale=locale)
        return format_datetime(local, "medium", locale=locale)

    def _one(self, found: re.Match[str]) -> str:
        kind = found.lastgroup
        value = found.group(kind or "")
        if kind == "member":
            return "@" + self.members.get(value, value)
        if kind == "role":
            return "@" + self.roles.get(value, value)
        if kind == "channel":
            return "#" + self.channels.get(value, value)
        if kind == "command":
            return "/" + value
        if kind == "emoji":
            return f":{value}:"
        seconds = int(found.group("time"))
        moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
        return self.moment(moment, found.group("style") or "f")


__all__ = ["MARKUP", "Readable", "zone_of"]
