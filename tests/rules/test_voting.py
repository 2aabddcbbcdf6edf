"""Votes: one standing vote per living resident, movable and cancellable until voting ends."""

from rules.events import VoteCast, VoteWithdrawn

from .helpers import make_game, of, play, refuse


def voting_game():
    game = make_game()
    play(
        game,
        "romeo nominate tybalt",
        "mercutio nominate romeo",
        "bianca nominate lucentio",
        "host voting",
    )
    return game


def test_vote_for_a_nominee_of_ones_own_city():
    game = voting_game()
    events = play(game, "friar vote tybalt")
    assert of(events, VoteCast) == [VoteCast("Verona", "friar", "tybalt", None)]
    assert game.tally("Verona") == [("tybalt", 1)]
    # lucentio is nominated in Padua only
    assert refuse(game, "romeo vote lucentio").code == "not_nominated"


def test_voting_again_moves_the_vote():
    game = voting_game()
    play(game, "friar vote tybalt")
    events = play(game, "friar vote romeo")
    assert of(events, VoteCast) == [VoteCast("Verona", "friar", "romeo", "tybalt")]
    assert game.tally("Verona") == [("romeo", 1)]


def test_unvote_cancels_and_needs_a_standing_vote():
    game = voting_game()
    assert refuse(game, "friar unvote").code == "no_vote"
    play(game, "friar vote tybalt")
    events = play(game, "friar unvote")
    assert of(events, VoteWithdrawn) == [VoteWithdrawn("Verona", "friar", "tybalt")]
    assert game.tally("Verona") == []


def test_no_votes_outside_voting():
    game = make_game()
    play(game, "romeo nominate tybalt")
    assert refuse(game, "friar vote tybalt").code == "wrong_phase"
    assert refuse(game, "friar unvote").code == "wrong_phase"
    play(game, "host voting", "host night")
    assert refuse(game, "friar vote tybalt").code == "wrong_phase"


def test_a_player_who_dies_during_the_day_loses_his_vote_and_cannot_be_executed():
    game = voting_game()
    play(game, "friar vote tybalt", "escalus vote tybalt", "tybalt vote romeo")
    play(game, "host kill friar")
    assert game.tally("Verona") == [("tybalt", 1), ("romeo", 1)]
    assert refuse(game, "friar vote romeo").code == "not_alive"
    play(game, "host kill tybalt")
    # tybalt's own vote is gone and he can no longer be voted for
    assert game.tally("Verona") == [("tybalt", 1)]
    assert refuse(game, "romeo vote tybalt").code == "target_not_alive"
