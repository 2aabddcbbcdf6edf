"""Discord's global rate limit: the fake refuses a bot past it, and the bot keeps under it.

Discord lets a bot make 50 REST calls a second in all (interaction endpoints aside) and answers
429 ``global`` past that; the fake does the same (``fake.global_limit``). The bot paces every
call of discord.py's HTTP client (``bot.pacing``); its answers to interactions are not paced.
"""

from __future__ import annotations

import asyncio

from bot.pacing import Pacer, share
from tests.fakediscord.ratelimits import GlobalLimit
from tests.harness import bot_table


async def test_a_pacer_lets_a_burst_through_at_once_then_spaces_the_calls_evenly():
    now = [100.0]  # a fake clock: a loaded machine's late turns of the loop change nothing

    async def sleep(seconds: float) -> None:
        now[0] += max(0.0, seconds)
        await asyncio.sleep(0)

    pacer = Pacer(
        4, 0.2, burst=2, clock=lambda: now[0], sleep=sleep
    )  # one call every 0.05 s, two at once
    began: list[float] = []

    async def call() -> None:
        await pacer.place()
        began.append(now[0])

    start = now[0]
    await asyncio.gather(*(call() for _ in range(8)))
    assert len(began) == 8
    assert began[:2] == [start, start], "the burst begins at once"
    for earlier, later in zip(began[1:], began[2:], strict=False):  # then one per spacing
        assert later - earlier >= 0.05 - 1e-9
    assert began[-1] - start >= 6 * 0.05 - 1e-9
    assert pacer.waited == 6, "the burst (the first two) needs no wait"


def test_a_process_takes_its_shards_share_of_the_bots_limit():
    assert share(50, None, None) == 50
    assert share(50, [0, 1, 2, 3], 4) == 50
    assert share(50, [0, 1], 4) == 25
    assert share(50, [3], 16) == 3
    assert share(50, [0], 100) == 1


async def test_the_bot_starts_a_game_within_discords_global_limit():
    async with bot_table(players=12) as table:
        fake = table.fake
        # Counted, not enforced: on a loaded machine calls that began apart may reach the fake
        # together (the trip is the machine's, not the bot's); when each began is the bot's part.
        fake.global_limit = GlobalLimit(8, 0.25, enforce=False)
        pacer = table.bot.pacer
        pacer.limit, pacer.window, pacer.burst = 5, 0.35, 2  # one call every 0.07 s, two at once
        began: list[float] = []
        place = pacer.place

        async def placed() -> None:
            await place()
            began.append(pacer.clock())  # in the turn the pacer let it go

        pacer.place = placed  # type: ignore[method-assign]
        before = len(fake.calls())
        live = await table.new_game(cities="Верона, Падуя")
        assert live.game is not None and len(live.record.channels["cities"]) == 2
        paced = [
            c
            for c in fake.calls()[before:]
            if not c.route.startswith(("/interactions/", "/webhooks/"))
        ]
        assert len(paced) > 12, "a start makes many calls: the test must need pacing"
        assert len(began) >= len(paced)
        # at most limit + burst (7) begin in any 0.35 s: the eighth after another comes 0.35 s later
        assert all(
            later - earlier >= 0.35 - 1e-9 for earlier, later in zip(began, began[7:], strict=False)
        )
        assert (
            min(later - earlier for earlier, later in zip(began, began[2:], strict=False))
            >= 0.07 - 1e-9
        ), "no three calls begin within one spacing"
        assert pacer.waited > 0


async def test_the_fake_refuses_a_bot_past_the_global_limit_and_discord_py_waits_it_out():
    async with bot_table(players=12, refusals=True) as table:
        fake = table.fake
        fake.global_limit = GlobalLimit(6, 0.25)  # counted afresh from here
        table.bot.pacer.limit = 10_000  # as if the bot did not pace
        live = await table.new_game(cities="Верона, Падуя")
        assert live.game is not None and len(live.record.channels["cities"]) == 2
        assert fake.global_limit.rejected > 0
        refused = [c for c in fake.calls() if c.status == 429]
        assert refused and all(c.response["global"] is True for c in refused)
        assert not any(c.route.startswith("/interactions/") for c in refused), (
            "interaction endpoints are not bound to the global limit"
        )
