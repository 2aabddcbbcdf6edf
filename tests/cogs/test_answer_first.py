"""Answer first where Discord needs it (bot/service's policy).

An interaction that has to wait for its game's lock too long, or that reaches
the bot with too little of Discord's 3 s left, is acknowledged before its
command is committed and answered afterwards by editing that acknowledgement;
one whose acknowledgement Discord refuses is not applied at all. One with time
left, late or not, finding the lock free is answered at once, in one callback.
"""

from __future__ import annotations

import asyncio
import datetime
import random
import time

import discord
import pytest

from bot.i18n import t
from tests.cogs.scenes import accepted, assert_unchanged, deliver_again, quick_edits, snapshot
from tests.fakediscord.interactions import (
    CALLBACK_CHANNEL_MESSAGE,
    CALLBACK_DEFERRED_CHANNEL_MESSAGE,
    InteractionResult,
)
from tests.harness import Table, bot_table

CALLBACK = r"/interactions/\d+/[^/]+/callback"


def sent_ago(seconds: float, now: float | None = None) -> int:
    """An interaction id Discord would have made ``seconds`` ago (before ``now``)."""
    moment = datetime.datetime.fromtimestamp(
        time.time() if now is None else now, datetime.UTC
    ) - datetime.timedelta(seconds=seconds)
    return discord.utils.time_snowflake(moment) + random.randrange(1, 1 << 22)


async def handled(table: Table) -> None:
    """Wait until discord.py's command tasks are done (a refused interaction gets no answer)."""
    running = [
        task
        for task in asyncio.all_tasks()
        if task.get_name() == "CommandTree-invoker" and not task.done()
    ]
    if running:
        await asyncio.wait(running, timeout=5.0)


async def voting_game(table: Table) -> tuple[str, str]:
    """Day 1's voting with one nominee; a voter and the nominee."""
    await table.new_game(cities="Верона", maniac=False, doctor=False, journalist=False)
    residents = [table.name(p) for p in table.game.alive("Верона")]
    await accepted(table, residents[0], "nominate", {"player": table.pid(residents[1])})
    await accepted(table, "host", "host next")
    await table.drain()
    return residents[2], residents[1]


async def test_a_vote_waiting_for_the_lock_is_acknowledged_first_and_counts_once_answered():
    async with bot_table(players=8) as table:
        quick_edits(table)
        voter, nominee = await voting_game(table)
        lock = table.bot.service.lock(table.live().id)
        async with lock:  # another command of the game is being committed, slowly
            vote = await table.slash(voter, "vote", {"player": table.pid(nominee)}, wait=False)
            await table.fake.wait_until(
                lambda: vote.callback, 10.0, "the vote was not acknowledged"
            )
            assert vote.callback_type == CALLBACK_DEFERRED_CHANNEL_MESSAGE and vote.ephemeral
            assert vote.callback is not None
            # not at once: only when one answer after the commit would no longer be in time
            assert vote.callback.time - vote.sent_at >= 1.5
            # the lock is held past Discord's deadline for a first answer
            await table.fake.wait_until(
                lambda: time.monotonic() - vote.sent_at > table.fake.interaction_ack_deadline, 5.0
            )
        answer = await vote.wait_original()
        assert answer.content == t("ru", "reply.vote", target=f"<@{table.pid(nominee)}>")
        assert table.game.voter_of(table.pid(voter)) == table.pid(nominee)
        assert len(vote.attempts) == 1, "acknowledged twice"


async def old_vote(table: Table, voter: str, nominee: str, age: float = 2.7) -> InteractionResult:
    """A vote Discord made ``age`` seconds before the bot hears of it."""
    return await table.fake.slash(
        table.guild_id,
        table.member(voter).user.id,
        "vote",
        {"player": table.pid(nominee)},
        locale="ru",
        interaction_id=sent_ago(age),
    )


async def test_an_old_interaction_is_acknowledged_before_its_commit():
    async with bot_table(players=8) as table:
        quick_edits(table)
        voter, nominee = await voting_game(table)
        rows = len(await table.bot.storage.commands(table.live().id))
        vote = await old_vote(table, voter, nominee)
        assert vote.callback_type == CALLBACK_DEFERRED_CHANNEL_MESSAGE
        answer = await vote.wait_original()
        assert answer.ephemeral and answer.content == t(
            "ru", "reply.vote", target=f"<@{table.pid(nominee)}>"
        )
        assert len(await table.bot.storage.commands(table.live().id)) == rows + 1


async def test_a_command_whose_acknowledgement_discord_refuses_is_not_applied():
    async with bot_table(players=8) as table:
        quick_edits(table)
        voter, nominee = await voting_game(table)
        before = await snapshot(table)
        # it reached the bot 3.5 s after it was made: Discord no longer takes its answer
        refused = table.fake.fail(
            "POST", CALLBACK, status=404, code=10062, message="Unknown interaction"
        )
        vote = await table.fake.slash(
            table.guild_id,
            table.member(voter).user.id,
            "vote",
            {"player": table.pid(nominee)},
            locale="ru",
            interaction_id=sent_ago(3.5),
            wait=False,
        )
        await table.fake.wait_until(lambda: refused.hits, 5.0, "the bot never tried to answer")
        await handled(table)
        assert vote.callback is None
        callbacks = table.fake.calls(
            "POST", "/interactions/{interaction_id}/{interaction_token}/callback"
        )
        assert len([c for c in callbacks if c.params.get("interaction_id") == str(vote.id)]) == 1, (
            "answered again after Discord refused"
        )
        await assert_unchanged(table, before)
        assert table.game.voter_of(table.pid(voter)) is None


async def test_a_young_command_with_the_lock_free_is_answered_in_one_callback():
    async with bot_table(players=8) as table:
        quick_edits(table)
        voter, nominee = await voting_game(table)
        vote = await table.slash(voter, "vote", {"player": table.pid(nominee)})
        assert vote.callback_type == CALLBACK_CHANNEL_MESSAGE and len(vote.attempts) == 1
        assert vote.content == t("ru", "reply.vote", target=f"<@{table.pid(nominee)}>")


async def test_an_old_interaction_delivered_twice_is_acknowledged_once():
    async with bot_table(players=8) as table:
        quick_edits(table)
        voter, nominee = await voting_game(table)
        rows = len(await table.bot.storage.commands(table.live().id))
        vote = await old_vote(table, voter, nominee)
        await vote.wait_original()
        await deliver_again(table, vote)  # older still: it would be acknowledged first again
        await table.drain()
        assert [attempt.type for attempt in vote.attempts] == [CALLBACK_DEFERRED_CHANNEL_MESSAGE]
        assert len(await table.bot.storage.commands(table.live().id)) == rows + 1


def calls_of(table: Table, vote: InteractionResult) -> list[tuple[str, str]]:
    """Every REST call the bot made with the interaction's token: its answer's cost."""
    return [
        (call.method, call.route)
        for call in table.fake.calls()
        if call.params.get("interaction_token") == vote.token
    ]


CALLBACK_ROUTE = "/interactions/{interaction_id}/{interaction_token}/callback"
ORIGINAL = "/webhooks/{application_id}/{interaction_token}/messages/@original"


@pytest.mark.parametrize("age", [0.0, 1.0, 1.9])
async def test_a_late_interaction_with_time_left_is_answered_with_one_callback_and_no_edit(age):
    """It used to be acknowledged first from 1.5 s on (a callback, then an edit): where the
    answer is ready in time, it is the callback alone."""
    async with bot_table(players=8) as table:
        quick_edits(table)
        voter, nominee = await voting_game(table)
        frozen = time.time()
        table.bot.service.wall = lambda: frozen  # its age is the snowflake's, whatever the load
        table.fake.interaction_ack_deadline = 60.0  # (and the fake waits as long)
        vote = await table.fake.slash(
            table.guild_id,
            table.member(voter).user.id,
            "vote",
            {"player": table.pid(nominee)},
            locale="ru",
            interaction_id=sent_ago(age, now=frozen),
        )
        await handled(table)
        assert vote.callback_type == CALLBACK_CHANNEL_MESSAGE and len(vote.attempts) == 1
        assert vote.content == t("ru", "reply.vote", target=f"<@{table.pid(nominee)}>")
        assert table.game.voter_of(table.pid(voter)) == table.pid(nominee)
        assert calls_of(table, vote) == [("POST", CALLBACK_ROUTE)]


async def test_one_with_too_little_left_is_acknowledged_then_edited():
    async with bot_table(players=8) as table:
        quick_edits(table)
        voter, nominee = await voting_game(table)
        frozen = time.time()
        table.bot.service.wall = lambda: frozen
        table.fake.interaction_ack_deadline = 60.0
        vote = await table.fake.slash(
            table.guild_id,
            table.member(voter).user.id,
            "vote",
            {"player": table.pid(nominee)},
            locale="ru",
            interaction_id=sent_ago(2.8, now=frozen),
        )
        answer = await vote.wait_original()
        assert [attempt.type for attempt in vote.attempts] == [CALLBACK_DEFERRED_CHANNEL_MESSAGE]
        assert answer.content == t("ru", "reply.vote", target=f"<@{table.pid(nominee)}>")
        assert calls_of(table, vote) == [("POST", CALLBACK_ROUTE), ("PATCH", ORIGINAL)]
