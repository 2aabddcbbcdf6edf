"""Build a game in one line and play steps written as in scenario files."""

from __future__ import annotations

from typing import Any

from rules import Event, Game, RuleError, Setup
from rules.scenario import parse_step

TWO_CITIES = {
    "Verona": {
        "romeo": "citizen",
        "mercutio": "citizen",
        "tybalt": "mafioso",
        "escalus": "commissar",
        "friar": "doctor",
        "sampson": "citizen",
        "gregory": "citizen",
    },
    "Padua": {
        "bianca": "citizen",
        "gremio": "citizen",
        "lucentio": "mafioso",
        "baptista": "commissar",
        "tranio": "journalist",
        "curtis": "citizen",
        "grumio": "citizen",
    },
}


def make_game(cities: dict[str, dict[str, str]] | None = None, seed: int = 1, **rules: Any) -> Game:
    """A new game of the given cities (default: :data:`TWO_CITIES`) and rule options."""
    touring = rules.pop("touring_order", None)
    data: dict[str, Any] = {"cities": cities or TWO_CITIES, "rules": rules}
    if touring is not None:
        data["touring_order"] = touring
    return Game.create(Setup.from_dict(data), seed)


def play(game: Game, *steps: str) -> list[Event]:
    """Apply steps that must all be accepted; the events of the last one."""
    events: list[Event] = []
    for step in steps:
        events = game.apply(parse_step(step, game.players))
    return events


def refuse(game: Game, step: str) -> RuleError:
    """Apply a step that must be refused; asserts the state did not change."""
    before = game.to_dict()
    try:
        game.apply(parse_step(step, game.players))
    except RuleError as error:
        assert game.to_dict() == before, f"refused {step!r} changed the state"
        return error
    raise AssertionError(f"{step!r} was accepted")


def kinds(events: list[Event]) -> list[str]:
    """The kinds of events, in order."""
    return [event.kind for event in events]


def of(events: list[Event], cls: type) -> list[Any]:
    """The events of one type."""
    return [event for event in events if isinstance(event, cls)]


def pass_day(game: Game, *victims: str) -> list[Event]:
    """From discussion, execute each victim in his own city and start the night.

    Each victim is nominated and voted for by residents of his city; cities
    without a victim fall back to chance, so name one per city with living
    residents. Returns the events of ending the day.
    """
    for victim in victims:
        city = game.city_of(victim)
        nominator = next(p for p in game.alive(city) if p not in game.nominators and p != victim)
        play(game, f"{nominator} nominate {victim}")
    play(game, "host voting")
    for victim in victims:
        voter = next(p for p in game.alive(game.city_of(victim)) if p != victim)
        play(game, f"{voter} vote {victim}")
    return play(game, "host night")
