"""Dawn: the night's kills together, in RULES.md's order."""

from rules import Cause
from rules.events import KillPrevented, MafiaKillBlocked, PlayerKilled

from .helpers import make_game, of, play

CITIES = {
    "A": {"a1": "mafioso", "a2": "commissar", "a3": "citizen", "a4": "citizen", "x": "maniac",
          "a5": "citizen", "doc": "doctor"},
    "B": {"b1": "mafioso", "b2": "commissar", "b3": "citizen", "b4": "citizen"},
}


def killed(events):
    return [(e.player, e.cause) for e in of(events, PlayerKilled)]


def night(**rules):
    return make_game(CITIES, first_phase="night", touring_order=["B"], **rules)


def test_order_maniac_touring_then_own_kills():
    game = night()
    play(game, "a1 kill a3", "b1 kill b3", "b1 tour a4", "x kill b4")
    assert killed(play(game, "host day")) == [
        ("b4", Cause.MANIAC), ("a4", Cause.TOURING), ("a3", Cause.MAFIA), ("b3", Cause.MAFIA)
    ]


def test_killed_twice_dies_once_with_the_first_cause():
    game = night()
    play(game, "a1 kill a3", "b1 tour a3", "x kill a3")
    assert killed(play(game, "host day")) == [("a3", Cause.MANIAC)]


def test_a_godfather_killed_by_the_maniac_stops_his_citys_kills():
    game = night()
    play(game, "x kill b1", "b1 tour a3", "b1 kill b3")
    events = play(game, "host day")
    assert killed(events) == [("b1", Cause.MANIAC)]
    assert of(events, MafiaKillBlocked) == [MafiaKillBlocked("B"), MafiaKillBlocked("B")]


def test_a_godfather_struck_out_at_night_stops_his_citys_kill():
    cities = dict(CITIES)
    cities["B"] = {**CITIES["B"], "b5": "mafioso", "b6": "citizen", "b7": "citizen"}
    game = make_game(cities, first_phase="night", touring_order=["A"])
    play(game, "host godfather b1", "b1 kill b3", "b5 kill b3", "host kill b1")
    assert game.godfather_of("B") == "b5"
    play(game, "b5 kill b4")
    events = play(game, "host day")
    assert game.is_alive("b3") and game.is_alive("b4")
    assert MafiaKillBlocked("B") in events


def test_a_protected_player_survives_every_night_kill():
    game = night()
    play(game, "host day", "doc protect a3")
    play(game, "a3 nominate a5", "b3 nominate b4", "host voting", "a3 vote a5", "b3 vote b4",
         "host night")
    play(game, "a1 kill a3", "b1 tour a3", "x kill a3")
    events = play(game, "host day")
    assert game.is_alive("a3")
    assert of(events, KillPrevented) == [
        KillPrevented("a3", Cause.MANIAC), KillPrevented("a3", Cause.TOURING),
        KillPrevented("a3", Cause.MAFIA),
    ]


def test_the_procurators_kill_is_not_prevented_by_the_doctor():
    game = night()
    play(game, "host day", "doc protect a3", "a3 nominate a5", "b3 nominate b4", "host voting",
         "a3 vote a5", "b3 vote b4", "host night")
    events = play(game, "host kill a3")
    assert killed(events) == [("a3", Cause.PROCURATOR)]
