"""The ballot: posted when voting starts, a select of the candidates and an Unvote button, a live
tally edited as votes come, edits of a burst coalesced, closed at the day's end."""

from __future__ import annotations

import asyncio

from bot.i18n import t
from bot.outbox import EDIT_INTERVAL
from tests.cogs.scenes import accepted, ballot_message, patches, quick_edits, run
from tests.harness import Table, bot_table


def tally(table: Table, city: str, *, closed: bool = False, deadline: bool = True) -> str:
    """The ballot text the catalogue gives for the city's votes now: who votes for whom in vote
    order, each candidate's last vote as a Discord timestamp of the time the bot accepted it."""
    game, live = table.game, table.live()
    voters: dict[str, list[str]] = {c: [] for c in game.nominees(city)}
    last: dict[str, int] = {}
    for voter, (candidate, tick) in sorted(game.votes[city].items(), key=lambda row: row[1][1]):
        voters[candidate].append(voter)
        last[candidate] = tick
    order = sorted(voters, key=lambda c: (-len(voters[c]), last.get(c, 1 << 62)))
    lines = [t("ru", "ballot.title", city=city, day=game.phase.number)]
    for n, candidate in enumerate(order, start=1):
        row = t(
            "ru", "ballot.row", number=n, player=f"<@{candidate}>", votes=len(voters[candidate])
        )
        if candidate in last:
            row = t(
                "ru",
                "ballot.row_last",
                row=row,
                when=f"<t:{int(live.tick_times[last[candidate]])}:T>",
            )
        if game.city_of(candidate) != city:
            row = t("ru", "ballot.foreign", row=row)
        if voters[candidate]:
            row = t(
                "ru",
                "ballot.row_voters",
                row=row,
                voters=", ".join(f"<@{v}>" for v in voters[candidate]),
            )
        lines.append(row)
    if not order:
        lines.append(t("ru", "ballot.empty"))
    lines.append(t("ru", "ballot.voters", voters=len(game.votes[city])))
    lines.append(t("ru", "ballot.closed") if closed else t("ru", "deadline.host"))
    return "\n".join(lines)


def select_of(message) -> dict:
    for row in message.components:
        for component in row["components"]:
            if component["type"] == 3:
                return component
    raise AssertionError(f"no select menu in {message.components}")


async def test_the_ballot_opens_with_voting_and_follows_every_vote():
    async with bot_table(players=16) as table:
        quick_edits(table)
        live = await table.new_game(cities="Верона, Падуя", maniac=False)
        a, b = table.game.cities
        in_a = [table.name(p) for p in table.game.alive(a)]
        in_b = [table.name(p) for p in table.game.alive(b)]
        first, second = in_a[0], in_a[1]
        await accepted(table, in_a[2], "nominate", {"player": table.pid(first)})
        await accepted(table, in_a[3], "nominate", {"player": table.pid(second)})
        await accepted(table, in_b[0], "nominate", {"player": table.pid(first)})  # across cities
        assert not [m for m in table.fake.messages(table.city_channel(a)) if "🗳️" in m.content]

        await accepted(table, "host", "host next")
        await table.drain()
        ballot_a, ballot_b = ballot_message(table, a), ballot_message(table, b)
        assert ballot_a.content == tally(table, a) and ballot_b.content == tally(table, b)
        menu = select_of(ballot_a)
        assert menu["custom_id"] == f"mafia:vote:{live.id}:{table.game.cities.index(a)}"
        assert [(o["value"], o["label"]) for o in menu["options"]] == [
            (table.pid(first), table.member(first).user.global_name),
            (table.pid(second), table.member(second).user.global_name),
        ]
        assert [o["value"] for o in select_of(ballot_b)["options"]] == [table.pid(first)]
        assert f"mafia:unvote:{live.id}" in ballot_a.custom_ids()

        # a vote by command, one by the select, a moved vote, a withdrawn one: each shows on the ballot
        await accepted(table, in_a[4], "vote", {"player": table.pid(first)})
        picked = await table.fake.select(
            ballot_a, menu["custom_id"], [table.pid(second)], table.member(in_a[5]).user.id
        )
        await picked.wait_final()  # under load the bot answers a vote "thinking…" first
        assert picked.ephemeral and picked.content == t(
            "ru", "reply.vote", target=f"<@{table.pid(second)}>"
        )
        await table.drain()
        assert table.fake.message(ballot_a.id).content == tally(table, a)
        assert t("ru", "ballot.voters", voters=2) in table.fake.message(ballot_a.id).content

        moved = await table.fake.select(
            ballot_a, menu["custom_id"], [table.pid(first)], table.member(in_a[5]).user.id
        )
        await moved.wait_final()
        await table.drain()
        assert t("ru", "ballot.row", number=1, player=f"<@{table.pid(first)}>", votes=2) in (
            table.fake.message(ballot_a.id).content
        )
        withdrawn = await table.fake.click(
            ballot_a, f"mafia:unvote:{live.id}", table.member(in_a[4]).user.id
        )
        await withdrawn.wait_final()
        assert withdrawn.ephemeral and withdrawn.content == t("ru", "reply.unvote")
        await table.drain()
        assert table.fake.message(ballot_a.id).content == tally(table, a)
        assert t("ru", "ballot.voters", voters=1) in table.fake.message(ballot_a.id).content
        assert table.fake.message(ballot_b.id).content == tally(table, b), (
            "B's ballot moved with A's votes"
        )
        assert patches(table, ballot_a.id) and not patches(table, ballot_b.id)

        # the day ends: both ballots close, without their select and button
        await accepted(table, "host", "host next")
        await table.drain()
        for message, city in ((ballot_a, a), (ballot_b, b)):
            final = table.fake.message(message.id)
            assert t("ru", "ballot.closed") in final.content and final.components == [], city


async def test_a_burst_of_twenty_votes_edits_the_ballot_a_few_times_and_ends_on_the_final_tally():
    async with bot_table(players=24) as table:
        coalescing = EDIT_INTERVAL  # the bot's own setting, for the burst
        quick_edits(table)
        await table.new_game(cities="Верона", maniac=False)
        city = "Верона"
        voters = [table.name(p) for p in table.game.alive(city)]
        first, second = voters[0], voters[1]
        await accepted(table, voters[2], "nominate", {"player": table.pid(first)})
        await accepted(table, voters[3], "nominate", {"player": table.pid(second)})
        await accepted(table, "host", "host next")
        await table.drain()
        ballot = ballot_message(table, city)
        assert patches(table, ballot.id) == []
        game_id = table.live().id
        table.bot.outbox.edit_interval = coalescing
        assert coalescing >= 1.0
        rows_before = len(await table.bot.storage.commands(game_id))

        choices = [
            (voter, table.pid(first if n % 3 else second)) for n, voter in enumerate(voters[:20])
        ]
        answers = await asyncio.gather(
            *[run(table, voter, "vote", {"player": pid}) for voter, pid in choices]
        )
        for answer, (_, pid) in zip(answers, choices, strict=True):
            assert answer.ephemeral and answer.content == t("ru", "reply.vote", target=f"<@{pid}>")
        assert len(await table.bot.storage.commands(game_id)) == rows_before + 20
        await table.drain()

        sent = patches(table, ballot.id)
        assert 1 <= len(sent) <= 4, f"{len(sent)} edits for 20 votes"
        final = tally(table, city)
        assert sent[-1].json["content"] == final
        assert table.fake.message(ballot.id).content == final
        assert t("ru", "ballot.voters", voters=20) in final
        assert t("ru", "ballot.row", number=1, player=f"<@{table.pid(first)}>", votes=13) in final
        assert t("ru", "ballot.row", number=2, player=f"<@{table.pid(second)}>", votes=7) in final
