"""Rules engine speed: commands per second on a 1,000-player game, and replay time.

Plays a 10-city game of 1,000 players (100 per city, dealt with the default
counts) with a seeded driver that makes everyone act every phase: nominations,
votes and moved votes by day, proposals, checks, tours, the maniac by night,
the doctor and the journalist. The command log is recorded, then timed:

- applying the whole log to a fresh game (commands applied per second);
- replaying the first 10,000 commands from plain data (``command_from_dict``),
  as the bot does after a restart.

Run: ``python benchmarks/rules_bench.py``
"""

from __future__ import annotations

import random
import statistics
import time

from rules import (
    CastVote,
    Check,
    Command,
    Compare,
    EndDay,
    EndNight,
    Execute,
    Game,
    Kill,
    Nominate,
    Protect,
    RuleError,
    Stage,
    StartVoting,
    Status,
    Tour,
    command_from_dict,
    command_to_dict,
    deal,
)

CITIES = 10
PER_CITY = 100
SEED = 2026


def record_game() -> tuple[Game, list[Command]]:
    """Play a whole game with a seeded driver; the final game and the accepted commands."""
    cities = {f"City{c}": [f"c{c}p{p}" for p in range(PER_CITY)] for c in range(CITIES)}
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


def main() -> None:
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
