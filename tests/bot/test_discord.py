"""The bot process on the fake Discord: command sync, first commands, de-duplication, faults."""

import pytest

from tests.harness import bot_table

SEND = "/channels/{channel_id}/messages"


async def test_commands_are_synced_with_russian_and_english_localisations():
    async with bot_table(players=4) as table:
        puts = table.fake.calls("PUT", "/applications/{application_id}/commands")
        assert len(puts) == 1
        commands = {c["name"]: c for c in puts[0].json}
        assert {"mafia", "host", "admin", "nominate", "vote", "kill", "check"} <= set(commands)
        mafia = commands["mafia"]
        assert mafia["name_localizations"]["ru"] == "мафия"
        assert mafia["name_localizations"]["en-US"] == "mafia"
        assert mafia["description_localizations"]["ru"] == "Игра в мафию"
        new = next(o for o in mafia["options"] if o["name"] == "new")
        assert new["name_localizations"]["ru"] == "новая"
        vote = commands["vote"]
        assert vote["options"][0]["name_localizations"]["ru"] == "игрок"
        assert vote["options"][0]["autocomplete"] is True
        setup = next(o for o in commands["host"]["options"] if o["name"] == "setup")
        first_phase = next(o for o in setup["options"] if o["name"] == "first_phase")
        assert {c["name_localizations"]["ru"] for c in first_phase["choices"]} == {"день", "ночь"}


async def test_an_unchanged_command_tree_is_not_synced_again(tmp_path):
    from bot.config import Config
    from tests.fakediscord import FakeDiscord, build_standard_guild
    from tests.harness import NO_TIMERS, bot_on

    fake = FakeDiscord()
    world = build_standard_guild(fake, players=["p0"])
    await fake.start()
    config = Config(database=tmp_path / "db.sqlite3", timers=NO_TIMERS)
    try:
        async with bot_on(fake, world, config):
            pass
        async with bot_on(fake, world, config):
            pass
        assert len(fake.calls("PUT", "/applications/{application_id}/commands")) == 1
    finally:
        await fake.close()


async def test_mafia_new_answers_with_the_lobby_and_status_shows_the_game():
    async with bot_table(players=4) as table:
        opened = await table.slash("host", "mafia new")
        assert opened.callback_type == 4 and opened.ephemeral and "№1" in opened.content
        lobby = await table.lobby_message()
        assert "лобби игры №1" in lobby.content and not lobby.ephemeral
        assert "mafia:join:1" in lobby.custom_ids()
        status = await table.slash("p0", "mafia status")
        assert (
            status.ephemeral
            and "Игра №1" in status.content
            and "Лобби: 0 игроков." in status.content
        )
        refused = await table.slash("p0", "mafia new")
        assert refused.ephemeral and "только ведущий" in refused.content


async def test_a_repeated_interaction_is_applied_once():
    async with bot_table(players=8) as table:
        live = await table.new_game(cities="A")
        nominator, target = table.game.alive()[0], table.game.alive()[1]
        first = await table.slash(table.name(nominator), "nominate", {"player": target})
        assert first.ephemeral
        await table.fake.resend(first)
        await table.drain()
        rows = await table.bot.storage.commands(live.id)
        assert [r.command["verb"] for r in rows] == ["nominate"]
        nominations = [m for m in table.channel_messages(table.city_channel("A")) if "📌" in m]
        assert len(nominations) == 1


# discord.py itself retries 429 and 500 (a 500 after 1 + 2n seconds, hence one only);
# a 503 reaches the outbox, which backs off and tries again
@pytest.mark.parametrize(("status", "count"), [(429, 3), (500, 1), (503, 3)])
async def test_discord_errors_delay_announcements_but_lose_or_repeat_nothing(status, count):
    async with bot_table(players=8) as table:
        await table.new_game(cities="A")
        channel = table.city_channel("A")
        before = len(table.fake.messages(channel))
        fault = table.fake.fail(
            "POST", rf"/channels/{channel}/messages$", status=status, count=count, retry_after=0.05
        )
        await table.slash("host", "host next")
        await table.slash("host", "host next")
        await table.drain()
        assert fault.hits == count
        texts = table.channel_messages(channel)[before:]
        assert sum("голосование" in t for t in texts) == 1
        assert sum("Ночь 1" in t for t in texts) == 1
        counts = await table.bot.storage.outbox_counts(table.live().id)
        assert counts.get("pending", 0) == 0 and counts.get("failed", 0) == 0
