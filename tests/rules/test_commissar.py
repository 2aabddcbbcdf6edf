"""The commissar checks one resident of his city each night: mafia or not mafia."""

from rules.roles.commissar import PlayerChecked

from .helpers import make_game, of, play, refuse

CITIES = {
    "A": {
        "a1": "mafioso",
        "a2": "commissar",
        "a3": "citizen",
        "a4": "citizen",
        "x": "maniac",
        "a5": "citizen",
    },
    "B": {"b1": "mafioso", "b2": "commissar", "b3": "citizen"},
}


def test_the_answer_is_private_and_immediate():
    game = make_game(CITIES, first_phase="night")
    checked = of(play(game, "a2 check a1"), PlayerChecked)
    assert checked == [PlayerChecked("a2", "a1", True)]
    assert (checked[0].reply, checked[0].audience.player) == ("mafia", "a2")
    assert of(play(game, "b2 check b3"), PlayerChecked)[0].reply == "not mafia"


def test_the_maniac_is_not_mafia():
    game = make_game(CITIES, first_phase="night")
    assert not of(play(game, "a2 check x"), PlayerChecked)[0].is_mafia


def test_once_per_night_own_city_not_himself_living_target():
    game = make_game(CITIES, first_phase="night")
    assert refuse(game, "a2 check a2").code == "self_target"
    assert refuse(game, "a2 check b1").code == "wrong_city"
    assert refuse(game, "a3 check a1").code == "wrong_role"
    play(game, "host kill a5")
    assert refuse(game, "a2 check a5").code == "target_not_alive"
    play(game, "a2 check a3")
    assert refuse(game, "a2 check a4").code == "already_checked_tonight"
    play(game, "host day")
    assert refuse(game, "a2 check a4").code == "wrong_phase"
