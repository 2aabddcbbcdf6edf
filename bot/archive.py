"""The archive of finished games, and the figures and ratings kept from it.

What is archived. Every game that was dealt and then ended, played to the end
(``over``) or ended by the host (``cancelled``): its setup (cities, residents
with their statuses, the rule options), seed, the lobby's display names, the
whole command log with who gave each command (player, host or timer), the
result (winners, over or not, where it stopped), the deaths (player, city,
status, cause, phase, the city that executed him), each day's votes per city
as the city counted them (who voted for whom: replayed from the log, the
``VoteCast``/``VoteWithdrawn`` events and the deaths that void a vote, taken
when ``VotesTallied`` counts them), and the last words: the command that gave
each, and the ``voice`` outbox item that posts the recording (its file path
and length; once posted, the Discord message that holds it). A lobby closed
before the deal is not a game and is not archived.

When. Right after the commit that ends the game (the service's ``after_commit``
hook), in one transaction keyed by the game's id: a second attempt changes
nothing. A crash between the two loses nothing: at start every finished game
that is not archived is archived then (:meth:`Archiver.sweep`), and so are,
once, the games finished before the archive existed (migration V4 lists them;
for those nothing is posted).

Figures. ``/mafia stats`` and ``/mafia top`` read per-player aggregates
(``player_stats``, ``player_status_stats``) that the archiving transaction
updates, so a leaderboard never scans the archive. Only games played to the
end count (a game the host ended has no fair result). They are rebuilt from
the archive by ``mafia-bot rebuild-stats`` (:func:`rebuild_stats`).

Rating. openskill (MIT; Weng and Lin's Bayesian approximation, the
multi-team successor of TrueSkill, maintained, pure Python) with its
Plackett-Luce model rates each game as a contest of teams: every city's
honest residents, every city's mafia, and each role that plays alone; the winners share first
place, the losers second. Two choices fit it to Mafia, where sides are unequal
by design:

- A team's strength is the *mean* of its members' ratings, not openskill's
  sum: a city's honest residents outnumber its mafia three to one, and a sum
  would make them overwhelming favourites whoever plays. Each member then
  moves by his team's change (openskill's own update of the team).
- Each team has a second member, its **side** (honest, mafia, a lone role's), rated
  per guild like a player. A side that wins more often gains rating itself,
  so winning with it earns its players less and losing with it costs them
  more: the rating accounts for the balance of the sides in that guild's games.

openskill was chosen over ``trueskill`` (unmaintained since 2018, and
patented) and over a hand-written Elo, which handles neither teams nor more
than two of them.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openskill.models import PlackettLuce

from bot.storage import (
    FINISHED,
    ArchivedDeath,
    ArchivedGame,
    ArchivedLastWord,
    ArchivedPlayer,
    ArchivedVote,
    ArchiveSource,
    GameRecord,
    OutboxItem,
    Storage,
)
from rules import (
    Command,
    Game,
    Phase,
    RequestLastWord,
    RuleError,
    Setup,
    Stage,
    command_from_dict,
)
from rules import events as ev
from rules.roles import LONE_SIDES, SIDE_OF

if TYPE_CHECKING:
    from bot.service import LiveGame

log = logging.getLogger(__name__)


#: the rating model: openskill's defaults (mu 25, sigma 25/3)
MODEL = PlackettLuce()

Announce = Callable[[GameRecord, ArchivedGame], Awaitable[list[OutboxItem]]]


class ArchiveError(Exception):
    """A game that cannot be archived (not dealt, not finished, unknown)."""


def side_of(status: str) -> str:
    """The side the status plays for, as its role declares it (honest for a status unknown)."""
    return SIDE_OF.get(status, "honest")


def won(status: str, city: str, winners: list[str]) -> bool:
    """Whether a player of ``status`` in ``city`` is among the winners."""
    side = side_of(status)
    if side in LONE_SIDES:
        return side in winners
    return f"{city}:{side}" in winners


@dataclass
class _Replay:
    """What a replay of the log collects besides the final game."""

    votes: list[ArchivedVote] = field(default_factory=list)
    deaths: list[ArchivedDeath] = field(default_factory=list)
    last_words: list[tuple[int, str, str]] = field(default_factory=list)
    checks: dict[str, list[bool]] = field(default_factory=dict)
    log: list[tuple[dict[str, Any], str]] = field(default_factory=list)


#: told every command a replay applies: (the command, its source, the phase it was given in, its events)
Listener = Callable[[Command, str, Phase, list[ev.Event]], None]


def replay_log(
    setup: dict[str, Any],
    seed: int,
    log_rows: list[tuple[int, dict[str, Any], str]],
    listen: Listener | None = None,
) -> tuple[Game, _Replay]:
    """Play a stored log again and collect votes, deaths, last words and checks.

    A stored command the rules refuse (it cannot be: only accepted commands are
    stored) is logged and left out, so the archived log replays exactly.
    ``listen``, if given, is told every command applied and its events (the
    picture reads from them what the archive does not keep).
    """
    game = Game.create(Setup.from_dict(setup), seed)
    found = _Replay()
    standing: dict[str, dict[str, str]] = {city: {} for city in game.cities}
    for seq, data, source in log_rows:
        phase = game.phase
        try:
            command = command_from_dict(data)
            events = game.apply(command)
        except RuleError as error:
            log.error(
                "stored command %s (%s) refused on replay: %s; left out of the archive",
                seq,
                data,
                error,
            )
            continue
        found.log.append((data, source))
        if listen is not None:
            listen(command, source, phase, events)
        if isinstance(command, RequestLastWord):
            found.last_words.append((seq, command.actor, str(phase)))
        for event in events:
            _collect(found, standing, phase, event)
    return game, found


def _collect(
    found: _Replay, standing: dict[str, dict[str, str]], phase: Phase, event: ev.Event
) -> None:
    """Take what the archive keeps from one event of a replay: ``standing`` is each city's
    votes as they stand (voter to candidate), counted when the city tallies them."""
    if isinstance(event, ev.VoteCast):
        standing[event.city][event.voter] = event.candidate
    elif isinstance(event, ev.VoteWithdrawn):
        standing[event.city].pop(event.voter, None)
    elif isinstance(event, ev.PlayerKilled):
        # the dead lose their standing vote (the rules drop it without an event)
        standing[event.city].pop(event.player, None)
        found.deaths.append(
            ArchivedDeath(
                event.player,
                event.city,
                event.status.value,
                event.cause.value,
                str(event.phase),
                event.by_city,
            )
        )
    elif isinstance(event, ev.VotesTallied):
        counted = standing[event.city]
        if len(counted) != event.voters:
            log.error(
                "replay: %s counted %d voters, the events gave %d",
                event.city,
                event.voters,
                len(counted),
            )
        found.votes.extend(
            ArchivedVote(phase.number, event.city, voter, candidate)
            for voter, candidate in counted.items()
        )
    elif isinstance(event, ev.PhaseStarted) and event.stage is Stage.DISCUSSION:
        for votes in standing.values():
            votes.clear()
    elif event.kind == "player_checked":  # a check's answer, told to the checker alone
        checker = str(event.audience.player)
        found.checks.setdefault(checker, []).append(getattr(event, "reply", None) == "mafia")


def build_archive(source: ArchiveSource, *, ended_at: float | None = None) -> ArchivedGame:
    """The archive of one finished game, from its record, log and last words' outbox items.

    Raises:
        ArchiveError: the game was never dealt or is not finished.
    """
    record = source.record
    if record.state not in FINISHED:
        raise ArchiveError(f"game {record.id} is {record.state}, not finished")
    if record.setup is None or record.seed is None:
        raise ArchiveError(f"game {record.id} was never dealt")
    game, found = replay_log(
        record.setup, record.seed, [(row.seq, row.command, row.source) for row in source.log]
    )
    names = {str(p["id"]): str(p.get("name") or p["id"]) for p in record.lobby.get("players", [])}
    winners = game.winners()
    ended = ended_at
    if ended is None:
        ended = source.log[-1].created_at if source.log else record.created_at
    players = _players(game, found, names, winners)
    return ArchivedGame(
        game_id=record.id,
        guild_id=record.guild_id,
        host_id=record.host_id,
        ended=record.state,
        created_at=record.created_at,
        ended_at=ended,
        seed=record.seed,
        setup=record.setup,
        names=names,
        log=found.log,
        winners=winners,
        last_phase=str(game.phase),
        cities=list(game.cities),
        deaths=found.deaths,
        votes=found.votes,
        last_words=_last_words(found, source),
        players=[p for p in players if p.replaced_by is None],
        replaced=[p for p in players if p.replaced_by is not None],
    )


def _last_words(found: _Replay, source: ArchiveSource) -> list[ArchivedLastWord]:
    """The last words a replay found, each with the ``voice`` item that posts its recording."""
    voice = {seq: (item_id, payload) for item_id, seq, payload in source.voice if seq is not None}
    last_words = []
    for seq, player, phase in found.last_words:
        item_id, payload = voice.get(seq, (None, {}))
        duration = payload.get("duration")
        last_words.append(
            ArchivedLastWord(
                seq,
                player,
                phase,
                item_id,
                payload.get("path"),
                float(duration) if isinstance(duration, int | float) else None,
            )
        )
    return last_words


def _players(
    game: Game, found: _Replay, names: dict[str, str], winners: list[str]
) -> list[ArchivedPlayer]:
    """Each resident's line of the archive: status, side, result and what they did."""
    status_of = {name: game.status_of(name).value for name in game.players}
    mafia = {name for name in game.players if game.status_of(name).in_mafia}
    counted: dict[str, int] = {}
    for_mafia: dict[str, int] = {}
    for vote in found.votes:
        counted[vote.voter] = counted.get(vote.voter, 0) + 1
        if vote.candidate in mafia:
            for_mafia[vote.voter] = for_mafia.get(vote.voter, 0) + 1
    executed = {d.player for d in found.deaths if d.cause == "execution"}
    seats = seat_holders(game)
    players: list[tuple[str, str, str, str | None]] = []
    for city in game.cities:
        for name in game.residents[city]:
            players.append((name, city, status_of[name], None))
        players += [
            (old, city, status_of[seat], new)
            for old, new in game.replaced
            if game.city_of(seat := seats[old]) == city
        ]
    return [
        ArchivedPlayer(
            player=name,
            name=names.get(name, name),
            city=city,
            status=status,
            side=side_of(status),
            won=int(new is None and won(status, city, winners)),
            survived=int(new is None and game.is_alive(name)),
            executed=int(name in executed),
            votes=counted.get(name, 0),
            votes_mafia=for_mafia.get(name, 0),
            checks=len(found.checks.get(name, [])),
            hits=sum(found.checks.get(name, [])),
            replaced_by=new,
        )
        for name, city, status, new in players
    ]


def seat_holders(game: Game) -> dict[str, str]:
    """Each player who was replaced → who holds his seat at the end (through a chain of
    replacements)."""
    after = dict(game.replaced)
    holders = {}
    for old in after:
        seat = after[old]
        while seat in after:
            seat = after[seat]
        holders[old] = seat
    return holders


def replay(archived: ArchivedGame) -> Game:
    """The archived game's final state, replayed from its setup, seed and log."""
    game, _ = replay_log(
        archived.setup,
        archived.seed,
        [(index, command, source) for index, (command, source) in enumerate(archived.log, 1)],
    )
    return game


# ---------------------------------------------------------------------- ratings


def rate_game(
    players: list[ArchivedPlayer],
    ratings: dict[str, tuple[float, float]],
    sides: dict[str, tuple[float, float]],
) -> tuple[dict[str, tuple[float, float]], dict[str, tuple[float, float]]]:
    """New (mu, sigma) of every player of a game and of the sides in it (module docstring).

    ``ratings`` and ``sides`` are the stored ones; a player or side without one
    starts at openskill's default.
    """
    teams: dict[tuple[str, str], list[ArchivedPlayer]] = {}
    for player in players:
        key = ("", player.side) if player.side in LONE_SIDES else (player.city, player.side)
        teams.setdefault(key, []).append(player)
    default = (MODEL.mu, MODEL.sigma)
    keys = list(teams)
    match = []
    means: list[tuple[float, float]] = []
    for key in keys:
        members = [ratings.get(p.player, default) for p in teams[key]]
        mu = sum(m for m, _ in members) / len(members)
        sigma = math.sqrt(sum(s * s for _, s in members) / len(members))
        means.append((mu, sigma))
        side_mu, side_sigma = sides.get(key[1], default)
        match.append([MODEL.rating(mu=mu, sigma=sigma), MODEL.rating(mu=side_mu, sigma=side_sigma)])
    ranks = [1.0 if teams[key][0].won else 2.0 for key in keys]
    rated = MODEL.rate(match, ranks=ranks)
    new_ratings: dict[str, tuple[float, float]] = {}
    side_moves: dict[str, list[tuple[float, float]]] = {}
    for key, (mean_mu, mean_sigma), (team, side) in zip(keys, means, rated, strict=True):
        shift, shrink = team.mu - mean_mu, team.sigma / mean_sigma
        for player in teams[key]:
            mu, sigma = ratings.get(player.player, default)
            new_ratings[player.player] = (mu + shift, sigma * shrink)
        side_moves.setdefault(key[1], []).append((side.mu, side.sigma))
    new_sides = {
        side: (sum(m for m, _ in moves) / len(moves), sum(s for _, s in moves) / len(moves))
        for side, moves in side_moves.items()
    }
    return new_ratings, new_sides


async def rebuild_stats(storage: Storage, guild_id: int | None = None) -> int:
    """Recompute every figure and rating from the archive; returns the games counted."""
    return await storage.rebuild_stats(rate_game, guild_id)


# ---------------------------------------------------------------------- the archiver


class Archiver:
    """Archives games as they end (the service's after-commit hook) and at start.

    ``announce`` makes the outbox items that post the end-of-game picture; they
    are stored in the archiving transaction (never for a backfilled game).
    """

    def __init__(
        self,
        storage: Storage,
        *,
        announce: Announce | None = None,
        on_archived: Callable[[ArchivedGame], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.storage = storage
        self.announce = announce
        self.on_archived = on_archived
        self.clock = clock
        self._tasks: dict[int, asyncio.Task[ArchivedGame | None]] = {}

    def game_ended(self, live: LiveGame) -> None:
        """The service's after-commit hook: archive a game that has just ended."""
        record = live.record
        if record.state not in FINISHED or record.setup is None or record.id in self._tasks:
            return
        self.schedule(record.id, post=True)

    def schedule(self, game_id: int, *, post: bool) -> asyncio.Task[ArchivedGame | None]:
        """Archive a game in the background (once at a time)."""
        task = self._tasks.get(game_id)
        if task is None or task.done():
            task = asyncio.get_running_loop().create_task(
                self.archive(game_id, post=post), name=f"archive-{game_id}"
            )
            self._tasks[game_id] = task
            task.add_done_callback(lambda _: self._tasks.pop(game_id, None))
        return task

    async def archive(self, game_id: int, *, post: bool) -> ArchivedGame | None:
        """Archive one finished game (nothing if it is archived already); post its picture if
        ``post``. Returns what was archived, or None."""
        try:
            source = await self.storage.archive_source(game_id)
            if source is None:
                return None
            archived = build_archive(source, ended_at=self.clock() if post else None)
            items = await self.announce(source.record, archived) if post and self.announce else []
            if not await self.storage.archive_game(archived, rate=rate_game, outbox=items):
                return None
        except ArchiveError as error:
            log.info("game %s is not archived: %s", game_id, error)
            return None
        except Exception:
            log.exception(
                "game %s could not be archived; it will be tried again at the next start", game_id
            )
            return None
        log.info(
            "game %s archived: %s, winners %s, %d players",
            game_id,
            archived.ended,
            archived.winners or "none",
            len(archived.players),
        )
        if self.on_archived is not None:
            try:
                self.on_archived(archived)
            except Exception:
                log.exception("after archiving game %s", game_id)
        return archived

    async def sweep(self) -> int:
        """Archive every finished game that is not archived yet; returns how many were.

        A game finished before the archive existed is archived quietly; one whose
        archiving a crash interrupted gets its picture posted now.
        """
        count = 0
        for game_id, backfill in await self.storage.games_to_archive():
            if await self.schedule(game_id, post=not backfill) is not None:
                count += 1
        if count:
            log.info("archived %d finished game(s) at start", count)
        return count

    async def settle(self) -> None:
        """Wait for every archiving under way (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks.values()), return_exceptions=True)
