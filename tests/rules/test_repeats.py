"""``Game.repeats``: a player's choice that already stands as it is (the bot does not apply it,
nor post it, again); anything else, a refused command included, is no repeat."""

from rules.scenario import parse_step

from .helpers import make_game, play

MAFIA2 = {
    "A": {
        "m1": "mafioso",
        "m2": "mafioso",
        "c1": "commissar",
        "d1": "doctor",
        "h1": "citizen",
        "h2": "citizen",
        "h3": "citizen",
        "h4": "citizen",
        "h5": "citizen",
    },
    "B": {"n1": "mafioso", "n2": "commissar", "n3": "citizen", "n4": "citizen"},
}


def repeats(game, step: str) -> bool:
    return game.repeats(parse_step(step, game.players))


def test_the_same_choice_again_repeats_another_does_not():
    game = make_game(MAFIA2)
    assert not repeats(game, "m1 elect m2")
    play(game, "m1 elect m2")
    assert repeats(game, "m1 elect m2")
    assert not repeats(game, "m1 elect m1") and not repeats(game, "m2 elect m2")
    play(game, "d1 protect h1")
    assert repeats(game, "d1 protect h1") and not repeats(game, "d1 protect h2")
    play(game, "h1 nominate h2", "h3 nominate h4")
    assert not repeats(game, "h1 nominate h2")  # refused: one nomination a day
    play(game, "host voting", "h5 vote h2")
    assert repeats(game, "h5 vote h2") and not repeats(game, "h5 vote h4")
    play(game, "h5 vote h4")
    assert repeats(game, "h5 vote h4") and not repeats(game, "h5 vote h2")
    assert not repeats(game, "h5 unvote")


def test_a_night_choice_repeats_within_its_night_only():
    game = make_game(MAFIA2)
    play(
        game,
        "h1 nominate h5",
        "n4 nominate n2",
        "host voting",
        "h2 vote h5",
        "n3 vote n2",
        "host night",
    )
    play(game, "n1 kill n3")  # a lone mafioso is Godfather: a decision
    assert repeats(game, "n1 kill n3") and not repeats(game, "n1 kill n4")
    play(game, "m1 kill h1")
    assert repeats(game, "m1 kill h1")
    assert not repeats(game, "n1 pass")
    play(game, "n1 pass")
    assert repeats(game, "n1 pass")
    play(game, "host day")
    assert not repeats(game, "n1 kill n3")  # day: refused, so no repeat
