"""The outbox's refusals and per-guild breaker (bot/outbox/breaker.py), on a clock the test moves."""

from __future__ import annotations

import asyncio
from typing import Any

import discord

from bot.outbox.breaker import (
    BACKOFF_MAX,
    BACKOFF_START,
    TRIP,
    Breaker,
    needs,
    refusal_of,
)
from bot.storage import OutboxItem

GUILD = 7


class Answer:
    """What discord.py reads of an aiohttp response."""

    def __init__(self, status: int) -> None:
        self.status = status
        self.reason = "x"


def refused(status: int, code: int, errors: dict[str, Any] | None = None) -> discord.HTTPException:
    body: dict[str, Any] = {"code": code, "message": "no"}
    if errors is not None:
        body["errors"] = errors
    kind = {403: discord.Forbidden, 404: discord.NotFound}.get(status, discord.HTTPException)
    return kind(Answer(status), body)  # type: ignore[arg-type]


def item(kind: str, **payload: Any) -> OutboxItem:
    return OutboxItem(kind, {}, payload, id=1, game_id=1)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def breaker(lacking: list[str] | None = None) -> tuple[Breaker, Clock]:
    clock = Clock()
    made = Breaker(clock=clock)
    made.guild_of = lambda game_id: GUILD
    made.lacking = lambda guild_id: lacking if lacking is not None else []
    return made, clock


def test_refusals_are_classified_as_discord_means_them() -> None:
    assert refusal_of(refused(403, 50013)) == "power"
    assert refusal_of(refused(403, 50001)) == "power"
    assert refusal_of(refused(403, 50007)) == "closed", "one member's DMs, not the guild"
    for code in (10003, 10007, 10011):
        assert refusal_of(refused(404, code)) == "gone"
    assert refusal_of(refused(400, 30005)) == "cap"
    assert refusal_of(refused(400, 30013)) == "cap"
    full = {"parent_id": {"_errors": [{"code": "CHANNEL_PARENT_MAX_CHANNELS", "message": "x"}]}}
    assert refusal_of(refused(400, 50035, full)) == "cap"
    assert refusal_of(refused(400, 50035)) is None
    assert refusal_of(refused(500, 0)) is None and refusal_of(TimeoutError()) is None


def test_each_kind_needs_its_power() -> None:
    assert needs(item("member_role")) == ("manage_roles",)
    assert needs(item("overwrite")) == ("manage_roles",)
    assert needs(item("delete_channel")) == ("manage_channels",)
    assert needs(item("edit_channel", body={"name": "x"})) == ("manage_channels",)
    assert "manage_roles" in needs(item("edit_channel", body={"permission_overwrites": []}))
    assert needs(item("send")) == () and needs(item("edit")) == ()


async def test_an_item_refused_for_a_power_the_bot_lacks_waits_for_it() -> None:
    lacking = ["manage_roles"]
    made, _ = breaker(lacking)
    role = item("member_role")
    assert made.keeps(role, refused(403, 50013))
    assert not made.keeps(item("send"), refused(403, 50013)), "a send needs no server power"
    waiting = asyncio.ensure_future(made.gate(role))
    await asyncio.sleep(0)
    await made.gate(item("send"))  # what needs nothing goes on
    assert not waiting.done() and made.held == 1
    made.changed(GUILD)  # an event that changes nothing: it waits on
    await asyncio.sleep(0)
    assert not waiting.done()
    lacking.clear()
    made.changed(GUILD)
    await asyncio.wait_for(waiting, 1)


async def test_repeated_refusals_open_the_guilds_breaker_for_a_growing_backoff() -> None:
    made, clock = breaker()
    role = item("member_role")
    for _ in range(TRIP - 1):
        assert not made.keeps(role, refused(403, 50013))
    assert not made.is_open(GUILD)
    made.keeps(role, refused(403, 50013))
    assert made.is_open(GUILD) and made.opened == 1
    assert not made.keeps(role, refused(404, 10011)), "an unknown target is not counted"
    for _ in range(TRIP):
        made.keeps(item("send"), refused(403, 50007))  # nor a member's closed DMs
    assert made.opened == 1
    clock.now += BACKOFF_START - 1
    assert made.is_open(GUILD)
    clock.now += 2
    await made.gate(role)  # the hold is over: this one probes
    made.keeps(role, refused(403, 50013))  # refused again: open at once, for longer
    assert made.is_open(GUILD) and made.opened == 2
    clock.now += BACKOFF_START + 1
    assert made.is_open(GUILD)
    clock.now += BACKOFF_START
    await made.gate(role)
    made.succeeded(role)  # accepted: closed, the backoff starts over
    for _ in range(TRIP):
        made.keeps(role, refused(403, 50013))
    clock.now += BACKOFF_START + 1
    assert not made.is_open(GUILD)
    assert BACKOFF_MAX >= 8 * BACKOFF_START


async def test_a_change_of_the_bots_powers_lets_one_item_through_an_open_breaker() -> None:
    made, clock = breaker()
    role = item("member_role")
    for _ in range(TRIP):
        made.keeps(role, refused(403, 50013))
    waiting = asyncio.ensure_future(made.gate(role))
    await asyncio.sleep(0)
    assert not waiting.done()
    made.changed(GUILD)
    await asyncio.wait_for(waiting, 1)
    assert not made.is_open(GUILD)


def test_a_guilds_misconfiguration_stays_far_under_the_budget() -> None:
    """Every item refused, one attempt each time the gate opens: refusals in 10 minutes."""
    made, clock = breaker()
    role = item("member_role")
    sent = 0
    end = clock.now + 600
    while clock.now < end:
        if made.is_open(GUILD):
            clock.now += 1
            continue
        asyncio.run(made.gate(role))
        sent += 1
        made.keeps(role, refused(403, 50013))
        clock.now += 0.01
    assert sent == TRIP + 3, sent  # probes after 1, 2 and 4 minutes of hold
