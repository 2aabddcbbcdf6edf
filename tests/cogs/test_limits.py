"""Discord's size limits: big games, long names, long lists, and every message within limits.

The fake refuses what Discord refuses (content past 2,000 characters, more
than 25 select options, custom ids past 100...), so a game in which no REST
call was refused kept every limit. The helpers of ``cogs.limits`` are also
checked on their own with random input.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.i18n import t
from bot.limits import CONTENT, chunks, clip, listing
from cogs.mentions import command
from tests.cogs.scenes import ballot_message, quick_edits, run
from tests.harness import bot_table

MENTION = re.compile(r"<@\d+>")

mentions = st.lists(st.integers(10**17, 10**19).map(lambda n: f"<@{n}>"), max_size=300)
words = st.text(alphabet=st.sampled_from("абв xyz,<@>:1"), max_size=60)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(mentions.map(", ".join), words), max_size=40), st.integers(40, 2000))
def test_chunks_keep_every_mention_whole_and_every_part_within_the_limit(lines, limit):
    parts = chunks(lines, limit)
    assert all(len(part) <= limit for part in parts)
    found = [m for part in parts for m in MENTION.findall(part)]
    assert found == [m for line in lines for m in MENTION.findall(line)]


@settings(max_examples=200, deadline=None)
@given(mentions, st.integers(20, 2000), st.sampled_from(["ru", "en"]))
def test_listing_stays_within_its_budget_and_counts_the_rest(items, budget, language):
    text = listing(language, items, budget)
    assert len(text) <= budget
    shown = MENTION.findall(text)
    assert shown == items[: len(shown)]
    rest = len(items) - len(shown)
    if rest:
        assert t(language, "list.more", count=rest) in text
    else:
        assert text == ", ".join(items)


def test_clip_never_cuts_a_mention():
    text = "Игроки: <@123456789012345678>, <@223456789012345678>"
    assert clip(text, 25) == "Игроки:…"
    assert clip(text, 31) == "Игроки: <@123456789012345678>…"
    assert clip(text, 200) == text
    assert len(clip("x" * 500, 100)) == 100


def refused(table) -> list[str]:
    """Every REST call Discord would have refused (4xx/5xx), but for interaction answers to
    interactions deliberately sent twice."""
    return [
        f"{c.method} {c.path} -> {c.status} {c.response}"
        for c in table.fake.calls()
        if c.status >= 400
    ]


@pytest.mark.parametrize(
    ("players", "cities"), [(200, "Верона"), (200, "Верона, Падуя, Мантуя, Милан")]
)
async def test_a_big_game_keeps_every_message_within_discords_limits(players, cities):
    async with bot_table(players=players) as table:
        quick_edits(table)
        await table.open_lobby()
        await table.drain()
        lobby = await table.bot.storage.message_ref(table.live().id, "lobby")
        lobby_text = table.fake.message(lobby[1]).content
        assert len(lobby_text) <= CONTENT
        assert t("ru", "lobby.players", count=players, players="") in lobby_text
        shown = len(MENTION.findall(lobby_text)) - 1  # the host's mention
        assert 0 < shown < players
        assert t("ru", "list.more", count=players - shown) in lobby_text

        setup = await run(table, "host", "host setup", {"cities": cities, "maniac": False})
        assert setup.ephemeral and len(setup.content) <= CONTENT
        started = await table.slash("host", "host start")
        await started.wait_original()
        assert t("ru", "host.started") in started.text, started.text
        await table.drain()
        game = table.game
        city = game.cities[0]
        residents = [table.name(p) for p in game.alive(city)]
        city_channel = table.city_channel(city)

        # every living player is in the status, split into several private messages
        status = await run(table, residents[0], "mafia status")
        living = {f"<@{p}>" for p in game.alive()}

        def parts() -> list[str]:
            return [status.content] + [m.content for m in status.followups]

        await table.fake.wait_until(
            lambda: living <= {m for part in parts() for m in MENTION.findall(part)},
            60.0,
            "the status never named every living player",
        )
        assert len(parts()) > 1 and all(len(part) <= CONTENT for part in parts())
        assert all(m.ephemeral for m in status.followups)

        # the city's welcome names every resident, in as many messages as it takes
        welcome = "\n".join(table.channel_messages(city_channel))
        assert {f"<@{p}>" for p in game.residents[city]} <= set(MENTION.findall(welcome))

        # everyone nominates somebody: more candidates than a menu holds
        for nominator, candidate in zip(residents, residents[1:] + residents[:1], strict=True):
            await run(table, nominator, "nominate", {"player": table.pid(candidate)})
        await run(table, "host", "host next")
        await table.drain()
        for voter in residents[:30]:
            await run(table, voter, "vote", {"player": table.pid(residents[1])})
        await table.drain()
        ballot = ballot_message(table, city)
        assert len(ballot.content) <= CONTENT
        options = [c for row in ballot.components for c in row["components"] if c["type"] == 3]
        assert len(options[0]["options"]) == min(25, len(residents))
        if len(residents) > 25:
            assert t("ru", "ballot.more_in_command", vote=command("ru", "vote")) in ballot.content

        await run(table, "host", "host next")  # the day ends: a tally of every candidate
        await table.drain()
        await run(table, "host", "host next")  # the night ends
        await table.drain()
        assert table.game.phase.number == 2
        ended = await run(table, "host", "host end")
        assert ended.ephemeral
        await table.drain()
        summary = "\n".join(table.channel_messages(city_channel))
        assert all(f"• <@{p}> — " in summary for p in game.players)
        assert refused(table) == []
