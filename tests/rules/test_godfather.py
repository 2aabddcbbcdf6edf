"""The Godfather: elected by more than half of the living mafiosi, appointed, lost at death."""

from rules.events import GodfatherChanged, GodfatherReason, GodfatherVoteCast

from .helpers import make_game, of, play, refuse

MAFIA3 = {
    "A": {
        "m1": "mafioso",
        "m2": "mafioso",
        "m3": "mafioso",
        "c1": "commissar",
        "h1": "citizen",
        "h2": "citizen",
        "h3": "citizen",
        "h4": "citizen",
    },
    "B": {"n1": "mafioso", "n2": "commissar", "n3": "citizen"},
}


def test_a_lone_mafioso_is_godfather_by_himself():
    game = make_game(MAFIA3)
    assert game.godfather_of("B") == "n1"
    assert game.godfather_of("A") is None
    assert GodfatherChanged("B", "n1", GodfatherReason.LONE) in game.opening_events()


def test_more_than_half_of_the_living_mafiosi_elect():
    game = make_game(MAFIA3)
    events = play(game, "m1 elect m2")
    assert of(events, GodfatherVoteCast) == [GodfatherVoteCast("A", "m1", "m2")]
    assert events[0].audience.city == "A" and events[0].audience.kind.value == "mafia"
    assert game.godfather_of("A") is None
    events = play(game, "m3 elect m2")
    assert of(events, GodfatherChanged) == [GodfatherChanged("A", "m2", GodfatherReason.ELECTED)]
    assert game.godfather_of("A") == "m2"


def test_votes_stand_across_phases_and_a_new_majority_replaces():
    game = make_game(MAFIA3)
    play(game, "m1 elect m2", "m2 elect m2", "host voting", "m1 elect m3")
    assert game.godfather_of("A") == "m2"
    play(game, "m2 elect m3")
    assert game.godfather_of("A") == "m3"


def test_only_mafiosi_vote_for_a_mafioso_of_their_city():
    game = make_game(MAFIA3)
    assert refuse(game, "h1 elect m1").code == "wrong_role"
    assert refuse(game, "m1 elect h1").code == "not_mafioso"
    assert refuse(game, "m1 elect n1").code == "not_mafioso"


def test_the_procurator_appoints():
    game = make_game(MAFIA3)
    events = play(game, "host godfather m3")
    assert of(events, GodfatherChanged) == [GodfatherChanged("A", "m3", GodfatherReason.APPOINTED)]
    assert refuse(game, "host godfather h1").code == "not_mafioso"


def test_when_he_dies_the_post_is_empty_and_earlier_votes_are_void():
    game = make_game(MAFIA3)
    play(game, "m1 elect m2", "m3 elect m2", "m2 elect m1")
    events = play(game, "host kill m2")
    assert GodfatherChanged("A", None, GodfatherReason.DIED) in events
    assert game.godfather_of("A") is None
    assert game.elect_votes["A"] == {}
    # two mafiosi left: a majority needs both
    play(game, "m1 elect m1")
    assert game.godfather_of("A") is None
    play(game, "m3 elect m1")
    assert game.godfather_of("A") == "m1"


def test_the_last_living_mafioso_becomes_godfather():
    game = make_game(MAFIA3)
    play(game, "host kill m1")
    assert game.godfather_of("A") is None
    events = play(game, "host kill m2")
    assert GodfatherChanged("A", "m3", GodfatherReason.LONE) in events


def test_with_the_post_empty_a_death_can_complete_a_majority():
    cities = dict(MAFIA3)
    cities["A"] = {**MAFIA3["A"], "m4": "mafioso", "h5": "citizen", "h6": "citizen"}
    game = make_game(cities)
    play(game, "m1 elect m1", "m2 elect m1")
    assert game.godfather_of("A") is None  # 2 of 4 is not more than half
    events = play(game, "host kill m4")
    assert GodfatherChanged("A", "m1", GodfatherReason.ELECTED) in events
