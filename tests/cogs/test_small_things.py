"""The small things people met in the third round of community play, each read as the member
meets it, in Russian and in English."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import main
from bot.config import ConfigError, load_config
from bot.i18n import t
from bot.options import parse_duration
from cogs.history_text import percent_text
from cogs.mentions import command
from tests.cogs.scenes import quick_edits, run
from tests.harness import bot_table

LANGUAGES = ["ru", "en"]
LOCALE = {"ru": "ru", "en": "en-US"}
EXAMPLE = Path(__file__).parents[1] / "scenarios" / "rules_example.yaml"
HOUR = {"ru": "2ч", "en": "2h"}


@pytest.mark.parametrize("language", LANGUAGES)
async def test_status_and_help_name_the_scheduled_game(language: str):
    now = [1_800_000_000.0]
    async with bot_table(players=4, clock=lambda: now[0], guild_locale=LOCALE[language]) as table:
        quick_edits(table)
        title = "Friday *mafia*"
        await run(table, "host", "mafia schedule", {"in": HOUR[language], "title": title})
        [event] = table.fake.event_routes.of_guild(table.guild_id)
        starts = int(now[0] + 7200)
        line = t(
            language,
            "schedule.next",
            title="Friday \\*mafia\\*",
            when=f"<t:{starts}:F>",
            relative=f"<t:{starts}:R>",
            link=f"https://discord.com/events/{table.guild_id}/{event.id}",
        )

        # no game open yet: status says so, and names the one to come
        status = await run(table, "p0", "mafia status")
        assert status.ephemeral
        assert status.content.splitlines() == [t(language, "error.no_game"), line]
        helped = await run(table, "p0", "help")
        assert line in helped.content.splitlines()

        # a lobby open: the scheduled game is still named under the lobby's status
        await table.open_lobby(["p0"])
        status = await run(table, "p0", "mafia status")
        assert status.content.splitlines()[-1] == line
        assert line in (await run(table, "p0", "help")).content.splitlines()


@pytest.mark.parametrize("language", LANGUAGES)
async def test_host_kill_names_whom_he_struck_out(language: str):
    async with bot_table(players=8, guild_locale=LOCALE[language]) as table:
        quick_edits(table)
        await table.new_game(cities="Verona", maniac=False)
        victim = sorted(table.game.players)[0]
        status = t(language, f"status.{table.game.status_of(victim).value}")
        done = await run(table, "host", "host kill", {"player": victim})
        assert done.ephemeral and not table.game.is_alive(victim)
        assert done.content == t(language, "host.killed", player=f"<@{victim}>", status=status)
        assert done.content != t(language, "host.done")


@pytest.mark.parametrize("language", LANGUAGES)
async def test_a_member_coming_mid_game_is_told_to_spectate_first(language: str):
    async with bot_table(players=8, guild_locale=LOCALE[language]) as table:
        quick_edits(table)
        await table.new_game(players=[f"p{i}" for i in range(7)], cities="Verona", maniac=False)
        spectate = command(language, "mafia spectate")
        first = t(language, "help.spectator_on", game=1, cmd_spectate=spectate)
        assert spectate in first

        helped = await run(table, "p7", "help")
        assert helped.content.splitlines()[0] == first
        joined = await run(table, "p7", "mafia join")  # the lobby's buttons are gone by now
        assert joined.ephemeral
        assert joined.content == t(language, "error.join_running", game=1, hint=first)

        await run(table, "p7", "mafia spectate")
        watching = t(language, "help.spectator_watching", game=1, cmd_spectate=spectate)
        assert (await run(table, "p7", "help")).content.splitlines()[0] == watching


@pytest.mark.parametrize("language", LANGUAGES)
async def test_host_idle_counts_days_as_the_strike_out_does(language: str):
    async with bot_table(players=8, guild_locale=LOCALE[language]) as table:
        quick_edits(table)
        await table.new_game(cities="Verona", maniac=False, idle_strike=2)
        game = table.game
        mover = table.pid(table.players_of("citizen")[0])
        victim = table.pid(table.players_of("citizen")[1])
        await run(table, table.name(mover), "nominate", {"player": victim})
        await run(table, "host", "host next")
        await run(table, "host", "host next")  # nobody voted: day 1 ends, night 1 begins
        assert game.stage.value == "night"
        answer = (await run(table, "host", "host idle")).content.splitlines()
        assert answer[0] == t(language, "host.idle.title")
        idle = sorted(p for p in game.alive() if p != mover)
        rows = [t(language, "host.idle.row", player=f"<@{p}>", days=1) for p in idle]
        assert sorted(answer[1:-1]) == sorted(rows)
        assert answer[-1] == t(language, "host.idle.limit", count=2)
        day = {"ru": "1 день", "en": "1 day"}[language]
        assert all(row.endswith(day) for row in answer[1:-1])


@pytest.mark.parametrize("language", LANGUAGES)
async def test_a_tie_for_the_most_wins_is_said_as_a_tie(language: str):
    """The honest side wins the server's only game: citizens, the commissar, the doctor and the
    journalist all won every seat they had, and no one of them is picked out of the four."""
    async with bot_table(players=8, guild_locale=LOCALE[language]) as table:
        quick_edits(table)
        await table.new_game(cities="Verona", mafiosi=1, doctor=True, journalist=True, maniac=False)
        for mafioso in table.players_of("mafioso"):
            await run(table, "host", "host kill", {"player": table.pid(mafioso)})
        await table.drain()
        top = (await run(table, "p0", "mafia top")).content
        honest = ["citizen", "commissar", "doctor", "journalist"]
        tie = t(
            language,
            "top.best_tie",
            statuses=", ".join(t(language, f"status.{status}") for status in honest),
            rate=percent_text(language, 1, 1),
        )
        assert tie in top.splitlines()
        best = t(language, "top.best_status", status="{}", rate="{}").split("{")[0]
        assert not any(line.startswith(best) for line in top.splitlines())


@pytest.mark.parametrize("language", LANGUAGES)
def test_simulate_names_the_seed_as_the_game_does(
    language: str, capsys: pytest.CaptureFixture[str]
):
    """``mafia-bot simulate --lang ru`` said «Зерно» (a word-for-word "seed"); the bot's own
    texts call it the draw's key («ключ жеребьёвки»)."""
    assert main(["simulate", str(EXAMPLE), "--lang", language]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == {"ru": "Ключ жеребьёвки 7; города:", "en": "Seed 7; cities:"}[language]
    assert "Зерно" not in first
    assert "ключ жеребьёвки" in t("ru", "archive.seed", seed=7).casefold()  # one word for it


@pytest.mark.parametrize("language", LANGUAGES)
async def test_a_presets_lobby_lists_its_roles_without_a_label_inside_a_label(language: str):
    async with bot_table(players=4, guild_locale=LOCALE[language]) as table:
        quick_edits(table)
        await table.open_lobby(["p0"])
        name = t(language, "preset.beginners")
        assert (await run(table, "host", "host setup", {"preset": name})).ephemeral
        await table.drain()
        lines = (await table.lobby_message()).content.splitlines()
        roles = t(language, "lobby.roles", roles=t(language, "status.doctor"))
        left_out = ", ".join(t(language, f"status.{s}") for s in ("journalist", "maniac"))
        assert roles in lines and t(language, "lobby.without", statuses=left_out) in lines
        label = t(language, "lobby.roles", roles="")
        assert not any(line.startswith(label) and line.count(":") > 1 for line in lines)


@pytest.mark.parametrize(
    ("written", "seconds"),
    [("10m", 600), ("10м", 600), ("1h30m", 5400), ("1ч 30мин", 5400), ("90", 90), (0, 0)],
)
def test_a_config_timer_is_written_as_the_commands_take_it(
    written: str | int, seconds: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """The operator writes ``discussion: 10m`` (or ``10м``) as ``/host timer`` takes it, and
    ``mafia-bot check-config`` says ok: one parser for both."""
    path = tmp_path / "config.yaml"
    path.write_text(f"timers:\n  discussion: {written}\n  reminders: [1m, 30]\n", "utf-8")
    assert main(["check-config", str(path)]) == 0
    assert "ok" in capsys.readouterr().out
    config = load_config(path)
    assert config.timers.discussion == seconds and config.timers.reminders == (60, 30)
    if seconds:
        assert parse_duration(str(written)) == seconds  # what /host timer reads of it


@pytest.mark.parametrize("written", ["10 parsecs", "8d", "-5", "1m1h"])
def test_a_config_timer_not_a_duration_is_refused_by_name(written: str, tmp_path: Path):
    path = tmp_path / "config.yaml"
    path.write_text(f"timers:\n  voting: '{written}'\n", "utf-8")
    with pytest.raises(ConfigError, match=r"timers\.voting: must be seconds or a duration"):
        load_config(path)


NICKNAMES = ["<#1234567890123456789>", "<t:0:R>", "Evil\u202eemaN", "**bold** @everyone"]


@pytest.mark.parametrize("language", LANGUAGES)
async def test_names_holding_discord_codes_are_shown_as_written(language: str):
    """Nicknames holding a channel, a time, a right-to-left override or markdown, and a city
    named with a code fence: the lobby and the deal's log show them as text, not as Discord's
    codes (and the fence opens no code block)."""
    async with bot_table(players=8, guild_locale=LOCALE[language]) as table:
        quick_edits(table)
        for index, nick in enumerate(NICKNAMES):
            table.fake.update_member(table.guild_id, table.member(f"p{index}").user.id, nick=nick)
        await table.open_lobby()
        city = "```Verona"
        assert (await run(table, "host", "host setup", {"cities": city})).ephemeral
        await table.drain()
        lobby = (await table.lobby_message()).content
        assert t(language, "lobby.cities", cities="\\`\\`\\`Verona") in lobby.splitlines()
        assert "```" not in lobby

        started = await table.slash("host", "host start")
        await started.wait_original(60.0)
        await table.drain()
        log = "\n".join(table.channel_messages(int(table.live().record.channels["log"])))
        for raw, seen in [
            ("<#1234567890123456789>", "\\<#1234567890123456789>"),
            ("<t:0:R>", "\\<t:0:R>"),
            ("Evil\u202eemaN", "EvilemaN"),
            ("**bold** @everyone", "\\*\\*bold\\*\\* @\u200beveryone"),
        ]:
            assert f"({seen})" in log, (raw, log)
        assert "\u202e" not in log and "(<#" not in log and "(<t:" not in log
