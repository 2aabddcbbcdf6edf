"""The archive in words: a finished game's summary, a player's figures, the server's leaderboards.

Each function takes the language to write in and what the archive gave
(:mod:`bot.archive`, :mod:`bot.storage`), and gives lines of text for
``/mafia game``, ``/mafia stats`` and ``/mafia top`` (and the game's end).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from functools import partial
from typing import Any

from babel.numbers import format_decimal, format_percent

from bot.i18n import mention, phase_words, t, winner_words
from bot.storage import ArchivedGame, GuildResults, PlayerStats
from bot.transcript_page import city_result, fate_words, length_words, roll
from rules.table import ROLES

#: a summary names every player and every vote up to this many players; above, it counts
ROSTER_UP_TO = 60
STATUSES = tuple(row.status.value for row in ROLES)
SIDES = tuple(dict.fromkeys(row.side for row in ROLES))
#: the side each status plays for
SIDE_OF_STATUS = {row.status.value: row.side for row in ROLES}

Say = Callable[..., str]


def percent_text(language: str, part: int, whole: int) -> str:
    """``part`` of ``whole`` as a percentage in the language's format (0 % of nothing)."""
    return format_percent(part / whole if whole else 0, locale=language)


def summary_lines(language: str, archived: ArchivedGame) -> list[str]:
    """A finished game in words: who hosted, the result, every city's people and fates, the last
    words and each day's votes (for a big game, counts instead of the roll)."""
    return [line for part in summary_parts(language, archived) for block in part for line in block]


def summary_parts(language: str, archived: ArchivedGame) -> list[list[list[str]]]:
    """:func:`summary_lines` in two parts of blocks (:func:`bot.limits.block_sections` cuts a
    long summary only between them): the game, each city, its last words; then each day's
    votes."""
    say = partial(t, language)
    small = len(archived.players) <= ROSTER_UP_TO
    blocks = [_result_lines(language, archived)]
    blocks += [_city_lines(language, archived, city, roster=small) for city in archived.cities]
    blocks += [words] if (words := _last_word_lines(language, archived)) else []
    votes = [[line] for line in _vote_lines(say, archived)] if small else []
    return [blocks, votes]


def _result_lines(language: str, archived: ArchivedGame) -> list[str]:
    """The summary's title (the game, its host, its end), its result and its seed."""
    say = partial(t, language)
    lines = [
        say(
            "archive.title",
            game=archived.game_id,
            host=mention(str(archived.host_id)),
            when=f"<t:{int(archived.ended_at)}:f>",
        )
    ]
    if archived.over:
        winners = ", ".join(winner_words(language, w) for w in archived.winners) or say(
            "winners.none"
        )
        lines.append(
            say("archive.over", phase=phase_words(language, archived.last_phase), winners=winners)
        )
    else:
        lines.append(say("archive.cancelled", phase=phase_words(language, archived.last_phase)))
    lines.append(say("archive.seed", seed=archived.seed))
    return lines


def _city_lines(language: str, archived: ArchivedGame, city: str, *, roster: bool) -> list[str]:
    """A city's result and how many live, then (with ``roster``) each resident's status and fate."""
    say = partial(t, language)
    residents = roll(archived, city)
    lines = [
        say(
            "archive.city",
            city=city,
            result=say(f"picture.city.{city_result(archived, city)}"),
            alive=sum(p.survived for p in residents),
            total=len(residents),
        )
    ]
    if not roster:
        return lines
    deaths = {d.player: d for d in archived.deaths}
    for player in residents:
        lines.append(
            say(
                "archive.row",
                player=mention(player.player),
                status=say(f"status.{player.status}"),
                fate=fate_words(language, deaths.get(player.player)),
            )
        )
    lines += [
        say(
            "archive.replaced",
            player=mention(player.player),
            status=say(f"status.{player.status}"),
            new=mention(player.replaced_by or ""),
        )
        for player in archived.replaced
        if player.city == city
    ]
    return lines


def _last_word_lines(language: str, archived: ArchivedGame) -> list[str]:
    """The last words given, each with its recording's length and a link to it (none: no lines)."""
    say = partial(t, language)
    if not archived.last_words:
        return []
    lines = [say("archive.last_words")]
    for word in archived.last_words:
        where = ""
        if word.channel_id and word.message_id:
            where = f" https://discord.com/channels/{archived.guild_id}/{word.channel_id}/{word.message_id}"
        recording = (
            say("archive.recording", length=length_words(word.duration))
            if word.outbox_id
            else say("archive.silence")
        )
        lines.append(
            say(
                "archive.last_word",
                player=mention(word.player),
                phase=phase_words(language, word.phase),
                recording=recording,
            )
            + where
        )
    return lines


def _vote_lines(say: Say, archived: ArchivedGame) -> list[str]:
    """Each day's votes in each city: every candidate with his voters, most voted first."""
    if not archived.votes:
        return []
    lines = [say("archive.votes")]
    days: dict[tuple[int, str], dict[str, list[str]]] = {}
    for vote in archived.votes:
        days.setdefault((vote.day, vote.city), {}).setdefault(vote.candidate, []).append(vote.voter)
    for (day, city), tally in days.items():
        rows = "; ".join(
            say(
                "archive.vote_row",
                candidate=mention(candidate),
                count=len(voters),
                voters=", ".join(mention(v) for v in voters),
            )
            for candidate, voters in sorted(tally.items(), key=lambda row: -len(row[1]))
        )
        lines.append(say("archive.vote_day", day=day, city=city, rows=rows))
    return lines


def stats_lines(language: str, who: str, found: PlayerStats | None) -> list[str]:
    """A player's figures in words."""
    say = partial(t, language)
    if found is None or found.games == 0:
        left = [say("stats.replaced", count=found.replaced)] if found and found.replaced else []
        return [say("stats.none", player=who), *left]
    percent = partial(percent_text, language)
    return [
        say("stats.title", player=who),
        say(
            "stats.games",
            games=say("stats.played", count=found.games),
            wins=say("stats.won", count=found.wins),
            rate=percent(found.wins, found.games),
        ),
        _sides_line(say, found),
        _statuses_line(say, found),
        say(
            "stats.survival",
            survived=found.survived,
            games=found.games,
            rate=percent(found.survived, found.games),
        ),
        say("stats.executed", count=found.executed),
        *([say("stats.replaced", count=found.replaced)] if found.replaced else []),
        *_act_lines(say, found, percent),
        say(
            "stats.rating",
            rating=format_decimal(round(found.rating, 1), locale=language),
            mu=format_decimal(round(found.mu, 1), locale=language),
            sigma=format_decimal(round(found.sigma, 1), locale=language),
        ),
    ]


def _sides_line(say: Say, found: PlayerStats) -> str:
    """A player's games and wins on each side he played."""
    sides: dict[str, list[int]] = {}
    for status, (games, wins) in found.by_status.items():
        side = SIDE_OF_STATUS.get(status, "honest")
        entry = sides.setdefault(side, [0, 0])
        entry[0] += games
        entry[1] += wins
    return say(
        "stats.sides",
        rows="; ".join(
            say(
                f"stats.side.{side}",
                games=say("stats.n_games", count=sides[side][0]),
                wins=say("stats.n_wins", count=sides[side][1]),
            )
            for side in SIDES
            if side in sides
        ),
    )


def _statuses_line(say: Say, found: PlayerStats) -> str:
    """A player's games and wins with each status he held."""
    return say(
        "stats.statuses",
        rows="; ".join(
            say(
                "stats.status_row",
                status=say(f"status.{status}"),
                games=say("stats.n_games", count=found.by_status[status][0]),
                wins=say("stats.n_wins", count=found.by_status[status][1]),
            )
            for status in STATUSES
            if status in found.by_status
        ),
    )


def _act_lines(say: Say, found: PlayerStats, percent: Callable[[int, int], str]) -> list[str]:
    """How a player voted (how often against the mafia), and his checks if he made any."""
    if found.votes:
        lines = [
            say(
                "stats.votes",
                votes=say("stats.n_votes", count=found.votes),
                mafia=found.votes_mafia,
                rate=percent(found.votes_mafia, found.votes),
            )
        ]
    else:
        lines = [say("stats.no_votes")]
    if found.checks:
        lines.append(
            say(
                "stats.checks",
                checks=say("stats.n_checks", count=found.checks),
                hits=found.hits,
                rate=percent(found.hits, found.checks),
            )
        )
    return lines


def top_lines(
    language: str,
    boards: dict[str, list[PlayerStats]],
    min_games: int,
    results: GuildResults | None = None,
) -> list[str]:
    """The three leaderboards in words, then how the sides and statuses fare on the server."""
    say = partial(t, language)
    if not boards["rating"]:  # every player of a finished game is rated
        return [say("top.none")]
    lines = [say("top.title"), say("top.by_wins")]
    lines += _board(
        say,
        "top.wins_row",
        boards["wins"],
        lambda row: {
            "wins": say("stats.n_wins", count=row.wins),
            "games": say("stats.n_games", count=row.games),
        },
    ) or [say("top.wins_none")]
    lines.append(say("top.by_rate", count=min_games))
    lines += _board(
        say,
        "top.rate_row",
        boards["win_rate"],
        lambda row: {
            "rate": percent_text(language, row.wins, row.games),
            "wins": row.wins,
            "games": row.games,
        },
    ) or [say("top.rate_none")]
    lines.append(say("top.by_rating"))
    lines += _board(
        say,
        "top.rating_row",
        boards["rating"],
        lambda row: {
            "rating": format_decimal(round(row.rating, 1), locale=language),
            "games": say("stats.n_games", count=row.games),
        },
    )
    if results is not None and results.by_side:
        lines.extend(results_lines(language, results))
    return lines


def _board(
    say: Say, key: str, rows: list[PlayerStats], fields: Callable[[PlayerStats], dict[str, Any]]
) -> list[str]:
    """A leaderboard's rows: each player's place, his mention and the board's ``fields``."""
    return [
        say(key, place=place, player=mention(row.player), **fields(row))
        for place, row in enumerate(rows, 1)
    ]


def results_lines(language: str, results: GuildResults) -> list[str]:
    """How often each side and each status won on the server, and the status that wins most."""
    say = partial(t, language)

    def row(what: str, seats: int, wins: int) -> str:
        return say(
            "top.result_row",
            what=what,
            rate=percent_text(language, wins, seats),
            wins=wins,
            seats=seats,
        )

    lines = [say("top.results")]
    lines.append(
        say(
            "top.sides",
            rows="; ".join(
                row(say(f"top.side.{side}"), *results.by_side[side])
                for side in SIDES
                if side in results.by_side
            ),
        )
    )
    statuses = [status for status in STATUSES if status in results.by_status]
    lines.append(
        say(
            "top.statuses",
            rows="; ".join(
                row(say(f"status.{status}"), *results.by_status[status]) for status in statuses
            ),
        )
    )

    # the highest share of seats that won; equal shares are a tie, said as one
    def rate(status: str) -> Fraction:
        seats, wins = results.by_status[status]
        return Fraction(wins, seats)

    top = max(rate(status) for status in statuses)
    best = [status for status in statuses if rate(status) == top]
    seats, wins = results.by_status[best[0]]
    if wins and len(best) == 1:
        lines.append(
            say(
                "top.best_status",
                status=say(f"status.{best[0]}"),
                rate=percent_text(language, wins, seats),
            )
        )
    elif wins:
        lines.append(
            say(
                "top.best_tie",
                statuses=", ".join(say(f"status.{status}") for status in best),
                rate=percent_text(language, wins, seats),
            )
        )
    return lines


__all__ = [
    "percent_text",
    "results_lines",
    "stats_lines",
    "summary_lines",
    "summary_parts",
    "top_lines",
]
