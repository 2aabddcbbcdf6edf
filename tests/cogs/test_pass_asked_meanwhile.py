"""A pass asked for while the reconciler looks whether the game's lanes are still busy is never
lost: the outbox's idle hook may ask between the reconciler's two looks, while the second
still reads what was before; the running task sees it was asked and makes the pass."""

from __future__ import annotations

import asyncio

import pytest

import bot.footprint.reconciler as reconciler_module
from tests.cogs.test_footprint import host_cog
from tests.harness import bot_table


async def test_the_idle_hook_asking_between_the_two_looks_gets_its_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(reconciler_module, "SETTLE", 0.0)
    async with bot_table(players=8) as table:
        await table.new_game(cities="Верона", maniac=False)
        await table.drain()
        reconciler, game = host_cog(table).footprint, table.live().id
        task = reconciler._tasks.get(game)
        if task is not None:
            await task
        looks: list[str] = []
        passes: list[int] = []

        async def busy(game_id: int) -> bool:
            looks.append("look")
            if len(looks) == 2:  # the lane goes idle meanwhile; this look read what was before
                await reconciler._idle(game_id, "permissions")
                return True
            return len(looks) == 1

        async def reconcile(game_id: int) -> None:
            passes.append(game_id)

        monkeypatch.setattr(reconciler, "_busy", busy)
        monkeypatch.setattr(reconciler, "reconcile", reconcile)
        reconciler.request(game)
        await asyncio.wait_for(reconciler._tasks[game], 10.0)
        assert passes == [game]
        assert game not in reconciler._dirty and game not in reconciler._waiting
