"""Refusals of the bot itself (not of the rules), each a catalogue key for the user."""

from __future__ import annotations

from typing import Any


class UserError(Exception):
    """Something the user asked for that the bot refuses; ``key`` is its catalogue text."""

    def __init__(self, key: str, **params: Any) -> None:
        super().__init__(key)
        self.key = key
        self.params = params

    def params_in(self, language: str) -> dict[str, Any]:
        """The text's parameters for a reader of ``language`` (those that name things in words
        say them in his language; these are as given)."""
        return self.params
