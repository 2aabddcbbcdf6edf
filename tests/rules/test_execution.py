"""Execution: one per city, the > 50 % cross-city rule, the tie-break, the fallbacks, city order."""

from rules import Cause, Stage
from rules.events import ExecutionAwaitingHost, PlayerKilled, VotesTallied

from .helpers import make_game, of, play, refuse

# Verona: 5 residents, Padua: 5 residents
BIG = {
    "Verona": {
        "v1": "citizen",
        "v2": "citizen",
        "v3": "citizen",
        "v4": "mafioso",
        "v5": "commissar",
        "v6": "citizen",
    },
    "Padua": {
        "p1": "citizen",
        "p2": "citizen",
        "p3": "citizen",
        "p4": "mafioso",
        "p5": "commissar",
        "p6": "citizen",
    },
}


def executions(events):
    return [(e.player, e.by_city) for e in of(events, PlayerKilled) if e.cause is Cause.EXECUTION]


def test_most_votes_is_executed():
    game = make_game(BIG)
    play(
        game,
        "v1 nominate v4",
        "v2 nominate v3",
        "host voting",
        "v1 vote v4",
        "v2 vote v4",
        "v3 vote v3",
    )
    events = play(game, "host night")
    assert ("v4", "Verona") in executions(events)
    tallied = {e.city: e for e in of(events, VotesTallied)}
    assert tallied["Verona"].tally == (("v4", 2), ("v3", 1))
    assert tallied["Verona"].voters == 3


def test_tie_goes_to_the_candidate_whose_last_vote_is_earliest():
    game = make_game(BIG)
    play(
        game,
        "v1 nominate v2",
        "v3 nominate v6",
        "host voting",
        "v1 vote v2",
        "v3 vote v6",
        "v4 vote v6",
        "v5 vote v2",
    )
    # v2's last vote (v5) came after v6's last vote (v4): v6 is executed
    assert executions(play(game, "host night"))[0] == ("v6", "Verona")


def test_revoting_for_the_same_candidate_makes_it_the_latest_vote():
    game = make_game(BIG)
    play(
        game,
        "v1 nominate v2",
        "v3 nominate v6",
        "host voting",
        "v1 vote v2",
        "v3 vote v6",
        "v1 vote v2",
    )
    assert executions(play(game, "host night"))[0] == ("v6", "Verona")


def test_another_citys_resident_needs_more_than_half_of_the_voters():
    game = make_game(BIG)
    play(
        game,
        "v1 nominate p1",
        "v2 nominate v3",
        "host voting",
        "v1 vote p1",
        "v2 vote p1",
        "v3 vote v3",
        "v4 vote v3",
    )
    # p1 has 2 of 4 votes: exactly 50 % is not enough; v3 (2 votes, a resident) is executed
    assert executions(play(game, "host night"))[0] == ("v3", "Verona")


def test_another_citys_resident_with_a_majority_is_executed():
    game = make_game(BIG)
    play(
        game,
        "v1 nominate p1",
        "v2 nominate v3",
        "host voting",
        "v1 vote p1",
        "v2 vote p1",
        "v5 vote p1",
        "v3 vote v3",
    )
    events = play(game, "host night")
    assert executions(events)[0] == ("p1", "Verona")
    killed = of(events, PlayerKilled)[0]
    assert (killed.city, killed.by_city) == ("Padua", "Verona")


def test_random_fallback_picks_among_the_citys_own_nominees():
    for seed in range(20):
        game = make_game(BIG, seed=seed)
        play(game, "v1 nominate p1", "v2 nominate v3", "v6 nominate v6", "host voting")
        events = play(game, "host night")
        executed = executions(events)[0][0]
        assert executed in {"v3", "v6"}
        assert of(events, PlayerKilled)[0].by_chance


def test_random_fallback_without_own_nominees_picks_a_living_resident():
    seen = set()
    for seed in range(30):
        game = make_game(BIG, seed=seed)
        play(
            game,
            "v1 nominate p1",
            "v2 nominate p2",
            "host voting",
            "v1 vote p1",
            "v2 vote p2",
            "host night",
        )
        executed = [d for d in game.deaths if d.cause is Cause.EXECUTION and d.city == "Verona"]
        assert len(executed) == 1
        seen.add(executed[0].player)
    assert seen <= set(BIG["Verona"]) and len(seen) > 1


def test_host_fallback_keeps_the_day_open_until_the_procurator_executes():
    game = make_game(BIG, day_fallback="host")
    play(game, "v1 nominate v2", "host voting", "v1 vote v2")
    events = play(game, "host night")
    assert of(events, ExecutionAwaitingHost) == [ExecutionAwaitingHost("Padua")]
    assert executions(events) == [("v2", "Verona")]
    assert (str(game.phase), game.stage) == ("day 1", Stage.EXECUTION)
    assert refuse(game, "p1 nominate p2").code == "wrong_phase"
    assert refuse(game, "host day").code == "wrong_phase"
    assert refuse(game, "host execute v2").code == "target_not_alive"
    events = play(game, "host execute p3")
    assert executions(events) == [("p3", "Padua")]
    assert str(game.phase) == "night 1"


def test_host_execute_outside_a_waiting_day_is_refused():
    game = make_game(BIG, day_fallback="host")
    assert refuse(game, "host execute v1").code == "wrong_phase"


def test_cities_resolve_in_order_and_skip_a_player_already_executed():
    game = make_game(BIG)
    play(
        game,
        "v1 nominate p1",
        "p1 nominate p1",
        "p2 nominate p2",
        "host voting",
        "v1 vote p1",
        "v2 vote p1",
        "v3 vote p1",
        "p1 vote p1",
        "p2 vote p1",
        "p3 vote p2",
    )
    events = play(game, "host night")
    # Verona executes p1 first; Padua's first choice is gone, it takes the next: p2
    assert executions(events) == [("p1", "Verona"), ("p2", "Padua")]


def test_an_executed_player_loses_his_vote_before_later_cities_count():
    game = make_game(BIG)
    play(
        game,
        "v1 nominate p1",
        "p2 nominate p2",
        "p3 nominate p3",
        "host voting",
        "v1 vote p1",
        "v2 vote p1",
        "v3 vote p1",
        "p3 vote p3",
        "p1 vote p2",
    )
    # Verona executes p1, whose vote for p2 is then gone: p3 (1 vote) is executed in Padua
    assert executions(play(game, "host night")) == [("p1", "Verona"), ("p3", "Padua")]


def test_a_city_without_living_residents_executes_nobody():
    cities = {
        "A": {"a1": "mafioso", "a2": "commissar", "a3": "citizen"},
        "B": {
            "b1": "mafioso",
            "b2": "commissar",
            "b3": "citizen",
            "b4": "citizen",
            "b5": "citizen",
        },
        "C": {
            "c1": "mafioso",
            "c2": "commissar",
            "c3": "citizen",
            "c4": "citizen",
            "c5": "citizen",
        },
    }
    game = make_game(cities)
    play(game, "host kill a2", "host kill a3", "host kill a1")
    events = play(game, "host voting", "host night")
    assert {city for _, city in executions(events)} == {"B", "C"}
    assert "A" not in {e.city for e in of(events, VotesTallied)}


def test_the_tally_names_every_voter_in_vote_order_and_the_foreign_candidate_passed_over():
    game = make_game(BIG)
    play(
        game,
        "v1 nominate p1",
        "v2 nominate v3",
        "host voting",
        "v1 vote p1",
        "v3 vote v3",
        "v2 vote p1",
        "v4 vote v3",
        "v1 vote p1",
    )
    tallied = {e.city: e for e in of(play(game, "host night"), VotesTallied)}["Verona"]
    # v1 voted again last: his vote counts from then
    assert tallied.ballots == (("v3", "v3"), ("v2", "p1"), ("v4", "v3"), ("v1", "p1"))
    # p1 has 2 of 4 votes, not more than half: passed over, and said so
    assert tallied.skipped == (("p1", 2),)
    assert tallied.tally == (("v3", 2),)


def test_a_foreign_candidate_with_a_majority_is_not_passed_over():
    game = make_game(BIG)
    play(game, "v1 nominate p1", "host voting", "v1 vote p1", "v2 vote p1", "v3 vote p1")
    tallied = {e.city: e for e in of(play(game, "host night"), VotesTallied)}["Verona"]
    assert tallied.skipped == ()
    assert tallied.tally == (("p1", 3),)
