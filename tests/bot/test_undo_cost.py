"""A command's undo is kept by what it changes (:class:`bot.service.Before`): a player's command
copies neither the rules' game nor the record, whatever their size, and one that is not stored
still leaves the game, its record and its votes' times exactly as they were."""

from __future__ import annotations

import json
import pickle
import sqlite3
from typing import Any

import pytest

from bot.config import Config
from bot.service import GameService, LiveGame, NotStored
from bot.service import live as live_module
from bot.storage import OutboxItem, Storage
from cogs.votes import observe
from rules import CastVote, EndDay, Game, Nominate, StartVoting, Unvote, deal
from rules.events import Event

CITIES = {"A": [f"a{i}" for i in range(8)], "B": [f"b{i}" for i in range(8)]}


def announce(live: LiveGame, events: list[Event]) -> list[OutboxItem]:
    return [OutboxItem("send", {"channel_id": 1}, {"content": e.kind}) for e in events]


async def voting_game(database: Any) -> tuple[GameService, LiveGame]:
    """A game at day 1's voting, its lobby as big as a real one (seats, past tallies)."""
    storage = await Storage.open(database)
    service = GameService(storage, Config(database=database, snapshot_every=10_000), clock=clock())
    service.render = announce
    service.observers.append(observe)
    seats = [{"id": 1000 + i, "name": f"player {i}"} for i in range(16)]
    votes = [{"day": 0, "city": "A", "ballots": [["a1", "a2"]] * 50}]
    live = await service.create(1, 99, {"players": seats, "votes": votes})
    await service.start(live.id, deal(CITIES, 4), 4)
    for voter, target in (("a0", "a1"), ("a2", "a3"), ("b0", "b1")):
        await service.apply(live.id, Nominate(voter, target), source="player")
    await service.apply(live.id, StartVoting(), source="host")
    return service, live


def clock() -> Any:
    now = [1000.0]

    def tick() -> float:
        now[0] += 1.0
        return now[0]

    return tick


class Copies:
    """Counts the whole copies a change makes: the game's plain data, the record pickled."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.games = self.records = 0
        to_dict, dumps = Game.to_dict, pickle.dumps

        def game_copy(game: Game) -> dict[str, Any]:
            self.games += 1
            return to_dict(game)

        def record_copy(value: Any, *args: Any, **kwargs: Any) -> bytes:
            self.records += 1
            return dumps(value, *args, **kwargs)

        monkeypatch.setattr(Game, "to_dict", game_copy)
        monkeypatch.setattr(live_module.pickle, "dumps", record_copy)


async def test_a_players_command_copies_neither_the_game_nor_the_record(database, monkeypatch):
    service, live = await voting_game(database)
    try:
        copies = Copies(monkeypatch)
        for voter, target in (("a0", "a1"), ("a2", "a3"), ("a0", "a3"), ("b2", "b1")):
            await service.apply(live.id, CastVote(voter, target), source="player")
        await service.apply(live.id, Unvote("a2"), source="player")
        assert (copies.games, copies.records) == (0, 0)
        # the day's end moves the stage and writes the whole record: the record is kept whole
        await service.apply(live.id, EndDay(), source="host")
        assert (copies.games, copies.records) == (0, 1)
        assert live.game.stage.value in ("night", "execution")
    finally:
        await service.storage.close()


async def test_a_vote_not_stored_leaves_game_record_and_times_exactly_as_before(database):
    service, live = await voting_game(database)
    try:
        await service.apply(live.id, CastVote("a0", "a1"), source="player")
        await service.apply(live.id, CastVote("a2", "a3"), source="player")
        game, record, times = (
            json.dumps(live.game.to_dict()),
            pickle.dumps(live.record),
            dict(live.tick_times),
        )
        real = service.storage.append_command

        async def disk_full(*args: Any, **kwargs: Any) -> int:
            raise sqlite3.OperationalError("database or disk is full")

        service.storage.append_command = disk_full  # type: ignore[method-assign]
        # a moved vote (taken out of the middle of the ballot), a new one, the day's end
        for command in (CastVote("a0", "a3"), CastVote("a4", "a1"), EndDay()):
            with pytest.raises(NotStored):
                await service.apply(live.id, command, source="player")
            assert json.dumps(live.game.to_dict()) == game
            assert pickle.dumps(live.record) == record
            assert live.tick_times == times and list(live.tick_times) == list(times)
        service.storage.append_command = real  # type: ignore[method-assign]
        await service.apply(live.id, CastVote("a0", "a3"), source="player")
        assert list(live.game.votes["A"]) == ["a2", "a0"]
    finally:
        await service.storage.close()
