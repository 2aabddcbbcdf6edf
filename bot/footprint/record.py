"""What the reconciler reads and keeps in a game's record: its own notes, the ids a making
again swaps in, what a pass's decisions rest on."""

from __future__ import annotations

import json
from typing import Any

from bot.footprint.declared import Path
from bot.service import LiveGame
from bot.storage import FINISHED, GameRecord
from bot.storage.shapes import Channels


def notes(channels: Channels) -> dict[str, Any]:
    """The reconciler's own part of a game's record."""
    state: dict[str, Any] = channels.setdefault("footprint", {})
    return state


def put(channels: Channels, path: Path, value: Any) -> None:
    """Set the id the record keeps at ``path`` (a role's or channel's place in it)."""
    target: Any = channels
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value


def children(channels: Channels) -> list[int]:
    """Every game channel in the game's category."""
    ids = [ids[kind] for ids in channels["cities"].values() for kind in ("text", "mafia")]
    return [int(value) for value in [*ids, channels["voice"], channels["dead"], channels["log"]]]


def kept_after_end(record: GameRecord) -> bool:
    """Whether a game has ended and its channels were kept at its end (not deleted)."""
    return (
        record.state in FINISHED
        and "roles" in record.channels
        and record.lobby.get("at_end", "keep") == "keep"
    )


def marker(live: LiveGame) -> str:
    """What a pass's decisions rest on: the game's places and roles, who plays and who lives."""
    channels = {key: value for key, value in live.record.channels.items() if key != "footprint"}
    game = live.game
    seats = (sorted(game.players), sorted(game.alive())) if game is not None else ()
    return json.dumps([channels, seats], sort_keys=True, default=str)


def noted_standins(state: dict[str, Any]) -> dict[int, dict[int, tuple[int, int]]]:
    """The member overwrites standing in for roles, as the last pass noted them: member →
    channel → (allow, deny)."""
    return {
        int(user): {int(c): tuple(v) for c, v in chans.items()}
        for user, chans in state.get("standins", {}).items()
    }


def note_pass(
    state: dict[str, Any],
    stuck: tuple[int, ...],
    powers: dict[str, list[str]],
    standins: dict[int, dict[int, tuple[int, int]]],
) -> None:
    """Note what a pass found that the next one compares with: the roles above the bot, who
    holds powers, the member overwrites standing in for roles."""
    state["stuck"] = list(stuck)
    state["powers"] = powers
    state["standins"] = {
        str(user): {str(c): list(v) for c, v in chans.items()} for user, chans in standins.items()
    }
