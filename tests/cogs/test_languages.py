"""Every member in his language: a server speaks its preferred locale's language until
``/admin language`` sets one, and each member's private answers follow his own client."""

import tempfile
from pathlib import Path

import pytest

from bot.config import Config
from bot.i18n import t
from tests.fakediscord import FakeDiscord, build_standard_guild
from tests.harness import NO_TIMERS, bot_on, bot_table

LOCALES = {"ru": "ru", "en": "en-US"}


@pytest.mark.parametrize(
    ("preferred", "language"), [("ru", "ru"), ("en-US", "en"), ("en-GB", "en"), ("de", "en")]
)
async def test_a_server_speaks_its_preferred_locale_until_told_otherwise(
    preferred: str, language: str
):
    async with bot_table(players=4, guild_locale=preferred) as table:
        opened = await table.slash("host", "mafia new", locale=preferred)
        assert opened.content.startswith(t(language, "lobby.opened", game=1).split("#")[0][:8])
        lobby = await table.lobby_message()
        assert lobby.content.startswith(t(language, "lobby.title", game=1))
        city = t(language, "lobby.default_cities").split(",")[0]
        assert t(language, "lobby.cities", cities=city) in lobby.content.splitlines()
        assert table.live().language == language


@pytest.mark.parametrize("chosen", ["ru", "en"])
async def test_admin_language_overrides_the_preferred_locale(chosen: str):
    preferred = "en-US" if chosen == "ru" else "ru"
    async with bot_table(players=4, guild_locale=preferred) as table:
        told = await table.slash("host", "admin language", {"language": chosen})
        assert told.content == t(chosen, "admin.language")
        await table.slash("host", "mafia new", locale=preferred)
        lobby = await table.lobby_message()
        assert lobby.content.startswith(t(chosen, "lobby.title", game=1))


@pytest.mark.parametrize(("server", "member"), [("ru", "en"), ("en", "ru")])
async def test_a_members_private_answers_follow_his_client_and_public_posts_the_server(
    server: str, member: str
):
    async with bot_table(players=4, guild_locale=LOCALES[server]) as table:
        locale = LOCALES[member]
        opened = await table.slash("host", "mafia new", locale=locale)
        assert opened.ephemeral
        assert opened.content.split(":")[0] == t(member, "lobby.opened", game=1).split(":")[0]
        lobby = await table.lobby_message()
        assert lobby.content.startswith(t(server, "lobby.title", game=1))

        joined = await table.fake.click(
            lobby, f"mafia:join:{table.live().id}", table.member("p0").user.id, locale=locale
        )
        assert joined.ephemeral and joined.content == t(member, "lobby.joined")
        status = await table.slash("p0", "mafia status", locale=locale)
        assert status.ephemeral
        title = t(member, "status.title", game=1, host="")
        assert status.content.splitlines()[0].startswith(title[:8])

        # a refusal is private too: in the member's language, whatever the server speaks
        refused = await table.slash("p1", "mafia leave", locale=locale)
        assert refused.ephemeral and refused.content == t(member, "error.not_joined")

        # and the lobby, edited for the join, still speaks the server's language
        await table.drain()
        edited = table.fake.message(lobby.id)
        assert edited.content.startswith(t(server, "lobby.title", game=1))


@pytest.mark.parametrize(("server", "member"), [("ru", "en"), ("en", "ru")])
async def test_help_speaks_the_members_language(server: str, member: str):
    async with bot_table(players=4, guild_locale=LOCALES[server]) as table:
        await table.open_lobby()
        helped = await table.slash("p0", "help", locale=LOCALES[member])
        assert helped.ephemeral
        joined = t(member, "help.lobby_joined", game=1, leave="")
        assert helped.content.startswith(joined.split("{")[0][:15])


async def test_an_english_servers_game_still_speaks_english_after_a_restart():
    """A restart loads the open games before Discord has sent their guilds: once a guild is
    there, its games speak its preferred locale's language, not the configured default."""
    fake = FakeDiscord()
    world = build_standard_guild(fake, players=["p0", "p1"], preferred_locale="en-US")
    await fake.start()
    try:
        with tempfile.TemporaryDirectory() as folder:
            config = Config(timers=NO_TIMERS, database=Path(folder) / "bot.sqlite3")
            async with bot_on(fake, world, config) as first:
                await first.slash("host", "mafia new")
                await first.drain()
                assert first.live().language == "en"
            async with bot_on(fake, world, config) as second:
                await fake.wait_until(
                    lambda: second.bot.get_guild(world.guild.id) is not None or None,
                    5.0,
                    "the guild never came",
                )
                await fake.wait_until(
                    lambda: second.live().language == "en" or None, 5.0, "still the default"
                )
                status = await second.slash("p0", "mafia status", locale="en-US")
                assert status.content.startswith(t("en", "status.title", game=1, host="")[:6])
                joined = await fake.click(
                    await second.lobby_message(), "mafia:join:1", second.member("p0").user.id
                )
                assert joined.content == t("en", "lobby.joined")
                await second.drain()
                lobby = await second.lobby_message()
                assert lobby.content.startswith(t("en", "lobby.title", game=1))
    finally:
        await fake.close()
