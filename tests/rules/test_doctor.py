"""The doctor protects one player for the coming night."""

from rules import Cause
from rules.events import KillPrevented, PlayerKilled
from rules.roles.doctor import ProtectionChosen

from .helpers import make_game, of, pass_day, play, refuse


def test_protection_saves_from_the_mafia_and_the_last_choice_counts():
    game = make_game()
    play(game, "friar protect mercutio")
    events = play(game, "friar protect romeo")
    assert of(events, ProtectionChosen) == [ProtectionChosen("friar", "romeo")]
    assert events[0].audience.player == "friar"
    pass_day(game, "sampson", "curtis")
    play(game, "tybalt kill romeo")
    events = play(game, "host day")
    assert of(events, KillPrevented) == [KillPrevented("romeo", Cause.MAFIA)]
    assert game.is_alive("romeo")


def test_protection_lasts_one_night_only():
    game = make_game()
    play(game, "friar protect romeo")
    pass_day(game, "sampson", "curtis")
    play(game, "host day")
    pass_day(game, "gregory", "grumio")
    play(game, "tybalt kill romeo")
    play(game, "host day")
    assert not game.is_alive("romeo")


def test_self_protection_follows_the_option():
    game = make_game()
    play(game, "friar protect friar")
    game = make_game(doctor_self_protect=False)
    assert refuse(game, "friar protect friar").code == "self_target"


def test_only_the_living_doctor_by_day_protects_a_living_player():
    game = make_game()
    assert refuse(game, "romeo protect mercutio").code == "wrong_role"
    play(game, "host kill mercutio")
    assert refuse(game, "friar protect mercutio").code == "target_not_alive"
    pass_day(game, "sampson", "curtis")
    assert refuse(game, "friar protect romeo").code == "wrong_phase"


def test_a_doctor_executed_that_day_protects_nobody():
    game = make_game()
    play(game, "friar protect romeo")
    pass_day(game, "friar", "curtis")
    play(game, "tybalt kill romeo")
    events = play(game, "host day")
    assert [(e.player, e.cause) for e in of(events, PlayerKilled)] == [("romeo", Cause.MAFIA)]


def test_a_doctor_killed_during_the_night_still_protects():
    game = make_game()
    play(game, "friar protect romeo")
    pass_day(game, "sampson", "curtis")
    play(game, "host kill friar", "tybalt kill romeo")
    play(game, "host day")
    assert game.is_alive("romeo")
