"""A game's end in words: who won (a lone role's win a line of its own), and the roll, a block
per city (its heading, the living in the deal's order, then the dead in the order they died,
then whoever was replaced), so that a long summary is cut between cities
(:func:`bot.limits.block_sections`), never inside one."""

from __future__ import annotations

from bot.archive import seat_holders
from bot.i18n import mention, phase_words, phrase, winner_words
from bot.service import LiveGame
from cogs.common import status_text
from rules import Game
from rules.roles import ALONE


def phase_text(live: LiveGame, phase: str) -> str:
    """``day 2`` in words."""
    return phase_words(live.language, phase)


def winner_text(live: LiveGame, winner: str) -> str:
    """``Verona:honest`` → words."""
    return winner_words(live.language, winner)


def game_over_lines(live: LiveGame, game: Game, winners: list[str]) -> list[str]:
    """The end: the cities' winning sides, and each win of a side that plays alone (a winner
    without a city) in a line of its own, naming its player: ``game_over.<side>_alone`` when
    he outlived everyone, else ``game_over.<side>_survived`` (his mention is passed under his
    side's name)."""
    sides = [winner_text(live, w) for w in winners if ":" in w]
    lone = [w for w in winners if ":" not in w]
    if sides:
        lines = [phrase(live, "game_over", winners=", ".join(sides))]
    elif lone:
        lines = [phrase(live, "game_over.plain")]
    else:
        lines = [phrase(live, "game_over", winners=phrase(live, "winners.none"))]
    living = [p for p in game.players if game.is_alive(p)]
    for side in lone:
        player = next((p for p in game.players if ALONE.get(game.status_of(p)) == side), None)
        key = f"game_over.{side}_alone" if living == [player] else f"game_over.{side}_survived"
        lines.append(phrase(live, key, **{side: mention(player) if player else "—"}))
    return lines


def summary_blocks(live: LiveGame, game: Game) -> list[list[str]]:
    """The roll: its title, then a block per city (see the module docstring)."""
    deaths = {death.player: death for death in game.deaths}
    order = {death.player: n for n, death in enumerate(game.deaths)}
    replaced = seat_holders(game)
    blocks = [[phrase(live, "summary.title")]]
    for city in game.cities:
        living = [p for p in game.residents[city] if p not in deaths]
        dead = sorted((p for p in game.residents[city] if p in deaths), key=order.__getitem__)
        lines = [phrase(live, "summary.city", city=city)]
        for player in [*living, *dead]:
            status = status_text(live, game.status_of(player).value)
            death = deaths.get(player)
            if death is None:
                fate = phrase(live, "summary.alive")
            else:
                fate = phrase(
                    live,
                    "summary.died",
                    cause=phrase(live, f"cause_short.{death.cause.value}"),
                    phase=phase_text(live, str(death.phase)),
                )
            lines.append(
                phrase(live, "summary.row", player=mention(player), status=status, fate=fate)
            )
        lines += [
            phrase(live, "summary.replaced", player=mention(old), new=mention(new))
            for old, new in game.replaced
            if game.city_of(replaced[old]) == city
        ]
        blocks.append(lines)
    return blocks


__all__ = ["game_over_lines", "phase_text", "summary_blocks", "winner_text"]
