"""Waiting on the bot's storage in tests: a command is stored when its commit ends, which comes
after the game in memory has moved on (the service applies, then commits). A test that saw the
stage move and reads the command log at once may read it before the commit lands; it waits here.

The timeouts bound a broken run; they are not timings (a loaded machine is slow)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

PATIENCE = 60.0


async def stored_commands(
    storage: Any, game_id: int, done: Callable[[list[Any]], bool], timeout: float = PATIENCE
) -> list[Any]:
    """The game's stored commands, once ``done`` holds for them."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not done(rows := await storage.commands(game_id)):
        assert loop.time() < end, f"game {game_id}: the command log never got there: {rows}"
        await asyncio.sleep(0.01)
    return rows


def last_verb(verb: str) -> Callable[[list[Any]], bool]:
    """``done`` for :func:`stored_commands`: the last stored command has this verb."""
    return lambda rows: bool(rows) and rows[-1].command.get("verb") == verb
