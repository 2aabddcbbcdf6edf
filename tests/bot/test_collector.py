"""The collector policy: survivors of a full collection are frozen (later full collections skip
them), and a thaw gives them back so that a cycle among them is freed after all."""

from __future__ import annotations

import asyncio
import gc
import weakref

import discord

from bot.collector import YOUNG_THRESHOLD, CollectorPolicy
from tests.harness import bot_table


class Node:
    """A container the collector tracks; two of them make a reference cycle."""

    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> tuple[Node, weakref.ref[Node]]:
    first, second = Node(), Node()
    first.other, second.other = second, first
    return first, weakref.ref(second)


async def test_survivors_of_a_full_collection_are_frozen_and_a_thaw_frees_cycles_among_them() -> (
    None
):
    policy = CollectorPolicy(asyncio.get_running_loop(), clock=lambda: 0.0)
    try:
        policy.install()
        kept, alive = cycle()
        frozen = gc.get_freeze_count()
        gc.collect()  # a full collection: the cycle survives it (still referenced)
        await asyncio.sleep(0)  # the freeze runs on the loop right after
        assert policy.frozen_after >= 1
        assert gc.get_freeze_count() > frozen, "the survivors were not frozen"

        del kept  # now garbage, but frozen: a full collection leaves it alone
        gc.collect()
        await asyncio.sleep(0)
        assert alive() is not None

        policy.thaw()
        assert alive() is None, "the thaw did not free the cycle"
        assert gc.get_freeze_count() > 0  # what lives is frozen again
    finally:
        policy.uninstall()
        gc.unfreeze()


async def test_an_hour_after_the_last_thaw_a_full_collection_thaws_instead_of_freezing() -> None:
    now = [0.0]
    policy = CollectorPolicy(asyncio.get_running_loop(), thaw_every=3600.0, clock=lambda: now[0])
    try:
        policy.install()
        kept, alive = cycle()
        gc.collect()
        await asyncio.sleep(0)
        del kept
        assert alive() is not None  # frozen with the survivors
        now[0] = 3600.0
        gc.collect()  # this one is followed by a thaw, which frees the frozen cycle
        await asyncio.sleep(0)
        assert alive() is None
    finally:
        policy.uninstall()
        gc.unfreeze()


async def test_the_youngest_generation_is_collected_less_often_while_the_policy_runs() -> None:
    before = gc.get_threshold()
    policy = CollectorPolicy(asyncio.get_running_loop(), clock=lambda: 0.0)
    policy.install()
    try:
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
        young = gc.get_count()[0]
        kept = [Node() for _ in range(5_000)]  # more than CPython's 700: no young collection yet
        assert gc.get_count()[0] >= young + 5_000
        del kept
    finally:
        policy.uninstall()
    assert gc.get_threshold() == before


def interactions_alive() -> int:
    """discord.py interactions that are still in memory (tracked by the collector, not frozen)."""
    return sum(1 for o in gc.get_objects() if isinstance(o, discord.Interaction))


async def test_a_handled_interaction_is_freed_when_its_command_ends_not_by_a_collection() -> None:
    # discord.py's Interaction and its cached InteractionResponse point at each other: without
    # the release, every command left its interaction (member, user, options...) to the collector
    async with bot_table(players=4) as table:
        gc.collect()
        gc.disable()
        try:
            before = interactions_alive()
            await table.open_lobby(["p0", "p1", "p2"])  # a slash command and three button clicks
            for who in ("p0", "p1", "p3"):
                answered = await table.slash(who, "mafia status")
                assert answered.callback is not None
            # the release runs once each handling task is done (later on a loaded machine);
            # with the collector off, only the release can free them
            await table.fake.wait_until(
                lambda: interactions_alive() - before == 0 or None,
                5.0,
                "handled interactions are still in memory",
            )
        finally:
            gc.enable()
