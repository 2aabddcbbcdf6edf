"""The bodyguard guards one player a night and dies in his place (docs/rules-readings.md, the
readings B1-B6)."""

from rules import Cause, Phase, PhaseKind, Status
from rules.events import KillPrevented, PlayerKilled
from rules.game import Death
from rules.roles.bodyguard import GuardChosen, KillTaken

from .helpers import make_game, of, pass_day, play, refuse

CITIES = {
    "Verona": {
        "romeo": "citizen",
        "mercutio": "citizen",
        "benvolio": "citizen",
        "paris": "citizen",
        "tybalt": "mafioso",
        "escalus": "commissar",
        "balthasar": "bodyguard",
        "laurence": "doctor",
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
    return make_game(CITIES, first_phase="night", maniac_idle="none", **rules)


def test_b1_guard_one_living_other_player_of_any_city_the_last_choice_counting():
    game = night_game()
    assert refuse(game, "romeo guard mercutio").code == "wrong_role"
    assert refuse(game, "balthasar guard balthasar").code == "self_target"
    play(game, "balthasar guard romeo")
    events = play(game, "balthasar guard bianca")  # another city; replaces romeo
    assert events == [GuardChosen("balthasar", "bianca")]
    assert events[0].audience.player == "balthasar"
    assert game.repeats(game_command(game, "balthasar guard bianca"))
    play(game, "tybalt kill romeo", "host day")
    assert not game.is_alive("romeo") and game.is_alive("balthasar")
    assert refuse(game, "balthasar guard bianca").code == "wrong_phase"
    pass_day(game, "paris", "hortensio")
    assert refuse(game, "balthasar guard paris").code == "target_not_alive"
    play(game, "balthasar guard mercutio")  # the same player night after night is allowed
    play(game, "host day")
    pass_day(game, "benvolio", "gremio")
    play(game, "balthasar guard mercutio")


def game_command(game, step):
    from rules.scenario import parse_step

    return parse_step(step, game.players)


def test_b2_the_first_kill_in_the_dawns_order_lands_on_him_and_a_later_one_on_the_guarded():
    game = night_game()
    play(game, "balthasar guard romeo", "rosaline kill romeo", "tybalt kill romeo")
    events = play(game, "host day")
    assert of(events, KillTaken) == [KillTaken("balthasar", "romeo", Cause.MANIAC)]
    assert of(events, KillTaken)[0].audience.kind.value == "host"
    killed = [(e.player, e.cause) for e in of(events, PlayerKilled)]
    assert killed == [("balthasar", Cause.MANIAC), ("romeo", Cause.MAFIA)]


def test_b2_the_touring_kill_is_taken_before_the_home_kill():
    game = night_game()
    play(game, "balthasar guard bianca", "tybalt tour bianca")  # touring, Verona holds it
    play(game, "lucentio kill bianca")
    events = play(game, "host day")
    assert [(e.player, e.cause) for e in of(events, PlayerKilled)] == [
        ("balthasar", Cause.TOURING),
        ("bianca", Cause.MAFIA),
    ]


def test_b3_a_bodyguard_killed_earlier_in_the_dawn_guards_nobody():
    game = night_game()
    play(game, "balthasar guard romeo", "rosaline kill balthasar", "tybalt kill romeo")
    events = play(game, "host day")
    assert of(events, KillTaken) == []
    assert [(e.player, e.cause) for e in of(events, PlayerKilled)] == [
        ("balthasar", Cause.MANIAC),
        ("romeo", Cause.MAFIA),
    ]


def test_b4_the_doctor_protecting_the_guarded_comes_first():
    game = make_game(CITIES, maniac_idle="none")
    play(game, "laurence protect romeo")
    pass_day(game, "paris", "hortensio")
    play(game, "balthasar guard romeo", "tybalt kill romeo")
    events = play(game, "host day")
    assert of(events, KillPrevented) == [KillPrevented("romeo", Cause.MAFIA)]
    assert of(events, KillTaken) == [] and game.is_alive("balthasar")


def test_b4_the_doctor_protecting_the_bodyguard_saves_him_from_the_kill_he_takes():
    game = make_game(CITIES, maniac_idle="none")
    play(game, "laurence protect balthasar")
    pass_day(game, "paris", "hortensio")
    play(game, "balthasar guard romeo", "tybalt kill romeo")
    events = play(game, "host day")
    assert of(events, KillTaken) == [KillTaken("balthasar", "romeo", Cause.MAFIA)]
    assert of(events, KillPrevented) == [KillPrevented("balthasar", Cause.MAFIA)]
    assert game.is_alive("balthasar") and game.is_alive("romeo")


def test_b5_the_procurators_kill_and_an_execution_are_never_taken():
    game = night_game()
    play(game, "balthasar guard romeo")
    events = play(game, "host kill romeo")
    assert [(e.player, e.cause) for e in of(events, PlayerKilled)] == [("romeo", Cause.PROCURATOR)]
    play(game, "balthasar guard mercutio", "host day")
    pass_day(game, "mercutio", "hortensio")
    assert not game.is_alive("mercutio") and game.is_alive("balthasar")


def test_b6_his_death_is_a_night_death_by_the_kills_cause():
    game = night_game()
    play(game, "balthasar guard bianca", "lucentio kill bianca", "host day")
    assert game.deaths == [
        Death("balthasar", "Verona", Status.BODYGUARD, Cause.MAFIA, Phase(PhaseKind.NIGHT, 1))
    ]
    assert game.to_dict()["choices"] == {"guard": {}}
    assert type(game).from_dict(game.to_dict()) == game
