"""Plain data round trips, replay from the command log, legal actions, audiences."""

import contextlib
import json

from rules import (
    AudienceKind,
    Game,
    RuleError,
    command_from_dict,
    command_to_dict,
    event_from_dict,
    event_to_dict,
)
from rules.scenario import parse_step

from .helpers import make_game, play

STEPS = [
    "romeo nominate tybalt",
    "friar protect romeo",
    "tranio compare romeo tybalt",
    "host voting",
    "romeo vote tybalt",
    "mercutio vote tybalt",
    "bianca nominate lucentio",
]


def test_state_round_trips_through_json_at_every_step():
    game = make_game(seed=5)
    for step in STEPS:
        with contextlib.suppress(RuleError):
            play(game, step)
        data = json.loads(json.dumps(game.to_dict()))
        assert Game.from_dict(data) == game
        assert Game.from_dict(data).to_dict() == game.to_dict()


def test_a_game_replays_exactly_from_setup_seed_and_log():
    game = make_game(seed=9)
    log = []
    for step in [
        "romeo nominate tybalt",
        "host voting",
        "romeo vote tybalt",
        "host night",
        "lucentio kill bianca",
        "host day",
        "host voting",
        "host night",
        "host day",
    ]:
        command = parse_step(step, game.players)
        game.apply(command)
        log.append(json.loads(json.dumps(command_to_dict(command))))
    replayed = Game.create(game.setup, 9)
    for data in log:
        replayed.apply(command_from_dict(data))
    assert replayed == game
    assert [str(d.phase) for d in replayed.deaths] == [str(d.phase) for d in game.deaths]


def test_events_round_trip_through_plain_data():
    game = make_game()
    events = game.opening_events() + play(game, *STEPS[:6])
    for step in ("host night", "escalus check gregory", "host judge friar", "host day"):
        events += play(game, step)
    for event in events:
        assert event_from_dict(json.loads(json.dumps(event_to_dict(event)))) == event


def test_private_events_name_their_audience():
    game = make_game(first_phase="night")
    checked = play(game, "escalus check tybalt")[0]
    assert checked.audience.kind is AudienceKind.PLAYER and checked.audience.player == "escalus"
    chosen = play(game, "tybalt kill romeo")[0]
    assert chosen.audience.kind is AudienceKind.MAFIA and chosen.audience.city == "Verona"


def test_legal_actions_match_what_apply_accepts():
    game = make_game()
    play(game, "romeo nominate tybalt")
    actions = {a.verb: a.targets for a in game.legal_actions("romeo")}
    assert "nominate" not in actions  # already nominated today
    assert "elect" not in actions and "protect" not in actions
    friar = {a.verb: a.targets for a in game.legal_actions("friar")}
    assert "protect" in friar and "friar" in friar["protect"]
    assert "tybalt" not in friar["nominate"]  # already nominated in Verona
    tybalt = {a.verb: a.targets for a in game.legal_actions("tybalt")}
    assert "lastword" in tybalt and "elect" in tybalt and tybalt["elect"] == ("tybalt",)
    host = {a.verb: a.targets for a in game.legal_host_actions()}
    assert "voting" in host and "night" not in host and "execute" not in host
    assert set(host["kill"]) == set(game.players)
    play(game, "host kill romeo")
    assert game.legal_actions("romeo") == []
