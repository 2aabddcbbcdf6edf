"""Undo by what changed (:mod:`rules.journal`): a command applied after a savepoint and rolled
back leaves the game exactly as it was, its order of entries included, and play goes on from
there as if the command had never come."""

from __future__ import annotations

import contextlib
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rules import (
    AppointGodfather,
    AppointJudge,
    Command,
    ExecuteByLot,
    Game,
    ProcuratorKill,
    Replace,
    RuleError,
    SetTouringOrder,
)
from rules.journal import Journal, TrackedDict, TrackedList, TrackedSet
from tests.rules.test_properties import advance, games, legal_command, random_command


def exactly(game: Game) -> str:
    """The whole state as text: equal texts are equal states in the same order."""
    return json.dumps(game.to_dict())


def host_command(data: st.DataObject, game: Game, fresh: int) -> Command:
    """A host's command with a target drawn from anyone, dead or alive."""
    target = data.draw(st.sampled_from(list(game.players)))
    kind = data.draw(st.sampled_from(["kill", "judge", "godfather", "lot", "replace", "touring"]))
    if kind == "kill":
        return ProcuratorKill(target)
    if kind == "judge":
        return AppointJudge(target)
    if kind == "godfather":
        return AppointGodfather(target)
    if kind == "lot":
        return ExecuteByLot()
    if kind == "replace":
        return Replace(target, f"newcomer{fresh}")
    order = data.draw(st.lists(st.sampled_from(game.cities), min_size=1, max_size=4))
    return SetTouringOrder(tuple(order))


def some_command(data: st.DataObject, game: Game, fresh: int) -> Command | None:
    kind = data.draw(st.sampled_from(["legal"] * 6 + ["any"] * 3 + ["host"] * 2 + ["advance"]))
    if kind == "legal":
        return legal_command(data, game)
    if kind == "any":
        return random_command(data, game)
    if kind == "host":
        return host_command(data, game, fresh)
    return advance(data, game)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), game=games(max_cities=3, max_players=9))
def test_a_command_undone_leaves_the_game_exactly_as_before(
    data: st.DataObject, game: Game
) -> None:
    twin = Game.create(game.setup, game.seed)  # never undoes anything
    undone = 0
    for fresh in range(120):
        if game.over:
            break
        command = some_command(data, game, fresh)
        if command is None:
            continue
        before = exactly(game)
        game.savepoint()
        with contextlib.suppress(RuleError):
            game.apply(command)
        game.rollback()
        assert exactly(game) == before, f"undoing {command} left the game changed"
        undone += 1
        # then the command comes for real: both games answer it alike, ever after
        try:
            events = game.apply(command)
        except RuleError as refused:
            try:
                twin.apply(command)
            except RuleError as also:
                assert also.code == refused.code
            else:
                raise AssertionError(f"{command} refused after an undo, accepted without")
            continue
        assert twin.apply(command) == events
        assert exactly(game) == exactly(twin)
    assert undone > 0


def test_an_undo_puts_a_removed_entry_back_where_it_was():
    journal = Journal()
    votes = journal.track({"a": 1, "b": 2, "c": 3})
    assert type(votes) is TrackedDict
    journal.begin()
    votes.pop("a")
    votes["a"] = 4  # a moved vote goes last
    del votes["c"]
    votes.setdefault("d", 5)
    journal.rollback()
    assert list(votes.items()) == [("a", 1), ("b", 2), ("c", 3)]


def test_what_a_tracked_container_takes_is_tracked_and_undone():
    journal = Journal()
    state = journal.track({"cities": {"x": []}, "seen": set()})
    journal.begin()
    state["cities"]["y"] = ["p"]  # a plain list put in: tracked from then on
    state["cities"]["y"].append("q")
    state["cities"]["x"].extend(["r", "s"])
    state["cities"]["x"].insert(0, "t")
    state["seen"].add("u")
    state["seen"] |= {"v", "w"}
    assert type(state["cities"]["y"]) is TrackedList and type(state["seen"]) is TrackedSet
    journal.rollback()
    assert state == {"cities": {"x": []}, "seen": set()}
    journal.begin()
    state["seen"].add("kept")
    journal.end()
    journal.rollback()  # nothing open: nothing undone
    assert state["seen"] == {"kept"}
