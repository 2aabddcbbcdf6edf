"""A process that plays one game on a SQLite file and says on stdout what it acknowledged, for
:mod:`tests.bot.test_power_loss`: a line of JSON once each change is stored (what a player
would then be told), with the interaction's id, the log's seq and the game's state. After its
last command it waits to be killed.

Run: ``python -m tests.bot.acknowledging DATABASE SYNCHRONOUS COMMANDS [--no-checkpoints]``.
"""

from __future__ import annotations

import asyncio
import json
import sys

import bot.storage
from bot.config import Config
from bot.service import GameService, LiveGame
from bot.storage import OutboxItem, Storage
from rules import CastVote, Command, Event, Nominate, StartVoting, Unvote, deal

CITIES = {"A": [f"a{i}" for i in range(6)], "B": [f"b{i}" for i in range(6)]}
PLAYERS = [{"id": 100 + n, "name": name} for n, name in enumerate(CITIES["A"] + CITIES["B"])]


def announce(live: LiveGame, events: list[Event]) -> list[OutboxItem]:
    return [
        OutboxItem("send", {"channel_id": 1}, {"content": f"{e.kind} " + "·" * 200}) for e in events
    ]


def commands(count: int) -> list[Command]:
    """Two nominations a city, the voting, then votes taken back and cast again."""
    played: list[Command] = [Nominate("a0", "a1"), Nominate("b0", "b1"), StartVoting()]
    voters = [(name, "a1") for name in CITIES["A"][2:]] + [(name, "b1") for name in CITIES["B"][2:]]
    while len(played) < count:
        for voter, nominee in voters:
            played += [CastVote(voter, nominee), Unvote(voter)]
    return played[:count]


def said(**what: object) -> None:
    print(json.dumps(what), flush=True)


async def main(path: str, synchronous: str, count: int, checkpoints: bool) -> None:
    if not checkpoints:  # nothing fsyncs the WAL but COMMIT itself
        bot.storage.sqlite.CHECKPOINT_SECONDS, bot.storage.sqlite.WAL_LIMIT_BYTES = 3600.0, 1 << 40
    storage = await Storage.open(path, synchronous=synchronous)
    service = GameService(storage, Config(database=path, snapshot_every=4))
    service.render = announce
    live = await service.create(1, 9, {"players": PLAYERS}, interaction_id=1)
    said(interaction=1, game=live.id, state=None)
    await service.start(live.id, deal(CITIES, 5), 5, interaction_id=2)
    assert live.game is not None
    said(interaction=2, game=live.id, state=live.game.to_dict())
    for index, command in enumerate(commands(count)):
        applied = await service.apply(live.id, command, source="player", interaction_id=10 + index)
        said(interaction=10 + index, seq=applied.seq, state=live.game.to_dict())
    said(done=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(
        main(sys.argv[1], sys.argv[2], int(sys.argv[3]), "--no-checkpoints" not in sys.argv)
    )
