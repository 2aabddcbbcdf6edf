"""Endings that read well: the maniac's win has a line of its own; a long summary is cut only
between cities, each message of it opening with its city's heading, the living first, then the
dead in the order they died; a replaced player stays in the roll, as replaced."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from bot.i18n import t
from bot.limits import CONTENT, block_sections
from bot.service import LiveGame
from cogs.summary import game_over_lines, summary_blocks
from rules import Game
from rules.scenario import load_scenario, run_scenario

VERONA = {"romeo": "citizen", "mercutio": "citizen", "tybalt": "mafioso", "escalus": "commissar"}


def played(data: dict[str, Any]) -> Game:
    result = run_scenario(load_scenario(data))
    return result.game


def live_in(language: str) -> LiveGame:
    return cast(LiveGame, SimpleNamespace(language=language, id=1))


@pytest.mark.parametrize("language", ["ru", "en"])
def test_a_maniac_who_outlives_everyone_has_a_line_of_his_own(language: str) -> None:
    game = played(
        {
            "seed": 48,
            "cities": {"Verona": {**VERONA, "rosaline": "maniac"}},
            "steps": [
                "host kill tybalt",
                "host kill romeo",
                "host kill mercutio",
                "rosaline nominate escalus",
                "host voting",
                "rosaline vote escalus",
                "host night",
            ],
        }
    )
    assert game.over and "maniac" in game.winners()
    lines = game_over_lines(live_in(language), game, game.winners())
    assert lines == [
        t(language, "game_over", winners=t(language, "winner.honest", city="Verona")),
        t(language, "game_over.maniac_alone", maniac="rosaline"),
    ]
    assert t(language, "winner.maniac") not in lines[0]


@pytest.mark.parametrize("language", ["ru", "en"])
def test_a_maniac_who_survives_under_the_option_wins_too_in_a_line_of_his_own(
    language: str,
) -> None:
    game = played(
        {
            "seed": 28,
            "rules": {"maniac_wins_if_survives": True},
            "cities": {"Verona": {**VERONA, "rosaline": "maniac"}},
            "steps": ["romeo nominate tybalt", "host voting", "romeo vote tybalt", "host night"],
        }
    )
    lines = game_over_lines(live_in(language), game, game.winners())
    assert lines[-1] == t(language, "game_over.maniac_survived", maniac="rosaline")
    assert len(lines) == 2


def big_game() -> tuple[Game, list[str]]:
    """Three cities of 24 with long (snowflake) names; the host strikes out some of each."""
    cities: dict[str, dict[str, str]] = {}
    killed: list[str] = []
    for c, city in enumerate(["Верона", "Падуя", "Мантуя"]):
        names = [f"{1_500_000_000_000_000_000 + c * 100 + n}" for n in range(24)]
        statuses = ["commissar", "mafioso", "mafioso", "mafioso"] + (["doctor"] if c == 0 else [])
        cities[city] = {
            name: statuses[n] if n < len(statuses) else "citizen" for n, name in enumerate(names)
        }
        killed += [names[20], names[6], names[13]]  # out of the deal's order
    steps = [f"host kill {name}" for name in killed]
    return played({"seed": 3, "cities": cities, "steps": steps}), killed


@pytest.mark.parametrize("language", ["ru", "en"])
def test_a_long_summary_is_cut_only_between_cities_the_living_first(language: str) -> None:
    game, killed = big_game()
    live = live_in(language)
    blocks = summary_blocks(live, game)
    messages = block_sections([blocks], CONTENT)
    assert len(messages) > 1 and all(len(m) <= CONTENT for m in messages)
    headings = {t(language, "summary.city", city=city): city for city in game.cities}
    for message in messages[1:]:
        assert message.split("\n")[0] in headings, message[:80]
    for city in game.cities:
        heading = t(language, "summary.city", city=city)
        holding = [m for m in messages if heading in m]
        assert len(holding) == 1, f"{city} is cut across messages"
        rows = holding[0].split(heading + "\n", 1)[1].split("\n")
        residents = [row for row in rows if row.startswith("•")][: len(game.residents[city])]
        alive = [row for row in residents if t(language, "summary.alive") in row]
        assert residents[: len(alive)] == alive, "the dead come after the living"
        dead = [p for p in killed if p in game.residents[city]]
        assert [r for r in residents[len(alive) :]] == [
            r for p in dead for r in residents if f"<@{p}>" in r
        ], "the dead in the order they died"


def test_a_city_longer_than_a_message_repeats_its_heading() -> None:
    blocks = [
        ["**Title**"],
        ["**Верона**", *[f"• <@{n:019d}> — гражданин, в живых" for n in range(90)]],
    ]
    messages = block_sections([blocks], CONTENT)
    assert len(messages) >= 3 and all(len(m) <= CONTENT for m in messages)
    assert all(m.split("\n")[0] == "**Верона**" for m in messages[1:])
    assert sum(m.count("• ") for m in messages) == 90


@pytest.mark.parametrize("language", ["ru", "en"])
def test_a_replaced_player_stays_in_the_roll_as_replaced(language: str) -> None:
    game = played(
        {
            "seed": 5,
            "cities": {"Verona": {**VERONA, "benvolio": "citizen"}},
            "steps": ["host replace romeo paris", "host replace paris balthasar"],
        }
    )
    lines = [line for block in summary_blocks(live_in(language), game) for line in block]
    assert t(language, "summary.replaced", player="romeo", new="paris") in lines
    assert t(language, "summary.replaced", player="paris", new="balthasar") in lines
    assert any(line.startswith("• balthasar — ") for line in lines)
