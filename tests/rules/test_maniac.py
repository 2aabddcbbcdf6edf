"""The maniac must kill one living player each night; idle means chance or nobody."""

from rules import Cause
from rules.events import PlayerKilled
from rules.roles.maniac import ManiacChose

from .helpers import make_game, of, play, refuse

CITIES = {
    "A": {"a1": "mafioso", "a2": "commissar", "a3": "citizen", "a4": "citizen", "x": "maniac"},
    "B": {"b1": "mafioso", "b2": "commissar", "b3": "citizen", "b4": "citizen"},
}


def test_the_maniac_kills_anyone_but_himself_privately():
    game = make_game(CITIES, first_phase="night")
    assert refuse(game, "x kill x").code == "self_target"
    events = play(game, "x kill b3")
    assert of(events, ManiacChose) == [ManiacChose("x", "b3")]
    assert events[0].audience.player == "x"
    play(game, "x kill a3")
    events = play(game, "host day")
    assert [(e.player, e.cause) for e in of(events, PlayerKilled)] == [("a3", Cause.MANIAC)]


def test_an_idle_maniac_kills_at_random_by_default():
    for seed in range(5):
        game = make_game(CITIES, first_phase="night", seed=seed)
        events = play(game, "host day")
        chosen = of(events, ManiacChose)
        assert len(chosen) == 1 and chosen[0].by_chance and chosen[0].target != "x"
        assert [(e.player, e.cause) for e in of(events, PlayerKilled)] == [
            (chosen[0].target, Cause.MANIAC)
        ]


def test_maniac_idle_none_kills_nobody():
    game = make_game(CITIES, first_phase="night", maniac_idle="none")
    assert of(play(game, "host day"), PlayerKilled) == []


def test_a_maniac_dead_before_dawn_kills_nobody():
    game = make_game(CITIES, first_phase="night")
    play(game, "x kill b3", "host kill x")
    events = play(game, "host day")
    assert game.is_alive("b3") and of(events, ManiacChose) == []
