"""A restart's repair passes yield to the players' commands (issue 29): each running game's first
pass of the footprint's reconciler since the start takes a turn, one at a time, and begins
between two players' commands, waiting a moment at most; later passes (a member's role given by
hand, a channel deleted) run at once."""

from __future__ import annotations

import asyncio

import pytest

import bot.footprint.reconciler as reconciler_module
from bot.service.answering import Applying
from tests.cogs.scenes import quick_edits
from tests.harness import bot_table


async def turns(count: int) -> None:
    """Let the event loop run ``count`` times (no wall time)."""
    for _ in range(count):
        await asyncio.sleep(0)


async def test_a_first_pass_begins_between_two_players_commands(monkeypatch):
    monkeypatch.setattr(reconciler_module, "FIRST_PASS_PATIENCE", 600.0)
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.new_game(cities="Верона")
        await table.drain()
        reconciler = table.bot.get_cog("HostCog").footprint
        game_id = table.live().id
        reconciler._queried.discard(game_id)  # as after a restart: its first pass to come
        before = reconciler.passes
        with table.bot.service.applying.one():  # a player's command is being applied
            reconciler.request(game_id)
            await table.fake.wait_until(
                lambda: reconciler._first_turns.locked(), 10.0, "the pass never took its turn"
            )
            await turns(200)
            assert reconciler.passes == before, "the pass ran beside the command"
        await table.fake.wait_until(
            lambda: reconciler.passes > before and not reconciler._first_turns.locked(),
            10.0,
            "the pass never ran after the command",
        )


async def test_a_first_pass_waits_for_the_commands_a_moment_at_most(monkeypatch):
    monkeypatch.setattr(reconciler_module, "FIRST_PASS_PATIENCE", 0.05)
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.new_game(cities="Верона")
        await table.drain()
        reconciler = table.bot.get_cog("HostCog").footprint
        game_id = table.live().id
        reconciler._queried.discard(game_id)
        before = reconciler.passes
        with table.bot.service.applying.one():  # commands without end: the pass is not starved
            reconciler.request(game_id)
            await table.fake.wait_until(
                lambda: reconciler.passes > before, 10.0, "the pass waited for ever"
            )


async def test_a_later_pass_does_not_wait_for_the_commands(monkeypatch):
    monkeypatch.setattr(reconciler_module, "FIRST_PASS_PATIENCE", 600.0)
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.new_game(cities="Верона")
        await table.drain()
        reconciler = table.bot.get_cog("HostCog").footprint
        game_id = table.live().id
        await table.fake.wait_until(
            lambda: game_id in reconciler._queried and not reconciler._first_turns.locked(),
            10.0,
            "the game's first pass never ran",
        )
        before = reconciler.passes
        with table.bot.service.applying.one():
            reconciler.request(game_id)
            await table.fake.wait_until(
                lambda: reconciler.passes > before, 10.0, "a later pass waited"
            )


async def test_quiet_is_at_once_with_no_command_and_waits_for_the_last_one():
    applying = Applying()
    assert await applying.quiet(600.0)
    with applying.one(), applying.one():
        waiting = asyncio.create_task(applying.quiet(600.0))
        await turns(10)
        assert not waiting.done() and applying.count == 2
    assert await asyncio.wait_for(waiting, 10.0) and applying.count == 0
    with applying.one():
        assert not await applying.quiet(0.01)


@pytest.fixture(autouse=True)
def _one_at_a_time() -> None:
    assert reconciler_module.FIRST_PASSES_AT_ONCE == 1
