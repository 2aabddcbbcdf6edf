"""Random games for the archive's tests and benchmark: any legal act, and the game moves on.

:func:`next_command` picks what someone does next in a game (a player's legal
act, the host's act, the timer moving the stage on), so a loop of it plays a
game to its end: every day kills at least one resident per city.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from rules import (
    CastVote,
    Check,
    Command,
    Compare,
    Elect,
    EndDay,
    EndNight,
    Execute,
    Game,
    Kill,
    Nominate,
    Pass,
    ProcuratorKill,
    Protect,
    RequestLastWord,
    RuleError,
    SetTouringOrder,
    Stage,
    StartVoting,
    Tour,
    Unvote,
)

TARGETED = {"nominate": Nominate, "vote": CastVote, "protect": Protect, "elect": Elect,
            "kill": Kill, "tour": Tour, "check": Check}


def _player_act(game: Game, rng: random.Random, verbs: tuple[str, ...]) -> Command | None:
    player = rng.choice(game.alive())
    actions = [a for a in game.legal_actions(player) if a.verb in verbs]
    if not actions:
        return None
    action = rng.choice(actions)
    if action.verb in TARGETED:
        assert action.targets
        return TARGETED[action.verb](player, rng.choice(action.targets))
    if action.verb == "compare":
        assert action.targets
        first, second = rng.sample(list(action.targets), 2)
        return Compare(player, first, second)
    return {"unvote": Unvote, "lastword": RequestLastWord, "pass": Pass}[action.verb](player)


def next_command(game: Game, rng: random.Random, *, retour: float = 0.0,
                 host_kill: float = 0.01) -> tuple[Command, str]:
    """Something to do now in ``game`` and who does it (``player``, ``host``, ``timer``)."""
    mover = rng.choice(("host", "timer"))
    if rng.random() < host_kill and len(game.alive()) > 2:
        return ProcuratorKill(rng.choice(game.alive())), "host"
    if game.stage is Stage.EXECUTION:
        return Execute(rng.choice(game.alive())), "host"
    if game.stage is Stage.DISCUSSION:
        if retour and rng.random() < retour:
            order = list(game.cities)
            rng.shuffle(order)
            return SetTouringOrder(tuple(order[: rng.randint(1, len(order))])), "host"
        if rng.random() < 0.8:
            act = _player_act(game, rng, ("nominate", "protect", "compare", "elect", "lastword"))
            if act is not None:
                return act, "player"
        return StartVoting(), mover
    if game.stage is Stage.VOTING:
        if rng.random() < 0.85:
            act = _player_act(game, rng, ("vote", "unvote", "lastword", "elect"))
            if act is not None:
                return act, "player"
        return EndDay(), mover
    if rng.random() < 0.8:
        act = _player_act(game, rng, ("kill", "tour", "check", "pass", "elect"))
        if act is not None:
            return act, "player"
    return EndNight(), mover


def random_game(game: Game, rng: random.Random, *, limit: int = 20_000, **options: float) -> Iterator[tuple[Command, str]]:
    """Play ``game`` to its end; yields each accepted command and its source."""
    for _ in range(limit):
        if game.over:
            return
        command, source = next_command(game, rng, **options)
        try:
            game.apply(command)
        except RuleError:
            continue
        yield command, source
    raise AssertionError("the game did not end")
