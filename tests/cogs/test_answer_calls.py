"""Votes that meet each other in one game are each answered with one REST call: the ones that
wait for the game's lock while their interaction is young are committed and answered, not
acknowledged ("thinking…") and edited after (see :mod:`bot.service`)."""

from __future__ import annotations

import asyncio

from bot.i18n import t
from tests.cogs.scenes import accepted, quick_edits, run
from tests.harness import bot_table

CALLBACK = "/interactions/{interaction_id}/{interaction_token}/callback"
ORIGINAL = "/webhooks/{application_id}/{interaction_token}/messages/@original"


async def test_twenty_votes_at_once_cost_one_call_each():
    async with bot_table(players=24) as table:
        quick_edits(table)
        await table.new_game(cities="Верона", maniac=False)
        voters = [table.name(p) for p in table.game.alive("Верона")]
        nominee = table.pid(voters[0])
        await accepted(table, voters[2], "nominate", {"player": nominee})
        await accepted(table, "host", "host next")
        # Discord's clock as the bot reads it stands at the moment the votes are sent: each
        # is young however long the machine takes over the twenty commits before it
        sent = table.bot.service.wall()
        table.bot.service.wall = lambda: sent
        callbacks = len(table.fake.calls("POST", CALLBACK))
        edits = len(table.fake.calls("PATCH", ORIGINAL))
        answers = await asyncio.gather(
            *[run(table, voter, "vote", {"player": nominee}) for voter in voters[:20]]
        )
        assert [answer.deferred for answer in answers] == [False] * 20
        for answer in answers:
            assert answer.content == t("ru", "reply.vote", target=f"<@{nominee}>")
        answered = table.fake.calls("POST", CALLBACK)[callbacks:]
        assert [call.json["type"] for call in answered] == [4] * 20  # a message, never type 5
        assert len(table.fake.calls("PATCH", ORIGINAL)) == edits
        assert len(table.game.votes["Верона"]) == 20
