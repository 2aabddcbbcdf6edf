"""A restart: the bot stops and a new one starts on the same database and the same Discord.

What was posted before keeps working (a lobby's Join button, a ballot's select and Unvote
button, the "My status" button), and the games come back exactly as they were.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from bot.config import Config
from bot.i18n import t
from tests.cogs.scenes import (
    accepted,
    another_guild,
    ballot_message,
    lobby_message,
    quick_edits,
    run,
)
from tests.fakediscord import FakeDiscord, build_standard_guild
from tests.harness import NO_TIMERS, Table, bot_on


def record_of(table: Table) -> dict:
    record = table.live().record
    return {
        "state": record.state,
        "lobby": record.lobby,
        "channels": record.channels,
        "setup": record.setup,
        "seed": record.seed,
        "count": record.command_count,
        "deadline": record.deadline,
    }


@pytest.mark.parametrize("snapshot_every", [50, 3], ids=["log-only", "snapshot-and-log"])
async def test_buttons_posted_before_a_restart_still_work_and_the_game_is_the_same(
    snapshot_every: int, database
):
    fake = FakeDiscord()
    world = build_standard_guild(fake, players=[f"p{i}" for i in range(16)])
    with tempfile.TemporaryDirectory():
        config = replace(Config(timers=NO_TIMERS, snapshot_every=snapshot_every), database=database)
        await fake.start()
        try:
            async with bot_on(fake, world, config) as first:
                quick_edits(first)
                lobby_table = await another_guild(first, "l", 4)
                await run(lobby_table, "host", "mafia new")
                lobby = await lobby_message(lobby_table)
                lobby_game = lobby_table.live().id

                live = await first.new_game(cities="Верона, Падуя", maniac=False)
                a = first.game.cities[0]
                residents = [first.name(p) for p in first.game.alive(a)]
                first_pick, second_pick = residents[0], residents[1]
                await accepted(first, residents[2], "nominate", {"player": first.pid(first_pick)})
                await accepted(first, residents[3], "nominate", {"player": first.pid(second_pick)})
                await accepted(first, "host", "host next")
                await accepted(first, residents[4], "vote", {"player": first.pid(first_pick)})
                await first.drain()
                state_before, record_before = first.game.to_dict(), record_of(first)
                ballot = ballot_message(first, a)
                welcome = next(
                    m
                    for m in fake.messages(first.city_channel(a))
                    if f"mafia:role:{live.id}" in m.custom_ids()
                )
                bot_before = first.bot
                snapshot = await first.bot.storage.latest_snapshot(live.id)
                assert (snapshot is None) == (snapshot_every > record_before["count"])

            async with bot_on(fake, world, config) as second:
                quick_edits(second)
                assert second.bot is not bot_before
                assert second.game.to_dict() == state_before
                assert record_of(second) == record_before
                lobby_again = Table(fake, lobby_table.world, second.bot, config)
                assert (
                    lobby_again.live().id == lobby_game
                    and lobby_again.live().record.state == "lobby"
                )

                # the lobby's Join button
                joiner = lobby_again.member("l0").user.id
                joined = await fake.click(lobby, f"mafia:join:{lobby_game}", joiner)
                assert joined.ephemeral and joined.content == t("ru", "lobby.joined")
                await second.drain()
                assert (
                    t("ru", "lobby.players", count=1, players=f"<@{joiner}>")
                    in fake.message(lobby.id).content
                )

                # the ballot's select and Unvote button
                voter = second.member(residents[5]).user.id
                picked = await fake.select(
                    ballot,
                    f"mafia:vote:{live.id}:{second.game.cities.index(a)}",
                    [second.pid(second_pick)],
                    voter,
                )
                assert picked.ephemeral
                assert picked.content == t(
                    "ru", "reply.vote", target=f"<@{second.pid(second_pick)}>"
                )
                assert second.game.voter_of(str(voter)) == second.pid(second_pick)
                await second.drain()
                assert t("ru", "ballot.voters", voters=2) in fake.message(ballot.id).content
                unvoted = await fake.click(ballot, f"mafia:unvote:{live.id}", voter)
                assert unvoted.ephemeral and unvoted.content == t("ru", "reply.unvote")
                assert second.game.voter_of(str(voter)) is None
                await second.drain()
                assert t("ru", "ballot.voters", voters=1) in fake.message(ballot.id).content

                # "My status"
                player = residents[6]
                mine = await fake.click(
                    welcome, f"mafia:role:{live.id}", second.member(player).user.id
                )
                status = second.game.status_of(second.pid(player)).value
                assert mine.ephemeral
                assert mine.content.splitlines()[0] == t(
                    "ru", "role.status", status=t("ru", f"status.{status}"), city=a
                )
                assert len(await second.bot.storage.commands(live.id)) == record_before["count"] + 2
        finally:
            await fake.close()


async def test_the_ballot_keeps_each_votes_clock_time_across_a_restart():
    """The rules count ticks; the ballot's last-vote times come from the commands' stored times."""
    fake = FakeDiscord()
    world = build_standard_guild(fake, players=[f"p{i}" for i in range(8)])
    clock = [1_800_000_000.0]
    with tempfile.TemporaryDirectory() as folder:
        config = replace(
            Config(timers=NO_TIMERS, snapshot_every=3), database=Path(folder) / "bot.sqlite3"
        )
        await fake.start()
        try:
            async with bot_on(fake, world, config, clock=lambda: clock[0]) as first:
                quick_edits(first)
                await first.new_game(cities="Верона", maniac=False)
                city = first.game.cities[0]
                residents = [first.name(p) for p in first.game.alive(city)]
                await accepted(first, residents[0], "nominate", {"player": first.pid(residents[1])})
                await accepted(first, "host", "host next")
                clock[0] += 77
                await accepted(first, residents[2], "vote", {"player": first.pid(residents[1])})
                await first.drain()
                stamp = f"<t:{int(clock[0])}:T>"
                assert stamp in ballot_message(first, city).content
            clock[0] += 1000
            async with bot_on(fake, world, config, clock=lambda: clock[0]) as second:
                quick_edits(second)
                await accepted(second, residents[3], "vote", {"player": second.pid(residents[1])})
                await second.drain()
                ballot = ballot_message(second, city).content
                # the earlier vote is told by its own time: the row shows the latest one, and both
                # voters are listed in vote order
                assert f"<t:{int(clock[0])}:T>" in ballot and stamp not in ballot
                assert second.live().tick_times[min(second.live().tick_times)] == clock[0] - 1000
                assert f"<@{second.pid(residents[2])}>, <@{second.pid(residents[3])}>" in ballot
        finally:
            await fake.close()
