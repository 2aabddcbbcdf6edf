"""Last word: a living nominee asks once per day, before the day ends."""

from rules.events import LastWordRequested

from .helpers import make_game, of, pass_day, play, refuse


def test_a_nominee_asks_for_his_last_word_once_per_day():
    game = make_game()
    play(game, "romeo nominate tybalt")
    assert of(play(game, "tybalt lastword"), LastWordRequested) == [
        LastWordRequested("tybalt", "Verona")
    ]
    assert refuse(game, "tybalt lastword").code == "last_word_used"
    pass_day(game, "sampson", "curtis")
    play(game, "host day", "romeo nominate tybalt")
    play(game, "tybalt lastword")


def test_a_nominee_of_another_city_may_ask_too_also_during_voting():
    game = make_game()
    play(game, "bianca nominate romeo", "host voting")
    assert of(play(game, "romeo lastword"), LastWordRequested)[0].city == "Verona"


def test_only_living_nominees_by_day():
    game = make_game()
    assert refuse(game, "romeo lastword").code == "not_nominee"
    play(game, "romeo nominate mercutio", "host kill mercutio")
    assert refuse(game, "mercutio lastword").code == "not_alive"
    pass_day(game, "sampson", "curtis")
    assert refuse(game, "sampson lastword").code == "not_alive"
    assert refuse(game, "romeo lastword").code == "wrong_phase"
