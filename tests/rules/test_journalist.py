"""The journalist compares two players' statuses once per day."""

from rules.roles.journalist import StatusesCompared

from .helpers import make_game, of, play, refuse


def test_same_or_different_privately():
    game = make_game()
    events = play(game, "tranio compare romeo mercutio")
    compared = of(events, StatusesCompared)[0]
    assert (compared.same, compared.reply) == (True, "same")
    assert compared.audience.player == "tranio"
    game = make_game()
    assert of(play(game, "tranio compare romeo tybalt"), StatusesCompared)[0].reply == "different"


def test_a_godfather_is_a_mafioso_for_the_journalist():
    cities = {
        "A": {
            "a1": "mafioso",
            "a2": "mafioso",
            "a3": "commissar",
            "a4": "citizen",
            "a5": "citizen",
            "a6": "journalist",
        },
    }
    game = make_game(cities)
    play(game, "host godfather a1")
    assert of(play(game, "a6 compare a1 a2"), StatusesCompared)[0].same


def test_once_per_day_two_different_players_by_day():
    game = make_game()
    assert refuse(game, "tranio compare romeo romeo").code == "same_player"
    play(game, "tranio compare romeo tybalt")
    assert refuse(game, "tranio compare romeo mercutio").code == "already_compared_today"
    play(game, "host voting", "host night")
    assert refuse(game, "tranio compare romeo mercutio").code == "wrong_phase"
    play(game, "host day")
    play(game, "tranio compare romeo mercutio")
    assert refuse(game, "bianca compare romeo mercutio").code == "wrong_role"


def test_the_dead_may_be_compared():
    game = make_game()
    play(game, "host kill tybalt")
    assert of(play(game, "tranio compare tybalt lucentio"), StatusesCompared)[0].same
