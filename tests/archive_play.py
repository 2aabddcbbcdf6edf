"""Random games for the archive's tests and benchmark: any legal act, and the game moves on.

:func:`next_command` picks what someone does next in a game (a player's legal
act, the host's act, the timer moving the stage on), so a loop of it plays a
game to its end: every day kills at least one resident per city.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from rules import (
    CastVote,
    Command,
    Elect,
    EndDay,
    EndNight,
    Execute,
    Game,
    Kill,
    Nominate,
    Pass,
    ProcuratorKill,
    RequestLastWord,
    RuleError,
    SetTouringOrder,
    Stage,
    StartVoting,
    Tour,
    Unvote,
)
from rules.roles.commissar import Check
from rules.roles.doctor import Protect
from rules.roles.journalist import Compare
from tests.rules.helpers import TWO_CITIES

TARGETED = {
    "nominate": Nominate,
    "vote": CastVote,
    "protect": Protect,
    "elect": Elect,
    "kill": Kill,
    "tour": Tour,
    "check": Check,
}


def _player_act(game: Game, rng: random.Random, verbs: tuple[str, ...]) -> Command | None:
    player = rng.choice(game.alive())
    actions = [a for a in game.legal_actions(player) if a.verb in verbs]
    if not actions:
        return None
    action = rng.choice(actions)
    if action.verb in TARGETED:
        assert action.targets
        return TARGETED[action.verb](player, rng.choice(action.targets))
    if action.verb == "compare":
        assert action.targets
        first, second = rng.sample(list(action.targets), 2)
        return Compare(player, first, second)
    return {"unvote": Unvote, "lastword": RequestLastWord, "pass": Pass}[action.verb](player)


def next_command(
    game: Game, rng: random.Random, *, retour: float = 0.0, host_kill: float = 0.01
) -> tuple[Command, str]:
    """Something to do now in ``game`` and who does it (``player``, ``host``, ``timer``)."""
    mover = rng.choice(("host", "timer"))
    if rng.random() < host_kill and len(game.alive()) > 2:
        return ProcuratorKill(rng.choice(game.alive())), "host"
    if game.stage is Stage.EXECUTION:
        return Execute(rng.choice(game.alive())), "host"
    if game.stage is Stage.DISCUSSION:
        if retour and rng.random() < retour:
            order = list(game.cities)
            rng.shuffle(order)
            return SetTouringOrder(tuple(order[: rng.randint(1, len(order))])), "host"
        if rng.random() < 0.8:
            act = _player_act(game, rng, ("nominate", "protect", "compare", "elect", "lastword"))
            if act is not None:
                return act, "player"
        return StartVoting(), mover
    if game.stage is Stage.VOTING:
        if rng.random() < 0.85:
            act = _player_act(game, rng, ("vote", "unvote", "lastword", "elect"))
            if act is not None:
                return act, "player"
        return EndDay(), mover
    if rng.random() < 0.8:
        act = _player_act(game, rng, ("kill", "tour", "check", "pass", "elect"))
        if act is not None:
            return act, "player"
    return EndNight(), mover


def random_game(
    game: Game, rng: random.Random, *, limit: int = 20_000, **options: float
) -> Iterator[tuple[Command, str]]:
    """Play ``game`` to its end; yields each accepted command and its source."""
    for _ in range(limit):
        if game.over:
            return
        command, source = next_command(game, rng, **options)
        try:
            game.apply(command)
        except RuleError:
            continue
        yield command, source
    raise AssertionError("the game did not end")


def crowd_game(
    cities: int, per_city: int, seed: int, *, maniac: bool = True
) -> tuple[Game, list[tuple[Command, str]]]:
    """A big game played to its end quickly (no legal-action search): every day each city
    nominates and most residents vote, every night each Godfather kills, tours and the
    commissars check. Returns the final game and its log."""
    from rules import RoleCounts, deal

    seats = {f"Город{c}": [f"c{c}p{i}" for i in range(per_city)] for c in range(cities)}
    game = Game.create(
        deal(seats, seed, RoleCounts(doctor=False, journalist=False, maniac=maniac)), seed
    )
    rng = random.Random(seed)
    log: list[tuple[Command, str]] = []

    def do(command: Command, source: str) -> None:
        try:
            game.apply(command)
        except RuleError:
            return
        log.append((command, source))

    while not game.over:
        if game.stage is Stage.DISCUSSION:
            for city in game.cities:
                alive = game.alive(city)
                for _ in range(min(3, len(alive))):
                    do(Nominate(rng.choice(alive), rng.choice(alive)), "player")
            do(StartVoting(), "timer")
        elif game.stage is Stage.VOTING:
            for city in game.cities:
                nominees = [n for n in game.nominees(city) if game.is_alive(n)]
                for voter in game.alive(city):
                    if nominees and rng.random() < 0.7:
                        do(CastVote(voter, rng.choice(nominees)), "player")
            do(EndDay(), "timer")
        elif game.stage is Stage.EXECUTION:
            do(Execute(rng.choice(game.alive())), "host")
        else:
            touring = game.touring_city()
            everyone = game.alive()
            for city in game.cities:
                godfather = game.godfather_of(city)
                honest = game.honest_residents(city)
                if godfather is not None and honest:
                    do(Kill(godfather, rng.choice(honest)), "player")
                if godfather is not None and city == touring:
                    do(Tour(godfather, rng.choice(everyone)), "player")
                for name in game.alive(city):
                    if game.status_of(name).value == "commissar":
                        do(Check(name, rng.choice(game.alive(city))), "player")
                    elif game.status_of(name).value == "maniac":
                        do(Kill(name, rng.choice(everyone)), "player")
            do(EndNight(), "timer")
    return game, log


def source_of(
    game: Game,
    log: list[tuple[Command, str]],
    *,
    game_id: int = 1,
    guild_id: int = 1,
    names: dict[str, str] | None = None,
    ended: str = "over",
):  # type: ignore[no-untyped-def]
    """An :class:`bot.storage.ArchiveSource` for a game played outside the service (its lobby
    names are ``names``, else the player ids)."""
    from bot.storage import ArchiveSource, GameRecord, LoggedCommand
    from rules import command_to_dict

    seated = [*game.players, *(old for old, _ in game.replaced)]
    players = [{"id": player, "name": (names or {}).get(player, player)} for player in seated]
    record = GameRecord(
        id=game_id,
        guild_id=guild_id,
        host_id=1,
        state=ended,
        created_at=1.0e9,
        lobby={"players": players},
        setup=game.setup.to_dict(),
        seed=game.seed,
    )
    rows = [
        LoggedCommand(seq, command_to_dict(command), source, 1.0e9 + seq)
        for seq, (command, source) in enumerate(log, 1)
    ]
    return ArchiveSource(record=record, log=rows, voice=[])


#: the two cities of 14 players the community's games were played in (Padua's grumio is the maniac)
FOURTEEN = {**TWO_CITIES, "Padua": {**TWO_CITIES["Padua"], "grumio": "maniac"}}


def showcase_game(
    seed: int = 8, cities: tuple[str, str] = ("Verona", "Padua")
) -> tuple[Game, list[tuple[Command, str]]]:
    """A game of 14 in two cities that has every way out of it: executions by vote, by
    another city's vote, on the host's choice and by lot; the mafia at home and on tour, the
    maniac; the Procurator's kill and the bot's strike-out of a player who left; a
    replacement. Days 1 and 2 are scripted, the rest is played at random to the end.
    ``cities`` names the two cities (Verona's and Padua's seats)."""
    from rules import ExecuteByLot, Replace, Setup

    seats = dict(zip(cities, FOURTEEN.values(), strict=True))
    game = Game.create(Setup.from_dict({"cities": seats, "rules": {"day_fallback": "host"}}), seed)
    log: list[tuple[Command, str]] = []

    def do(command: Command, source: str = "player") -> None:
        game.apply(command)
        log.append((command, source))

    # day 1: Verona votes sampson out; Padua casts no vote and the host names curtis
    do(Nominate("romeo", "sampson"))
    do(StartVoting(), "timer")
    for voter in ("romeo", "mercutio", "tybalt", "escalus"):
        do(CastVote(voter, "sampson"))
    do(EndDay(), "timer")
    do(Execute("curtis"), "host")
    # night 1: Verona's mafia kills at home and tours to Padua; the maniac kills
    do(Kill("tybalt", "gregory"))
    do(Tour("tybalt", "gremio"))
    do(Kill("grumio", "friar"))
    do(EndNight(), "timer")
    # day 2: romeo leaves, juliet takes his seat; bianca left the server and is struck out;
    # Padua votes mercutio (of Verona) out with all its votes; Verona casts none: by lot
    from rules import ProcuratorKill as Strike

    do(Replace("romeo", "juliet"), "host")
    do(Strike("bianca"), "timer")
    do(Nominate("tranio", "mercutio"))
    do(StartVoting(), "timer")
    for voter in ("lucentio", "baptista", "tranio", "grumio"):
        do(CastVote(voter, "mercutio"))
    do(EndDay(), "timer")
    do(ExecuteByLot(), "timer")
    rng = random.Random(seed)
    for command, source in random_game(game, rng, host_kill=0.05):
        log.append((command, source))
    return game, log
