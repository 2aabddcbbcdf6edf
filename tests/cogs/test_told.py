"""What a member was told stays true (issue 20, items 6 and 7).

A command committed before Discord failed its answer (a 5xx twice, a 429 whose wait outlasts
Discord's 3 s) stands, and its answer reaches the member with his next one; a read-only
command answered too late is logged without an error; names are shown as written, never as
markdown or a ping.
"""

from __future__ import annotations

import logging

import discord
import pytest

from bot.i18n import t
from tests.cogs.scenes import confirmation, refusal_text, run
from tests.harness import Table, bot_table

CALLBACK = r"/interactions/\d+/[^/]+/callback"


def mafioso(table: Table) -> tuple[str, str]:
    game = table.game
    first = game.living_mafiosi(game.cities[0])[0]
    return table.name(first), first


@pytest.mark.parametrize(
    ("language", "status", "retry_after"), [("ru", 500, 0.05), ("en", 429, 4.0)]
)
async def test_an_applied_command_whose_answer_discord_failed_is_told_with_the_next_answer(
    language, status, retry_after
):
    locale = "en-US" if language == "en" else "ru"  # an English server: its members read English
    # refusals: Discord's 404 past its 3 s
    async with bot_table(players=8, refusals=True, guild_locale=locale) as table:
        if language == "en":
            assert (await run(table, "host", "admin language", {"language": "en"})).ephemeral
        live = await table.new_game(cities="Верона", mafiosi=2)
        who, me = mafioso(table)
        # 500 twice: discord.py tries again after 1 s and 3 s, past Discord's 3 s (then 404);
        # a 429 asking for 4 s: the same
        table.fake.fail("POST", CALLBACK, status=status, count=2, retry_after=retry_after)
        failed = await table.slash(who, "elect", {"player": me}, wait=False)
        await table.fake.wait_until(
            lambda: table.bot.notices._waiting or None, 15.0, "nothing was kept"
        )
        tries = [
            c.status
            for c in table.fake.calls("POST")
            if c.path == f"/interactions/{failed.id}/{failed.token}/callback"
        ]
        assert tries == [status, status, 404], tries
        assert failed.callback is None  # the player saw "interaction failed"
        rows = [
            r for r in await table.bot.storage.commands(live.id) if r.command["verb"] == "elect"
        ]
        assert len(rows) == 1, "the command stands"
        # his next command is answered, then he reads what he missed
        status_answer = await run(table, who, "mafia status")
        [notice] = await status_answer.wait_followups(1)
        assert notice.ephemeral
        assert notice.content == t(
            language, "notice.undelivered", answer=t(language, "reply.elect", target=f"<@{me}>")
        )
        # handed out once
        again = await run(table, who, "mafia status")
        assert again.followups == []


async def test_what_is_kept_outlives_a_restart():
    async with bot_table(players=8) as table:
        await table.new_game(cities="Верона", mafiosi=2)
        who, me = mafioso(table)
        guild = table.guild_id
        await table.bot.notices.keep(guild, int(me), "ответ")
        second = type(table.bot.notices)(table.bot.storage)
        assert await second.load() == 1
        assert await second.take(guild, int(me)) == ["ответ"]
        assert await second.take(guild, int(me)) == []
        assert await table.bot.storage.meta_keys("undelivered:") == []


async def test_a_read_only_command_answered_too_late_is_logged_without_an_error(caplog):
    async with bot_table(players=4, refusals=True) as table:
        fake = table.fake
        fake.interaction_ack_deadline = 0.0  # as if the gateway had brought it past Discord's 3 s
        with caplog.at_level(logging.INFO):
            late = await table.slash("p1", "help")
            assert late.callback is None and late.attempts[0].error_code == 10062
            fake.interaction_ack_deadline = 3.0
            await run(table, "p1", "mafia status")  # everything before it was handled
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
        assert any(
            "could not be answered" in r.getMessage() and "changed nothing" in r.getMessage()
            for r in caplog.records
        )
        assert table.bot.notices._waiting == set()


NAMES = ["```py\nboom", "[sale](http://evil.example)", "**жирный** _x_", "@everyone", "# Заголовок"]


async def test_names_with_markdown_show_as_written_in_the_hosts_log():
    async with bot_table(players=8) as table:
        for index, nick in enumerate(NAMES):
            table.member(f"p{index}").nick = nick.replace("\n", " ")
        await table.new_game(cities="Верона")
        log_text = "\n".join(table.channel_messages(int(table.live().record.channels["log"])))
        for nick in NAMES:
            written = nick.replace("\n", " ")
            escaped = discord.utils.escape_mentions(discord.utils.escape_markdown(written))
            assert f"({escaped})" in log_text, written
        for raw in ("(```", "([sale](http", "(**", "(@everyone", "(# "):
            assert raw not in log_text, raw
        # a name typed back in a refusal too
        refused = await run(
            table, "host", "host kill", {"player": "[x](http://evil.example)"}, confirm=False
        )
        assert refused.content == t("ru", "error.no_such_player", name="\\[x](http://evil.example)")


async def test_a_confirmed_kill_whose_answer_discord_failed_is_told_to_the_host_next_time():
    async with bot_table(players=8, refusals=True) as table:
        await table.new_game(cities="Верона")
        game = table.game
        victim = next(p for p in game.players if game.status_of(p).value == "citizen")
        asked = await run(table, "host", "host kill", {"player": victim}, confirm=False)
        table.fake.fail("POST", CALLBACK, status=500, count=2)
        pressed = await table.fake.click(
            asked.original, confirmation(asked), table.host.user.id, wait=False
        )
        await table.fake.wait_until(
            lambda: table.bot.notices._waiting or None, 15.0, "nothing was kept"
        )
        assert pressed.callback is None and not table.game.is_alive(victim)
        later = await run(table, "host", "help")
        [notice] = await later.wait_followups(1)
        status = t("ru", f"status.{game.status_of(victim).value}")
        killed = t("ru", "host.killed", player=f"<@{victim}>", status=status)
        assert notice.ephemeral and notice.content == t("ru", "notice.undelivered", answer=killed)


async def test_an_applied_command_is_told_when_the_database_fails_as_its_lost_answer_is_kept(
    database, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    """The chaos run's seed 4 under PostgreSQL crashes: the command was stored, Discord failed
    its answer, and keeping that answer met the database going down; the failure came back as
    "not stored", which Discord delivered. Now the answer is held in memory and handed out."""
    from bot.config import Config
    from tests.cogs.test_not_stored import break_storage
    from tests.harness import NO_TIMERS

    async with bot_table(
        players=8, refusals=True, config=Config(timers=NO_TIMERS), database=database
    ) as table:
        live = await table.new_game(cities="Верона", mafiosi=2)
        who, me = mafioso(table)
        storage = table.bot.storage
        real = storage.set_meta
        failures = break_storage(monkeypatch, storage, "set_meta", database)
        table.fake.fail("POST", CALLBACK, status=500, count=2)
        with caplog.at_level(logging.INFO):
            failed = await table.slash(who, "elect", {"player": me}, wait=False)
            # the end of its handling: the answer held, or (before) the command refused
            ends = ("held in memory", "refused as not stored")
            [end] = await table.fake.wait_until(
                lambda: (
                    [
                        r.getMessage()
                        for r in caplog.records
                        if any(e in r.getMessage() for e in ends)
                    ]
                    or None
                ),
                15.0,
                "the command's handling never ended",
            )
        assert failures, "the database was asked to keep the answer"
        assert "held in memory" in end, end
        monkeypatch.setattr(storage, "set_meta", real)  # the database is back
        rows = [r for r in await storage.commands(live.id) if r.command["verb"] == "elect"]
        assert len(rows) == 1, "the command stands"
        # nothing told him it did not happen
        tries = [
            c.status
            for c in table.fake.calls("POST")
            if c.path == f"/interactions/{failed.id}/{failed.token}/callback"
        ]
        assert 200 not in tries and 204 not in tries, tries
        assert failed.callback is None
        assert all(f.content != refusal_text("ru", "error.not_stored") for f in failed.followups)
        # his next answer carries the one he missed, once
        status_answer = await run(table, who, "mafia status")
        [notice] = await status_answer.wait_followups(1)
        assert notice.content == t(
            "ru", "notice.undelivered", answer=t("ru", "reply.elect", target=f"<@{me}>")
        )
        again = await run(table, who, "mafia status")
        assert again.followups == []
