"""An honest host: the host (and his co-hosts) cannot play, a player never gets the host's commands
or lists whatever his roles, and co-hosts see what the host sees through member overwrites."""

from __future__ import annotations

from typing import Any

from discord import app_commands

from bot.i18n import t
from bot.permissions import HOST
from tests.cogs.scenes import accepted, assert_unchanged, lobby_message, quick_edits, run, snapshot
from tests.harness import Table, bot_table


async def offered(table: Table, who: Any, command: str, option: str, typed: str = "") -> list[str]:
    result = await table.fake.autocomplete(
        table.guild_id, table.member(who).user.id, command, option, typed
    )
    assert result.callback_type == 8, result.describe()
    return [choice["value"] for choice in result.choices]


def host_commands(table: Table) -> set[str]:
    """Every ``/host`` command of the bot's tree, by its default path (``host cohost add``)."""
    group = next(c for c in table.bot.tree.get_commands() if c.name == "host")
    assert isinstance(group, app_commands.Group)
    return {c.qualified_name for c in group.walk_commands() if isinstance(c, app_commands.Command)}


async def test_the_host_and_his_co_hosts_cannot_join_and_a_player_cannot_become_co_host():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.open_lobby([f"p{i}" for i in range(6)])
        live = table.live()
        lobby = await lobby_message(table)

        before = await snapshot(table)
        refused = await table.fake.click(lobby, f"mafia:join:{live.id}", table.host.user.id)
        assert refused.ephemeral and refused.content == t("ru", "error.host_cannot_play")
        by_command = await run(table, "host", "mafia join")
        assert by_command.content == t("ru", "error.host_cannot_play")
        await assert_unchanged(table, before)

        # a co-host named in the lobby is no player either
        added = await run(table, "host", "host cohost add", {"member": table.member("p7").user.id})
        assert added.content == t("ru", "host.cohost_added", member=f"<@{table.pid('p7')}>")
        assert table.live().record.lobby["cohosts"] == [table.member("p7").user.id]
        await table.drain()
        assert (
            t("ru", "lobby.cohosts", cohosts=f"<@{table.pid('p7')}>")
            in table.fake.message(lobby.id).content
        )
        before = await snapshot(table)
        refused = await table.fake.click(lobby, f"mafia:join:{live.id}", table.member("p7").user.id)
        assert refused.content == t("ru", "error.host_cannot_play")
        await assert_unchanged(table, before)

        # a player of the lobby cannot be made co-host; a co-host cannot name co-hosts
        player = await run(table, "host", "host cohost add", {"member": table.member("p0").user.id})
        assert player.content == t("ru", "error.cohost_plays", member=f"<@{table.pid('p0')}>")
        by_cohost = await run(
            table, "p7", "host cohost add", {"member": table.member("p6").user.id}
        )
        assert by_cohost.content == t("ru", "error.only_host")
        await assert_unchanged(table, before)


async def test_a_player_with_the_host_role_gets_no_host_command_and_no_host_list():
    async with bot_table(players=9) as table:
        quick_edits(table)
        hosts = table.fake.create_role(table.guild_id, "Ведущие")
        await run(table, "host", "admin hostrole", {"role": hosts.id})
        insider = table.member("p0").user.id
        table.fake.add_member_role(table.guild_id, insider, hosts.id)
        await table.new_game(
            players=[f"p{i}" for i in range(8)], cities="Верона", mafiosi=2, day_fallback="host"
        )
        game = table.game
        me = str(insider)
        someone = next(p for p in game.players if p != me)
        newcomer = table.member("p8").user.id
        cases: dict[str, dict[str, Any]] = {
            "host setup": {"cities": "Рим"},
            "host touring": {"order": "Верона"},
            "host timer": {"stage": "voting", "duration": "60"},
            "host start": {},
            "host next": {},
            "host kill": {"player": someone},
            "host judge": {"player": someone},
            "host godfather": {"player": someone},
            "host execute": {"player": someone},
            "host idle": {},
            "host skip": {},
            "host end": {},
            "host extend": {"duration": "5m"},
            "host pause": {},
            "host resume": {},
            "host kick": {"member": newcomer},
            "host replace": {"player": someone, "newcomer": newcomer},
            "host cohost add": {"member": newcomer},
            "host cohost remove": {"member": newcomer},
            "host preset save": {"name": "свой"},
            "host preset delete": {"name": "свой"},
            "host attendance": {},
            "host take": {},
            "host hand": {"member": newcomer},
        }
        assert set(cases) == host_commands(table), "every host command is tried"
        before = await snapshot(table)
        for command, options in cases.items():
            refused = await run(table, "p0", command, options, confirm=False)
            assert refused.ephemeral, command
            if command == "host start":  # deferred first: the refusal edits the answer
                assert refused.content == t("ru", "error.host_plays"), (command, refused.content)
            else:
                assert refused.content == t("ru", "error.host_plays"), (command, refused.content)
            assert refused.components == [], f"{command} offered its confirmation to a player"
        await assert_unchanged(table, before)

        # the host's lists: empty for him, full for the real host (his city's mafia among them)
        mafiosi = set(game.living_mafiosi("Верона"))
        for command, option in (
            ("host godfather", "player"),
            ("host kill", "player"),
            ("host judge", "player"),
            ("host replace", "player"),
            ("host next", "from"),
        ):
            assert await offered(table, "p0", command, option) == [], command
        assert set(await offered(table, "host", "host godfather", "player")) == mafiosi
        assert set(await offered(table, "host", "host kill", "player")) == set(game.players)

        # once he is a player, the role holder is a player like any other: his own commands work
        await accepted(table, "p0", "nominate", {"player": someone})
        # and the role's members who do not play keep the host's commands
        outsider = table.member("p8").user.id
        table.fake.add_member_role(table.guild_id, outsider, hosts.id)
        assert await offered(table, "p8", "host godfather", "player") != []
        await accepted(table, "p8", "host next")


async def test_no_player_autocomplete_offers_what_his_status_does_not_know():
    async with bot_table(players=12) as table:
        quick_edits(table)
        await table.new_game(
            cities="Верона",
            mafiosi=3,
            doctor=True,
            journalist=True,
            maniac=False,
            first_phase="night",
        )
        game = table.game
        mafiosi = set(game.living_mafiosi("Верона"))
        tree = {
            c.qualified_name: c
            for c in table.bot.tree.walk_commands()
            if isinstance(c, app_commands.Command)
        }
        completed = sorted(
            (name, param.display_name)
            for name, command in tree.items()
            for param in command.parameters
            if param.autocomplete and not name.startswith("host ")
        )
        assert ("elect", "player") in completed and ("kill", "player") in completed
        for player in game.players:
            status = game.status_of(player).value
            for name, option in completed:
                values = set(await offered(table, int(player), name, option))
                if name == "rules":
                    continue  # the rule book's sections: public
                if status != "mafioso":
                    # nobody but a mafioso is handed a list that tells the mafia apart
                    assert not (
                        values and (values <= mafiosi or values == set(game.players) - mafiosi)
                    ), (status, name, sorted(values))
                else:
                    legal = {a.verb: set(a.targets or ()) for a in game.legal_actions(player)}
                    assert values == legal.get(name, set()), (name, values)


async def test_a_co_host_sees_the_log_and_the_rooms_acts_as_host_and_loses_it_all_when_removed():
    async with bot_table(players=9) as table:
        quick_edits(table)
        await table.new_game(players=[f"p{i}" for i in range(8)], cities="Верона", mafiosi=2)
        live = table.live()
        channels = live.record.channels
        helper = table.member("p8").user.id
        log_channel, room = int(channels["log"]), table.mafia_channel("Верона")
        assert not table.fake.client_view(helper, table.guild_id).sees(log_channel)
        refused = await run(table, "p8", "host next")
        assert refused.content == t("ru", "error.not_host")

        calls = len(table.fake.calls())
        added = await run(table, "host", "host cohost add", {"member": helper})
        assert added.content == t("ru", "host.cohost_added", member=f"<@{helper}>")
        await table.drain()
        puts = [
            c
            for c in table.fake.calls()[calls:]
            if c.method == "PUT" and "/permissions/" in c.route
        ]
        expected = {
            int(channels["category"]),
            log_channel,
            room,
            table.city_channel("Верона"),
            int(channels["voice"]),
            int(channels["dead"]),
        }
        assert {int(c.params["channel_id"]) for c in puts} == expected
        assert all(
            c.path.endswith(f"/permissions/{helper}") and c.json["allow"] == str(HOST.value)
            for c in puts
        ), [(c.route, c.params, c.json) for c in puts]
        view = table.fake.client_view(helper, table.guild_id)
        assert view.sees(log_channel) and view.sees(room)
        assert t("ru", "log.cohost_added", member=f"<@{helper}>") in table.channel_messages(
            log_channel
        )

        # he may act as host, and his lists are the host's; he cannot play
        assert set(await offered(table, "p8", "host godfather", "player")) == set(
            table.game.living_mafiosi("Верона")
        )
        await accepted(table, "p8", "host next")
        assert table.game.stage.value == "voting"
        assert (await run(table, "p8", "mafia join")).content == t("ru", "error.not_lobby")

        # the end's whole-channel edits keep him (his overwrite is in the layout now)
        assert table.live().record.channels["cohosts"] == [helper]

        calls = len(table.fake.calls())
        removed = await run(table, "host", "host cohost remove", {"member": helper})
        assert removed.content == t("ru", "host.cohost_removed", member=f"<@{helper}>")
        await table.drain()
        deletes = [
            c
            for c in table.fake.calls()[calls:]
            if c.method == "DELETE" and "/permissions/" in c.route
        ]
        assert {int(c.params["channel_id"]) for c in deletes} == expected
        view = table.fake.client_view(helper, table.guild_id)
        assert not view.sees(log_channel) and not view.sees(room)
        assert (await run(table, "p8", "host next")).content == t("ru", "error.not_host")


async def test_a_co_host_named_in_the_lobby_gets_his_overwrites_with_the_channels():
    async with bot_table(players=9) as table:
        quick_edits(table)
        await table.open_lobby([f"p{i}" for i in range(8)])
        helper = table.member("p8").user.id
        await run(table, "host", "host cohost add", {"member": helper})
        await run(table, "host", "host setup", {"cities": "Верона", "mafiosi": 2})
        started = await table.slash("host", "host start")
        await started.wait_original(60.0)
        await table.drain()
        channels = table.live().record.channels
        view = table.fake.client_view(helper, table.guild_id)
        assert view.sees(int(channels["log"])) and view.sees(table.mafia_channel("Верона"))
        assert channels["cohosts"] == [helper]
        # and at the end the log stays his to read, as the host's
        await run(table, "host", "host end")
        await table.drain()
        assert table.fake.client_view(helper, table.guild_id).sees(int(channels["log"]))
