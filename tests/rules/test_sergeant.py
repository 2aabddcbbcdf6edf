"""The sergeant hears his commissar's answers and checks once the commissar is dead
(docs/rules-readings.md, the readings S1-S4), and the deal of the three optional roles."""

import pytest

from rules import RoleCounts, RuleError, Setup, Status, deal, validate_setup
from rules.events import event_to_dict
from rules.roles.commissar import PlayerChecked
from rules.roles.journalist import StatusesCompared
from rules.roles.sergeant import SergeantTold, SergeantTookOver

from .helpers import make_game, of, pass_day, play, refuse

CITIES = {
    "Verona": {
        "romeo": "citizen",
        "mercutio": "citizen",
        "benvolio": "citizen",
        "paris": "citizen",
        "tybalt": "mafioso",
        "escalus": "commissar",
        "abram": "sergeant",
        "peter": "journalist",
    },
    "Padua": {
        "bianca": "citizen",
        "gremio": "citizen",
        "hortensio": "citizen",
        "lucentio": "mafioso",
        "baptista": "commissar",
        "grumio": "sergeant",
    },
}


def test_s1_the_sergeant_alone_hears_every_answer_of_his_commissar_at_once():
    game = make_game(CITIES, first_phase="night")
    events = play(game, "escalus check tybalt")
    assert of(events, PlayerChecked) == [PlayerChecked("escalus", "tybalt", True)]
    told = of(events, SergeantTold)
    assert told == [SergeantTold("abram", "escalus", "tybalt", True)]
    assert told[0].audience.player == "abram" and told[0].reply == "mafia"
    events = play(game, "baptista check bianca")
    assert of(events, SergeantTold) == [SergeantTold("grumio", "baptista", "bianca", False)]


def test_s1_a_dead_sergeant_hears_nothing():
    game = make_game(CITIES, first_phase="night")
    play(game, "host kill abram")
    assert of(play(game, "escalus check tybalt"), SergeantTold) == []


def test_s2_the_sergeant_checks_from_the_first_night_after_his_commissars_death():
    game = make_game(CITIES, first_phase="night")
    assert refuse(game, "abram check tybalt").code == "commissar_alive"
    play(game, "host kill escalus")
    assert refuse(game, "abram check tybalt").code == "commissar_alive"  # the same night
    assert "check" not in [a.verb for a in game.legal_actions("abram")]
    play(game, "host day")
    assert refuse(game, "abram check tybalt").code == "wrong_phase"
    pass_day(game, "paris", "hortensio")
    assert "check" in [a.verb for a in game.legal_actions("abram")]
    assert refuse(game, "abram check abram").code == "self_target"
    assert refuse(game, "abram check lucentio").code == "wrong_city"
    assert refuse(game, "abram check paris").code == "target_not_alive"
    events = play(game, "abram check tybalt")
    assert events == [PlayerChecked("abram", "tybalt", True)]
    assert events[0].audience.player == "abram"
    assert refuse(game, "abram check romeo").code == "already_checked_tonight"


def test_s2_a_commissar_executed_by_day_leaves_the_checks_to_the_sergeant_that_night():
    game = make_game(CITIES)
    pass_day(game, "escalus", "hortensio")
    assert play(game, "abram check tybalt") == [PlayerChecked("abram", "tybalt", True)]
    assert refuse(game, "grumio check lucentio").code == "commissar_alive"


def test_s3_his_status_stays_sergeant():
    game = make_game(CITIES, first_phase="night")
    assert of(play(game, "escalus check abram"), PlayerChecked)[0].reply == "not mafia"
    play(game, "host day")
    events = play(game, "peter compare abram romeo")
    assert of(events, StatusesCompared)[0].reply == "different"
    assert game.status_of("abram") is Status.SERGEANT


def test_s4_at_most_one_sergeant_a_city():
    data = {"cities": {**CITIES, "Verona": {**CITIES["Verona"], "romeo": "sergeant"}}}
    with pytest.raises(RuleError) as refused:
        validate_setup(Setup.from_dict(data))
    assert refused.value.code == "too_many_in_city"
    assert refused.value.params["city"] == "Verona"


def test_the_three_roles_are_dealt_only_when_switched_on():
    cities = {"A": [f"a{i}" for i in range(8)], "B": [f"b{i}" for i in range(8)]}

    def dealt(roles):
        setup = deal(cities, 5, roles)
        return sorted(s.value for c in setup.cities for _, s in c.residents if s.value != "citizen")

    plain = dealt(RoleCounts())
    assert not {"bodyguard", "sergeant", "lover"} & set(plain)
    switches = {"bodyguard": True, "sergeant": True, "lover": True}
    every = dealt(RoleCounts(switches=switches))
    assert sorted(set(every) - set(plain)) == ["bodyguard", "lover", "sergeant"]
    assert every.count("sergeant") == 2 and every.count("bodyguard") == every.count("lover") == 1
    setup = deal(cities, 5, RoleCounts(switches=switches))
    for city in setup.cities:
        assert [s for _, s in city.residents].count(Status.SERGEANT) == 1


def test_a_deal_too_small_for_a_sergeant_in_every_city_is_refused():
    cities = {"A": ["a1", "a2", "a3"]}  # a mafioso, a commissar and a citizen
    deal(cities, 1, RoleCounts(switches={"sergeant": True}))
    with pytest.raises(RuleError) as refused:  # the bodyguard, dealt first, takes the citizen
        deal(cities, 1, RoleCounts(switches={"bodyguard": True, "sergeant": True}))
    assert refused.value.code == "too_few_players"
    assert refused.value.params["status"] == "sergeant"


def test_two_bodyguards_or_two_lovers_are_refused():
    for status in ("bodyguard", "lover"):
        data = {
            "cities": {
                "A": {
                    "a1": status,
                    "a2": status,
                    "a3": "citizen",
                    "a4": "mafioso",
                    "a5": "commissar",
                }
            }
        }
        with pytest.raises(RuleError) as refused:
            validate_setup(Setup.from_dict(data))
        assert refused.value.code == "too_many"


def test_what_he_hears_is_kept_for_him_through_plain_data_and_a_replacement():
    game = make_game(CITIES, first_phase="night")
    play(game, "escalus check tybalt")
    assert game.notes == {
        "abram": [event_to_dict(SergeantTold("abram", "escalus", "tybalt", True))]
    }
    again = type(game).from_dict(game.to_dict())
    assert again == game and again.notes == game.notes
    play(game, "host replace abram samson")
    assert list(game.notes) == ["samson"] and game.notes["samson"][0]["sergeant"] == "samson"


def test_the_sergeant_is_told_once_when_the_checks_become_his():
    game = make_game(CITIES, first_phase="night")
    play(game, "host kill escalus")
    events = play(game, "host day")
    assert of(events, SergeantTookOver) == []
    events = pass_day(game, "paris", "hortensio")
    assert of(events, SergeantTookOver) == [SergeantTookOver("abram", "Verona")]
    assert of(events, SergeantTookOver)[0].audience.player == "abram"
    play(game, "host day")
    assert of(pass_day(game, "benvolio", "gremio"), SergeantTookOver) == []
    assert [n["kind"] for n in game.notes["abram"]] == ["sergeant_took_over"]
