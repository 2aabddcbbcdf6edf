"""Nominations: one per resident per day, in his own city, before voting."""

from rules.events import Nominated

from .helpers import make_game, of, play, refuse


def test_a_resident_nominates_any_living_player_of_any_city():
    game = make_game()
    events = play(game, "romeo nominate lucentio")
    assert of(events, Nominated) == [Nominated("Verona", "romeo", "lucentio")]
    assert game.nominees("Verona") == ["lucentio"]
    assert game.nominees("Padua") == []


def test_self_nomination_is_allowed():
    game = make_game()
    play(game, "romeo nominate romeo")
    assert game.nominees("Verona") == ["romeo"]


def test_one_nomination_per_resident_per_day():
    game = make_game()
    play(game, "romeo nominate tybalt")
    assert refuse(game, "romeo nominate mercutio").code == "already_nominated_today"
    play(game, "host voting", "host night", "host day")
    play(game, "romeo nominate mercutio")


def test_nominating_someone_already_nominated_in_that_city_is_refused():
    game = make_game()
    play(game, "romeo nominate tybalt")
    assert refuse(game, "mercutio nominate tybalt").code == "already_nominated"
    # in another city he can be nominated again
    play(game, "bianca nominate tybalt")
    assert game.nominees("Padua") == ["tybalt"]


def test_no_nomination_once_voting_has_started_or_at_night():
    game = make_game()
    play(game, "host voting")
    assert refuse(game, "romeo nominate tybalt").code == "wrong_phase"
    play(game, "host night")
    assert refuse(game, "romeo nominate tybalt").code == "wrong_phase"


def test_the_dead_neither_nominate_nor_are_nominated():
    game = make_game()
    play(game, "host kill mercutio")
    assert refuse(game, "mercutio nominate tybalt").code == "not_alive"
    assert refuse(game, "romeo nominate mercutio").code == "target_not_alive"
