"""Issue 23, what players met in the second round of community play: each point as the persona
who met it sees it, through the fake Discord, in Russian and in English."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.i18n import t
from bot.limits import sections
from bot.service import LiveGame
from cogs.mentions import command
from tests.cogs.scenes import accepted, ballot_message, lobby_message, quick_edits, run
from tests.harness import Table, bot_table

LANGUAGES = ["ru", "en"]
CITIES = {"ru": ("Верона", "Падуя"), "en": ("Verona", "Padua")}
#: an English server's members read English (their answers follow their client's locale)
LOCALE = {"ru": "ru", "en": "en-US"}
LOCALES = Path(__file__).resolve().parents[2] / "bot" / "locales"


async def speak(table: Table, language: str) -> None:
    """Switch the guild's bot to ``language`` (Russian is its default)."""
    if language == "en":
        assert (await run(table, "host", "admin language", {"language": "en"})).ephemeral


@contextlib.asynccontextmanager
async def game_in(
    language: str, players: int, cities: str, **setup: Any
) -> AsyncIterator[tuple[Table, LiveGame]]:
    """A started game on a guild whose bot speaks ``language``."""
    async with bot_table(players=players, guild_locale=LOCALE[language]) as table:
        quick_edits(table)
        await speak(table, language)
        yield table, await table.new_game(cities=cities, **setup)


async def a_day(
    table: Table, nominations: list[tuple[str, str]], votes: list[tuple[str, str]]
) -> None:
    """Day 1 played: who nominates whom, the voting, who votes for whom, and its end."""
    for who, whom in nominations:
        await accepted(table, who, "nominate", {"player": table.pid(whom)})
    await accepted(table, "host", "host next")
    for who, whom in votes:
        await accepted(table, who, "vote", {"player": table.pid(whom)})
    await accepted(table, "host", "host next")
    await table.drain()


def said(table: Table, channel_id: int) -> str:
    """Everything the bot said in a channel, one message after another."""
    return "\n".join(table.channel_messages(channel_id))


def residents(table: Table, city: str) -> list[str]:
    """Usernames of a city's living residents: honest ones first, then its mafiosi."""
    game = table.game
    honest = [table.name(p) for p in game.alive(city) if game.status_of(p).value != "mafioso"]
    return honest + [table.name(p) for p in game.living_mafiosi(city)]


@pytest.mark.parametrize("language", LANGUAGES)
async def test_a_closed_ballot_keeps_the_vote_of_a_voter_another_city_executed(
    language: str,
) -> None:
    a, b = CITIES[language]
    async with game_in(language, 16, f"{a}, {b}", maniac=False) as (table, _):
        in_a, in_b = residents(table, a), residents(table, b)
        nominee, voter = in_a[0], in_a[1]
        # the second city nominates the voter across the cities, and every one of its votes (more
        # than half) executes him after the first city has counted his vote
        await a_day(
            table,
            [(in_a[2], nominee), (in_b[0], voter)],
            [(voter, nominee), *((name, voter) for name in in_b)],
        )
        assert not table.game.is_alive(table.pid(voter)) and not table.game.is_alive(
            table.pid(nominee)
        )

        closed = ballot_message(table, a).content
        row = t(language, "ballot.row", number=1, player=f"<@{table.pid(nominee)}>", votes=1)
        assert row in closed and f"<@{table.pid(voter)}>" in closed, closed
        assert (
            t(language, "ballot.voters", voters=1) in closed
            and t(language, "ballot.closed") in closed
        )
        tally = t(
            language,
            "tally.row",
            player=f"<@{table.pid(nominee)}>",
            votes=1,
            voters=f"<@{table.pid(voter)}>",
        )
        assert tally in said(table, table.city_channel(a))


@pytest.mark.parametrize("language", LANGUAGES)
async def test_a_city_whose_choice_another_city_executed_first_is_told_so_and_executes_by_lot(
    language: str,
) -> None:
    a, b = CITIES[language]
    async with game_in(language, 16, f"{a}, {b}", maniac=False) as (table, _):
        in_a, in_b = residents(table, a), residents(table, b)
        target = in_a[0]
        await a_day(
            table,
            [(in_a[1], target), (in_b[0], target)],
            [(in_a[1], target), *((name, target) for name in in_b)],
        )

        padua = said(table, table.city_channel(b))
        assert t(language, "tally.taken", player=f"<@{table.pid(target)}>", city=a) in padua
        lot = [d for d in table.game.deaths if d.player != table.pid(target)]
        assert len(lot) == 1
        death = t(
            language,
            "death",
            player=f"<@{lot[0].player}>",
            city=lot[0].city,
            status=t(language, f"status.{lot[0].status.value}"),
            cause=t(language, "cause.execution_by_chance", city=b),
        )
        assert death in padua
        # the one the first city executed is its own decision, named as such
        assert t(language, "cause.execution", city=a) in said(table, table.city_channel(a))
    assert "жребию" in t("ru", "cause.execution_by_chance", city="Падуя")
    assert "выбор" not in t("ru", "cause.execution_by_chance", city="Падуя")


@pytest.mark.parametrize("language", LANGUAGES)
async def test_the_texts_of_a_day_name_only_the_roles_dealt_and_the_host_is_told_each_stage(
    language: str,
) -> None:
    a, _ = CITIES[language]
    async with game_in(language, 8, a, mafiosi=1, doctor=False, journalist=False, maniac=False) as (
        table,
        _,
    ):
        city = table.city_channel(a)
        cmd = lambda path: command(language, path)  # noqa: E731
        day = " ".join(
            [
                t(
                    language,
                    "phase.day",
                    day=1,
                    nominate=cmd("nominate"),
                    lastword=cmd("lastword speak"),
                ),
                t(language, "deadline.host"),
            ]
        )
        assert any(text.endswith(day) for text in table.channel_messages(city)), said(table, city)
        everyone = said(table, city)
        for role in ("doctor", "journalist", "maniac"):
            assert t(language, f"status.{role}").casefold() not in everyone.casefold(), role

        # /host next answers with the stage that began, by its name
        honest = table.players_of(
            "citizen", a
        )  # a citizen is executed: every role still acts at night
        await accepted(table, honest[1], "nominate", {"player": table.pid(honest[0])})
        voting = await run(table, "host", "host next")
        moment = t(
            language,
            "moment.day",
            phase=t(language, "phase_name.day", number=1),
            stage=t(language, "stage.voting"),
        )
        assert voting.content == t(
            language, "host.began", moment=moment, deadline=t(language, "deadline.host")
        )
        await accepted(table, honest[1], "vote", {"player": table.pid(honest[0])})
        night = await run(table, "host", "host next")
        assert night.content == t(
            language,
            "host.began",
            moment=t(language, "phase_name.night", number=1),
            deadline=t(language, "deadline.host"),
        )
        await table.drain()
        # at night the stage is not said twice («ночь 1, ночь»)
        status = await run(table, "p1", "mafia status")
        assert (
            t(
                language,
                "status.phase",
                moment=t(language, "phase_name.night", number=1),
                deadline=t(language, "deadline.host"),
            )
            in status.content
        )
        night_text = " ".join(
            [
                t(language, "phase.night", night=1),
                t(language, "phase.night_mafioso", kill=cmd("kill")),
                t(language, "phase.night_commissar", check=cmd("check")),
                t(language, "phase.night_rest"),
                t(language, "deadline.host"),
            ]
        )
        assert any(text.endswith(night_text) for text in table.channel_messages(city)), said(
            table, city
        )
        assert t(language, "status.maniac") not in said(table, city)


async def test_the_night_names_the_maniac_and_the_day_the_doctor_and_journalist_when_dealt() -> (
    None
):
    async with bot_table(players=16) as table:
        await table.new_game(cities="Верона, Падуя", doctor=True, journalist=True, maniac=True)
        assert (
            table.players_of("maniac")
            and table.players_of("doctor")
            and table.players_of("journalist")
        )
        text = said(table, table.city_channel("Верона"))
        assert t("ru", "phase.day_doctor", protect=command("ru", "protect")) in text
        assert t("ru", "phase.day_journalist", compare=command("ru", "compare")) in text
        await run(table, "host", "host end")
        await table.new_game(cities="Верона, Падуя", maniac=True, first_phase="night")
        assert table.players_of("maniac")
        assert t("ru", "phase.night_maniac", kill=command("ru", "kill")) in said(
            table, table.city_channel("Верона")
        )


@pytest.mark.parametrize("language", LANGUAGES)
async def test_every_city_s_win_comes_before_the_word_that_the_maniac_plays_on(
    language: str,
) -> None:
    a, b = CITIES[language]
    async with game_in(language, 16, f"{a}, {b}", mafiosi=1, maniac=True) as (table, _):
        game = table.game
        mafiosi = {city: table.name(game.living_mafiosi(city)[0]) for city in (a, b)}
        honest = {
            city: [n for n in residents(table, city) if n != mafiosi[city]] for city in (a, b)
        }
        await a_day(
            table,
            [(honest[city][0], mafiosi[city]) for city in (a, b)],
            [(name, mafiosi[city]) for city in (a, b) for name in honest[city]],
        )
        assert set(table.game.decided) == {a, b} and not table.game.over
        text = said(table, table.city_channel(a))
        first = text.index(t(language, "decided.honest", city=a))
        second = text.index(t(language, "decided.honest", city=b))
        maniac = text.index(t(language, "decided.maniac_goes_on"))
        assert first < second < maniac and text.count(t(language, "decided.maniac_goes_on")) == 1


@pytest.mark.parametrize("language", LANGUAGES)
async def test_a_non_nominee_asking_for_the_last_word_hears_why(language: str) -> None:
    a, _ = CITIES[language]
    async with game_in(language, 8, a, maniac=False) as (table, _):
        bystander = residents(table, a)[0]
        answer = await run(table, bystander, "lastword speak")
        assert answer.ephemeral and answer.content == t(language, "error.not_nominee")
        assert t(language, "error.not_nominated") not in answer.content  # not the voting's refusal


@pytest.mark.parametrize("language", LANGUAGES)
async def test_the_host_is_not_offered_to_play_and_rules_give_their_title_once(
    language: str,
) -> None:
    async with bot_table(players=8, guild_locale=LOCALE[language]) as table:
        await speak(table, language)
        await table.open_lobby()
        helped = await run(table, "host", "help")
        join = t(language, "lobby.join")
        assert join not in helped.content and command(language, "mafia join") not in helped.content
        assert command(language, "mafia me") not in helped.content
        assert (
            t(
                language,
                "help.always_onlooker",
                status=command(language, "mafia status"),
                rules=command(language, "rules"),
            )
            in helped.content
        )
        player = await run(
            table, "p1", "help"
        )  # a player in the lobby is still told of their status
        assert command(language, "mafia me") in player.content

        lobby = await lobby_message(table)
        configured = await run(
            table,
            "host",
            "host setup",
            {"mafiosi": 1, "doctor": True, "journalist": False, "maniac": False},
        )
        assert configured.ephemeral
        await table.drain()
        roles = table.fake.message(lobby.id).content
        expected = "; ".join([t(language, "lobby.mafiosi", count=1), t(language, "status.doctor")])
        left_out = [t(language, "status.journalist"), t(language, "status.maniac")]
        assert t(language, "lobby.without", statuses=", ".join(left_out)) in roles.splitlines()
        assert t(language, "lobby.roles", roles=expected) in roles, roles

        await accepted_start(table)
        running = await run(table, "host", "help")
        assert command(language, "mafia me") not in running.content
        assert (
            t(
                language,
                "help.always_onlooker",
                status=command(language, "mafia status"),
                rules=command(language, "rules"),
            )
            in running.content
        )

        contents = await run(table, "p2", "rules")
        title = contents.content.splitlines()[0]
        assert title.startswith("# ") and contents.content.count(title[2:]) == 1, contents.content[
            :300
        ]


async def accepted_start(table: Table) -> None:
    started = await table.slash("host", "host start")
    await started.wait_original(60.0)
    await table.drain()


@pytest.mark.parametrize("language", LANGUAGES)
async def test_a_city_waiting_for_the_host_pings_him_in_his_log(language: str) -> None:
    a, _ = CITIES[language]
    async with game_in(language, 8, a, maniac=False, day_fallback="host") as (table, live):
        await a_day(table, [], [])  # nobody voted: the city waits for the host
        log = [
            m
            for m in table.fake.messages(int(live.record.channels["log"]))
            if t(language, "log.awaiting", city=a) in m.content
        ]
        assert len(log) == 1
        host = str(table.host.user.id)
        assert log[0].content.startswith(f"<@{host}>\n")
        posts = [
            c
            for c in table.fake.calls("POST", "/channels/{channel_id}/messages")
            if (c.json or {}).get("content") == log[0].content
        ]
        assert len(posts) == 1 and posts[0].json["allowed_mentions"] == {
            "parse": [],
            "users": [host],
        }
        assert t(language, "tally.none") in said(table, table.city_channel(a))


@pytest.mark.parametrize("language", LANGUAGES)
async def test_the_doctor_s_save_says_from_whom_and_the_end_says_the_rooms_are_open(
    language: str,
) -> None:
    a, _ = CITIES[language]
    async with game_in(language, 8, a, mafiosi=1, doctor=True, journalist=False, maniac=False) as (
        table,
        live,
    ):
        doctor = table.players_of("doctor")[0]
        godfather = table.name(table.game.living_mafiosi(a)[0])
        victim, executed = table.players_of("citizen", a)[:2]
        await accepted(table, doctor, "protect", {"player": table.pid(victim)})
        await a_day(
            table, [(victim, executed)], [(victim, executed)]
        )  # the day executes someone else
        await accepted(table, godfather, "kill", {"player": table.pid(victim)})
        await accepted(table, "host", "host next")
        await table.drain()
        log_channel = int(live.record.channels["log"])
        assert t(language, "log.prevented.mafia", target=f"<@{table.pid(victim)}>") in said(
            table, log_channel
        )
        assert table.game.is_alive(table.pid(victim))

        ended = await run(table, "host", "host end")
        assert ended.content == t(language, "host.ended_reply")
        await table.drain()
        channels = live.record.channels
        rooms = f"<#{channels['cities'][a]['mafia']}>"
        revealed = t(language, "game_over.revealed", rooms=rooms, log=f"<#{log_channel}>")
        city = int(channels["cities"][a]["text"])
        posted = [m for m in table.fake.messages(city) if m.content == revealed]
        assert len(posted) == 1
        # said once the mafia room is open: its edit came first
        calls = table.fake.calls()
        room_edits = [
            n
            for n, c in enumerate(calls)
            if c.method == "PATCH"
            and c.route == "/channels/{channel_id}"
            and c.params.get("channel_id") == str(channels["cities"][a]["mafia"])
        ]
        sends = [
            n
            for n, c in enumerate(calls)
            if c.method == "POST"
            and c.params.get("channel_id") == str(city)
            and (c.json or {}).get("content") == revealed
        ]
        assert room_edits and len(sends) == 1 and room_edits[-1] < sends[0]


def test_a_summary_s_votes_start_their_own_message_unless_all_fits_in_one() -> None:
    roll = ["📜 **Итоги игры**"] + [f"• <@{n:019d}> — гражданин, в живых" for n in range(40)]
    votes = ["🗳️ **Голоса по дням**"] + [
        f"День {d}, Верона: "
        + "; ".join(f"<@{n:019d}> — 1 голос (<@{n + 1:019d}>)" for n in range(8))
        for d in range(1, 4)
    ]
    messages = sections([roll, votes])
    assert len(messages) == 2 and messages[1].startswith("🗳️") and "🗳️" not in messages[0]
    assert all(len(m) <= 2000 for m in messages)
    assert sections([roll[:3], votes[:2]]) == ["\n".join(roll[:3] + votes[:2])]


def catalogue(language: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((LOCALES / f"{language}.json").read_text(encoding="utf-8"))
    return data


def texts(value: object) -> list[str]:
    if isinstance(value, dict):
        return [str(text) for key, text in value.items() if key != "by"]
    return [str(value)]


def test_english_says_they_of_a_player_and_russian_numbers_games_with_the_numero_sign() -> None:
    english = catalogue("en")
    gendered = [
        key
        for key, value in english.items()
        for text in texts(value)
        if re.search(r"\b(he|his|him|himself)\b", text, re.IGNORECASE)
    ]
    assert gendered == []
    russian = catalogue("ru")
    assert [
        key for key, value in russian.items() for text in texts(value) if "#{game}" in text
    ] == []
    for key, past in (
        ("host.paused_notice", "остановил"),
        ("log.left_server", "покинул"),
        ("host.kicked", "исключён"),
        ("confirm.kill", "Он умрёт"),
        ("log.struck", "вычеркнут:"),
    ):
        assert past not in str(russian[key]), key
    assert "от маньяка" in t("ru", "log.prevented.maniac", target="@p5")
    assert t("ru", "tally.none")[0].isupper() and t("en", "tally.none")[0].isupper()
    assert "Зерно случая" not in t("ru", "archive.seed", seed=1)
    assert "(are the Procurator of)" not in t("en", "help.host", game=1)
    assert "each city mafia" not in t("en", "lobby.roles_default")


def test_russian_option_names_use_hyphens_as_discord_allows() -> None:
    russian = catalogue("ru")
    names = {key: str(value) for key, value in russian.items() if key.endswith(".name")}
    assert [key for key, name in names.items() if "_" in name] == []
    assert all(
        re.fullmatch(r"[-\w]{1,32}", name) and name == name.lower() for name in names.values()
    )
    # the spectators' option lists the same values its choices offer
    described = t("ru", "opt.spectators.description")
    assert (
        t("ru", "choice.on") in described
        and t("ru", "choice.off") in described
        and "да, нет" not in described
    )
