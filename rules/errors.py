"""The one error type of the rules: a refused command or a refused setup."""

from __future__ import annotations

from typing import Any

#: Every refusal code the rules can raise, with a short English explanation (a role's own
#: codes are added by its declaration, :attr:`rules.roles.base.Role.codes`).
#: The bot's catalogues translate each code; the simulator prints the code.
CODES: dict[str, str] = {
    "game_over": "the game is over",
    "wrong_phase": "not possible in this phase",
    "unknown_player": "no such player",
    "not_alive": "the actor is dead",
    "target_not_alive": "the target is dead",
    "wrong_role": "the actor's status or position does not allow this",
    "not_godfather": "only the Godfather can refuse the kill",
    "already_nominated_today": "the actor has already nominated today",
    "already_nominated": "the target is already nominated in this city",
    "not_nominated": "the target is not nominated in this city",
    "not_nominee": "the actor is not nominated today, and only a nominee takes a last word",
    "no_vote": "the actor has no standing vote",
    "last_word_used": "the last word was already asked for today",
    "self_target": "the actor cannot choose themselves",
    "wrong_city": "the target is not in the right city",
    "judge_immune": "the acting Judge cannot be killed on tour",
    "not_touring": "this city's mafia does not hold the touring right tonight",
    "same_player": "two different players are needed",
    "no_cities": "a game needs at least one city",
    "empty_city": "a city has no players",
    "duplicate_city": "two cities have the same name",
    "duplicate_player": "two players have the same name",
    "bad_status": "unknown status",
    "mafia_majority": "a city needs more honest residents than mafiosi",
    "too_many": "more of a role than the game may have",
    "too_many_in_city": "more of a role than a city may have",
    "bad_option": "a rule option has a bad value",
    "unknown_city": "no such city",
    "too_few_players": "too few players for a sound deal",
    "bad_command": "malformed command",
    "already_playing": "the newcomer already plays in this game",
}


class RuleError(Exception):
    """A command or a setup the rules refuse.

    ``code`` is stable (a key of :data:`CODES`) and ``params`` name what was
    wrong (the player, the city, the option...). Raising it never changes the
    game state.
    """

    def __init__(self, code: str, **params: Any) -> None:
        if code not in CODES:
            raise ValueError(f"unknown rule error code {code!r}")
        self.code = code
        self.params: dict[str, Any] = params
        detail = ", ".join(f"{key}={value}" for key, value in sorted(params.items()))
        super().__init__(f"{code}: {CODES[code]}" + (f" ({detail})" if detail else ""))

    def to_dict(self) -> dict[str, Any]:
        """The error as plain data: ``{"code": ..., "params": {...}}``."""
        return {"code": self.code, "params": dict(self.params)}
