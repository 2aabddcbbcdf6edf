"""City decisions, the maniac's win and the end of the game."""

import pytest

from rules import Game, Status, Winner
from rules.events import CityDecided, GameOver

from .helpers import make_game, of, play, refuse

CITIES = {
    "A": {"a1": "mafioso", "a2": "commissar", "a3": "citizen", "a4": "citizen"},
    "B": {"b1": "mafioso", "b2": "commissar", "b3": "citizen", "x": "maniac", "b4": "citizen"},
}


def test_no_living_mafioso_means_the_honest_win_the_city():
    game = make_game(CITIES)
    events = play(game, "host kill a1")
    assert of(events, CityDecided) == [CityDecided("A", Winner.HONEST)]
    assert game.winners() == ["A:honest"] and not game.over


def test_mafia_wins_the_city_at_equality():
    game = make_game(CITIES)
    play(game, "host kill a3")
    assert "A" not in game.decided
    events = play(game, "host kill a4")
    assert of(events, CityDecided) == [CityDecided("A", Winner.MAFIA)]


def test_a_decided_city_stays_decided_and_plays_on():
    game = make_game(CITIES)
    play(game, "host kill a3", "host kill a4")
    play(game, "host kill a1")
    assert game.decided["A"] is Winner.MAFIA
    play(game, "a2 nominate x")


def test_the_game_goes_on_while_the_maniac_lives():
    game = make_game(CITIES)
    play(game, "host kill a1", "host kill b1")
    assert not game.over and game.winners() == ["A:honest", "B:honest"]
    events = play(game, "host kill x")
    assert of(events, GameOver) == [GameOver(("A:honest", "B:honest"))]
    assert game.over


def test_the_maniac_wins_by_outliving_everyone():
    game = make_game(CITIES)
    for name in ["a1", "a2", "a3", "a4", "b1", "b2", "b3"]:
        play(game, f"host kill {name}")
    assert not game.over
    events = play(game, "host kill b4")
    assert of(events, GameOver)[0].winners[-1] == "maniac"
    assert game.winners() == ["A:honest", "B:honest", "maniac"]


def test_maniac_wins_if_survives_ends_when_every_city_is_decided():
    game = make_game(CITIES, maniac_wins_if_survives=True)
    play(game, "host kill a1")
    events = play(game, "host kill b1")
    assert of(events, GameOver) == [GameOver(("A:honest", "B:honest", "maniac"))]


@pytest.mark.parametrize(
    "step", ["a2 nominate a3", "host voting", "host kill a3", "host judge a3", "a2 lastword"]
)
def test_everything_is_refused_once_the_game_is_over(step):
    game = make_game(CITIES)
    play(game, "host kill a1", "host kill b1", "host kill x")
    assert refuse(game, step).code == "game_over"
    assert game.legal_actions("a2") == [] and game.legal_host_actions() == []


def test_a_second_role_that_plays_alone_is_a_side_of_its_own(monkeypatch):
    # the state asks the declarations (Game.alone), never the maniac by name: declare the
    # journalist a role that plays alone, as a second lone role's module would
    monkeypatch.setattr(Game, "alone", {Status.MANIAC: "maniac", Status.JOURNALIST: "loner"})
    cities = {
        "A": {"a1": "mafioso", "a2": "commissar", "a3": "citizen", "a4": "citizen"},
        "B": {
            "b1": "mafioso",
            "b2": "commissar",
            "x": "maniac",
            "j": "journalist",
            "b3": "citizen",
        },
    }
    game = make_game(cities)
    play(game, "host kill a1", "host kill b1")
    assert game.lone_sides_alive() == ["maniac", "loner"]
    play(game, "host kill x")
    assert not game.over and game.lone_sides_alive() == ["loner"]
    for name in ["a2", "a3", "a4", "b2"]:
        play(game, f"host kill {name}")
    assert not game.over
    events = play(game, "host kill b3")
    assert of(events, GameOver) == [GameOver(("A:honest", "B:honest", "loner"))]
    assert game.won_alone and game.to_dict()["maniac_won"] is True
