"""Dawn: the night's kills together, in RULES.md's order."""

from rules import Cause, Game
from rules.events import (
    GodfatherChanged,
    GodfatherReason,
    KillPrevented,
    MafiaKillBlocked,
    PlayerKilled,
)

from .helpers import make_game, of, play

CITIES = {
    "A": {
        "a1": "mafioso",
        "a2": "commissar",
        "a3": "citizen",
        "a4": "citizen",
        "x": "maniac",
        "a5": "citizen",
        "doc": "doctor",
    },
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
        ("b4", Cause.MANIAC),
        ("a4", Cause.TOURING),
        ("a3", Cause.MAFIA),
        ("b3", Cause.MAFIA),
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
    play(
        game,
        "a3 nominate a5",
        "b3 nominate b4",
        "host voting",
        "a3 vote a5",
        "b3 vote b4",
        "host night",
    )
    play(game, "a1 kill a3", "b1 tour a3", "x kill a3")
    events = play(game, "host day")
    assert game.is_alive("a3")
    assert of(events, KillPrevented) == [
        KillPrevented("a3", Cause.MANIAC),
        KillPrevented("a3", Cause.TOURING),
        KillPrevented("a3", Cause.MAFIA),
    ]


def test_the_procurators_kill_is_not_prevented_by_the_doctor():
    game = night()
    play(
        game,
        "host day",
        "doc protect a3",
        "a3 nominate a5",
        "b3 nominate b4",
        "host voting",
        "a3 vote a5",
        "b3 vote b4",
        "host night",
    )
    events = play(game, "host kill a3")
    assert killed(events) == [("a3", Cause.PROCURATOR)]


# Only a Godfather in office at the end of the night counts for dawn rules 2
# and 3; a post emptied at dawn is filled once every kill is done.

TWO_MAFIOSI = {
    "V": {"v1": "mafioso", "v2": "citizen", "v3": "citizen", "v4": "commissar", "x": "maniac"},
    "P": {
        "p1": "mafioso",
        "p2": "mafioso",
        "p3": "citizen",
        "p4": "citizen",
        "p5": "citizen",
        "p6": "commissar",
    },
}


def two_mafiosi(touring_order: tuple[str, ...] = ("V", "P")) -> Game:
    """Night 1; the maniac kills only when told to."""
    return make_game(
        TWO_MAFIOSI, first_phase="night", touring_order=list(touring_order), maniac_idle="none"
    )


def test_a_survivor_for_a_moment_is_no_godfather_and_does_not_block_his_city():
    game = two_mafiosi()
    play(game, "p1 kill p3", "p2 kill p3", "v1 tour p2", "x kill p1")
    events = play(game, "host day")
    assert killed(events) == [("p1", Cause.MANIAC), ("p2", Cause.TOURING), ("p3", Cause.MAFIA)]
    assert of(events, MafiaKillBlocked) == []
    # nobody was seated for a moment: the post was never filled
    assert of(events, GodfatherChanged) == []


def test_a_recount_completed_at_dawn_waits_until_every_kill_is_done():
    cities = {
        "V": TWO_MAFIOSI["V"],
        "P": {
            "p1": "mafioso",
            "p2": "mafioso",
            "p3": "mafioso",
            "p4": "mafioso",
            "c1": "citizen",
            "c2": "citizen",
            "c3": "citizen",
            "c4": "citizen",
            "c5": "commissar",
        },
    }
    game = make_game(cities, first_phase="night", touring_order=["V", "P"], maniac_idle="none")
    play(game, "p1 elect p2", "p3 elect p2")
    assert game.godfather_of("P") is None  # 2 of 4 is no majority
    play(game, "p1 kill c1", "p3 kill c1", "x kill p4", "v1 tour p2")
    events = play(game, "host day")
    # p4's death would make 2 of 3 a majority for p2, but not before dawn ends,
    # and by then p2 is dead too: P's kill happens and the post stays empty
    assert killed(events) == [("p4", Cause.MANIAC), ("p2", Cause.TOURING), ("c1", Cause.MAFIA)]
    assert of(events, MafiaKillBlocked) == []
    assert of(events, GodfatherChanged) == []
    assert game.godfather_of("P") is None
    assert game.elect_votes["P"] == {}


def test_the_post_emptied_at_dawn_is_filled_after_the_last_kill():
    game = two_mafiosi()
    play(game, "p1 elect p1", "p2 elect p1", "p1 kill p3", "v1 tour p1", "v1 kill v2")
    events = play(game, "host day")
    assert killed(events) == [("p1", Cause.TOURING), ("v2", Cause.MAFIA)]
    assert of(events, MafiaKillBlocked) == [MafiaKillBlocked("P")]
    changes = [i for i, e in enumerate(events) if isinstance(e, GodfatherChanged)]
    deaths = [i for i, e in enumerate(events) if isinstance(e, PlayerKilled)]
    assert [events[i] for i in changes] == [
        GodfatherChanged("P", None, GodfatherReason.DIED),
        GodfatherChanged("P", "p2", GodfatherReason.LONE),
    ]
    assert changes[1] > deaths[-1]
    assert game.godfather_of("P") == "p2"


def test_a_godfather_in_office_killed_by_the_maniac_blocks_although_his_heir_dies_too():
    game = two_mafiosi()
    play(game, "p1 elect p1", "p2 elect p1", "p1 kill p3", "v1 tour p2", "x kill p1")
    events = play(game, "host day")
    assert killed(events) == [("p1", Cause.MANIAC), ("p2", Cause.TOURING)]
    assert of(events, MafiaKillBlocked) == [MafiaKillBlocked("P")]
    assert game.is_alive("p3")


def test_a_godfather_seated_during_the_night_counts_at_dawn():
    game = two_mafiosi()
    play(game, "p1 kill p3", "host kill p1")
    assert game.godfather_of("P") == "p2"
    play(game, "p2 kill p3", "x kill p2")
    events = play(game, "host day")
    assert killed(events) == [("p2", Cause.MANIAC)]
    assert of(events, MafiaKillBlocked) == [MafiaKillBlocked("P")]
    assert game.is_alive("p3")


def test_a_godfather_elected_during_the_night_counts_at_dawn():
    game = two_mafiosi()
    play(game, "p1 kill p3", "p1 elect p2", "p2 elect p2")
    assert game.godfather_of("P") == "p2"
    play(game, "v1 tour p2")
    events = play(game, "host day")
    assert killed(events) == [("p2", Cause.TOURING)]
    assert of(events, MafiaKillBlocked) == [MafiaKillBlocked("P")]
    assert game.is_alive("p3")
    assert game.godfather_of("P") == "p1"


def test_a_godfather_who_lost_the_post_during_the_night_does_not_block():
    cities = {
        "V": TWO_MAFIOSI["V"],
        "P": {
            "p1": "mafioso",
            "p2": "mafioso",
            "p3": "mafioso",
            "c1": "citizen",
            "c2": "citizen",
            "c3": "citizen",
            "c4": "commissar",
        },
    }
    game = make_game(cities, first_phase="night", touring_order=["V", "P"], maniac_idle="none")
    play(game, "p1 elect p1", "p2 elect p1")
    assert game.godfather_of("P") == "p1"
    play(game, "p1 kill c1", "p2 elect p3", "p3 elect p3")
    assert game.godfather_of("P") == "p3"
    play(game, "v1 tour p1")
    events = play(game, "host day")
    # p1's choice became one proposal; the Consigliere takes it, nothing blocks
    assert killed(events) == [("p1", Cause.TOURING), ("c1", Cause.MAFIA)]
    assert of(events, MafiaKillBlocked) == []
    assert game.godfather_of("P") == "p3"


def test_the_procurators_night_kill_of_a_godfather_blocks_his_heir():
    game = two_mafiosi(("P", "V"))
    play(game, "p1 elect p1", "p2 elect p1", "host kill p1")
    assert game.godfather_of("P") == "p2"
    play(game, "p2 kill p3", "p2 tour v2", "v1 kill v3")
    events = play(game, "host day")
    assert killed(events) == [("v3", Cause.MAFIA)]
    assert of(events, MafiaKillBlocked) == [MafiaKillBlocked("P"), MafiaKillBlocked("P")]
