"""The sound-setup check and the random deal."""

import pytest

from rules import Game, RoleCounts, RuleError, RuleOptions, Setup, Status, deal


def setup_of(cities, **rules):
    return Setup.from_dict({"cities": cities, "rules": rules})


GOOD = {"A": {"a1": "mafioso", "a2": "commissar", "a3": "citizen"}}


@pytest.mark.parametrize(
    ("cities", "code"),
    [
        ({}, "no_cities"),
        ({"A": {}}, "empty_city"),
        ({"A": {"a1": "commissar", "a2": "citizen", "a3": "citizen"}}, "no_mafioso"),
        ({"A": {"a1": "mafioso", "a2": "citizen", "a3": "citizen"}}, "commissar_count"),
        (
            {"A": {"a1": "mafioso", "a2": "commissar", "a3": "commissar", "a4": "citizen"}},
            "commissar_count",
        ),
        ({"A": {"a1": "mafioso", "a2": "commissar"}}, "mafia_majority"),
        (
            {
                "A": {
                    "a1": "mafioso",
                    "a2": "mafioso",
                    "a3": "commissar",
                    "a4": "maniac",
                    "a5": "citizen",
                }
            },
            "mafia_majority",
        ),
        (
            {
                "A": {"a1": "mafioso", "a2": "commissar", "a3": "doctor", "a4": "citizen"},
                "B": {"b1": "mafioso", "b2": "commissar", "b3": "doctor", "b4": "citizen"},
            },
            "too_many",
        ),
        (
            {
                "A": {
                    "a1": "mafioso",
                    "a2": "commissar",
                    "a3": "maniac",
                    "a4": "citizen",
                    "a5": "citizen",
                },
                "B": {
                    "b1": "mafioso",
                    "b2": "commissar",
                    "b3": "maniac",
                    "b4": "citizen",
                    "b5": "citizen",
                },
            },
            "too_many",
        ),
    ],
)
def test_unsound_setups_are_refused_with_a_reason(cities, code):
    with pytest.raises(RuleError) as refused:
        Game.create(setup_of(cities), seed=1)
    assert refused.value.code == code


def test_player_names_are_unique_across_cities():
    cities = {"A": dict(GOOD["A"]), "B": {"a1": "mafioso", "b2": "commissar", "b3": "citizen"}}
    with pytest.raises(RuleError) as refused:
        Game.create(setup_of(cities), seed=1)
    assert refused.value.code == "duplicate_player"
    assert refused.value.params["player"] == "a1"


def test_unknown_status_and_bad_options_are_refused():
    with pytest.raises(RuleError) as refused:
        setup_of({"A": {"a1": "sheriff"}})
    assert refused.value.code == "bad_status"
    for options in (
        {"first_phase": "evening"},
        {"last_word_seconds": 181},
        {"last_word_seconds": 0},
        {"doctor_self_protect": "yes"},
        {"maniac_idle": "sometimes"},
        {"touring_order": "A"},
        {"no_such_option": 1},
    ):
        with pytest.raises(RuleError) as refused:
            RuleOptions.from_dict(options)
        assert refused.value.code == "bad_option"


def test_touring_order_must_name_known_cities():
    with pytest.raises(RuleError) as refused:
        Game.create(setup_of(GOOD, touring_order=["A", "Nowhere"]), seed=1)
    assert refused.value.code == "unknown_city"


def test_a_sound_setup_starts():
    game = Game.create(setup_of(GOOD), seed=1)
    assert game.alive() == ["a1", "a2", "a3"]
    assert game.status_of("a1") is Status.MAFIOSO


def test_deal_is_sound_seeded_and_uses_every_player():
    cities = {f"C{i}": [f"p{i}_{j}" for j in range(5 + 7 * i)] for i in range(4)}
    first = deal(cities, seed=3)
    again = deal(cities, seed=3)
    other = deal(cities, seed=4)
    assert first == again
    assert first != other
    game = Game.create(first, seed=3)
    for city, players in cities.items():
        assert game.residents[city] == tuple(players)
    statuses = [game.status_of(name) for name in game.players]
    total = len(statuses)
    assert statuses.count(Status.DOCTOR) == 1 and statuses.count(Status.JOURNALIST) == 1
    assert statuses.count(Status.MANIAC) == (1 if total >= 10 else 0)
    for city in cities:
        assert len(game.living_mafiosi(city)) == max(1, len(cities[city]) // 4)


def test_deal_with_role_counts():
    cities = {"A": [f"a{i}" for i in range(8)], "B": [f"b{i}" for i in range(8)]}
    setup = deal(cities, seed=1, roles=RoleCounts(mafiosi={"A": 3}, doctor=False, maniac=True))
    game = Game.create(setup, seed=1)
    assert len(game.living_mafiosi("A")) == 3
    assert len(game.living_mafiosi("B")) == 2
    assert Status.DOCTOR not in {game.status_of(p) for p in game.players}
    assert Status.MANIAC in {game.status_of(p) for p in game.players}


def test_a_switch_is_a_keyword_or_a_switches_entry_and_the_entry_wins():
    counts = RoleCounts(doctor=False, journalist=True, switches={"doctor": True, "sergeant": True})
    chosen = {status: counts.chosen(status) for status in Status}
    assert chosen[Status.DOCTOR] is True and chosen[Status.JOURNALIST] is True
    assert chosen[Status.SERGEANT] is True and chosen[Status.MANIAC] is None
    with pytest.raises(TypeError, match="commissar"):
        RoleCounts(commissar=True)  # every game has him: no switch of his


def test_every_city_has_its_commissar_by_the_declaration():
    setup = deal({"A": [f"a{i}" for i in range(5)], "B": [f"b{i}" for i in range(5)]}, seed=2)
    for city in setup.cities:
        assert [status for _, status in city.residents].count(Status.COMMISSAR) == 1
    no_commissar = Setup.from_dict(
        {"cities": {"A": {"a1": "mafioso", "a2": "citizen", "a3": "citizen"}}}
    )
    with pytest.raises(RuleError) as refused:
        Game.create(no_commissar, seed=1)
    assert refused.value.to_dict() == {
        "code": "commissar_count",
        "params": {"city": "A", "commissars": 0},
    }


@pytest.mark.parametrize(
    ("cities", "roles"),
    [
        ({"A": ["a1", "a2"]}, None),
        ({"A": ["a1", "a2", "a3", "a4"]}, RoleCounts(mafiosi=2)),
        ({"A": ["a1", "a2", "a3"]}, RoleCounts(maniac=True)),
    ],
)
def test_deal_refuses_what_cannot_be_sound(cities, roles):
    with pytest.raises(RuleError) as refused:
        deal(cities, seed=1, roles=roles)
    assert refused.value.code == "too_few_players"
