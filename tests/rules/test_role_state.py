"""What a role keeps of its own in the game's state (``Role.state``): declared in its module,
kept in ``GameState.role_state``, put back as its phase starts, renamed, undone and stored
with the game under its declared keys (the stored shape of the games from before)."""

from __future__ import annotations

import json

import pytest

from rules import Game, PhaseKind
from rules.roles import KEPT
from rules.state import Kept
from tests.rules.helpers import make_game, play

#: the stored game's keys (a game with no replacement, choice or note); before the roles kept
#: their own state, ``journalist_compared`` came before ``doctor_choice``
STORED = [
    "setup",
    "seed",
    "phase",
    "stage",
    "tick",
    "over",
    "alive",
    "decided",
    "maniac_won",
    "deaths",
    "touring_order",
    "judges",
    "godfathers",
    "elect_votes",
    "nominations",
    "nominators",
    "votes",
    "last_words",
    "doctor_choice",
    "journalist_compared",
    "pending_executions",
    "protected",
    "kill_choices",
    "tour_choices",
    "maniac_choice",
    "checked",
    "godfather_died",
]


def test_the_stored_game_keeps_the_keys_the_roles_kept_before():
    game = make_game()
    play(game, "friar protect tybalt", "tranio compare romeo bianca")
    stored = game.to_dict()
    assert list(stored) == STORED
    assert stored["doctor_choice"] == "tybalt" and stored["journalist_compared"] is True
    assert stored["maniac_choice"] is None and stored["maniac_won"] is False
    assert list(KEPT) == ["doctor_choice", "journalist_compared", "maniac_choice"]


def test_a_game_stored_in_the_old_order_or_before_a_role_kept_a_key_loads_the_same():
    game = make_game()
    play(game, "friar protect tybalt", "tranio compare romeo bianca")
    stored = game.to_dict()
    order = [*STORED]
    at = order.index("doctor_choice")
    order[at], order[at + 1] = order[at + 1], order[at]  # as games were stored before
    old = json.loads(json.dumps({key: stored[key] for key in order}))
    assert Game.from_dict(old) == game
    del old["journalist_compared"]  # a key a role kept only later: its initial value
    assert Game.from_dict(old).role_state["journalist_compared"] is False


def test_a_roles_state_is_put_back_as_its_phase_starts_and_undone_with_the_rest():
    game = make_game()
    play(game, "friar protect tybalt", "tranio compare romeo bianca")
    game.savepoint()
    play(game, "friar protect romeo")
    game.rollback()
    assert game.role_state["doctor_choice"] == "tybalt"
    play(game, "host voting", "host night")
    assert game.protected == "tybalt"  # the doctor's nightfall took his choice
    assert game.role_state == {
        "doctor_choice": None,
        "journalist_compared": True,
        "maniac_choice": None,
    }
    play(game, "host day")
    assert game.role_state["journalist_compared"] is False


def test_a_new_roles_state_needs_nothing_but_its_declaration(monkeypatch: pytest.MonkeyPatch):
    declared = {**KEPT, "x_mark": Kept(None, PhaseKind.NIGHT, names=True)}
    monkeypatch.setattr(Game, "role_keys", declared)
    game = make_game()
    game.role_state["x_mark"] = "romeo"
    stored = game.to_dict()
    assert list(stored).index("x_mark") == list(stored).index("maniac_choice") + 1
    assert Game.from_dict(stored).role_state["x_mark"] == "romeo"
    play(game, "host replace romeo juliet")
    assert game.role_state["x_mark"] == "juliet"
    play(game, "host voting", "host night")
    assert game.role_state["x_mark"] is None
