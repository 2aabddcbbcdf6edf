"""Touring: one city's mafia per night, by rotation, may kill in another city, never the Judge."""

import pytest

from rules import Cause, RuleError, SetTouringOrder
from rules.events import JudgeAppointed, MafiaKillBlocked, PlayerKilled, TouringOrderSet

from .helpers import make_game, of, play, refuse

CITIES = {
    "A": {"a1": "mafioso", "a2": "commissar", "a3": "citizen", "a4": "citizen", "a5": "citizen"},
    "B": {"b1": "mafioso", "b2": "commissar", "b3": "citizen", "b4": "citizen", "b5": "citizen"},
    "C": {"c1": "mafioso", "c2": "commissar", "c3": "citizen", "c4": "citizen", "c5": "citizen"},
}


def killed(events):
    return [(e.player, e.cause) for e in of(events, PlayerKilled)]


def test_rotation_follows_the_touring_order_by_night_number():
    game = make_game(CITIES, first_phase="night", touring_order=["C", "A", "C", "B"])
    assert [game.touring_city(n) for n in range(1, 7)] == ["C", "A", "C", "B", "C", "A"]
    default = make_game(CITIES)
    assert [default.touring_city(n) for n in range(1, 5)] == ["A", "B", "C", "A"]


def test_the_touring_mafia_kills_in_another_city_besides_its_own():
    game = make_game(CITIES, first_phase="night", touring_order=["B"])
    assert refuse(game, "a1 tour b3").code == "not_touring"
    assert refuse(game, "b1 tour b3").code == "wrong_city"
    play(game, "b1 tour a3", "b1 kill b3")
    events = play(game, "host day")
    assert killed(events) == [("a3", Cause.TOURING), ("b3", Cause.MAFIA)]


def test_it_may_kill_another_citys_mafioso_and_then_that_city_kills_nobody():
    game = make_game(CITIES, first_phase="night", touring_order=["B"])
    play(game, "b1 tour a1", "a1 kill a3")
    events = play(game, "host day")
    assert killed(events) == [("a1", Cause.TOURING)]
    assert MafiaKillBlocked("A") in events
    assert game.is_alive("a3")


def test_the_acting_judge_is_immune_to_touring():
    game = make_game(CITIES, first_phase="night", touring_order=["B"])
    events = play(game, "host judge a4")
    assert of(events, JudgeAppointed) == [JudgeAppointed("A", "a4")]
    assert refuse(game, "b1 tour a4").code == "judge_immune"
    # appointed after the choice: still not killed
    play(game, "b1 tour a5", "host judge a5")
    assert killed(play(game, "host day")) == []


def test_a_judge_may_still_be_killed_by_his_own_mafia():
    game = make_game(CITIES, first_phase="night", touring_order=["B"])
    play(game, "host judge a4", "a1 kill a4")
    assert killed(play(game, "host day")) == [("a4", Cause.MAFIA)]


def test_touring_proposals_go_to_the_consigliere():
    cities = dict(CITIES)
    cities["B"] = {
        **CITIES["B"],
        "b6": "mafioso",
        "b7": "mafioso",
        "b8": "citizen",
        "b9": "citizen",
    }
    game = make_game(cities, first_phase="night", touring_order=["B"])
    play(game, "b6 tour a3", "b7 tour c3", "b1 tour c3")
    assert killed(play(game, "host day")) == [("c3", Cause.TOURING)]


def test_the_procurator_sets_the_rotation_by_day_from_the_next_night():
    game = make_game(CITIES)
    assert game.touring_city() == "A"
    events = game.apply(SetTouringOrder(("C", "B")))
    assert events == [TouringOrderSet(("C", "B"), "C")]
    assert [game.touring_city(n) for n in (1, 2, 3)] == ["C", "B", "C"]
    for bad, code in ((("Nowhere",), "unknown_city"), ((), "bad_option")):
        before = game.to_dict()
        with pytest.raises(RuleError) as refused:
            game.apply(SetTouringOrder(bad))
        assert refused.value.code == code and game.to_dict() == before
    play(
        game,
        "a3 nominate a4",
        "b3 nominate b4",
        "c3 nominate c4",
        "host voting",
        "a5 vote a4",
        "b5 vote b4",
        "c5 vote c4",
        "host night",
    )
    assert game.touring_city() == "C"
    play(game, "c1 tour a3")
    with pytest.raises(RuleError) as refused:
        game.apply(SetTouringOrder(("A",)))
    assert refused.value.code == "wrong_phase"
