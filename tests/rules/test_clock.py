"""The shared clock: day (discussion, voting), night, next day; first_phase."""

import pytest

from rules import EndDay, EndNight, PhaseKind, RuleError, Stage, StartVoting
from rules.events import PhaseStarted

from .helpers import make_game, of, play, refuse


def test_day_discussion_voting_night_next_day():
    game = make_game()
    assert (str(game.phase), game.stage) == ("day 1", Stage.DISCUSSION)
    started = of(play(game, "host voting"), PhaseStarted)
    assert [(str(e.phase), e.stage) for e in started] == [("day 1", Stage.VOTING)]
    started = of(play(game, "host night"), PhaseStarted)
    assert [(str(e.phase), e.stage, e.touring_city) for e in started] == [
        ("night 1", Stage.NIGHT, "Verona")
    ]
    started = of(play(game, "host day"), PhaseStarted)
    assert [(str(e.phase), e.stage) for e in started] == [("day 2", Stage.DISCUSSION)]
    play(game, "host voting", "host night")
    assert str(game.phase) == "night 2"


def test_first_phase_night_opens_with_night_1_then_day_1():
    game = make_game(first_phase="night")
    assert (game.phase.kind, game.phase.number, game.stage) == (PhaseKind.NIGHT, 1, Stage.NIGHT)
    assert of(game.opening_events(), PhaseStarted)[0].touring_city == "Verona"
    play(game, "host day")
    assert str(game.phase) == "day 1"
    play(game, "host voting", "host night")
    assert str(game.phase) == "night 2"
    assert game.touring_city() == "Padua"


@pytest.mark.parametrize(
    ("steps", "refused"),
    [
        ([], "host night"),
        ([], "host day"),
        (["host voting"], "host voting"),
        (["host voting"], "host day"),
        (["host voting", "host night"], "host voting"),
        (["host voting", "host night"], "host night"),
    ],
)
def test_the_procurator_moves_the_clock_only_forward_in_order(steps, refused):
    game = make_game()
    play(game, *steps)
    assert refuse(game, refused).code == "wrong_phase"


def test_ticks_count_accepted_commands_only():
    game = make_game()
    game.apply(StartVoting())
    with pytest.raises(RuleError):
        game.apply(StartVoting())
    game.apply(EndDay())
    game.apply(EndNight())
    assert game.tick == 3
