"""The mafia's own kill: the Godfather decides or refuses; else the Consigliere."""

from rules import Cause
from rules.events import ConsigliereDecided, MafiaKillRefused, PlayerKilled
from rules.roles.mafioso import MafiaKillChosen

from .helpers import make_game, of, play, refuse

CITY = {
    "A": {
        "m1": "mafioso",
        "m2": "mafioso",
        "m3": "mafioso",
        "c1": "commissar",
        "h1": "citizen",
        "h2": "citizen",
        "h3": "citizen",
        "h4": "citizen",
        "h5": "citizen",
    },
}


def night_game(**rules):
    game = make_game(CITY, first_phase="night", **rules)
    return game


def killed(events):
    return [(e.player, e.cause) for e in of(events, PlayerKilled)]


def test_the_godfathers_word_is_final():
    game = night_game()
    play(game, "host godfather m1", "m2 kill h2", "m3 kill h2")
    events = play(game, "m1 kill h1")
    assert of(events, MafiaKillChosen) == [MafiaKillChosen("A", "m1", "h1", decision=True)]
    assert killed(play(game, "host day")) == [("h1", Cause.MAFIA)]


def test_the_godfather_refuses_with_pass():
    game = night_game()
    play(game, "host godfather m1", "m2 kill h2", "m3 kill h2")
    events = play(game, "m1 pass")
    assert of(events, MafiaKillRefused) == [MafiaKillRefused("A", "m1")]
    assert killed(play(game, "host day")) == []


def test_only_the_godfather_can_refuse():
    game = night_game()
    assert refuse(game, "m2 pass").code == "not_godfather"
    assert refuse(game, "h1 pass").code == "wrong_role"


def test_a_later_choice_replaces_the_earlier_one():
    game = night_game()
    play(game, "host godfather m1", "m1 pass", "m1 kill h3")
    assert killed(play(game, "host day")) == [("h3", Cause.MAFIA)]
    game = night_game()
    play(game, "host godfather m1", "m1 kill h3", "m1 pass")
    assert killed(play(game, "host day")) == []


def test_without_godfather_the_consigliere_takes_the_most_proposed():
    game = night_game()
    play(game, "m1 kill h1", "m2 kill h2", "m3 kill h2")
    events = play(game, "host day")
    assert of(events, ConsigliereDecided) == [ConsigliereDecided("A", "h2")]
    assert killed(events) == [("h2", Cause.MAFIA)]


def test_a_silent_godfather_leaves_it_to_the_consigliere():
    game = night_game()
    play(game, "host godfather m1", "m2 kill h4")
    assert killed(play(game, "host day")) == [("h4", Cause.MAFIA)]


def test_consigliere_tie_goes_to_the_earliest_latest_proposal():
    game = night_game()
    play(game, "m1 kill h1", "m2 kill h2", "m3 kill h3", "m3 kill h1")
    # h1: m1, m3 (latest m3 at tick 3); only h1 has two -> h1
    assert killed(play(game, "host day")) == [("h1", Cause.MAFIA)]
    game = night_game()
    play(game, "m1 kill h1", "m2 kill h2", "m1 kill h3")
    # h2 (tick 1) and h3 (tick 2) one each: h2's latest is earlier
    assert killed(play(game, "host day")) == [("h2", Cause.MAFIA)]


def test_silence_of_the_whole_mafia_is_a_refusal():
    game = night_game()
    events = play(game, "host day")
    assert killed(events) == [] and of(events, ConsigliereDecided) == []


def test_the_mafia_kills_only_in_its_city_and_never_its_own():
    cities = dict(CITY, B={"b1": "mafioso", "b2": "commissar", "b3": "citizen"})
    game = make_game(cities, first_phase="night", touring_order=["B"])
    assert refuse(game, "m1 kill m2").code == "own_mafioso"
    assert refuse(game, "m1 kill b3").code == "wrong_city"
    assert refuse(game, "h1 kill h2").code == "wrong_role"
    play(game, "host day")
    assert refuse(game, "m1 kill h1").code == "wrong_phase"


def test_a_proposal_of_a_mafioso_who_dies_at_night_no_longer_counts():
    game = night_game()
    play(game, "m1 kill h1", "m2 kill h1", "m3 kill h2", "host kill m1", "host kill m2")
    # m3 is the lone mafioso and godfather now; his own choice is his word
    assert killed(play(game, "host day"))[-1] == ("h2", Cause.MAFIA)
