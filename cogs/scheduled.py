"""A server's next scheduled game (``/mafia schedule``), as ``/mafia status`` and ``/help``
name it: a member asking what is on learns of the game to come, not only of the one open."""

from __future__ import annotations

from typing import Any

from bot.i18n import t
from bot.storage import Storage
from cogs.common import shown


def event_link(guild_id: int, event_id: int) -> str:
    """The link to a guild's scheduled event in Discord's client."""
    return f"https://discord.com/events/{guild_id}/{event_id}"


async def next_scheduled(storage: Storage, guild_id: int) -> dict[str, Any] | None:
    """The guild's earliest scheduled game still to open (its event made), or None."""
    return await storage.next_schedule(guild_id)


def scheduled_line(language: str, row: dict[str, Any]) -> str:
    """The line naming a scheduled game: its title, when (a date and "in 2 hours", each in the
    reader's own time zone and language), and its event."""
    starts = int(float(row["starts_at"]))
    event = row.get("event_id")
    return t(
        language,
        "schedule.next",
        title=shown(str(row["title"])),
        when=f"<t:{starts}:F>",
        relative=f"<t:{starts}:R>",
        link=event_link(int(row["guild_id"]), int(event)) if event else "",
    ).rstrip(" ,:")


__all__ = ["event_link", "next_scheduled", "scheduled_line"]
