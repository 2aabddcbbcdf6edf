"""The lover visits one player a night: he survives it, and his own kill counts for nothing
(docs/rules-readings.md, the readings L1-L5)."""

from rules import Cause
from rules.events import ConsigliereDecided, KillVoided, PlayerKilled
from rules.roles.bodyguard import KillTaken
from rules.roles.lover import VisitChosen, VisitSaved

from .helpers import make_game, of, pass_day, play, refuse

CITIES = {
    "Verona": {
        "romeo": "citizen",
        "mercutio": "citizen",
        "benvolio": "citizen",
        "paris": "citizen",
        "peter": "citizen",
        "abram": "citizen",
        "tybalt": "mafioso",
        "sampson": "mafioso",
        "escalus": "commissar",
        "juliet": "lover",
        "balthasar": "bodyguard",
    },
    "Padua": {
        "bianca": "citizen",
        "gremio": "citizen",
        "hortensio": "citizen",
        "lucentio": "mafioso",
        "baptista": "commissar",
        "rosaline": "maniac",
    },
}


def night_game(**rules):
    game = make_game(CITIES, first_phase="night", **rules)
    play(game, "tybalt elect tybalt", "sampson elect tybalt")  # tybalt is Godfather
    return game


def killed(events):
    return [(e.player, e.cause) for e in of(events, PlayerKilled)]


def test_l1_visit_one_living_other_player_of_any_city_the_last_choice_counting():
    game = night_game(maniac_idle="none")
    assert refuse(game, "romeo visit mercutio").code == "wrong_role"
    assert refuse(game, "juliet visit juliet").code == "self_target"
    play(game, "juliet visit romeo")
    events = play(game, "juliet visit bianca")
    assert events == [VisitChosen("juliet", "bianca")]
    events = play(game, "tybalt kill romeo", "host day")
    assert killed(events) == [("romeo", Cause.MAFIA)]  # no longer visited
    assert refuse(game, "juliet visit bianca").code == "wrong_phase"
    pass_day(game, "paris", "hortensio")
    assert refuse(game, "juliet visit paris").code == "target_not_alive"


def test_l2_the_visited_survives_every_night_kill_shown_as_a_save():
    game = night_game(maniac_idle="none")
    play(game, "juliet visit bianca", "rosaline kill bianca", "tybalt tour bianca")
    play(game, "lucentio kill bianca")
    events = play(game, "host day")
    assert of(events, VisitSaved) == [
        VisitSaved("bianca", Cause.MANIAC),
        VisitSaved("bianca", Cause.TOURING),
        VisitSaved("bianca", Cause.MAFIA),
    ]
    assert all(e.audience.kind.value == "host" for e in of(events, VisitSaved))
    assert killed(events) == [] and game.is_alive("bianca")


def test_l2_a_visited_bodyguard_survives_the_kill_he_takes():
    game = night_game(maniac_idle="none")
    play(game, "juliet visit balthasar", "balthasar guard bianca", "lucentio kill bianca")
    events = play(game, "host day")
    assert of(events, KillTaken) == [KillTaken("balthasar", "bianca", Cause.MAFIA)]
    assert of(events, VisitSaved) == [VisitSaved("balthasar", Cause.MAFIA)]
    assert killed(events) == []


def test_l3_a_visited_maniac_kills_nobody_not_even_by_chance():
    game = night_game(maniac_idle="random")
    play(game, "juliet visit rosaline")
    events = play(game, "host day")
    assert killed(events) == []
    game = night_game(maniac_idle="random")
    play(game, "juliet visit rosaline", "rosaline kill romeo")
    assert killed(play(game, "host day")) == []


def test_l3_a_visited_godfathers_word_is_void_and_the_consigliere_decides():
    game = night_game(maniac_idle="none")
    play(game, "juliet visit tybalt", "tybalt kill romeo", "sampson kill mercutio")
    events = play(game, "host day")
    assert of(events, ConsigliereDecided) == [ConsigliereDecided("Verona", "mercutio")]
    assert killed(events) == [("mercutio", Cause.MAFIA)]


def test_l3_a_visited_godfathers_refusal_is_void_too():
    game = night_game(maniac_idle="none")
    play(game, "juliet visit tybalt", "tybalt pass", "sampson kill mercutio")
    assert killed(play(game, "host day")) == [("mercutio", Cause.MAFIA)]


def test_l3_a_visited_mafiosos_proposal_does_not_count():
    game = night_game(maniac_idle="none")
    play(game, "juliet visit sampson", "sampson kill mercutio")
    events = play(game, "host day")
    assert killed(events) == []
    assert of(events, ConsigliereDecided) == []


def test_l4_the_lover_dying_at_dawn_does_not_undo_her_visit():
    game = night_game(maniac_idle="none")
    play(game, "juliet visit romeo", "rosaline kill juliet", "tybalt kill romeo")
    events = play(game, "host day")
    assert killed(events) == [("juliet", Cause.MANIAC)]
    assert of(events, VisitSaved) == [VisitSaved("romeo", Cause.MAFIA)]


def test_l4_a_lover_struck_out_in_the_night_visits_nobody():
    game = night_game(maniac_idle="none")
    play(game, "juliet visit romeo", "host kill juliet", "tybalt kill romeo")
    assert killed(play(game, "host day")) == [("romeo", Cause.MAFIA)]


def test_l5_only_the_lover_is_told_whom_she_visits():
    game = night_game(maniac_idle="none")
    events = play(game, "juliet visit romeo")
    assert [e.audience.player for e in events] == ["juliet"]
    assert [e.audience.kind.value for e in events] == ["player"]


def test_the_host_is_told_whose_kill_her_visit_voided():
    game = night_game(maniac_idle="none")
    play(game, "juliet visit tybalt", "tybalt kill romeo", "tybalt tour bianca")
    play(game, "sampson kill mercutio")
    events = play(game, "host day")
    assert of(events, KillVoided) == [KillVoided("tybalt", "Verona", "godfather")]
    assert of(events, KillVoided)[0].audience.kind.value == "host"
    game = night_game(maniac_idle="random")
    events = play(game, "juliet visit rosaline", "host day")
    assert of(events, KillVoided) == [KillVoided("rosaline", "Padua", "maniac")]
    game = night_game(maniac_idle="none")
    events = play(game, "juliet visit sampson", "sampson kill romeo", "host day")
    assert of(events, KillVoided) == [KillVoided("sampson", "Verona", "proposal")]
