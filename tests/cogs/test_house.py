"""House rules and what comes before the start, end to end: idle handling (warnings in the city
after each day, the Procurator's strike-out after the set number of days without a public move),
written wills, presets, quiet nights (kept by the footprint's reconciler), the roll call and
scheduled games (through a restart too)."""

from __future__ import annotations

from bot.i18n import t
from cogs.mentions import command
from tests.cogs.scenes import accepted, quick_edits, run
from tests.cogs.test_provision import restartable
from tests.fakediscord import DEFAULT_BOT_PERMISSIONS, Permission
from tests.fakediscord.permissions import OVERWRITE_ROLE, Overwrite
from tests.harness import Table, bot_on, bot_table


def warning(language: str, players: list[str], days: int, limit: int) -> str:
    return "\n".join(
        [
            t(
                language,
                "idle.warning",
                players=", ".join(f"<@{p}>" for p in players),
                days=t(language, "idle.days", count=days),
                limit=t(language, "idle.days", count=limit),
            ),
            t(language, "idle.what_to_do", help=command(language, "help")),
        ]
    )


async def day_of_votes(table: Table, victim: str, voters: list[str]) -> None:
    """A day: the first voter nominates ``victim``, every voter votes for him, the night begins."""
    await accepted(table, table.name(voters[0]), "nominate", {"player": victim})
    await accepted(table, "host", "host next")
    for voter in voters:
        await accepted(table, table.name(voter), "vote", {"player": victim})
    await run(table, "host", "host next")  # the day's end, and whatever strikes follow it
    assert table.game.stage.value == "night"
    await table.drain()


async def test_idle_players_are_warned_in_their_city_and_struck_out_after_the_days_set():
    async with bot_table(players=10) as table:
        quick_edits(table)
        live = await table.new_game(
            cities="Верона", mafiosi=2, doctor=True, journalist=False, maniac=False, idle_strike=2
        )
        lobby = await table.lobby_message()
        assert t("ru", "lobby.idle_strike", count=2) in lobby.content.splitlines()
        game = table.game
        citizens = [table.pid(n) for n in table.players_of("citizen")]
        help_text = (await run(table, table.name(citizens[0]), "help")).content
        assert (
            t("ru", "lobby.idle_strike", count=2) in help_text.splitlines()
        )  # /help names it to the players
        doctor = table.pid(table.players_of("doctor")[0])
        idle, victim = citizens[0], citizens[1]
        voters = [p for p in game.alive() if p not in (idle, doctor)]
        city = table.city_channel("Верона")

        # the doctor protects (a private move: the city cannot see it, so it is not a move here)
        await accepted(table, table.name(doctor), "protect", {"player": idle})
        await day_of_votes(table, victim, voters)
        told = table.channel_messages(city)
        assert told[-1] == warning("ru", sorted([idle, doctor], key=int), 1, 2)
        assert sum(1 for m in told if m.startswith("⏳")) == 1

        # the night: nobody acts (the mafia refuses), and a night never counts against anyone
        await accepted(table, "host", "host next")
        assert table.game.stage.value == "discussion" and table.game.is_alive(idle)
        await table.drain()
        assert sum(1 for m in table.channel_messages(city) if m.startswith("⏳")) == 1

        # day 2 the same: the two idle ones are struck out; the others are not warned
        voters = [p for p in voters if p != victim]
        await day_of_votes(table, voters[-1], voters)
        game = table.game
        assert not game.is_alive(idle) and not game.is_alive(doctor)
        told = table.channel_messages(city)
        for player in (idle, doctor):
            struck = t(
                "ru", "idle.struck", player=f"<@{player}>", days=t("ru", "idle.days", count=2)
            )
            assert struck in told
            death = t(
                "ru",
                "death",
                player=f"<@{player}>",
                city="Верона",
                status=t("ru", f"status.{game.status_of(player).value}"),
                cause=t("ru", "cause.procurator"),
            )
            assert any(death in m for m in told), told[-6:]
        log = table.channel_messages(int(live.record.channels["log"]))
        assert any(
            t("ru", "idle.struck", player=f"<@{idle}>", days=t("ru", "idle.days", count=2)) in m
            for m in log
        )
        assert sum(1 for m in told if m.startswith("⏳")) == 1  # nobody else was idle

        # the night is handled once: the record says so, and it survives a reload of the record
        stored = await table.bot.storage.game(live.id)
        assert stored is not None and stored.lobby["idle_checked"] == table.live().stage_key()


async def test_idle_handling_is_off_by_default_and_the_lobby_says_nothing():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.new_game(
            cities="Верона", mafiosi=2, doctor=False, journalist=False, maniac=False
        )
        lobby = await table.lobby_message()
        assert not any(
            line.startswith(t("ru", "lobby.idle_strike", count=2)[:10])
            for line in lobby.content.splitlines()
        )
        citizens = [table.pid(n) for n in table.players_of("citizen")]
        voters = [p for p in table.game.alive() if p != citizens[0]]
        await day_of_votes(table, citizens[1], voters)
        await accepted(table, "host", "host next")
        await day_of_votes(table, citizens[2], [p for p in voters if p != citizens[1]])
        assert table.game.is_alive(citizens[0])
        assert not any(
            m.startswith("⏳") for m in table.channel_messages(table.city_channel("Верона"))
        )
        help_text = (await run(table, table.name(citizens[0]), "help")).content
        assert not set(help_text.splitlines()) & {
            t("ru", "lobby.idle_strike", count=2),
            t("ru", "lobby.quiet_nights"),
        }


async def test_a_written_will_stays_private_until_its_writer_dies_then_his_city_reads_it():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.new_game(
            cities="Верона", mafiosi=2, doctor=False, journalist=False, maniac=False, will=60
        )
        lobby = await table.lobby_message()
        assert t("ru", "lobby.will", count=60) in lobby.content.splitlines()
        citizens = [table.pid(n) for n in table.players_of("citizen")]
        writer, other = citizens[0], citizens[1]
        city = table.city_channel("Верона")

        too_long = await run(table, table.name(writer), "will write", {"text": "x" * 61})
        assert too_long.content == t("ru", "error.will_too_long", count=60, length=61)
        assert (await run(table, table.name(writer), "will show")).content == t(
            "ru", "will.none", count=60
        )
        text = "Комиссар — это я. Верьте <@" + other + ">"
        written = await run(table, table.name(writer), "will write", {"text": text})
        assert written.ephemeral and written.content == t(
            "ru", "will.written", count=len(text), limit=60
        )
        help_text = (await run(table, table.name(writer), "help")).content
        assert (
            t("ru", "help.will", command=command("ru", "will write"), count=60)
            in help_text.splitlines()
        )
        shown = await run(table, table.name(writer), "will show")
        assert shown.ephemeral and shown.content == f"{t('ru', 'will.yours')}\n{text}"
        await table.drain()
        seen = [m.content for m in table.fake.messages() if m.kind == "channel"]
        assert not any("Комиссар — это я" in m for m in seen)  # nobody reads it while he lives

        # another player erases what he never wrote: refused; the writer is executed: his city reads it
        erased = await run(table, table.name(other), "will erase")
        assert erased.content == t("ru", "error.will_nothing")
        voters = [p for p in table.game.alive() if p != writer]
        await day_of_votes(table, writer, voters)
        assert not table.game.is_alive(writer)
        published = f"{t('ru', 'will.published', player=f'<@{writer}>')}\n> {text}"
        death = [m for m in table.channel_messages(city) if published in m]
        assert len(death) == 1
        assert death[0].index(published) > death[0].index(f"<@{writer}>")  # after the death itself
        posted = [
            m for m in table.fake.messages() if m.kind == "channel" and published in m.content
        ]
        assert [m.channel_id for m in posted] == [city]
        assert (
            await run(table, table.name(writer), "will write", {"text": "поздно"})
        ).content == t("ru", "error.will_dead")

        # the one who never wrote dies without a will: nothing is published for him
        await accepted(table, "host", "host next")
        await day_of_votes(table, other, [p for p in voters if p != other])
        assert not any(
            t("ru", "will.published", player=f"<@{other}>") in m
            for m in table.channel_messages(city)
        )


async def test_wills_are_off_unless_the_host_turns_them_on():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.new_game(
            cities="Верона", mafiosi=2, doctor=False, journalist=False, maniac=False
        )
        lobby = await table.lobby_message()
        assert not any(line.startswith("Завещания") for line in lobby.content.splitlines())
        citizen = table.players_of("citizen")[0]
        refused = await run(table, citizen, "will write", {"text": "всё мафии"})
        assert refused.ephemeral and refused.content == t("ru", "error.will_off")
        help_text = (await run(table, citizen, "help")).content
        assert "завещание" not in help_text.casefold()


def lobby_lines_of(content: str) -> list[str]:
    return content.splitlines()


async def test_presets_set_a_lobby_by_name_and_a_server_saves_its_own():
    async with bot_table(players=10) as table:
        quick_edits(table)
        await table.open_lobby()
        host = "host"
        offered = await table.fake.autocomplete(
            table.guild_id, table.host.user.id, "host setup", "preset", "", locale="ru"
        )
        assert [c["value"] for c in offered.choices] == [
            "по правилам",
            "для новичков",
            "клубный",
            "с ночи",
        ]

        answer = await run(table, host, "host setup", {"preset": "клубный"})
        assert answer.ephemeral
        lines = lobby_lines_of((await table.lobby_message()).content)
        assert t("ru", "lobby.preset", name="клубный") in lines
        assert (
            t("ru", "lobby.will", count=500) in lines
            and t("ru", "lobby.idle_strike", count=2) in lines
        )
        lobby = table.live().record.lobby
        assert (
            lobby["spectators"] == "after"
            and lobby["leave_strike"] == 600
            and lobby["setup"]["maniac"] is True
        )

        # a setting changed after the preset: the lobby says so
        await run(table, host, "host setup", {"will": 100, "archive_after": "2ч"})
        lines = lobby_lines_of((await table.lobby_message()).content)
        assert t("ru", "lobby.preset", name="клубный") + t("ru", "lobby.preset_changed") in lines

        # saved under the server's own name, it is the lobby's preset now and offered next to the built-in ones
        saved = await run(table, host, "host preset save", {"name": "Пятничный"})
        assert saved.content == t(
            "ru", "host.preset_saved", name="Пятничный", cmd_setup=command("ru", "host setup")
        )
        lines = lobby_lines_of((await table.lobby_message()).content)
        assert t("ru", "lobby.preset", name="Пятничный") in lines
        offered = await table.fake.autocomplete(
            table.guild_id, table.host.user.id, "host setup", "preset", "пят", locale="ru"
        )
        assert [c["value"] for c in offered.choices] == ["Пятничный"]

        # "by the rules" puts every setting back to the default; the saved one brings them back
        await run(table, host, "host setup", {"preset": "по правилам"})
        lobby = table.live().record.lobby
        assert not any(
            key in lobby
            for key in ("will", "idle_strike", "leave_strike", "spectators", "archive_after")
        )
        assert "maniac" not in lobby["setup"]
        lines = lobby_lines_of((await table.lobby_message()).content)
        assert not any(line.startswith("Завещания") for line in lines)
        await run(table, host, "host setup", {"preset": "пятничный", "cities": "Верона"})
        lobby = table.live().record.lobby
        assert (
            lobby["will"] == 100
            and lobby["idle_strike"] == 2
            and lobby["setup"]["cities"] == ["Верона"]
        )
        assert lobby["archive_after"] == 7200
        lines = lobby_lines_of((await table.lobby_message()).content)
        assert t("ru", "lobby.preset", name="Пятничный") in lines

        # refusals: an unknown name, a built-in name to save over, deleting twice
        unknown = await run(table, host, "host setup", {"preset": "турнирный"})
        assert unknown.content == t("ru", "error.no_preset", name="турнирный")
        assert table.live().record.lobby["will"] == 100
        builtin = await run(table, host, "host preset save", {"name": "Night first"})
        assert builtin.content == t("ru", "error.preset_builtin", name="Night first")
        deleted = await run(table, host, "host preset delete", {"name": "пятничный"})
        assert deleted.content == t("ru", "host.preset_deleted", name="пятничный")
        assert await table.bot.storage.guild_presets(table.guild_id) == []
        again = await run(table, host, "host preset delete", {"name": "пятничный"})
        assert again.content == t("ru", "error.no_preset", name="пятничный")

        # a server keeps so many presets, and says so at the next (19 stored as a save stores them,
        # the host's 20th and 21st through the command)
        for number in range(19):
            await table.bot.storage.save_guild_preset(
                table.guild_id, f"набор {number}", {}, saved_by=1, now=0.0, most=20
            )
        last = await run(table, host, "host preset save", {"name": "набор 19"})
        assert last.content == t(
            "ru", "host.preset_saved", name="набор 19", cmd_setup=command("ru", "host setup")
        )
        full = await run(table, host, "host preset save", {"name": "лишний"})
        assert full.content == t("ru", "error.presets_full", count=20)
        assert len(await table.bot.storage.guild_presets(table.guild_id)) == 20


async def test_a_preset_reaches_the_game_it_sets_up():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.new_game(
            preset="с ночи",
            cities="Верона",
            mafiosi=2,
            doctor=False,
            journalist=False,
            maniac=False,
        )
        assert table.game.stage.value == "night"
        lines = lobby_lines_of((await table.lobby_message()).content)
        assert t("ru", "lobby.preset", name="с ночи") + t("ru", "lobby.preset_changed") in lines


def writes(table: Table, channel: int, player: str) -> bool:
    return bool(
        table.fake.permissions_for(table.guild_id, channel, int(player)) & Permission.SEND_MESSAGES
    )


def reads(table: Table, channel: int, player: str) -> bool:
    return bool(
        table.fake.permissions_for(table.guild_id, channel, int(player)) & Permission.VIEW_CHANNEL
    )


async def city_writes_by_day(table: Table, city: int) -> None:
    """The host ends the night: the city's living write in it again."""
    await accepted(table, "host", "host next")
    await table.drain()
    assert table.game.stage.value == "discussion"
    assert all(writes(table, city, p) for p in table.game.alive())


async def test_quiet_nights_close_the_city_channels_at_night_and_open_them_in_the_day():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.new_game(
            cities="Верона",
            mafiosi=2,
            doctor=False,
            journalist=False,
            maniac=False,
            quiet_nights=True,
        )
        lobby = await table.lobby_message()
        assert t("ru", "lobby.quiet_nights") in lobby.content.splitlines()
        city, room = table.city_channel("Верона"), table.mafia_channel("Верона")
        citizens = [table.pid(n) for n in table.players_of("citizen")]
        mafioso = table.pid(table.players_of("mafioso")[0])
        assert all(writes(table, city, p) for p in table.game.alive())
        help_text = (await run(table, table.name(citizens[0]), "help")).content
        assert t("ru", "lobby.quiet_nights") in help_text.splitlines()

        await day_of_votes(table, citizens[0], [p for p in table.game.alive() if p != citizens[0]])
        night = [m for m in table.channel_messages(city) if "🌙" in m]
        assert night and t("ru", "phase.night_quiet") in night[-1]
        assert not any(writes(table, city, p) for p in table.game.alive())
        assert all(reads(table, city, p) for p in table.game.alive())
        assert writes(table, room, mafioso)  # the mafia still confers in its room
        # one who turns pings off tonight takes the quiet twin of the city role: closed tonight too
        quiet = next(p for p in citizens[1:] if table.game.is_alive(p))
        await run(table, table.name(quiet), "mafia notify", {"state": "off"})
        await table.drain()
        assert reads(table, city, quiet) and not writes(table, city, quiet)

        await city_writes_by_day(table, city)


async def test_a_quiet_night_a_person_opens_is_closed_again_and_a_city_channel_made_again_at_night_is_closed():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.new_game(
            cities="Верона",
            mafiosi=2,
            doctor=False,
            journalist=False,
            maniac=False,
            quiet_nights=True,
            first_phase="night",
        )
        await table.drain()
        city = table.city_channel("Верона")
        living = int(table.live().record.channels["roles"]["cities"]["Верона"]["living"])
        alive = table.game.alive()
        assert not any(writes(table, city, p) for p in alive)
        # someone with Manage Channels lets the city talk tonight: the footprint by night puts it back
        table.fake.set_overwrite(
            city,
            Overwrite(
                living,
                OVERWRITE_ROLE,
                allow=int(Permission.VIEW_CHANNEL | Permission.SEND_MESSAGES),
            ),
        )
        assert all(writes(table, city, p) for p in alive)
        await table.fake.wait_until(
            lambda: not any(writes(table, city, p) for p in alive) or None,
            30.0,
            "the city writes at a quiet night",
        )
        assert all(reads(table, city, p) for p in alive)
        # the city channel deleted at night is made again, closed till the day
        table.fake.delete_channel(city)
        await table.fake.wait_until(
            lambda: table.city_channel("Верона") != city or None,
            30.0,
            "the city channel was not made again",
        )
        await table.drain()
        again = table.city_channel("Верона")
        assert all(reads(table, again, p) and not writes(table, again, p) for p in alive)
        await city_writes_by_day(table, again)


async def test_without_quiet_nights_a_city_may_talk_at_night():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.new_game(
            cities="Верона", mafiosi=2, doctor=False, journalist=False, maniac=False
        )
        city = table.city_channel("Верона")
        citizens = [table.pid(n) for n in table.players_of("citizen")]
        await day_of_votes(table, citizens[0], [p for p in table.game.alive() if p != citizens[0]])
        assert all(writes(table, city, p) for p in table.game.alive())
        assert not any(t("ru", "phase.night_quiet") in m for m in table.channel_messages(city))


async def test_a_roll_call_drops_from_the_lobby_whoever_does_not_answer_in_time():
    now = [1_800_000_000.0]
    async with bot_table(players=8, clock=lambda: now[0]) as table:
        quick_edits(table)
        await table.open_lobby([f"p{i}" for i in range(6)])
        live = table.live()
        ids = [table.member(f"p{i}").user.id for i in range(6)]
        general = table.world.text_channel.id

        asked = await run(table, "host", "host attendance", {"within": "1м"})
        deadline = f"<t:{int(now[0] + 60)}:T>"
        assert asked.ephemeral and asked.content == t(
            "ru", "attendance.asked", duration="1 минута", deadline=deadline
        )
        await table.drain()
        call = next(m for m in table.fake.messages(general) if "mafia:here:" in str(m.components))
        players = ", ".join(f"<@{i}>" for i in ids)
        assert call.content == t(
            "ru",
            "attendance.ask",
            game=live.id,
            players=players,
            button=t("ru", "attendance.button"),
            deadline=deadline,
        )
        assert call.pinged == frozenset(ids)  # everyone asked is pinged
        button = call.components[0]["components"][0]["custom_id"]

        # a second roll call while this one runs is refused; so is a press by someone not asked
        again = await run(table, "host", "host attendance")
        assert again.content == t("ru", "error.attendance_running", deadline=deadline)
        stranger = await table.fake.click(call, button, table.member("p7").user.id)
        await stranger.wait_callback()
        assert stranger.content == t(
            "ru", "error.attendance_not_asked", cmd_join=command("ru", "mafia join")
        )
        for user in ids[:4] + ids[:1]:  # four answer (one of them twice)
            pressed = await table.fake.click(call, button, user)
            await pressed.wait_callback()
            if pressed.deferred:
                await pressed.wait_original()
            assert pressed.ephemeral and pressed.content == t("ru", "attendance.confirmed")
        # a latecomer joins during the call: he was not asked, and stays
        lobby = await table.lobby_message()
        await table.fake.click(lobby, f"mafia:join:{live.id}", table.member("p6").user.id)

        now[0] += 61
        table.bot.get_cog("AttendanceCog").arm(table.live())
        await table.fake.wait_until(
            lambda: "attendance" not in table.live().record.lobby, 5.0, "not closed"
        )
        await table.drain()
        left = [int(p["id"]) for p in table.live().record.lobby["players"]]
        assert left == ids[:4] + [table.member("p6").user.id]
        notice = table.channel_messages(general)[-1]
        assert notice == t("ru", "attendance.dropped", count=2, players=f"<@{ids[4]}>, <@{ids[5]}>")
        assert table.fake.message(call.id).components == []  # the button is gone
        lobby = await table.lobby_message()
        assert f"<@{ids[4]}>" not in lobby.content and f"<@{ids[0]}>" in lobby.content


async def test_a_roll_call_everyone_answers_drops_nobody():
    now = [1_800_000_000.0]
    async with bot_table(players=6, clock=lambda: now[0]) as table:
        quick_edits(table)
        await table.open_lobby([f"p{i}" for i in range(3)])
        await run(table, "host", "host attendance", {"within": "30s"})
        await table.drain()
        general = table.world.text_channel.id
        call = next(m for m in table.fake.messages(general) if "mafia:here:" in str(m.components))
        for i in range(3):
            pressed = await table.fake.click(
                call,
                call.components[0]["components"][0]["custom_id"],
                table.member(f"p{i}").user.id,
            )
            await pressed.wait_callback()
        now[0] += 31
        table.bot.get_cog("AttendanceCog").arm(table.live())
        await table.fake.wait_until(
            lambda: "attendance" not in table.live().record.lobby, 5.0, "not closed"
        )
        await table.drain()
        assert len(table.live().record.lobby["players"]) == 3
        assert table.channel_messages(general)[-1] == t("ru", "attendance.all_here")


async def scheduled(table: Table, now: list[float], seconds: float) -> None:
    """The clock moves on by ``seconds`` and the scheduled games are looked at."""
    now[0] += seconds
    table.bot.get_cog("ScheduleCog").wake()


async def test_a_scheduled_game_is_a_server_event_whose_lobby_opens_on_time_and_pings_the_interested():
    now = [1_800_000_000.0]
    async with bot_table(players=120, clock=lambda: now[0]) as table:
        quick_edits(table)
        general = table.world.text_channel.id
        made = await run(table, "host", "mafia schedule", {"in": "2ч", "title": "Пятничная мафия"})
        [event] = table.fake.event_routes.of_guild(table.guild_id)
        assert made.ephemeral and made.content == t(
            "ru",
            "schedule.made",
            title="Пятничная мафия",
            when=f"<t:{int(now[0] + 7200)}:F>",
            link=f"https://discord.com/events/{table.guild_id}/{event.id}",
        )
        assert (
            event.name == "Пятничная мафия"
            and event.location == "#general"
            and event.entity_type == 3
        )
        assert (
            event.start.timestamp() == now[0] + 7200
            and event.end.timestamp() == now[0] + 7200 + 3 * 3600
        )
        assert f"<#{general}>" in event.description
        assert table.bot.service.games() == []  # nothing opens before its time

        interested = sorted(member.user.id for member in table.world.players[:110])
        for user in interested + [table.host.user.id]:
            table.fake.event_routes.mark_interested(event.id, user)
        await scheduled(table, now, 3600)  # not yet
        await scheduled(table, now, 3601)
        await table.fake.wait_until(
            lambda: table.bot.service.games(), 5.0, "the lobby did not open"
        )
        await table.drain()
        live = table.live()
        assert (
            live.record.host_id == table.host.user.id and live.record.lobby["channel_id"] == general
        )
        calls = [m for m in table.fake.messages(general) if m.content.startswith("🗓️")]
        # every interested member is pinged once, in messages Discord takes (at most 100 pings and
        # 2,000 characters each); the host is not called to his own game
        assert len(calls) == 2 and all(
            len(m.pinged) <= 100 and len(m.content) <= 2000 for m in calls
        )
        assert sorted(u for m in calls for u in m.pinged) == interested
        first = sorted(calls[0].pinged)
        assert calls[0].content == t(
            "ru",
            "schedule.opened",
            title="Пятничная мафия",
            game=live.id,
            players=" ".join(f"<@{u}>" for u in first),
        )
        assert table.fake.event_routes.events[event.id].status == 2  # the event is under way
        await table.lobby_message()  # the lobby itself is there, with its buttons


async def test_a_scheduled_game_whose_event_was_cancelled_opens_nothing_and_one_meeting_a_game_says_so():
    now = [1_800_000_000.0]
    async with bot_table(players=8, clock=lambda: now[0], refusals=True) as table:
        quick_edits(table)
        general = table.world.text_channel.id
        await run(table, "host", "mafia schedule", {"in": "1ч"})
        await run(table, "host", "mafia schedule", {"in": "3ч", "title": "Вторая"})
        first, second = table.fake.event_routes.of_guild(table.guild_id)
        assert first.name == t("ru", "schedule.default_title")
        del table.fake.event_routes.events[first.id]  # the host deleted it in Discord
        await scheduled(table, now, 3601)
        cog = table.bot.get_cog("ScheduleCog")
        await table.fake.wait_until(
            lambda: cog.handled >= 1, 5.0, "the schedules were not looked at"
        )
        rows = await table.bot.storage.schedules("cancelled")
        assert [row["event_id"] for row in rows] == [first.id]
        assert table.bot.service.games() == []

        await run(table, "host", "mafia new")
        await scheduled(table, now, 2 * 3600)
        skipped = t("ru", "schedule.skipped", title="Вторая", cmd_new=command("ru", "mafia new"))
        await table.fake.wait_until(
            lambda: skipped in table.channel_messages(general), 5.0, "no notice"
        )
        assert [row["event_id"] for row in await table.bot.storage.schedules("skipped")] == [
            second.id
        ]
        # the one call Discord refused is the bot's look at the event the host had deleted
        assert [(c.method, c.status) for c in table.fake.calls() if c.status >= 400] == [
            ("GET", 404)
        ]


async def test_scheduling_is_for_hosts_with_a_bot_that_may_create_events():
    async with bot_table(players=8) as table:
        refused = await run(table, "p1", "mafia schedule", {"in": "2h"})
        assert refused.content == t("ru", "error.not_host")
        soon = await run(table, "host", "mafia schedule", {"in": "30с"})
        assert soon.content == t(
            "ru", "error.schedule_too_soon", cmd_new=command("ru", "mafia new")
        )
        guild = table.world.guild
        bot_role = next(
            role for role in guild.roles.values() if role.permissions == DEFAULT_BOT_PERMISSIONS
        )
        table.fake.update_role(
            guild.id,
            bot_role.id,
            permissions=DEFAULT_BOT_PERMISSIONS & ~int(Permission.CREATE_EVENTS),
        )
        lacking = await run(table, "host", "mafia schedule", {"in": "2h"})
        assert lacking.content == t("ru", "error.schedule_no_right")
        assert table.fake.event_routes.of_guild(guild.id) == []
        for number in range(5):
            table.fake.update_role(guild.id, bot_role.id, permissions=DEFAULT_BOT_PERMISSIONS)
            await run(table, "host", "mafia schedule", {"in": f"{number + 1}h"})
        full = await run(table, "host", "mafia schedule", {"in": "9h"})
        assert full.content == t("ru", "error.schedule_full", count=5)
        assert len(table.fake.event_routes.of_guild(guild.id)) == 5


async def test_in_english_the_idle_warning_the_strike_and_the_will_read_as_written():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await run(table, "host", "admin language", {"language": "en"})
        await table.new_game(
            cities="Verona",
            mafiosi=2,
            doctor=False,
            journalist=False,
            maniac=False,
            idle_strike=1,
            will=100,
        )
        lines = (await table.lobby_message()).content.splitlines()
        assert (
            t("en", "lobby.will", count=100) in lines
            and t("en", "lobby.idle_strike", count=1) in lines
        )
        assert lines[lines.index(t("en", "lobby.idle_strike", count=1))] == (
            "Idling: a warning for each day without a move, a strike-out after 1 such day in a row"
        )
        citizens = [table.pid(n) for n in table.players_of("citizen")]
        idle, writer = citizens[0], citizens[1]
        written = await run(
            table, table.name(idle), "will write", {"text": "Trust nobody."}, locale="en-US"
        )
        assert (
            written.content
            == "Your will is written (13 characters of 100). Your city reads it when you die."
        )
        await day_of_votes(
            table,
            citizens[2],
            [p for p in table.game.alive() if p not in (idle, writer)] + [writer],
        )
        city = table.city_channel("Verona")
        told = table.channel_messages(city)
        struck = f"✂️ The Procurator strikes <@{idle}> out of the game for idling: 1 day in a row without a move."
        assert struck in told
        assert any(f"📜 The will of <@{idle}>:\n> Trust nobody." in m for m in told)


async def test_a_roll_call_and_a_scheduled_game_survive_a_restart():
    now = [1_800_000_000.0]
    async with restartable(6) as (fake, world, config):
        async with bot_on(fake, world, config, clock=lambda: now[0]) as first:
            quick_edits(first)
            await run(first, "host", "mafia schedule", {"in": "2ч", "title": "Завтра"})
            await first.open_lobby([f"p{i}" for i in range(4)])
            await run(first, "host", "host attendance", {"within": "1м"})
            await first.drain()
            call = next(
                m
                for m in fake.messages(world.text_channel.id)
                if "mafia:here:" in str(m.components)
            )
            pressed = await fake.click(
                call, call.components[0]["components"][0]["custom_id"], first.member("p0").user.id
            )
            await pressed.wait_callback()
        now[0] += 61  # the bot was down when the roll call ended
        async with bot_on(fake, world, config, clock=lambda: now[0]) as second:
            quick_edits(second)
            await fake.wait_until(
                lambda: "attendance" not in second.live().record.lobby, 5.0, "not closed"
            )
            assert [p["id"] for p in second.live().record.lobby["players"]] == [
                second.member("p0").user.id
            ]
            await run(second, "host", "host end")
            [event] = fake.event_routes.of_guild(world.guild.id)
            fake.event_routes.mark_interested(event.id, second.member("p3").user.id)
        now[0] += 7200  # and again when the scheduled game's time came
        async with bot_on(fake, world, config, clock=lambda: now[0]) as third:
            quick_edits(third)
            await fake.wait_until(
                lambda: third.bot.service.games(), 5.0, "the scheduled lobby did not open"
            )
            await third.drain()
            opened = [m for m in fake.messages(world.text_channel.id) if m.content.startswith("🗓️")]
            assert [m.pinged for m in opened] == [frozenset({third.member("p3").user.id})]
