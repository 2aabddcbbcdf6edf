"""The gateway's budget (issue 29, item 4): member lookups after a restart batched per guild and
paced per shard below Discord's 120 sends a minute, with room for a voice join; IDENTIFY turns,
5 s apart per ``max_concurrency`` bucket, shared through PostgreSQL by the processes of a bot.

The fake enforces Discord's limits (``tests/fakediscord/gateway_limits.py``): 4008 past 120
sends, Invalid Session for an IDENTIFY too soon, RATE_LIMITED for member requests over their
limit. The pacing's time is a clock the test moves; discord.py's own limiter (110 sends a
minute, then every send held, voice included) runs on the wall's, so a test never sends more
than it allows in one real minute unless it means to.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from bot.config import Config
from bot.identify import KEY, IdentifyTurns
from bot.members import PER_MINUTE, MemberRequests
from bot.storage import Storage
from tests.fakediscord import FakeDiscord, build_standard_guild
from tests.harness import NO_TIMERS, Table, bot_on

OP_REQUEST_MEMBERS = 8
#: open games at the restart of the first test (one per guild)
GAMES = 1000


class Minutes:
    """The pacing's clock and sleep: time moves only when the test says, and a sleeper wakes
    once the clock passed its time."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleepers = 0
        self._moved = asyncio.Condition()

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        until = self.now + seconds
        async with self._moved:
            self.sleepers += 1
            await self._moved.wait_for(lambda: self.now >= until)
            self.sleepers -= 1

    async def advance(self, seconds: float) -> None:
        async with self._moved:
            self.now += seconds
            self._moved.notify_all()


@asynccontextmanager
async def many_guilds(guilds: int, members: int = 16) -> AsyncIterator[tuple[Table, list[int]]]:
    """The bot on a fake with ``guilds`` guilds (the first a standard one) of ``members``
    members each, on one shard; yields the table and the guilds' ids."""
    fake = FakeDiscord()
    world = build_standard_guild(fake, players=[f"p{i}" for i in range(members)])
    ids = [world.guild.id]
    for g in range(1, guilds):
        owner = fake.create_user(f"host{g}")
        guild = fake.create_guild(f"Club {g}", owner=owner)
        fake.create_channel(guild.id, "general")
        for p in range(members):
            fake.add_member(guild.id, f"g{g}p{p}")
        ids.append(guild.id)
    await fake.start()
    try:
        with tempfile.TemporaryDirectory() as folder:
            config = replace(Config(timers=NO_TIMERS), database=Path(folder) / "bot.sqlite3")
            async with bot_on(fake, world, config) as table:
                yield table, ids
    finally:
        await fake.close()


def player_ids(fake: FakeDiscord, guild_id: int) -> list[int]:
    """Every member of a fake guild but its owner and the bot: the players of its open game."""
    guild = fake.state.guilds[guild_id]
    skip = {guild.owner_id, fake.state.bot_user.id}
    return [uid for uid in guild.members if uid not in skip]


def member_requests(fake: FakeDiscord) -> list[dict[str, object]]:
    return [d for _, op, d in fake.gateway.received if op == OP_REQUEST_MEMBERS]


async def test_a_restart_s_member_lookups_keep_within_the_budget_and_a_voice_join_is_not_held(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """1,000 open games on one shard ask for their players at once, as the reconciler's first
    passes do after a restart: one request per guild, at most 80 in a minute; a voice join sent
    meanwhile reaches Discord at once; nothing is held, closed or rate limited."""
    caplog.set_level(logging.WARNING, logger="discord.gateway")
    async with many_guilds(GAMES, members=6) as (table, guild_ids):
        fake, bot = table.fake, table.bot
        time = Minutes()
        bot.members = MemberRequests(clock=time.clock, sleep=time.sleep)
        guilds = [bot.get_guild(guild_id) for guild_id in guild_ids]
        lookups = [
            asyncio.create_task(bot.members.fetch(guild, player_ids(fake, guild.id)))
            for guild in guilds
            if guild is not None
        ]
        await fake.wait_until(lambda: len(member_requests(fake)) >= PER_MINUTE or None)
        await fake.wait_until(lambda: time.sleepers or None)  # the budget is spent: it waits
        assert len(member_requests(fake)) == PER_MINUTE
        assert bot.members.waiting() == GAMES - PER_MINUTE
        # a last word's voice join, now: it goes out at once, not after the minute
        voice = table.world.voice_channel
        await bot.get_guild(table.guild_id).change_voice_state(channel=bot.get_channel(voice.id))
        # (held, it would wait out discord.py's minute; the fake sees it in milliseconds)
        await fake.wait_until(
            lambda: (
                any(str(r.get("channel_id")) == str(voice.id) for r in fake.voice_requests) or None
            ),
            timeout=5.0,
            message="the voice join was held",
        )
        shard = bot.get_shard(0)
        assert shard is not None and not shard.is_ws_ratelimited()
        # one request per guild, naming each of its players
        first = {str(request["guild_id"]): request for request in member_requests(fake)}
        assert len(first) == PER_MINUTE
        for guild_id, request in first.items():
            assert sorted(map(int, request["user_ids"])) == sorted(  # type: ignore[call-overload]
                player_ids(fake, int(guild_id))
            )
        for task in lookups:
            task.cancel()
    assert fake.gateway.rate_limited == 0  # no 4008
    assert fake.gateway.limits.members_rate_limited == 0
    assert fake.gateway.limits.bad_member_requests == 0
    assert [r.message for r in caplog.records if "ratelimited" in r.message] == []


async def test_every_guild_is_asked_once_in_turn_and_its_members_are_cached() -> None:
    """With a budget of 30 a minute, 70 guilds' lookups take three minutes of the pacing's
    clock, never more than 30 in one; two lookups of one guild that wait together are one
    request; each member asked for is in the bot's cache once its lookup returns."""
    async with many_guilds(70) as (table, guild_ids):
        fake, bot = table.fake, table.bot
        time = Minutes()
        bot.members = MemberRequests(per_window=30, clock=time.clock, sleep=time.sleep)
        guilds = [guild for guild in map(bot.get_guild, guild_ids) if guild is not None]
        halves = []
        for guild in guilds:
            players = player_ids(fake, guild.id)
            halves += [players[:8], players[8:]]
        lookups = [
            asyncio.create_task(bot.members.fetch(guild, half))
            for guild, half in zip([g for g in guilds for _ in (0, 1)], halves, strict=True)
        ]
        per_minute = []
        for minute in range(3):
            sent = len(member_requests(fake))
            expected = min(30, 70 - sent)
            await fake.wait_until(lambda n=sent + expected: len(member_requests(fake)) >= n or None)
            if minute < 2:
                await fake.wait_until(lambda: time.sleepers or None)
            per_minute.append(len(member_requests(fake)) - sent)
            await time.advance(60)
        await asyncio.wait_for(asyncio.gather(*lookups), 30)
        assert per_minute == [30, 30, 10]
        assert sorted(str(r["guild_id"]) for r in member_requests(fake)) == sorted(
            map(str, guild_ids)
        )
        for guild in guilds:
            assert all(guild.get_member(uid) is not None for uid in player_ids(fake, guild.id))
        # cached now: asking again sends nothing
        await bot.members.fetch(guilds[0], player_ids(fake, guilds[0].id))
        assert len(member_requests(fake)) == 70 and bot.members.sent == 70
    assert fake.gateway.rate_limited == 0


async def test_identify_turns_in_memory_are_5_s_apart_per_bucket() -> None:
    time = Minutes()
    turns = IdentifyTurns(None, max_concurrency=2, interval=5.0, sleep=time.sleep, clock=time.clock)
    assert await turns.take(0) == 0 and await turns.take(1) == 0  # two buckets: at once
    third = asyncio.create_task(turns.take(2))  # bucket 0 again
    while not time.sleepers:
        await asyncio.sleep(0)
    await time.advance(4.9)
    assert not third.done()
    await time.advance(0.1)
    assert await third == pytest.approx(5.0)


async def test_processes_sharing_postgresql_identify_5_s_apart_per_bucket(
    postgres_url: str,
) -> None:
    """Three processes (each its own storage on one database) identify shard 0, 1 and 2 of a
    bot with ``max_concurrency`` 2 at the same moment: shards 0 and 2 share bucket 0 and get
    turns an interval apart by the server's clock; shard 1 goes at once."""
    interval = 0.5
    storages = [await Storage.open(postgres_url) for _ in range(3)]
    try:
        turns = [
            IdentifyTurns(storage, max_concurrency=2, interval=interval) for storage in storages
        ]
        assert all(turn.shared for turn in turns)

        waited = await asyncio.gather(*(turn.take(shard) for shard, turn in enumerate(turns)))
        assert waited[1] == 0  # bucket 1 had no turn yet
        assert sorted([waited[0], waited[2]])[0] == 0 < sorted([waited[0], waited[2]])[1]
        (bucket, earlier), (_, later) = sorted([turns[0].taken[0], turns[2].taken[0]])
        assert bucket == 0 and turns[1].taken[0][0] == 1
        # by the server's clock, the later turn is an interval or more after the earlier one,
        # and it is the one stored
        assert later - earlier >= interval
        assert float(await storages[0].meta(KEY.format(bucket=0)) or "nan") == later
    finally:
        for storage in storages:
            await storage.close()


async def test_after_a_restart_the_reconciler_asks_for_a_game_s_players_in_one_request() -> None:
    """The real path: a running game, the bot stopped and started again on its database; the
    footprint's first pass asks for the game's players through :mod:`bot.members`, in one
    request naming every one of them."""
    from tests.cogs.test_provision import restartable

    async with restartable(12) as (fake, world, config):
        async with bot_on(fake, world, config) as first:
            live = await first.new_game(cities="Верона, Падуя")
            await first.drain()
            players = sorted(int(pid) for pid in live.game.players)  # type: ignore[union-attr]
        before = len(member_requests(fake))
        async with bot_on(fake, world, config) as second:
            await fake.wait_until(
                lambda: len(member_requests(fake)) > before or None,
                10.0,
                "the restarted bot asked for no member",
            )
            await second.drain()
            asked = member_requests(fake)[before:]
            assert second.bot.members.sent == 1
        assert [str(request["guild_id"]) for request in asked] == [str(world.guild.id)]
        assert sorted(map(int, asked[0]["user_ids"])) == players  # type: ignore[call-overload]
    assert fake.gateway.rate_limited == 0 and fake.gateway.limits.members_rate_limited == 0


async def test_shards_of_different_buckets_identify_at_once_and_none_is_refused(
    tmp_path: Path,
) -> None:
    """The bot reads ``max_concurrency`` from ``GET /gateway/bot``: with 2, shards 0 and 1 are
    two buckets and IDENTIFY together, with the production turn of 5.5 s and the fake refusing
    any IDENTIFY of a bucket sooner than 5 s after the last."""
    from bot.identify import TURN
    from tests.storage.test_shards import guilds_on_every_shard

    fake = FakeDiscord()
    fake.recommended_shards = 2
    fake.gateway.limits.max_concurrency = 2
    worlds = await guilds_on_every_shard(fake, 2)
    await fake.start()
    try:
        config = replace(Config(timers=NO_TIMERS), database=tmp_path / "bot.sqlite3")
        async with bot_on(fake, worlds[0], config, identify_pause=TURN) as table:
            turns = table.bot.identify_turns
            assert turns is not None and turns.max_concurrency == 2
            assert sorted(bucket for bucket, _ in turns.taken) == [0, 1]
            assert turns.waited == 0
    finally:
        await fake.close()
    assert fake.gateway.count("identify") == 2
    assert fake.gateway.limits.identifies_too_soon == 0


class QuietGuild:
    """A guild whose member requests Discord leaves unanswered ``silent`` times, then answers."""

    def __init__(self, silent: int) -> None:
        self.id, self.shard_id, self.silent = 1, 0, silent
        self.asked: list[list[int]] = []
        self.cached: set[int] = set()

    def get_member(self, user_id: int) -> object | None:
        return object() if user_id in self.cached else None

    async def query_members(self, *, user_ids: list[int], limit: int, cache: bool) -> list[object]:
        self.asked.append(list(user_ids))
        assert limit == len(user_ids) <= 100 and cache
        if len(self.asked) <= self.silent:
            raise TimeoutError  # as discord.py's wait for the chunks ends
        self.cached.update(user_ids)
        return []


async def test_a_request_discord_left_unanswered_is_asked_once_more_then_given_up() -> None:
    answered, lost = QuietGuild(silent=1), QuietGuild(silent=5)
    members = MemberRequests()
    try:
        await asyncio.wait_for(members.fetch(answered, range(150)), 10)  # type: ignore[arg-type]
        # 150 ids: 100, then 50; the first unanswered and asked again with the ones left
        assert [len(ids) for ids in answered.asked] == [100, 50, 100]
        assert answered.cached == set(range(150))
        await asyncio.wait_for(members.fetch(lost, [7]), 10)  # type: ignore[arg-type]
        assert lost.asked == [[7], [7]] and not lost.cached  # two attempts, then given up
    finally:
        await members.close()


async def test_closing_cancels_whoever_waits() -> None:
    time = Minutes()
    members = MemberRequests(per_window=1, clock=time.clock, sleep=time.sleep)
    first, second = QuietGuild(silent=0), QuietGuild(silent=0)
    second.id = 2
    await members.fetch(first, [1])  # type: ignore[arg-type]
    waiting = asyncio.create_task(members.fetch(second, [2]))  # type: ignore[arg-type]
    while not time.sleepers:  # the budget of one is spent: the second waits for the minute
        await asyncio.sleep(0)
    await members.close()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert second.asked == []


class AwayDatabase:
    """A PostgreSQL storage whose server does not answer."""

    dialect = "postgresql"

    def transaction(self) -> object:
        raise OSError("connection refused")


async def test_without_its_database_a_process_keeps_its_own_turns() -> None:
    time = Minutes()
    turns = IdentifyTurns(
        AwayDatabase(),  # type: ignore[arg-type]
        interval=5.0,
        sleep=time.sleep,
        clock=time.clock,
    )
    assert turns.shared
    assert await turns.take(0) == 0
    second = asyncio.create_task(turns.take(1))
    while not time.sleepers:
        await asyncio.sleep(0)
    await time.advance(5.0)
    assert await second == pytest.approx(5.0)
    assert [bucket for bucket, _ in turns.taken] == [0, 0]
