"""A season fits in a server: after its delay, a finished game's channels become one transcript
in the guild's archive channel and its roles go; ``/mafia game N`` links it.

The delay is the lobby's ``archive_after`` (1 s here); the tests wait for the transcript's state,
never for a fixed time.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from dataclasses import replace

from bot.config import Channels, Config
from bot.i18n import t
from cogs.season import PART_BYTES, split_parts
from tests.cogs.scenes import quick_edits, run
from tests.cogs.test_provision import restartable
from tests.fakediscord import ChannelType
from tests.harness import NO_TIMERS, Table, bot_on, bot_table

MESSAGE_CONTENT_LIMITED = 1 << 19


async def transcript_state(table: Table, game_id: int, state: str, timeout: float = 60.0) -> dict:
    """The game's transcript row once it reaches ``state`` (looked at as the bot works)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        row = await table.bot.storage.transcript(game_id) or {}
        if row.get("state") == state:
            return row
        assert loop.time() < deadline, f"game {game_id}: the transcript never got {state}: {row}"
        await asyncio.sleep(0.02)  # a poll of the bot's table, not a wait that is asserted on


def archive_channel(table: Table, name: str = "архив-игр") -> int:
    found = [
        c
        for c in table.fake.state.guild_channels(table.guild_id)
        if c.name == name and c.type == ChannelType.GUILD_TEXT
    ]
    assert len(found) == 1, [c.name for c in table.fake.state.guild_channels(table.guild_id)]
    return found[0].id


def transcript_text(table: Table, channel_id: int, game_id: int) -> str:
    posts = [m for m in table.fake.messages(channel_id) if m.attachments]
    files = [a for m in posts for a in m.attachments if a.filename.startswith(f"game-{game_id}")]
    files = [a for a in files if a.filename.endswith(".txt")]  # the text twin, not the page
    assert files, "no transcript file"
    return "".join(a.data.decode("utf-8") for a in files)


async def play_and_end(table: Table, **setup: object) -> tuple[int, dict]:
    """A game played a little and ended by the host: its id and its channels (and its seed)."""
    live = await table.new_game(cities="Верона, Падуя", archive_after="1s", **setup)
    channels = {**live.record.channels, "seed": live.record.seed}
    verona = int(channels["cities"]["Верона"]["text"])
    speaker = next(p for p in table.game.residents["Верона"])
    table.fake.post_message(verona, int(speaker), "Доброе утро, Верона 👨\u200d👩\u200d👧")
    await run(table, "host", "host end")
    await table.drain()
    return live.id, channels


async def test_a_finished_games_channels_become_one_transcript_and_its_roles_go(database):
    async with bot_table(players=8, database=database) as table:
        quick_edits(table)
        table.fake.state.application_flags |= MESSAGE_CONTENT_LIMITED
        game_id, channels = await play_and_end(table)
        row = await transcript_state(table, game_id, "done")
        await table.drain()
        archive = archive_channel(table)
        assert row["channel_id"] == archive
        text = transcript_text(table, archive, game_id)
        assert text.startswith(t("ru", "transcript.title", game=game_id))
        assert "=== #Верона ===" in text and "=== #Падуя ===" in text
        assert "Доброе утро, Верона 👨\u200d👩\u200d👧" in text, (
            "a player's message, every character kept"
        )
        assert "=== #мафия-Верона ===" in text, "the mafia rooms were revealed at the end"
        assert f"=== #{t('ru', 'channel.log')} ===" in text
        assert t("ru", "log.deal", seed=channels["seed"]) in text, "the host's log is there"
        assert t("ru", "transcript.no_content_intent") not in text
        made = [int(ids[k]) for ids in channels["cities"].values() for k in ("text", "mafia")]
        made += [int(channels[k]) for k in ("voice", "dead", "log", "category")]
        assert all(table.fake.state.channels[c].deleted for c in made), (
            "the game's channels are gone"
        )
        roles = table.fake.state.guild(table.guild_id).roles
        game_roles = [
            channels["roles"]["dead"],
            *(r["living"] for r in channels["roles"]["cities"].values()),
        ]
        assert not [r for r in game_roles if int(r) in roles], "the game's roles are gone"
        everyone = table.fake.permissions_for(table.guild_id, archive, table.member("p0").user.id)
        assert everyone & (1 << 10) and not everyone & (1 << 11), (
            "everyone reads the archive, nobody writes"
        )

        shown = await run(table, "p1", "mafia game", {"number": game_id})
        link = f"https://discord.com/channels/{table.guild_id}/{archive}/{row['message_id']}"
        assert t("ru", "transcript.link", link=link) in shown.content

        # a second game's transcript goes to the same archive channel
        second, _ = await play_and_end(table)
        await transcript_state(table, second, "done")
        assert archive_channel(table) == archive
        assert "=== #Верона ===" in transcript_text(table, archive, second)


async def test_a_transcript_begun_as_the_games_messages_lane_goes_idle_still_deletes_the_channels():
    """The game's messages lane went idle (its idle hook ran) just while the transcript's state
    was moving from due to posting: the transcript is posted and the channels still go."""
    async with bot_table(players=8) as table:
        quick_edits(table)
        season = table.bot.get_cog("SeasonCog")
        storage = table.bot.storage
        begin = storage.begin_transcript
        idled: list[int] = []

        async def begin_as_the_lane_idles(game_id: int, items: list) -> bool:
            await season._lane_idle(game_id, "messages")  # what the outbox's idle hook does then
            idled.append(game_id)
            return await begin(game_id, items)

        storage.begin_transcript = begin_as_the_lane_idles  # type: ignore[method-assign]
        game_id, channels = await play_and_end(table)
        await transcript_state(table, game_id, "done")
        await table.drain()
        assert idled == [game_id]
        assert all(
            table.fake.state.channels[int(channels[k])].deleted
            for k in ("log", "dead", "voice", "category")
        )


async def test_a_transcript_tells_no_more_than_the_game_did():
    """Mafia rooms and the log kept closed at the end stay out of it; without the Message Content
    intent the players' text is not readable, and the transcript says so."""
    async with bot_table(players=8) as table:
        quick_edits(table)
        game_id, channels = await play_and_end(table, reveal_at_end=False)
        await transcript_state(table, game_id, "done")
        text = transcript_text(table, archive_channel(table), game_id)
        assert "мафия-" not in text and f"#{t('ru', 'channel.log')}" not in text
        assert t("ru", "transcript.no_content_intent") in text
        assert "Доброе утро" not in text and t("ru", "transcript.unreadable_message") in text
        assert t("ru", "summary.title") in text or t("ru", "host.ended") in text, (
            "the bot's own posts are there"
        )


async def test_a_channel_a_human_deleted_is_named_in_the_transcript_in_the_servers_language():
    async with bot_table(players=8, refusals=True) as table:
        quick_edits(table)
        await run(table, "host", "admin language", {"language": "en"})
        table.fake.state.application_flags |= MESSAGE_CONTENT_LIMITED
        live = await table.new_game(cities="Verona, Padua", archive_after="1s")
        await run(table, "host", "host end", locale="en-US")
        dead = int(live.record.channels["dead"])
        reading = table.fake.hang("GET", rf"/channels/{dead}/messages", count=1)
        await table.fake.wait_until(
            lambda: reading.hits or None, 30.0, "the dead's channel was not read"
        )
        table.fake.delete_channel(dead)  # by a human, just then
        reading.release()
        await transcript_state(table, live.id, "done")
        text = transcript_text(table, archive_channel(table, "game-archive"), live.id)
        gone = t("en", "transcript.unread", reason=t("en", "failure.unknown_channel"))
        assert f"=== #{t('en', 'channel.dead')} ===\n{gone}\n" in text
        assert "Unknown Channel" not in text
        assert "=== #Verona ===" in text and "=== #Padua ===" in text


async def test_a_refused_transcript_keeps_the_channels_and_tells_the_host_in_russian():
    async with bot_table(players=8, refusals=True) as table:
        quick_edits(table)
        live = await table.new_game(cities="Верона, Падуя", archive_after="1s")
        refusal = table.fake.fail(
            "POST",
            r"/guilds/\d+/channels",
            status=403,
            code=50013,
            message="Missing Permissions",
            count=None,
        )
        await run(table, "host", "host end")
        row = await transcript_state(table, live.id, "failed")
        assert refusal.hits >= 1
        await table.drain()
        log_channel = int(live.record.channels["log"])
        said = t(
            "ru", "transcript.failed", game=live.id, reason=t("ru", "failure.channel_permissions")
        )
        assert said in table.channel_messages(log_channel)
        assert "Missing" not in said
        assert not table.fake.state.channels[log_channel].deleted, "nothing is deleted"
        assert row["failure"]["key"] == "failure.channel_permissions"


async def test_off_keeps_the_channels_and_the_config_sets_the_default():
    config = replace(Config(timers=NO_TIMERS), channels=Channels(archive_after=0))
    async with bot_table(players=8, config=config) as table:
        quick_edits(table)
        live = await table.new_game(cities="Верона, Падуя")
        await run(table, "host", "host end")
        await table.drain()
        assert await table.bot.storage.transcript(live.id) is None
        assert not table.fake.state.channels[int(live.record.channels["log"])].deleted
    assert Config().channels.archive_after == 86400


def test_a_long_transcript_is_split_between_lines_within_discords_upload() -> None:
    line = "Верона: " + "я" * 1000
    lines = [line] * 12_000  # some 24 MB of UTF-8
    parts = split_parts(lines)
    assert len(parts) == 3 and all(len(part) <= PART_BYTES for part in parts)
    assert b"".join(parts).decode("utf-8") == "\n".join(lines) + "\n"
    assert all(part.endswith(b"\n") for part in parts)
    huge = split_parts(["ж" * (PART_BYTES // 2 + 7)], limit=1000)
    assert all(len(part) <= 1000 for part in huge)
    assert b"".join(huge).decode("utf-8") == "ж" * (PART_BYTES // 2 + 7) + "\n"


async def test_what_is_due_survives_a_restart_and_a_game_ended_unscheduled_is_scheduled_at_start():
    """Games A and B end with an hour to go; B's row is lost (the process died between the end
    and the scheduling). The next process archives A when its hour is over by its clock, and
    schedules B at start: an hour later, B too."""
    async with restartable(8) as (fake, world, config):
        fake.state.application_flags |= MESSAGE_CONTENT_LIMITED
        async with bot_on(fake, world, config) as first:
            quick_edits(first)
            a = await first.new_game(cities="Верона, Падуя", archive_after="1h")
            await run(first, "host", "host end")
            b = await first.new_game(cities="Верона, Падуя", archive_after="1h")
            await run(first, "host", "host end")
            await first.drain()
            for game in (a, b):
                await transcript_state(first, game.id, "due")
        with sqlite3.connect(config.database) as db:
            db.execute("DELETE FROM transcripts WHERE game_id = ?", (b.id,))
        assert all(not fake.state.channels[int(g.record.channels["log"])].deleted for g in (a, b))
        offset = [3600.0 + 60]
        async with bot_on(fake, world, config, clock=lambda: time.time() + offset[0]) as second:
            await transcript_state(second, a.id, "done")
            rescheduled = await transcript_state(second, b.id, "due")
            assert rescheduled["due"] > time.time() + offset[0] + 3000, "an hour from the start"
            offset[0] += 3600 + 60
            second.bot.get_cog("SeasonCog")._wake.set()  # the keeper sleeps by the real clock
            await transcript_state(second, b.id, "done")
            await second.drain()
            archive = archive_channel(second)
            for game in (a, b):
                assert "=== #Верона ===" in transcript_text(second, archive, game.id)
                assert fake.state.channels[int(game.record.channels["log"])].deleted


async def test_parts_posted_before_a_restart_are_not_posted_again():
    """A transcript in parts; the process stops while its second part is under way (the first
    taken by Discord), and the next one starts after Discord forgot the nonces. It carries the
    item out again: it finds the first part by its caption and posts only what is missing."""
    async with restartable(8) as (fake, world, config):
        fake.state.application_flags |= MESSAGE_CONTENT_LIMITED
        route = r"/channels/\d+/messages"
        async with bot_on(fake, world, config) as first:
            quick_edits(first)
            first.bot.get_cog("SeasonCog").part_bytes = 2000
            live = await first.new_game(cities="Верона, Падуя", archive_after="1s")
            await run(first, "host", "host end")
            await first.drain()
            part_one = fake.hang("POST", route, count=1)
            await fake.wait_until(lambda: part_one.hits or None, 30.0, "no part was posted")
            part_two = fake.hang("POST", route, count=1)  # never answered: the process stops
            part_one.release()
            await fake.wait_until(
                lambda: part_two.hits or None, 30.0, "the second part was not sent"
            )
        fake.forget_nonces()  # the restart came after Discord's nonce memory
        verona = live.record.channels["cities"]["Верона"]["text"]
        gate = fake.hang(
            "GET", rf"/channels/{verona}/messages", count=1
        )  # the transcript's first page
        async with bot_on(fake, world, config) as second:
            second.bot.get_cog("SeasonCog").part_bytes = 2000
            gate.release()
            await transcript_state(second, live.id, "done")
            archive = archive_channel(second)
            posts = [m for m in fake.messages(archive) if m.attachments]
            assert len(posts) >= 3, [m.content for m in fake.messages(archive)]
            assert [m.content for m in posts] == [
                t("ru", "transcript.posted", game=live.id, part=n, parts=len(posts))
                for n in range(1, len(posts) + 1)
            ], "each part once, in order"
            text = transcript_text(second, archive, live.id)
            assert (
                text.startswith(t("ru", "transcript.title", game=live.id))
                and "=== #Падуя ===" in text
            )
