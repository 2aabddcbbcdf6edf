"""Random games played to the end: invariants that hold whatever happens."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rules import (
    Cause,
    Command,
    EndDay,
    EndNight,
    Execute,
    Game,
    PhaseKind,
    ProcuratorKill,
    RoleCounts,
    RuleError,
    RuleOptions,
    Stage,
    StartVoting,
    command_from_dict,
    command_to_dict,
    deal,
)
from rules.commands import PLAYER_COMMANDS
from rules.events import PhaseStarted, PlayerKilled


@st.composite
def games(draw: st.DrawFn, max_cities: int, max_players: int) -> Game:
    count = draw(st.integers(2, max_cities))
    names = [f"City{i}" for i in range(count)]
    cities = {
        name: [f"{name.lower()}p{j}" for j in range(draw(st.integers(5, max_players)))]
        for name in names
    }
    touring = draw(st.one_of(st.none(), st.lists(st.sampled_from(names), min_size=1, max_size=6)))
    options = RuleOptions.from_dict(
        {
            "first_phase": draw(st.sampled_from(["day", "night"])),
            "day_fallback": draw(st.sampled_from(["random", "host"])),
            "doctor_self_protect": draw(st.booleans()),
            "maniac_idle": draw(st.sampled_from(["random", "none"])),
            "maniac_wins_if_survives": draw(st.booleans()),
            "touring_order": touring,
            "last_word_seconds": draw(st.integers(1, 180)),
        }
    )
    roles = RoleCounts(
        doctor=draw(st.one_of(st.none(), st.booleans())),
        journalist=draw(st.one_of(st.none(), st.booleans())),
        maniac=draw(st.one_of(st.none(), st.booleans())),
        switches={status: draw(st.booleans()) for status in ("bodyguard", "sergeant", "lover")},
    )
    seed = draw(st.integers(0, 2**32))
    try:
        dealt = deal(cities, seed, roles, options)
    except RuleError:  # too few citizens for every role asked for
        assume(False)
    return Game.create(dealt, seed)


def random_command(data: st.DataObject, game: Game) -> Command:
    """Any command at all, legal or not, by anyone, dead or alive."""
    players = list(game.players)
    verb = data.draw(st.sampled_from(sorted(PLAYER_COMMANDS)))
    actor = data.draw(st.sampled_from(players))
    targets = [data.draw(st.sampled_from(players)) for _ in range(2)]
    return command_from_dict(
        {
            "by": "player",
            "verb": verb,
            "actor": actor,
            "target": targets[0],
            "first": targets[0],
            "second": targets[1],
        }
    )


def legal_command(data: st.DataObject, game: Game) -> Command | None:
    """A command drawn from what a random living player may do now."""
    player = data.draw(st.sampled_from(game.alive()))
    actions = game.legal_actions(player)
    if not actions:
        return None
    action = data.draw(st.sampled_from(actions))
    fields = {"by": "player", "verb": action.verb, "actor": player}
    if action.targets:
        first = data.draw(st.sampled_from(action.targets))
        others = [t for t in action.targets if t != first]
        second = data.draw(st.sampled_from(others)) if others else first
        fields.update(target=first, first=first, second=second)
    return command_from_dict(fields)


def advance(data: st.DataObject, game: Game) -> Command:
    """What the Procurator (or the timer) does to move the game on."""
    if game.stage is Stage.DISCUSSION:
        return StartVoting()
    if game.stage is Stage.VOTING:
        return EndDay()
    if game.stage is Stage.EXECUTION:
        return Execute(data.draw(st.sampled_from(game.alive())))
    return EndNight()


# mostly legal play, some nonsense, and a rare Procurator's kill
KINDS = ["legal"] * 12 + ["any"] * 5 + ["host kill"]


def play_to_the_end(data: st.DataObject, game: Game, commands_per_phase: int) -> None:
    setup, seed = game.setup, game.seed
    log: list[dict[str, object]] = []
    executions: Counter[str] = Counter()
    for _ in range(2000):
        if game.over:
            break
        for _ in range(data.draw(st.integers(0, commands_per_phase))):
            kind = data.draw(st.sampled_from(KINDS))
            if kind == "legal":
                command = legal_command(data, game)
            elif kind == "any":
                command = random_command(data, game)
            else:
                command = ProcuratorKill(data.draw(st.sampled_from(list(game.players))))
            if command is not None:
                step(game, command, log, executions)
            if game.over:
                break
        if not game.over:
            step(game, advance(data, game), log, executions)
    assert game.over, "the game did not end"
    replayed = Game.create(setup, seed)
    for entry in log:
        replayed.apply(command_from_dict(json.loads(json.dumps(entry))))
    assert replayed == game


def step(
    game: Game, command: Command, log: list[dict[str, object]], executions: Counter[str]
) -> None:
    before = game.to_dict()
    actor = getattr(command, "actor", None)
    actor_alive = actor is None or game.is_alive(actor)
    try:
        events = game.apply(command)
    except RuleError:
        assert game.to_dict() == before, f"refused {command} changed the state"
        return
    assert actor_alive, f"the dead {actor} acted: {command}"
    log.append(command_to_dict(command))
    data = game.to_dict()
    assert Game.from_dict(json.loads(json.dumps(data))).to_dict() == data
    for event in events:
        if isinstance(event, PlayerKilled) and event.cause is Cause.EXECUTION:
            assert event.by_city is not None
            executions[event.by_city] += 1
            assert executions[event.by_city] == 1, f"{event.by_city} executed twice in a day"
        if isinstance(event, PhaseStarted) and event.phase.kind is PhaseKind.NIGHT:
            if before["stage"] != "night" and before["phase"].startswith("day"):
                for city in game.cities:
                    assert executions[city] == 1 or not game.alive(city), (
                        f"{city} has living residents and executed nobody"
                    )
            executions.clear()
    if game.stage is Stage.DISCUSSION:
        executions.clear()
    for name in game.players:
        if not game.is_alive(name):
            assert game.legal_actions(name) == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), game=games(max_cities=3, max_players=9))
def test_small_random_games_end_and_keep_every_invariant(data: st.DataObject, game: Game) -> None:
    play_to_the_end(data, game, commands_per_phase=12)


#: eight large games in all, in shares of four: two processes of the suite play them at once
@pytest.mark.parametrize("share", [1, 2])
@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), game=games(max_cities=6, max_players=40))
def test_large_random_games_end_and_keep_every_invariant(
    share: int, data: st.DataObject, game: Game
) -> None:
    play_to_the_end(data, game, commands_per_phase=25)
