"""The Procurator's acts: kill at any time, judge, godfather."""

from rules import Cause
from rules.events import CityDecided, GameOver, PlayerKilled

from .helpers import make_game, of, play, refuse


def test_the_procurator_kills_at_any_time_and_the_death_is_announced():
    game = make_game()
    events = play(game, "host kill romeo")
    killed = of(events, PlayerKilled)[0]
    assert (killed.player, killed.status.value, killed.cause, str(killed.phase)) == (
        "romeo",
        "citizen",
        Cause.PROCURATOR,
        "day 1",
    )
    assert killed.audience.kind.value == "everyone"
    play(game, "mercutio nominate sampson", "bianca nominate curtis", "host voting")
    play(game, "host kill mercutio", "gregory vote sampson", "grumio vote curtis", "host night")
    play(game, "host kill gregory")
    assert [str(d.phase) for d in game.deaths if d.cause is Cause.PROCURATOR] == [
        "day 1",
        "day 1",
        "night 1",
    ]
    assert refuse(game, "host kill romeo").code == "target_not_alive"


def test_a_procurators_kill_can_decide_a_city_and_end_the_game():
    game = make_game()
    events = play(game, "host kill tybalt")
    assert of(events, CityDecided)[0].city == "Verona"
    events = play(game, "host kill lucentio")
    assert of(events, GameOver) == [GameOver(("Verona:honest", "Padua:honest"))]


def test_judge_and_godfather_need_living_targets():
    game = make_game()
    play(game, "host kill romeo")
    assert refuse(game, "host judge romeo").code == "target_not_alive"
    play(game, "host judge mercutio")
    assert game.judge_of("Verona") == "mercutio"
    play(game, "host judge friar")
    assert game.judge_of("Verona") == "friar"
    play(game, "host kill friar")
    assert game.judge_of("Verona") is None
