"""Hosts come and go: the host leaving the server is announced where the players look, a member
with Manage Server takes his place (``/host take``) or ends the game, a lobby with no host closes
itself after ``timers.hostless_lobby``, and a host hands his game to someone else
(``/host hand``); in both languages, as each persona sees it."""

from __future__ import annotations

import pytest

from bot.config import Config, Timers
from bot.i18n import t
from bot.storage import GameState
from cogs.mentions import command
from tests.cogs.scenes import lobby_message, quick_edits, run
from tests.harness import NO_TIMERS, Table, bot_table

NOW = 1_800_000_000.0
MANAGE_GUILD = 1 << 5
PLAYERS = [f"p{i}" for i in range(8)]


def moderators(table: Table, *names: str) -> None:
    """Give these members a role with Manage Server (and nothing else)."""
    role = table.fake.create_role(table.guild_id, "Модераторы", permissions=MANAGE_GUILD)
    for name in names:
        table.fake.add_member_role(table.guild_id, table.member(name).user.id, role.id)


async def hosted_by(table: Table, host: str, *, start: bool = False, locale: str = "ru") -> int:
    """``host`` opens a lobby, :data:`PLAYERS` join, and (``start``) the game starts: the game's
    id."""
    await table.drain()
    opened = await table.slash(host, "mafia new", locale=locale)
    await opened.wait_final()
    assert opened.ephemeral, opened.describe()
    lobby = await lobby_message(table)
    live = table.live()
    for name in PLAYERS:
        joined = await table.fake.click(lobby, f"mafia:join:{live.id}", table.member(name).user.id)
        assert joined.callback_type == 4, joined.describe()
    if start:
        setup = await run(table, host, "host setup", {"cities": "Верона"}, locale=locale)
        assert setup.ephemeral, setup.describe()
        started = await table.slash(host, "host start", locale=locale)
        await started.wait_original(60.0)
        await table.drain()
        assert table.live().record.state == GameState.RUNNING
    return live.id


async def leaves(table: Table, user_id: int) -> None:
    """The member leaves the server; waits until the game has marked its host gone."""
    table.fake.remove_member(table.guild_id, user_id)
    await table.fake.wait_until(
        lambda: table.live().record.lobby.get("host_gone") is not None,
        5.0,
        "the host's leaving was never noticed",
    )
    await table.drain()


def mentioned(language: str, path: str) -> str:
    return command(language, path)


@pytest.mark.parametrize("language", ["ru", "en"])
async def test_a_lobby_whose_host_left_is_taken_over_by_a_moderator_and_started(language):
    locale = "ru" if language == "ru" else "en-US"  # the server's and its members' clients
    async with bot_table(players=12, config=Config(timers=NO_TIMERS), guild_locale=locale) as table:
        quick_edits(table)
        moderators(table, "p10", "p11")
        game = await hosted_by(table, "p10")
        host, moderator = table.member("p10").user.id, table.member("p11").user.id
        general = table.world.text_channel.id

        await leaves(table, host)
        closes = int(table.live().record.lobby["host_gone"] + 900)
        assert table.channel_messages(general)[-1] == t(
            language,
            "hosts.gone_lobby",
            host=f"<@{host}>",
            game=game,
            when=f"<t:{closes}:R>",
            take=mentioned(language, "host take"),
            end=mentioned(language, "host end"),
        )
        # the moderator's /help shows him the way; a player's does not
        helped = await run(table, "p11", "help")
        assert (
            t(
                language,
                "help.host_gone",
                game=game,
                take=mentioned(language, "host take"),
                end=mentioned(language, "host end"),
            )
            in helped.content
        )
        player_help = await run(table, "p0", "help")
        assert mentioned(language, "host take") not in player_help.content

        refused = await run(table, "p9", "host take")  # no right to, and no player either
        assert refused.content == t(language, "error.take_no_right")
        playing = await run(table, "p0", "host take")
        assert playing.content.startswith(
            t(language, "error.host_plays", cmd_help="").split(".")[0]
        )
        took = await run(table, "p11", "host take")
        assert took.content == t(language, "host.took", game=game, help=mentioned(language, "help"))
        await table.drain()
        record = table.live().record
        assert record.host_id == moderator and "host_gone" not in record.lobby
        assert table.channel_messages(general)[-1] == t(
            language, "hosts.taken", member=f"<@{moderator}>", old=f"<@{host}>", game=game
        )
        lobby = await lobby_message(table)
        assert f"<@{moderator}>" in lobby.content and f"<@{host}>" not in lobby.content

        # the new host runs the game and sees what a host sees
        await run(table, "p11", "host setup", {"cities": "Верона"})
        started = await table.slash("p11", "host start")
        await started.wait_original(60.0)
        await table.drain()
        channels = table.live().record.channels
        view = table.fake.client_view(moderator, table.guild_id)
        assert view.sees(int(channels["log"])) and view.sees(table.mafia_channel("Верона"))


async def test_a_lobby_with_no_host_closes_itself_and_a_new_game_can_open():
    now = [NOW]
    config = Config(timers=Timers(discussion=0, voting=0, night=0, execution=0, reminders=()))
    async with bot_table(players=12, config=config, clock=lambda: now[0]) as table:
        quick_edits(table)
        moderators(table, "p10", "p11")
        game = await hosted_by(table, "p10", locale="en")
        host = table.member("p10").user.id
        general = table.world.text_channel.id
        await leaves(table, host)
        assert table.live().record.state == GameState.LOBBY

        now[0] += 899
        table.bot.get_cog("HostCog").hostless.arm(table.live())
        await table.drain()
        assert table.live().record.state == GameState.LOBBY, "closed before its time"
        now[0] += 2
        table.bot.get_cog("HostCog").hostless.arm(table.live())
        await table.fake.wait_until(
            lambda: (
                table.bot.service.find(game) is None
                or table.bot.service.find(game).record.state == GameState.CANCELLED
            ),
            5.0,
            "the lobby never closed",
        )
        await table.drain()
        assert t("ru", "hosts.lobby_closed", game=game) in table.channel_messages(general)
        opened = await run(table, "p11", "mafia new")
        assert opened.content != t("ru", "error.game_exists"), opened.content
        latest = await table.bot.storage.latest_game(table.guild_id)
        assert latest is not None and latest.id != game and latest.host_id != host


async def test_a_running_game_goes_on_and_a_moderator_takes_the_hosts_place():
    async with bot_table(players=12, config=Config(timers=NO_TIMERS)) as table:
        quick_edits(table)
        moderators(table, "p10", "p11", "p0")
        game = await hosted_by(table, "p10", start=True)
        host, moderator = table.member("p10").user.id, table.member("p11").user.id
        channels = table.live().record.channels
        city, log_channel = table.city_channel("Верона"), int(channels["log"])

        present = await run(table, "p11", "host take")
        assert present.content == t(
            "ru", "error.host_present", host=f"<@{host}>", hand=mentioned("ru", "host hand")
        )
        await leaves(table, host)
        told = t(
            "ru",
            "hosts.gone_game",
            host=f"<@{host}>",
            game=game,
            when="",
            take=mentioned("ru", "host take"),
            end=mentioned("ru", "host end"),
        )
        assert table.channel_messages(city)[-1] == told
        assert table.channel_messages(log_channel)[-1] == told

        # a moderator who plays may not: the host sees every secret
        playing = await run(table, "p0", "host take")
        assert playing.content.startswith(t("ru", "error.host_plays", cmd_help="").split("—")[0])
        assert not table.fake.client_view(moderator, table.guild_id).sees(log_channel)
        took = await run(table, "p11", "host take")
        assert took.content == t("ru", "host.took", game=game, help=mentioned("ru", "help"))
        await table.drain()
        view = table.fake.client_view(moderator, table.guild_id)
        assert view.sees(log_channel) and view.sees(table.mafia_channel("Верона"))
        assert table.live().record.channels["host_id"] == moderator
        assert table.channel_messages(city)[-1] == t(
            "ru", "hosts.taken", member=f"<@{moderator}>", old=f"<@{host}>", game=game
        )
        ended = await run(table, "p11", "host end")
        assert ended.content == t("ru", "host.ended_reply")


async def test_a_moderator_ends_the_game_of_a_host_who_left():
    async with bot_table(players=12, config=Config(timers=NO_TIMERS)) as table:
        quick_edits(table)
        moderators(table, "p10", "p11")
        await hosted_by(table, "p10", start=True)
        before = await run(table, "p11", "host end")
        assert before.content == t("ru", "error.not_host", cmd_help=mentioned("ru", "help"))
        await leaves(table, table.member("p10").user.id)
        ended = await run(table, "p11", "host end")
        assert ended.content == t("ru", "host.ended_reply")
        await table.drain()
        latest = await table.bot.storage.latest_game(table.guild_id)
        assert latest is not None and latest.state == GameState.CANCELLED


async def test_a_host_hands_his_game_to_another_member_in_english():
    async with bot_table(players=12, config=Config(timers=NO_TIMERS)) as table:
        quick_edits(table)
        moderators(table, "p10")
        assert (await run(table, "host", "admin language", {"language": "en"})).ephemeral
        game = await hosted_by(table, "p10", start=True, locale="en")
        old, new = table.member("p10").user.id, table.member("p11").user.id
        room, city = table.mafia_channel("Верона"), table.city_channel("Верона")
        player = table.pid("p0")

        to_player = await run(table, "p10", "host hand", {"member": player}, locale="en")
        assert to_player.content == t("en", "error.cohost_plays", member=f"<@{player}>")
        not_his = await run(table, "p11", "host hand", {"member": str(new)}, locale="en")
        assert not_his.content == t("en", "error.only_host_hands")
        handed = await run(table, "p10", "host hand", {"member": str(new)}, locale="en")
        assert handed.content == t("en", "host.handed", member=f"<@{new}>", game=game)
        await table.drain()
        assert table.live().record.host_id == new
        assert table.fake.client_view(new, table.guild_id).sees(room)
        assert not table.fake.client_view(old, table.guild_id).sees(room)
        line = t("en", "hosts.handed", member=f"<@{new}>", old=f"<@{old}>", game=game)
        assert table.channel_messages(city)[-1] == line
        refused = await run(table, "p10", "host next", locale="en")
        assert refused.content.startswith(t("en", "error.not_host", cmd_help="").split(".")[0])


async def test_the_host_who_comes_back_hosts_again():
    async with bot_table(players=12, config=Config(timers=NO_TIMERS)) as table:
        quick_edits(table)
        moderators(table, "p10")
        game = await hosted_by(table, "p10")
        host = table.member("p10")
        await leaves(table, host.user.id)
        table.fake.add_member(table.guild_id, host.user, roles=host.roles)
        await table.fake.wait_until(
            lambda: "host_gone" not in table.live().record.lobby, 5.0, "never noticed he is back"
        )
        await table.drain()
        general = table.world.text_channel.id
        assert table.channel_messages(general)[-1] == t(
            "ru", "hosts.back", host=f"<@{host.user.id}>", game=game
        )
        assert table.live().record.host_id == host.user.id


async def test_the_end_locks_the_rooms_of_a_mafioso_who_left_while_the_bot_was_not_looking():
    async with bot_table(players=12, config=Config(timers=NO_TIMERS), refusals=True) as table:
        quick_edits(table)
        await table.new_game(players=PLAYERS, cities="Верона", mafiosi=2)
        room = table.mafia_channel("Верона")
        mafioso = int(table.game.living_mafiosi("Верона")[0])
        # gone from Discord with no GUILD_MEMBER_REMOVE seen: the bot still names him
        table.fake.state.guild(table.guild_id).members.pop(mafioso)
        ended = await run(table, "host", "host end")
        assert ended.content == t("ru", "host.ended_reply")
        await table.drain()
        overwrites = {o.id for o in table.fake.state.channels[room].overwrites}
        assert mafioso not in overwrites
        refused = [c for c in table.fake.calls() if c.status >= 400]
        assert [(c.method, c.status) for c in refused if c.method == "PATCH"] == [("PATCH", 404)]
        assert all(c.status < 400 for c in table.fake.calls()[-3:] if c.method == "PATCH")
