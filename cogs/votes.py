"""Public votes: the live ballot, the end-of-day tally and each day's votes in the summary.

Every vote is public, as in the forum game: the ballot (one message per city,
edited in place) shows who votes for whom, in the order the votes were cast,
and each candidate's last vote time, the tie-break of the execution. The rules
count time in ticks (the order of acceptance); the clock time of each standing
vote is kept in memory (:attr:`bot.service.LiveGame.tick_times`, filled by
:func:`observe` as commands are accepted and, after a restart, by
:func:`restore_times` from the command log's ``created_at``), so rendering a
ballot asks the database nothing. The tally at the end of the day lists the
voters of each candidate and says why a resident of another city who led was
passed over (the rules' ``VotesTallied`` carries every standing vote and those
candidates). Each day's tally is kept with the game's record
(``lobby["votes"]``, stored in the commit that ends the day) for the summary
told at the end.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bot.i18n import NO_PINGS, mention, phrase
from bot.limits import CONTENT, OPTION_LABEL, PLACEHOLDER, SELECT_OPTIONS, clip, listing
from bot.service import LiveGame
from cogs.common import name_of
from cogs.mentions import command
from rules import Event, Stage
from rules import events as ev

if TYPE_CHECKING:
    from bot.storage import Storage

#: the summary names every voter up to this many players; above, it gives counts
VOTERS_NAMED_UP_TO = 60


def ballot_ref(city: str, day: int) -> str:
    """The name under which a city's ballot message of a day is remembered."""
    return f"ballot:{city}:{day}"


def observe(live: LiveGame, events: list[Event], now: float) -> None:
    """Remember when each vote came, and each day's tally (see the module docstring)."""
    game = live.game
    if game is None:
        return
    for event in events:
        if isinstance(event, ev.VoteCast):
            live.tick_times[game.tick - 1] = now  # the tick the rules stamped the vote with
        elif isinstance(event, ev.VotesTallied):
            live.record.lobby.setdefault("votes", []).append(
                {
                    "day": game.phase.number,
                    "city": event.city,
                    "ballots": [list(row) for row in event.ballots],
                }
            )
        elif isinstance(event, ev.PhaseStarted) and event.stage is Stage.DISCUSSION:
            live.tick_times.clear()  # a new day: no vote stands


def restorer(storage: Storage) -> Any:
    """The service's restorer: the clock times of a loaded game's standing votes, from its log."""

    async def restore_times(live: LiveGame) -> None:
        game = live.game
        if game is None:
            return
        ticks = {tick for votes in game.votes.values() for _, tick in votes.values()}
        # the command applied at tick t is the log's entry t + 1
        times = await storage.command_times(live.id, (tick + 1 for tick in ticks))
        live.tick_times = {seq - 1: when for seq, when in times.items()}

    return restore_times


def deadline_text(live: LiveGame) -> str:
    """When the current stage ends, as a Discord timestamp clients count down by themselves (or
    that the host has paused the clock)."""
    if live.record.lobby.get("paused"):
        return phrase(live, "deadline.paused")
    if live.record.deadline is None:
        return phrase(live, "deadline.host")
    return phrase(live, "deadline.at", when=f"<t:{int(live.record.deadline)}:R>")


def _standing(
    live: LiveGame,
    city: str,
    counted: ev.VotesTallied | None = None,
) -> tuple[list[str], dict[str, list[str]], dict[str, int]]:
    """The city's candidates as it would count them now (most votes, then the earliest last
    vote; nominees without votes after, in nomination order), their voters in vote order, and
    each one's last vote tick. ``counted``: the city's tally at the end of the day, whose votes
    stand even for the voters the same count executed (the game has dropped theirs by now);
    their votes have no known time, and they rank by their place in the vote order."""
    game = live.game
    assert game is not None
    voters: dict[str, list[str]] = {candidate: [] for candidate in game.nominees(city)}
    last: dict[str, int] = {}
    order_of_last: dict[str, int] = {}
    standing = sorted(game.votes[city].items(), key=lambda row: row[1][1])
    if counted is not None:
        ticks = {voter: tick for voter, (_, tick) in standing}
        standing = [
            (voter, (candidate, ticks.get(voter, -1))) for voter, candidate in counted.ballots
        ]
    for place, (voter, (candidate, tick)) in enumerate(standing):
        voters.setdefault(candidate, []).append(voter)
        last[candidate] = tick  # in vote order: the latest so far
        order_of_last[candidate] = place
    never = 1 << 62
    order = sorted(voters, key=lambda name: (-len(voters[name]), order_of_last.get(name, never)))
    return order, voters, last


def ballot_payload(
    live: LiveGame, city: str, *, closed: ev.VotesTallied | None = None
) -> dict[str, Any]:
    """A city's ballot: who votes for whom, a select menu of candidates and an Unvote button.

    It is one message edited in place, so it summarises: each candidate's row
    (votes, last vote time, a resident of another city marked), his voters as
    many as fit (then "and N more"), the candidates that fit within Discord's
    2,000 characters (then how many more); the menu offers the 25 with most
    votes (the others are voted for with the vote command).
    """
    game = live.game
    assert game is not None
    order, voters, last = _standing(live, city, closed)
    head = [phrase(live, "ballot.title", city=city, day=game.phase.number)]
    tail = [
        phrase(live, "ballot.voters", voters=closed.voters if closed else len(game.votes[city]))
    ]
    if closed:
        tail.append(phrase(live, "ballot.closed"))
    else:
        if len([c for c in order if game.is_alive(c)]) > SELECT_OPTIONS:
            tail.append(phrase(live, "ballot.more_in_command", vote=command(live.language, "vote")))
        tail.append(deadline_text(live))
    bases = _candidate_rows(live, city, order, voters, last) or [phrase(live, "ballot.empty")]
    # a few characters to spare: "and N more" may grow by a digit or a plural ending
    budget = CONTENT - sum(len(line) + 1 for line in head + tail) - 8
    content = "\n".join(head + _fitted_rows(live, bases, order, voters, budget) + tail)
    if closed:
        return {"content": content, "components": [], "allowed_mentions": NO_PINGS}
    return {
        "content": content,
        "components": _ballot_components(live, city, order),
        "allowed_mentions": NO_PINGS,
    }


def _candidate_rows(
    live: LiveGame, city: str, order: list[str], voters: dict[str, list[str]], last: dict[str, int]
) -> list[str]:
    """Each candidate's row: number, votes, the time of the last vote, another city's mark."""
    game = live.game
    assert game is not None
    bases: list[str] = []
    for number, candidate in enumerate(order, start=1):
        row = phrase(
            live,
            "ballot.row",
            number=number,
            player=mention(candidate),
            votes=len(voters[candidate]),
        )
        when = live.tick_times.get(last.get(candidate, -1))
        if when is not None:
            row = phrase(live, "ballot.row_last", row=row, when=f"<t:{int(when)}:T>")
        if game.city_of(candidate) != city:
            row = phrase(live, "ballot.foreign", row=row)
        bases.append(row)
    return bases


def _fitted_rows(
    live: LiveGame, bases: list[str], order: list[str], voters: dict[str, list[str]], budget: int
) -> list[str]:
    """The rows that fit in ``budget`` characters, each with as many of its voters as fit."""
    # the voters' names may take up to half of it: rows of candidates give way to them
    wanted = sum(len(mention(v)) + 2 for names in voters.values() for v in names)
    rows_budget = budget - min(wanted, budget // 2)
    shown: list[str] = []
    used = 0
    for index, row in enumerate(bases):
        more = (
            phrase(live, "ballot.more", count=len(bases) - index) if index < len(bases) - 1 else ""
        )
        if used + len(row) + 1 + len(more) > rows_budget:
            break
        shown.append(row)
        used += len(row) + 1
    hidden = len(bases) - len(shown)
    # what is left is shared out among the shown rows' lists of voters, in order
    spare = budget - used - (len(phrase(live, "ballot.more", count=hidden)) + 1 if hidden else 0)
    rows = []
    for index, row in enumerate(shown):
        names = [mention(v) for v in voters[order[index]]] if order else []
        if not names:
            rows.append(row)
            continue
        left = sum(1 for candidate in order[index : len(shown)] if voters[candidate])
        frame = len(phrase(live, "ballot.row_voters", row=row, voters=""))
        room = spare // left - frame
        shortest = len(phrase(live, "list.more", count=len(names)))
        listed = listing(live.language, names, room) if room >= shortest else ""
        text = phrase(live, "ballot.row_voters", row=row, voters=listed) if listed else row
        spare -= len(text) + 1 - (len(row) + 1)
        rows.append(text)
    if hidden:
        rows.append(phrase(live, "ballot.more", count=hidden))
    return rows


def _ballot_components(live: LiveGame, city: str, order: list[str]) -> list[dict[str, Any]]:
    """The open ballot's select menu of living candidates (25 at most) and its Unvote button."""
    game = live.game
    assert game is not None
    options = [
        {"label": clip(name_of(live, candidate), OPTION_LABEL) or candidate, "value": candidate}
        for candidate in order
        if game.is_alive(candidate)
    ][:SELECT_OPTIONS]
    index = game.cities.index(city)
    components: list[dict[str, Any]] = []
    if options:
        components.append(
            {
                "type": 1,
                "components": [
                    {
                        "type": 3,
                        "custom_id": f"mafia:vote:{live.id}:{index}",
                        "options": options,
                        "placeholder": clip(phrase(live, "ballot.placeholder"), PLACEHOLDER),
                        "min_values": 1,
                        "max_values": 1,
                    }
                ],
            }
        )
    components.append(
        {
            "type": 1,
            "components": [
                {
                    "type": 2,
                    "style": 2,
                    "custom_id": f"mafia:unvote:{live.id}",
                    "label": phrase(live, "ballot.unvote"),
                }
            ],
        }
    )
    return components


def tally_lines(
    live: LiveGame, event: ev.VotesTallied, executed: dict[str, str] | None = None
) -> list[str]:
    """The end of a city's day: each candidate who could be executed with his voters (vote
    order), each resident of another city passed over for lacking more than half, and each
    leading candidate another city executed first in the same count (``executed``: who the
    count executed before this city's tally, by which city), passed over for that."""
    voters: dict[str, list[str]] = {}
    for voter, candidate in event.ballots:
        voters.setdefault(candidate, []).append(voter)
    lines = [phrase(live, "tally", city=event.city, voters=event.voters)]
    for candidate, votes in event.tally:
        lines.append(
            phrase(
                live,
                "tally.row",
                player=mention(candidate),
                votes=votes,
                voters=", ".join(mention(v) for v in voters.get(candidate, [])),
            )
        )
    for candidate, votes in event.skipped:
        lines.append(
            phrase(
                live,
                "tally.skipped",
                player=mention(candidate),
                votes=votes,
                voters=", ".join(mention(v) for v in voters.get(candidate, [])),
                total=event.voters,
            )
        )
    for candidate, _ in event.tally:
        by_city = (executed or {}).get(candidate)
        if by_city is None or by_city == event.city:
            break  # the city executes this one: the candidates after him were not reached
        lines.append(phrase(live, "tally.taken", player=mention(candidate), city=by_city))
    if not event.tally and not event.skipped:
        lines.append(phrase(live, "tally.none"))
    return lines


def vote_summary_lines(live: LiveGame) -> list[str]:
    """Each day's votes of each city, as the cities counted them (the game's summary): who voted
    for whom, or, in a game of more than :data:`VOTERS_NAMED_UP_TO` players, how many."""
    days = live.record.lobby.get("votes", [])
    if not days:
        return []
    named = len(live.record.lobby.get("players", [])) <= VOTERS_NAMED_UP_TO
    lines = [phrase(live, "summary.votes")]
    for day in days:
        voters: dict[str, list[str]] = {}
        for voter, candidate in day["ballots"]:
            voters.setdefault(str(candidate), []).append(str(voter))
        ranked = sorted(voters.items(), key=lambda row: -len(row[1]))
        if named:
            rows = "; ".join(
                phrase(
                    live,
                    "summary.vote_row",
                    candidate=mention(candidate),
                    count=len(names),
                    voters=", ".join(mention(v) for v in names),
                )
                for candidate, names in ranked
            )
        else:
            rows = "; ".join(
                phrase(live, "summary.vote_count", candidate=mention(candidate), count=len(names))
                for candidate, names in ranked
            )
        lines.append(
            phrase(
                live,
                "summary.vote_day",
                day=day["day"],
                city=day["city"],
                rows=rows or phrase(live, "summary.no_votes"),
            )
        )
    return lines
