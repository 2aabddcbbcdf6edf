"""A game's end on Discord: where it is told, and what becomes of its channels."""

from __future__ import annotations

from bot.channels import end_of_game_items
from bot.footprint import end_items
from bot.i18n import NO_PINGS, phrase
from bot.outbox.intents import Send
from bot.service import LiveGame
from bot.storage import OutboxItem
from rules import Game


def closing_items(live: LiveGame, game: Game | None) -> list[OutboxItem]:
    """The channels' end (deleted, or locked and with ``reveal`` the mafia rooms and the log
    opened to the players), and the word that they are open, said in the lane of the lock
    (:func:`bot.footprint.end_items`) after the rooms' edits: once they are."""
    at_end = live.record.lobby.get("at_end", "keep")
    reveal = bool(live.record.lobby.get("reveal", True))
    channels = live.record.channels
    if at_end == "delete":
        return end_of_game_items(channels, game, at_end)
    items, lane = end_items(channels, game, reveal=reveal)
    if not items or not reveal or channels.get("log") is None:
        return items
    rooms = [
        f"<#{ids['mafia']}>" for ids in channels.get("cities", {}).values() if ids.get("mafia")
    ]
    line = phrase(live, "game_over.revealed", rooms=", ".join(rooms), log=f"<#{channels['log']}>")
    return items + [
        Send({"content": line, "allowed_mentions": NO_PINGS}, channel_id, lane=lane).item()
        for channel_id in closing_channels(live)
    ]


def closing_channels(live: LiveGame) -> list[int]:
    """Where a game's end and summary are told: its city channels, or, when they are deleted at the
    end, the channel where its lobby was opened."""
    if live.record.lobby.get("at_end", "keep") == "delete":
        channel = live.record.lobby.get("channel_id")
        return [int(channel)] if channel else []
    return [int(ids["text"]) for ids in live.record.channels.get("cities", {}).values()]


__all__ = ["closing_channels", "closing_items"]
