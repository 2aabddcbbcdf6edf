"""Rules engine speed: commands per second on a 1,000-player game, and replay time.

Plays a 10-city game of 1,000 players (100 per city, dealt with the default
counts) with a seeded driver that makes everyone act every phase: nominations,
votes and moved votes by day, proposals, checks, tours, the maniac by night,
the doctor and the journalist. The command log is recorded, then timed:

- applying the whole log to a fresh game (commands applied per second);
- replaying the first 10,000 commands from plain data (``command_from_dict``),
  as the bot does after a restart.

``--per-command`` (also part of the default run) plays the same driver's games of 16, 100
and 1,000 players through the game service (``GameService.apply``: its lock, checks, undo,
the votes' observer, with a database that stores nothing), and prints what one command costs
early (day 1) and late (the last two days) in each, beside what the whole copy of the game
and its record that each command once kept would cost there (``--per-command`` alone skips
the rest).

Run: ``python benchmarks/rules_bench.py``
"""

from __future__ import annotations

import asyncio
import pickle
import random
import statistics
import sys
import time
from typing import Any

from rules import (
    CastVote,
    Command,
    EndDay,
    EndNight,
    Execute,
    Game,
    Kill,
    Nominate,
    RuleError,
    Stage,
    StartVoting,
    Status,
    Tour,
    command_from_dict,
    command_to_dict,
    deal,
)
from rules.roles.commissar import Check
from rules.roles.doctor import Protect
from rules.roles.journalist import Compare

CITIES = 10
PER_CITY = 100
SEED = 2026


def record_game(count: int = CITIES, per_city: int = PER_CITY) -> tuple[Game, list[Command]]:
    """Play a whole game with a seeded driver; the final game and the accepted commands."""
    cities = {f"City{c}": [f"c{c}p{p}" for p in range(per_city)] for c in range(count)}
    game = Game.create(deal(cities, SEED), SEED)
    rng = random.Random(SEED)
    log: list[Command] = []

    def attempt(command: Command) -> None:
        try:
            game.apply(command)
        except RuleError:
            return
        log.append(command)

    while not game.over:
        if game.stage is Stage.DISCUSSION:
            for city in game.cities:
                living = game.alive(city)
                for nominator in rng.sample(living, min(5, len(living))):
                    attempt(Nominate(nominator, rng.choice(living)))
            for player in game.alive():
                status = game.status_of(player)
                if status is Status.DOCTOR:
                    attempt(Protect(player, rng.choice(game.alive())))
                elif status is Status.JOURNALIST:
                    attempt(Compare(player, *rng.sample(list(game.players), 2)))
            attempt(StartVoting())
        elif game.stage is Stage.VOTING:
            for city in game.cities:
                nominees = game.nominees(city)
                if not nominees:
                    continue
                for voter in game.alive(city):
                    attempt(CastVote(voter, rng.choice(nominees)))
                    if rng.random() < 0.2:
                        attempt(CastVote(voter, rng.choice(nominees)))
            attempt(EndDay())
        elif game.stage is Stage.EXECUTION:
            attempt(Execute(rng.choice(game.alive())))
        else:
            touring = game.touring_city()
            everyone = game.alive()
            for city in game.cities:
                living = game.alive(city)
                for player in living:
                    status = game.status_of(player)
                    if status is Status.MAFIOSO:
                        attempt(Kill(player, rng.choice(living)))
                        if city == touring:
                            attempt(Tour(player, rng.choice(everyone)))
                    elif status is Status.COMMISSAR:
                        attempt(Check(player, rng.choice(living)))
                    elif status is Status.MANIAC:
                        attempt(Kill(player, rng.choice(everyone)))
            attempt(EndNight())
    return game, log


def time_apply(game: Game, commands: list[Command]) -> float:
    fresh = Game.create(game.setup, game.seed)
    start = time.perf_counter()
    for command in commands:
        fresh.apply(command)
    return time.perf_counter() - start


def time_replay(game: Game, plain: list[dict[str, object]]) -> float:
    start = time.perf_counter()
    fresh = Game.create(game.setup, game.seed)
    for data in plain:
        fresh.apply(command_from_dict(data))
    return time.perf_counter() - start


#: the games the per-command costs are measured in: (cities, players per city)
SIZES = ((2, 8), (5, 20), (10, 100))

#: player commands timed per window (with the host's commands between them, untimed)
WINDOW = 300

ROUNDS = 5


class NoDatabase:
    """Stores nothing: the service's own cost, without the commit's."""

    async def append_command(self, record: Any, *args: Any, **kwargs: Any) -> int:
        return int(record.command_count)


class Window:
    """A stretch of a recorded game: the state it starts from and its commands."""

    def __init__(self, players: int, days: int, name: str, live: Any, commands: list[Command]):
        self.players, self.days, self.name, self.commands = players, days, name, commands
        self.state = (live.game.to_dict(), pickle.dumps(live.record), dict(live.tick_times))
        self.copy = whole_copy(live)
        self.medians: list[float] = []

    def fresh(self) -> Any:
        """A service holding the game as the window begins (its commands not yet applied)."""
        from bot.config import Config
        from bot.service import GameService, LiveGame
        from cogs.votes import observe

        state, record, times = self.state
        service = GameService(NoDatabase(), Config(database=":memory:"))  # type: ignore[arg-type]
        service.observers.append(observe)
        live = LiveGame(pickle.loads(record), game=Game.from_dict(state))
        live.tick_times = dict(times)
        service._keep(live)
        return service

    async def time(self) -> None:
        """Apply the window's commands once; its player commands' median CPU (µs) noted."""
        service = self.fresh()
        spent = []
        for command in self.commands:
            start = time.process_time()
            await service.apply(1, command, source="player")
            if hasattr(command, "actor"):
                spent.append((time.process_time() - start) * 1e6)
        self.medians.append(statistics.median(spent))


async def windows(count: int, per_city: int) -> list[Window]:
    """Day 1's and the last two days' first player commands of a recorded game."""
    from bot.config import Config
    from bot.service import GameService, LiveGame
    from bot.storage import GameRecord, GameState
    from cogs.votes import observe

    final, log = record_game(count, per_city)
    game = Game.create(final.setup, final.seed)
    seats = [{"id": 10**17 + i, "name": f"member {i}"} for i in range(len(game.players))]
    record = GameRecord(
        1, 1, 1, GameState.RUNNING, 0.0, {"players": seats}, game.setup.to_dict(), final.seed
    )
    service = GameService(NoDatabase(), Config(database=":memory:"))  # type: ignore[arg-type]
    service.observers.append(observe)
    live = LiveGame(record, game=game)
    service._keep(live)
    last, found = final.phase.number, []
    for at, command in enumerate(log):
        name = "early" if at == 0 else "late" if game.phase.number >= last - 1 else ""
        if name and name not in [w.name for w in found]:
            rest = log[at:]
            ends = [i for i, c in enumerate(rest) if hasattr(c, "actor")][:WINDOW]
            found.append(Window(count * per_city, last, name, live, rest[: ends[-1] + 1]))
        await service.apply(1, command, source="player")
    return found


def whole_copy(live: Any) -> float:
    """What keeping the whole game and record costs (µs), as every command once did."""
    start = time.process_time()
    for _ in range(20):
        live.game.to_dict()
        pickle.dumps(live.record, protocol=pickle.HIGHEST_PROTOCOL)
        dict(live.tick_times)
    return (time.process_time() - start) / 20 * 1e6


def per_command() -> None:
    print(
        f"CPU per player command through the service (µs; no database): the median of its "
        f"first {WINDOW} player commands, the best of {ROUNDS} rounds taken in turn:"
    )
    found = [w for size in SIZES for w in asyncio.run(windows(*size))]
    for _ in range(ROUNDS):
        for window in found:
            asyncio.run(window.time())
    for window in found:
        print(
            f"  {window.players:>5} players ({window.days:>2} days), {window.name:<5}: "
            f"{min(window.medians):6.1f} (whole copy of game and record there: "
            f"{window.copy:7.1f})"
        )
    best = [min(window.medians) for window in found]
    print(f"  largest / smallest: {max(best) / min(best):.2f}x")


def main() -> None:
    per_command()
    if "--per-command" in sys.argv[1:]:
        return
    game, log = record_game()
    print(
        f"game: {CITIES} cities x {PER_CITY} players, seed {SEED}: {len(log)} accepted commands, "
        f"ended at {game.phase}, {len(game.deaths)} deaths, winners {game.winners()}"
    )
    runs = [time_apply(game, log) for _ in range(5)]
    best, median = min(runs), statistics.median(runs)
    print(
        f"apply: {len(log) / median:,.0f} commands/s median of 5 "
        f"(best {len(log) / best:,.0f}/s; {median * 1e6 / len(log):.1f} us per command)"
    )
    plain = [command_to_dict(command) for command in log[:10_000]]
    replays = [time_replay(game, plain) for _ in range(5)]
    print(
        f"replay of {len(plain):,} commands from plain data: "
        f"{statistics.median(replays) * 1000:.0f} ms median of 5 (best {min(replays) * 1000:.0f} ms)"
    )
    start = time.perf_counter()
    state = game.to_dict()
    Game.from_dict(state)
    print(
        f"snapshot round trip (to_dict + from_dict) of the final state: "
        f"{(time.perf_counter() - start) * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
