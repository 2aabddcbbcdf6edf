"""Two guilds, two games at once: commands interleaved and concurrent, each guild in its own
language, and each sees only its own announcements."""

from __future__ import annotations

import asyncio
import re

from bot.i18n import t
from tests.cogs.scenes import (
    accepted,
    announcement,
    another_guild,
    guild_channel_ids,
    quick_edits,
    run,
)
from tests.harness import Table, bot_table

MENTION = re.compile(r"<@!?(\d+)>")


def game_messages(table: Table) -> list[str]:
    """What the bot posted in the game's channels of the guild."""
    channels = guild_channel_ids(table) - {
        table.world.text_channel.id,
        table.world.voice_channel.id,
    }
    return [
        m.content for m in table.fake.messages() if m.channel_id in channels and m.kind == "channel"
    ]


async def play_day(table: Table) -> str:
    """Nominate a citizen of the first city, vote for him by all, end the day: returns his name."""
    game = table.game
    city = game.cities[0]
    victim = next(table.name(p) for p in game.alive(city) if game.status_of(p).value != "mafioso")
    residents = [table.name(p) for p in game.alive(city)]
    await accepted(table, residents[-1], "nominate", {"player": table.pid(victim)})
    await accepted(table, "host", "host next")
    await asyncio.gather(
        *[run(table, voter, "vote", {"player": table.pid(victim)}) for voter in residents]
    )
    return victim


async def another_guild_in_english(table: Table) -> Table:
    rome = await another_guild(table, "r", 8, locale="en-US")
    assert (await run(rome, "host", "admin language", {"language": "en"})).ephemeral
    return rome


async def test_two_guilds_play_at_once_and_each_hears_only_its_own_game():
    async with bot_table(players=8) as verona:
        quick_edits(verona)
        rome = await another_guild_in_english(verona)
        live_a, live_b = await asyncio.gather(
            verona.new_game(cities="Верона"), rome.new_game(cities="Rome, Milan")
        )
        assert live_a.id != live_b.id
        assert verona.game.cities == ("Верона",) and rome.game.cities == ("Rome", "Milan")
        players_a, players_b = set(verona.game.players), set(rome.game.players)
        assert not players_a & players_b

        # each game's channels are made in its own guild
        for table, live in ((verona, live_a), (rome, live_b)):
            ids = [live.record.channels[k] for k in ("category", "voice", "dead", "log")]
            ids += [c for city in live.record.channels["cities"].values() for c in city.values()]
            assert {table.fake.channel(i).guild_id for i in ids} == {table.guild_id}

        # the days run side by side, votes of both guilds at the same time
        victims = await asyncio.gather(play_day(verona), play_day(rome))
        assert all(len(v) for v in victims)
        await asyncio.gather(
            accepted(verona, "host", "host next"), accepted(rome, "host", "host next")
        )
        await verona.drain()
        for table, victim in zip((verona, rome), victims, strict=True):
            assert not table.game.is_alive(table.pid(victim))
            assert table.game.stage.value == "night"

        # what each guild was told: its own players, its own language, its own deaths
        told_a, told_b = game_messages(verona), game_messages(rome)
        mentioned_a = {int(m) for text in told_a for m in MENTION.findall(text)}
        mentioned_b = {int(m) for text in told_b for m in MENTION.findall(text)}
        assert mentioned_a and mentioned_b
        assert mentioned_a <= {int(p) for p in players_a} | {verona.host.user.id}
        assert mentioned_b <= {int(p) for p in players_b} | {rome.host.user.id}
        day_a = announcement("ru", "phase.day", day=1, deadline=t("ru", "deadline.host"))
        day_b = announcement("en", "phase.day", day=1, deadline=t("en", "deadline.host"))
        assert any(day_a in text for text in told_a) and not any(day_a in text for text in told_b)
        # one per city of Rome's game
        assert sum(day_b in text for text in told_b) == 2 and not any(
            day_b in text for text in told_a
        )
        assert any(f"<@{verona.pid(victims[0])}>" in text and "💀" in text for text in told_a)
        assert not any(f"<@{verona.pid(victims[0])}>" in text for text in told_b)
        assert any(f"<@{rome.pid(victims[1])}>" in text and "💀" in text for text in told_b)
        nominate_next_votes_next = 1 + 1 + len(verona.game.residents["Верона"]) + 1
        assert len(await verona.bot.storage.commands(live_a.id)) == nominate_next_votes_next
        status_a = await run(verona, "p0", "mafia status")
        status_b = await run(rome, "r0", "mafia status")
        assert (
            t("ru", "status.title", game=live_a.id, host=f"<@{verona.host.user.id}>")
            in status_a.content
        )
        assert (
            t("en", "status.title", game=live_b.id, host=f"<@{rome.host.user.id}>")
            in status_b.content
        )
