"""The lobby: who may open one, one game per guild, joining and leaving, one running game per
player across guilds, the host role, and /host setup's validation."""

from __future__ import annotations

from bot.i18n import t
from tests.cogs.scenes import (
    another_guild,
    assert_unchanged,
    lobby_message,
    patches,
    posted,
    quick_edits,
    run,
    snapshot,
)
from tests.fakediscord import Overwrite, Permission
from tests.harness import Table, bot_table


def mention(table: Table, name: str) -> str:
    return f"<@{table.pid(name)}>"


def lobby_players(table: Table) -> list[int]:
    return [p["id"] for p in table.live().record.lobby["players"]]


async def test_only_a_host_opens_a_lobby_and_only_one_per_guild():
    async with bot_table(players=4) as table:
        refused = await run(table, "p0", "mafia new")
        assert refused.ephemeral
        assert refused.content == t("ru", "error.not_host")
        assert await table.bot.storage.open_game(table.guild_id) is None
        assert posted(table) == {}

        opened = await run(table, "host", "mafia new")
        live = table.live()
        assert opened.ephemeral and opened.content == t("ru", "lobby.opened", game=live.id)
        lobby = await lobby_message(table)
        assert lobby.channel_id == table.world.text_channel.id and not lobby.ephemeral, (
            "the lobby is for everyone to see"
        )
        assert live.record.state == "lobby" and live.record.host_id == table.host.user.id
        assert t("ru", "lobby.title", game=live.id) in lobby.content
        assert set(lobby.custom_ids()) == {f"mafia:join:{live.id}", f"mafia:leave:{live.id}"}
        lobbies = [
            m
            for m in table.fake.messages(table.world.text_channel.id)
            if t("ru", "lobby.title", game=live.id) in m.content
        ]
        assert lobbies == [lobby], "the lobby is posted once"

        # a second game in the same guild, by the owner or by another member who manages the server
        managers = table.fake.create_role(
            table.guild_id, "Админы", permissions=int(Permission.MANAGE_GUILD)
        )
        table.fake.add_member_role(table.guild_id, table.member("p1").user.id, managers.id)
        before = await snapshot(table)
        for who in ("host", "p1"):
            again = await run(table, who, "mafia new")
            assert again.ephemeral and again.content == t("ru", "error.game_exists"), who
        await assert_unchanged(table, before)
        assert [g.id for g in table.bot.service.games()] == [live.id]


async def test_join_and_leave_by_button_and_by_command_edit_the_lobby_message():
    async with bot_table(players=4) as table:
        quick_edits(table)
        await run(table, "host", "mafia new")
        lobby = await lobby_message(table)
        game = table.live().id
        first_text = lobby.content
        assert t("ru", "lobby.players", count=0, players=t("ru", "lobby.nobody")) in first_text

        by_button = await table.fake.click(lobby, f"mafia:join:{game}", table.member("p0").user.id)
        assert by_button.ephemeral and by_button.content == t("ru", "lobby.joined")
        by_command = await run(table, "p1", "mafia join")
        assert by_command.ephemeral and by_command.content == t("ru", "lobby.joined")
        await table.drain()
        lobby = await lobby_message(table)
        both = ", ".join([mention(table, "p0"), mention(table, "p1")])
        assert t("ru", "lobby.players", count=2, players=both) in lobby.content
        sent = patches(table, lobby.id)
        assert sent, "the lobby message was never edited"
        assert sent[-1].json["content"] == lobby.content
        assert {
            c["custom_id"] for row in sent[-1].json["components"] for c in row["components"]
        } == {f"mafia:join:{game}", f"mafia:leave:{game}"}
        assert lobby_players(table) == [table.member("p0").user.id, table.member("p1").user.id]

        edits = len(sent)
        left = await run(table, "p0", "mafia leave")
        assert left.ephemeral and left.content == t("ru", "lobby.left")
        await table.drain()
        lobby = await lobby_message(table)
        assert t("ru", "lobby.players", count=1, players=mention(table, "p1")) in lobby.content
        assert len(patches(table, lobby.id)) > edits

        edits = len(patches(table, lobby.id))
        by_leave_button = await table.fake.click(
            lobby, f"mafia:leave:{game}", table.member("p1").user.id
        )
        assert by_leave_button.ephemeral and by_leave_button.content == t("ru", "lobby.left")
        await table.drain()
        lobby = await lobby_message(table)
        assert t("ru", "lobby.players", count=0, players=t("ru", "lobby.nobody")) in lobby.content
        assert len(patches(table, lobby.id)) > edits
        assert lobby_players(table) == []
        assert [e["content"] for e in lobby.edits][0] == first_text


async def test_a_player_of_a_running_game_cannot_join_or_be_dealt_into_another():
    async with bot_table(players=8) as table_a:
        quick_edits(table_a)
        table_b = await another_guild(table_a, "b", 8)
        shared = table_a.member("p0").user
        table_a.fake.add_member(table_b.guild_id, shared)
        await table_a.fake.wait_until(
            lambda: table_a.bot.get_guild(table_b.guild_id).get_member(shared.id)
        )
        wanderer = table_a.member("p1").user  # joins B's lobby before A starts
        table_a.fake.add_member(table_b.guild_id, wanderer)
        await table_a.fake.wait_until(
            lambda: table_a.bot.get_guild(table_b.guild_id).get_member(wanderer.id)
        )

        await run(table_b, "host", "mafia new")
        lobby_b = await lobby_message(table_b)
        game_b = table_b.live().id
        early = await table_b.fake.click(lobby_b, f"mafia:join:{game_b}", wanderer.id)
        assert early.content == t("ru", "lobby.joined")
        for name in [f"b{i}" for i in range(7)]:
            await table_b.fake.click(lobby_b, f"mafia:join:{game_b}", table_b.member(name).user.id)

        await table_a.new_game(cities="Верона")
        assert str(shared.id) in table_a.game.players and str(wanderer.id) in table_a.game.players

        before = await snapshot(table_b)
        by_button = await table_b.fake.click(
            await lobby_message(table_b), f"mafia:join:{game_b}", shared.id
        )
        by_command = await run(table_b, shared.id, "mafia join")
        for answer in (by_button, by_command):
            assert answer.ephemeral and answer.content == t("ru", "error.in_other_game")
        await assert_unchanged(table_b, before)
        assert shared.id not in lobby_players(table_b)

        channels_before = {c.id for c in table_b.fake.state.guild_channels(table_b.guild_id)}
        started = await run(table_b, "host", "host start")
        assert started.ephemeral
        assert started.content == t("ru", "error.player_in_other_game", player=f"<@{wanderer.id}>")
        await assert_unchanged(table_b, before)
        assert table_b.live().record.state == "lobby"
        assert {
            c.id for c in table_b.fake.state.guild_channels(table_b.guild_id)
        } == channels_before


async def test_the_host_role_gives_its_members_the_host_commands():
    async with bot_table(players=8) as table:
        quick_edits(table)
        hosts = table.fake.create_role(table.guild_id, "Ведущие")
        helper = table.member("p7").user.id
        table.fake.add_member_role(table.guild_id, helper, hosts.id)  # interactions carry roles

        assert (await run(table, helper, "mafia new")).content == t("ru", "error.not_host")
        denied = await run(table, "p0", "admin hostrole", {"role": hosts.id})
        assert denied.ephemeral and denied.content == t("ru", "error.not_allowed")
        assert await table.bot.storage.guild_host_role(table.guild_id) is None

        granted = await run(table, "host", "admin hostrole", {"role": hosts.id})
        assert granted.ephemeral and granted.content == t(
            "ru", "admin.hostrole", role=f"<@&{hosts.id}>"
        )
        assert await table.bot.storage.guild_host_role(table.guild_id) == hosts.id

        await table.open_lobby([f"p{i}" for i in range(7)])  # the owner's game
        assert table.live().record.host_id == table.host.user.id
        configured = await run(table, helper, "host setup", {"cities": "Верона"})
        assert (
            configured.ephemeral and t("ru", "lobby.cities", cities="Верона") in configured.content
        )
        assert (await run(table, "p0", "host setup", {"cities": "Падуя"})).content == t(
            "ru", "error.not_host"
        )
        assert table.live().record.lobby["setup"]["cities"] == ["Верона"]
        started = await run(table, helper, "host start")
        assert started.content == t("ru", "host.started")
        assert table.live().record.state == "running"

        removed = await run(table, "host", "admin hostrole")
        assert removed.content == t("ru", "admin.hostrole_none")
        refused = await run(table, helper, "host next")
        assert refused.ephemeral and refused.content == t("ru", "error.not_host")
        assert table.game.stage.value == "discussion"


async def test_host_setup_refuses_bad_cities_and_keeps_the_lobby():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.open_lobby()
        before = await snapshot(table)
        eleven = ", ".join(f"Город{i}" for i in range(11))
        for cities in ("Верона, Верона", "Верона, верона", " , ,\u200d", "A\u030a, \u00c5", eleven):
            answer = await run(table, "host", "host setup", {"cities": cities})
            assert answer.ephemeral and answer.content == t("ru", "error.bad_cities", count=10), (
                cities
            )
        long_name = "Я" * 41
        answer = await run(table, "host", "host setup", {"cities": f"Верона, {long_name}"})
        assert answer.content == t("ru", "error.city_name_too_long", city="Я" * 39 + "…", limit=40)
        assert "40 символов" in answer.content
        touring = await run(table, "host", "host touring", {"order": "Верона, Атлантида"})
        assert touring.content == t("ru", "error.unknown_city", city="Атлантида")
        await assert_unchanged(table, before)

        # sound names, but too many cities for 8 players: refused at the start, nothing created
        fine = await run(table, "host", "host setup", {"cities": "Верона, Падуя, Мантуя"})
        assert t("ru", "lobby.cities", cities="Верона, Падуя, Мантуя") in fine.content
        await table.drain()
        assert (
            t("ru", "lobby.cities", cities="Верона, Падуя, Мантуя")
            in (await lobby_message(table)).content
        )
        before = await snapshot(table)
        started = await run(table, "host", "host start")
        assert started.ephemeral
        assert started.content == t(
            "ru", "error.cannot_deal", reason=t("ru", "error.too_few_players")
        )
        await assert_unchanged(table, before)
        assert table.live().record.state == "lobby"


async def test_a_lobby_is_not_opened_where_the_bot_cannot_post_it():
    async with bot_table(players=4) as table:
        table.fake.set_overwrite(
            table.world.text_channel.id,
            Overwrite(table.fake.bot_user.id, 1, allow=0, deny=int(Permission.SEND_MESSAGES)),
        )
        refused = await run(table, "host", "mafia new")
        assert refused.ephemeral and refused.content == t("ru", "error.cannot_post_lobby")
        assert await table.bot.storage.open_game(table.guild_id) is None
        assert posted(table) == {}


FAMILY = "👨\u200d👩\u200d👧"  # three emoji joined by zero-width joiners: one family
KHORRAMABAD = "خرم\u200cآباد"  # a zero-width non-joiner keeps خرم and آباد apart, in one word
ANGSTROM = "A\u030angstro\u0308m"  # letters written with combining marks
KSHATRIYA = "क्षत्रिय"  # Devanagari: viramas and vowel signs are combining marks


def test_city_names_are_split_on_commas_only_and_keep_every_character() -> None:
    from cogs.host import split_names

    assert split_names(f" {FAMILY} ,{KHORRAMABAD},  {ANGSTROM}\n, {KSHATRIYA}") == [
        FAMILY,
        KHORRAMABAD,
        ANGSTROM,
        KSHATRIYA,
    ]
    assert split_names("Рим; Остия, Нью\u00a0 Васюки\tсити") == ["Рим; Остия", "Нью Васюки сити"]
    assert split_names("\u200d, \u0301,\ufe0f, ,") == [], "nothing visible: no name"


async def test_a_game_keeps_joined_and_marked_city_names_in_its_channels_and_roles():
    names = [FAMILY, KHORRAMABAD, ANGSTROM, KSHATRIYA]
    async with bot_table(players=16) as table:
        live = await table.new_game(cities=", ".join(names))
        assert list(table.game.cities) == names
        lobby = await lobby_message(table)
        assert t("ru", "lobby.cities", cities=", ".join(names)) in lobby.content
        roles = {role.name for role in table.fake.guild(table.guild_id).roles.values()}
        for name in names:
            text = table.fake.state.channel(table.city_channel(name))
            mafia = table.fake.state.channel(table.mafia_channel(name))
            assert text.name == t("ru", "channel.city", city=name).lower(), (text.name, name)
            assert mafia.name == t("ru", "channel.mafia", city=name).lower()
            assert t("ru", "game_role.living", game=live.id, city=name) in roles
        assert "\u200d" in table.fake.state.channel(table.city_channel(FAMILY)).name
        assert "\u200c" in table.fake.state.channel(table.city_channel(KHORRAMABAD)).name
        welcome = table.channel_messages(table.city_channel(KHORRAMABAD))[0]
        assert KHORRAMABAD in welcome and "خرم آباد" not in welcome
        await run(table, "host", "host touring", {"order": ", ".join(reversed(names))})
        assert table.game.touring_order == tuple(reversed(names))
