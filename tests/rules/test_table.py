"""The table of roles and acts (rules/table.py) declares every role and every command of the
rules, and what it says of them is what the rules do."""

import random

from rules import Game, RoleCounts, Setup, Status, deal
from rules.commands import LOGGED_HOST_COMMANDS, PLAYER_COMMANDS, Command
from rules.table import ACTS, HOST_ACTS, PLAYER_ACTS, ROLES, role


def test_every_status_has_one_row():
    assert [row.status for row in ROLES] == list(Status)
    assert {row.side for row in ROLES} == {"honest", "mafia", "maniac"}
    assert {row.status for row in ROLES if row.side == "honest"} == {s for s in Status if s.honest}
    assert role("doctor").switchable and not role(Status.COMMISSAR).switchable


def test_every_command_of_the_rules_is_declared_once():
    declared = [act.command for act in ACTS]
    assert len(declared) == len(set(declared))
    assert set(declared) == set(PLAYER_COMMANDS.values()) | set(LOGGED_HOST_COMMANDS.values())
    assert set(PLAYER_ACTS) == set(PLAYER_COMMANDS)
    assert all(act.by_host for act in HOST_ACTS.values())


def setup_from(cities: dict[str, list[str]], seed: int) -> Setup:
    every = {"bodyguard": True, "sergeant": True, "lover": True}
    return deal(cities, seed, RoleCounts(doctor=True, journalist=True, maniac=True, switches=every))


def _walk(seed: int, steps: int) -> list[tuple[Game, str, str]]:
    """A game played at random: every (game, player, verb) that ``legal_actions`` offered."""
    rng = random.Random(seed)
    cities = {"Verona": [f"v{i}" for i in range(7)], "Padua": [f"p{i}" for i in range(6)]}
    game = Game.create(setup_from(cities, seed), seed)
    offered: list[tuple[Game, str, str]] = []
    for _ in range(steps):
        if game.over:
            break
        moves: list[Command] = []
        for player in game.alive():
            for action in game.legal_actions(player):
                offered.append((game, player, action.verb))
                cls = PLAYER_COMMANDS[action.verb]
                if action.verb == "compare":
                    moves.append(cls(player, *rng.sample(action.targets or (), 2)))
                elif action.targets:
                    moves.append(cls(player, rng.choice(action.targets)))
                else:
                    moves.append(cls(player))
        for action in game.legal_host_actions():
            if action.verb in ("voting", "night", "day"):
                moves.append(HOST_ACTS[action.verb].command())
            elif action.verb == "execute" and action.targets:
                moves.append(HOST_ACTS["execute"].command(rng.choice(action.targets)))
        game.apply(rng.choice(moves))
    return offered


def test_who_may_act_is_who_the_rules_let_act():
    seen: set[str] = set()
    for seed in range(6):
        for game, player, verb in _walk(seed, 400):
            act = PLAYER_ACTS[verb]
            seen.add(verb)
            if act.actors:
                assert game.status_of(player) in act.actors, (verb, player, game.status_of(player))
    assert seen == set(PLAYER_ACTS)


def test_setup_helper_deals_every_status():
    cities = {"Verona": [f"v{i}" for i in range(7)], "Padua": [f"p{i}" for i in range(6)]}
    setup: Setup = setup_from(cities, 1)
    dealt = {status for city in setup.cities for _, status in city.residents}
    assert dealt == set(Status)
