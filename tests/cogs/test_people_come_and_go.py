"""People come and go: ``/host replace`` seats a newcomer with the old player's status, city,
secrets and access (nobody else learns anything); ``/mafia leave`` and leaving the server tell the
host and, with ``leave_strike``, the Procurator strikes the leaver out after the grace period."""

from __future__ import annotations

import yaml

from bot.config import Config, Timers
from bot.export import export_scenario
from bot.i18n import t
from rules import Status
from rules.scenario import load_scenario, result_json, run_scenario
from tests.cogs.scenes import accepted, assert_unchanged, lobby_message, quick_edits, run, snapshot
from tests.cogs.test_secrecy import leaks_to
from tests.harness import NO_TIMERS, Table, bot_table

NOW = 1_800_000_000.0


def newcomers(table: Table, count: int) -> list[int]:
    """Members of the guild who do not play."""
    game = table.game
    return [m.user.id for m in table.world.players if str(m.user.id) not in game.players][:count]


def calls_since(table: Table, start: int, method: str, part: str) -> list[str]:
    return [c.path for c in table.fake.calls()[start:] if c.method == method and part in c.route]


async def test_a_newcomer_takes_a_mafiosos_place_and_nobody_else_learns_anything():
    async with bot_table(players=10) as table:
        quick_edits(table)
        await table.new_game(
            players=[f"p{i}" for i in range(8)], cities="Верона", mafiosi=2, first_phase="night"
        )
        game = table.game
        channels = table.live().record.channels
        city, room, log_channel = (
            table.city_channel("Верона"),
            table.mafia_channel("Верона"),
            int(channels["log"]),
        )
        old = game.living_mafiosi("Верона")[0]
        partner = game.living_mafiosi("Верона")[1]
        citizen_old = next(p for p in game.players if game.status_of(p) is Status.CITIZEN)
        new, citizen_new = newcomers(table, 2)
        role = int(channels["roles"]["cities"]["Верона"]["living"])
        assert table.fake.client_view(int(old), table.guild_id).sees(room)

        start = len(table.fake.calls())
        answer = await run(table, "host", "host replace", {"player": old, "newcomer": new})
        assert answer.content == t("ru", "host.replaced", old=f"<@{old}>", new=f"<@{new}>")
        await table.drain()
        # the rules: his status, his city, his place among the mafia; the old one is gone
        game = table.game
        assert game.status_of(str(new)) is Status.MAFIOSO and game.city_of(str(new)) == "Верона"
        assert old not in game.players and set(game.living_mafiosi("Верона")) == {str(new), partner}
        # Discord: the city role and the room's overwrite moved, through the permissions lane
        assert f"/guilds/{table.guild_id}/members/{new}/roles/{role}" in calls_since(
            table, start, "PUT", "/roles/"
        )
        assert f"/guilds/{table.guild_id}/members/{old}/roles/{role}" in calls_since(
            table, start, "DELETE", "/roles/"
        )
        assert f"/channels/{room}/permissions/{new}" in calls_since(
            table, start, "PUT", "/permissions/"
        )
        assert f"/channels/{room}/permissions/{old}" in calls_since(
            table, start, "DELETE", "/permissions/"
        )
        assert table.fake.client_view(new, table.guild_id).sees(room)
        old_view = table.fake.client_view(int(old), table.guild_id)
        assert not old_view.sees(room) and not old_view.sees(city)

        # he is told where to look, pinged alone; his status only privately
        welcome = [m for m in table.fake.messages(city) if m.content.startswith(f"<@{new}>")]
        assert welcome and welcome[-1].pinged == {new}
        assert "mafia:role:" in str(welcome[-1].components)
        mine = await run(table, new, "mafia me")
        assert (
            mine.ephemeral
            and t("ru", "status.mafioso") in mine.content
            and f"<#{room}>" in mine.content
        )
        greeted = table.channel_messages(room)[-1]
        assert greeted.startswith(f"<@{new}>") and f"<@{old}>" in greeted
        assert any(
            f"<@{new}>" in line and t("ru", "status.mafioso") in line
            for line in table.channel_messages(log_channel)
        )

        # a citizen's replacement says the same in public: nothing there tells them apart
        public = [m.content for m in table.fake.messages(city)][-2:]
        await run(table, "host", "host replace", {"player": citizen_old, "newcomer": citizen_new})
        await table.drain()
        mafioso_public = [text.replace(str(new), "X").replace(old, "Y") for text in public]
        citizen_public = [
            text.replace(str(citizen_new), "X").replace(citizen_old, "Y")
            for text in [m.content for m in table.fake.messages(city)][-2:]
        ]
        assert mafioso_public == citizen_public
        assert table.channel_messages(room)[-1] == greeted, "the mafia room heard of a citizen"
        for watcher in [
            int(p) for p in table.game.players if table.game.status_of(p) is not Status.MAFIOSO
        ]:
            assert leaks_to(table, watcher) == [], watcher
        assert leaks_to(table, int(old)) == [] and leaks_to(table, int(citizen_old)) == []

        # /host idle counts days as the idle strike-out does: none has ended, nobody is listed
        idle = (await run(table, "host", "host idle")).content
        assert f"<@{new}>" not in idle and f"<@{old}>" not in idle
        assert idle.splitlines()[1] == t("ru", "host.idle.none")

        # the newcomer acts; the old player cannot
        victim = next(p for p in table.game.alive() if table.game.status_of(p) is Status.CITIZEN)
        await accepted(table, new, "kill", {"player": victim})
        before = await snapshot(table)
        refused = await run(table, int(old), "kill", {"player": victim})
        assert refused.content == t("ru", "error.not_player")
        # and nobody is seated twice
        again = await run(table, "host", "host replace", {"player": partner, "newcomer": int(old)})
        assert again.content == t("ru", "error.replace_plays", member=f"<@{old}>")
        await assert_unchanged(table, before)


async def test_a_finished_game_with_a_replacement_exports_and_simulates_back():
    async with bot_table(players=9) as table:
        quick_edits(table)
        live = await table.new_game(players=[f"p{i}" for i in range(8)], cities="Верона", mafiosi=2)
        game = table.game
        first, second = game.living_mafiosi("Верона")
        (new,) = newcomers(table, 1)
        await accepted(table, "host", "host replace", {"player": first, "newcomer": new})
        await accepted(table, "host", "host kill", {"player": str(new)})
        await accepted(table, "host", "host kill", {"player": second})
        assert table.game.over

        async def archived():
            return await table.bot.storage.archived_game(live.id)

        for _ in range(500):
            found = await archived()
            if found is not None:
                break
            await table.bot.outbox.drain()
        assert found is not None
        text = export_scenario(found)
        data = yaml.safe_load(text)
        assert any(step.startswith("host replace ") for step in data["steps"])
        result = result_json(run_scenario(load_scenario(data)))
        assert all(step["ok"] for step in result["steps"]) and result["over"]
        assert result["winners"] == ["Верона:honest"]


async def test_leaving_tells_the_host_and_the_procurator_strikes_out_after_the_grace_period():
    now = [NOW]
    config = Config(timers=Timers(discussion=0, voting=0, night=0, execution=0, reminders=()))
    async with bot_table(players=8, config=config, clock=lambda: now[0]) as table:
        quick_edits(table)
        await table.open_lobby()
        await run(table, "host", "host setup", {"cities": "Верона", "leave_strike": "10м"})
        assert table.live().record.lobby["leave_strike"] == 600
        started = await table.slash("host", "host start")
        await started.wait_original(60.0)
        await table.drain()
        game = table.game
        log_channel = int(table.live().record.channels["log"])
        leaver, stayer = [p for p in game.players if game.status_of(p) is Status.CITIZEN][:2]

        left = await run(table, int(leaver), "mafia leave")
        assert left.content.startswith(
            t("ru", "lobby.left_game_strike", when=f"<t:{int(NOW + 600)}:R>", join="").split("—")[0]
        )
        await table.drain()
        told = table.channel_messages(log_channel)[-1]
        assert told.startswith(f"🚪 <@{leaver}>") and f"<t:{int(NOW + 600)}:R>" in told
        assert not any(
            f"<@{leaver}>" in m for m in table.channel_messages(table.city_channel("Верона"))[-1:]
        ), "the city is not told he left"
        again = await run(table, int(leaver), "mafia leave")
        assert again.content == t("ru", "error.already_leaving")

        # another leaves and comes back: no strike for him
        await run(table, int(stayer), "mafia leave")
        back = await run(table, int(stayer), "mafia join")
        assert back.content == t("ru", "lobby.back")
        assert stayer not in table.live().record.lobby["leaving"]

        now[0] += 601
        table.bot.get_cog("HostCog").strikes.arm(table.live())
        await table.fake.wait_until(
            lambda: not table.game.is_alive(leaver), 5.0, "never struck out"
        )
        assert table.game.is_alive(stayer)
        death = table.game.deaths[-1]
        assert death.player == leaver and death.cause.value == "procurator"
        await table.drain()
        assert table.channel_messages(log_channel)[-1] == t(
            "ru", "log.struck", player=f"<@{leaver}>"
        )
        assert leaver not in table.live().record.lobby["leaving"]
        commands = await table.bot.storage.commands(table.live().id)
        assert commands[-1].command == {"by": "host", "verb": "kill", "target": leaver}


async def test_a_member_leaving_the_server_is_handled_like_leave_and_leaves_the_lobby():
    async with bot_table(players=9, config=Config(timers=NO_TIMERS)) as table:
        quick_edits(table)
        await table.open_lobby([f"p{i}" for i in range(8)])
        lobby = await lobby_message(table)
        gone = table.member("p7").user.id
        table.fake.remove_member(table.guild_id, gone)
        await table.fake.wait_until(
            lambda: gone not in [p["id"] for p in table.live().record.lobby["players"]],
            5.0,
            "still in the lobby",
        )
        await table.drain()
        assert f"<@{gone}>" not in table.fake.message(lobby.id).content

        await run(table, "host", "host setup", {"cities": "Верона"})
        started = await table.slash("host", "host start")
        await started.wait_original(60.0)
        await table.drain()
        log_channel = int(table.live().record.channels["log"])
        player = table.game.alive()[0]
        table.fake.remove_member(table.guild_id, int(player))
        # the record in memory changes before its commit is on the disk and its items are in the
        # outbox: the wait is for what the host reads, not for the record
        await table.fake.wait_until(
            lambda: table.channel_messages(log_channel)[-1].startswith(f"🚪 <@{player}>"),
            10.0,
            "the host was never told",
        )
        assert (
            table.live().record.lobby["leaving"][player] is None
        )  # no leave_strike: the host decides
        told = table.channel_messages(log_channel)[-1]
        assert told == t(
            "ru",
            "log.left_server",
            player=f"<@{player}>",
            then=t(
                "ru",
                "log.strike_off",
                replace=_mention(table, "host replace"),
                kill=_mention(table, "host kill"),
            ),
        )
        assert table.game.is_alive(player)


def _mention(table: Table, path: str) -> str:
    from cogs.mentions import command

    return command("ru", path)


async def test_the_host_is_warned_when_a_newcomer_sees_hidden_rooms_anyway():
    async with bot_table(players=9) as table:
        quick_edits(table)
        await table.new_game(players=[f"p{i}" for i in range(8)], cities="Верона", mafiosi=2)
        admins = table.fake.create_role(table.guild_id, "Админы", permissions=1 << 3)
        (new,) = newcomers(table, 1)
        table.fake.add_member_role(table.guild_id, new, admins.id)
        citizen = next(p for p in table.game.alive() if table.game.status_of(p) is Status.CITIZEN)
        await accepted(table, "host", "host replace", {"player": citizen, "newcomer": new})
        await table.drain()
        log_lines = table.channel_messages(int(table.live().record.channels["log"]))
        assert t("ru", "exposed.hidden", count=1, players=f"<@{new}>") in log_lines, log_lines[-3:]


async def test_a_pending_strike_survives_a_restart():
    import tempfile
    from dataclasses import replace as with_fields
    from pathlib import Path

    from tests.fakediscord import FakeDiscord, build_standard_guild
    from tests.harness import bot_on

    now = [NOW]
    fake = FakeDiscord()
    world = build_standard_guild(fake, players=[f"p{i}" for i in range(8)])
    with tempfile.TemporaryDirectory() as folder:
        config = with_fields(
            Config(
                timers=Timers(
                    discussion=0, voting=0, night=0, execution=0, reminders=(), leave_strike=300
                )
            ),
            database=Path(folder) / "bot.sqlite3",
        )
        await fake.start()
        try:
            async with bot_on(fake, world, config, clock=lambda: now[0]) as first:
                quick_edits(first)
                await first.new_game(cities="Верона")
                leaver = next(
                    p for p in first.game.alive() if first.game.status_of(p) is Status.CITIZEN
                )
                await run(first, int(leaver), "mafia leave")
                assert first.live().record.lobby["leaving"] == {leaver: NOW + 300}
            now[0] += 301
            async with bot_on(fake, world, config, clock=lambda: now[0]) as second:
                await second.fake.wait_until(
                    lambda: not second.game.is_alive(leaver),
                    5.0,
                    "the strike was lost in the restart",
                )
                assert second.game.deaths[-1].cause.value == "procurator"
        finally:
            await fake.close()
