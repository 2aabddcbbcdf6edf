"""The archive without Discord: games played through the service, archived, exported, replayed.

Each game is played by the real service (commit, log, after-commit hook) with
random legal acts; the archive is read back and exported, and the exported file
is played by ``mafia-bot simulate --json`` as anyone would play it.
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bot.archive import Archiver, build_archive, rate_game, rebuild_stats
from bot.cli import main
from bot.config import Config
from bot.export import ExportError, export_scenario, scenario_data, scenario_names
from bot.i18n import t
from bot.service import GameService, LiveGame
from bot.simulate import simulate
from bot.storage import ArchivedGame, Storage
from rules import (
    EndDay,
    EndNight,
    Nominate,
    Replace,
    RoleCounts,
    RuleError,
    RuleOptions,
    SetTouringOrder,
    StartVoting,
    deal,
)
from tests.archive_play import next_command
from tests.storage.plugin import raw

#: display names as a lobby may have them: spaces, case, the host's word, nothing
NAMES = [
    "Анна Каренина",
    "анна_каренина",
    "host",
    "  ",
    "Пьер",
    "Пьер",
    "Наташа",
    "Андрей",
    "Долохов",
    "Элен",
    "Соня",
    "Николай",
    "Марья",
    "Денисов",
    "Платон",
    "Берг",
]


def lobby(count: int) -> dict[str, Any]:
    return {"players": [{"id": 1000 + i, "name": NAMES[i % len(NAMES)]} for i in range(count)]}


async def open_archive(path: Path) -> tuple[GameService, Archiver]:
    storage = await Storage.open(path)
    service = GameService(storage, Config(database=path), clock=lambda: 1_700_000_000.0)
    archiver = Archiver(storage)
    service.after_commit.append(archiver.game_ended)
    return service, archiver


async def play_game(
    service: GameService,
    *,
    guild: int = 1,
    seed: int,
    players: int = 16,
    cities: int = 2,
    retour: float = 0.0,
    maniac: bool = False,
    end_by_host_after: int | None = None,
    replace: tuple[int, str] | None = None,
    **rules: Any,
) -> LiveGame:
    """A game dealt and played through the service to its end (or ended by the host)."""
    live = await service.create(guild, 77, lobby(players))
    ids = [str(p["id"]) for p in live.record.lobby["players"]]
    seats = {f"Город{c}": ids[c::cities] for c in range(cities)}
    setup = deal(seats, seed, RoleCounts(maniac=maniac), RuleOptions.from_dict(rules))
    await service.start(live.id, setup, seed)
    if replace is not None:  # (the seat's index, the newcomer): /host replace before any move
        await service.apply(live.id, Replace(ids[replace[0]], replace[1]), source="host")
    rng = random.Random(seed)
    applied = 0
    while live.game is not None and not live.game.over:
        if end_by_host_after is not None and applied >= end_by_host_after:

            def cancel(live: LiveGame) -> list:
                live.record.state = "cancelled"
                return []

            await service.update(live.id, cancel)
            break
        command, source = next_command(live.game, rng, retour=retour)
        try:
            await service.apply(live.id, command, source=source)
        except RuleError:
            continue
        applied += 1
    return live


def simulated(tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "exported.yaml"
    path.write_text(text, encoding="utf-8")
    return json.loads(simulate(path, as_json=True))


def expected_deaths(archived: ArchivedGame) -> list[dict[str, str]]:
    ids = [p.player for p in archived.players]
    names = scenario_names(ids, archived.names)
    return [
        {
            "player": names[d.player],
            "city": d.city,
            "status": d.status,
            "cause": d.cause,
            "phase": d.phase,
        }
        for d in archived.deaths
    ]


CASES = [
    pytest.param({"seed": 1}, id="seed1"),
    pytest.param({"seed": 2, "first_phase": "night"}, id="night-first"),
    pytest.param({"seed": 3, "day_fallback": "host"}, id="fallback-host"),
    pytest.param(
        {"seed": 4, "day_fallback": "random", "players": 24, "cities": 3}, id="three-cities"
    ),
    pytest.param({"seed": 5, "maniac": True, "players": 20}, id="maniac"),
    pytest.param(
        {
            "seed": 6,
            "maniac": True,
            "players": 20,
            "maniac_wins_if_survives": True,
            "day_fallback": "host",
        },
        id="maniac-survives",
    ),
    pytest.param({"seed": 7, "retour": 0.15, "players": 24, "cities": 3}, id="touring-changed"),
    pytest.param(
        {"seed": 8, "retour": 0.2, "day_fallback": "host", "first_phase": "night"},
        id="touring-host-night",
    ),
]


@pytest.mark.parametrize("case", CASES)
async def test_a_finished_game_is_archived_and_its_export_simulates_to_the_same_result(
    database, tmp_path, case
):
    service, archiver = await open_archive(database)
    live = await play_game(service, **case)
    await archiver.settle()
    archived = await service.storage.archived_game(live.id)
    assert archived is not None and archived.over
    game = live.game
    assert game is not None and game.over
    assert archived.winners == game.winners()
    assert [(d.player, d.cause, d.phase) for d in archived.deaths] == [
        (d.player, d.cause.value, str(d.phase)) for d in game.deaths
    ]
    log_rows = await service.storage.commands(live.id)
    assert [command for command, _ in archived.log] == [row.command for row in log_rows]
    if case.get("retour"):
        assert any(command["verb"] == "touring" for command, _ in archived.log), (
            "no touring change played"
        )
    text = export_scenario(archived)
    result = simulated(tmp_path, text)
    assert all(step["ok"] for step in result["steps"])
    assert result["deaths"] == expected_deaths(archived)
    assert result["winners"] == archived.winners
    assert result["over"] is True
    await service.storage.close()


async def test_a_game_ended_by_the_host_is_archived_and_exported_as_far_as_it_went(
    database, tmp_path
):
    service, archiver = await open_archive(database)
    live = await play_game(service, seed=11, end_by_host_after=40)
    await archiver.settle()
    archived = await service.storage.archived_game(live.id)
    assert archived is not None and archived.ended == "cancelled"
    result = simulated(tmp_path, export_scenario(archived))
    assert result["over"] is False
    assert result["deaths"] == expected_deaths(archived)
    # a game the host ended counts in no figure
    assert await service.storage.leaderboard(1, "rating", limit=10) == []
    await service.storage.close()


async def test_archiving_twice_changes_nothing(database, tmp_path):
    service, archiver = await open_archive(database)
    live = await play_game(service, seed=12)
    await archiver.settle()
    before = await service.storage.leaderboard(1, "wins", limit=50)
    assert await archiver.archive(live.id, post=True) is None
    assert await archiver.sweep() == 0
    assert await service.storage.leaderboard(1, "wins", limit=50) == before
    assert (await raw(database, "SELECT COUNT(*) FROM archive"))[0][0] == 1
    await service.storage.close()


def test_scenario_names_are_unique_valid_words():
    ids = [str(i) for i in range(len(NAMES))]
    names = scenario_names(ids, dict(zip(ids, NAMES, strict=True)))
    values = list(names.values())
    assert len({v.casefold() for v in values}) == len(values)
    assert all(v and " " not in v and v.casefold() != "host" for v in values)
    assert names["0"] == "Анна_Каренина" and names["1"] == "анна_каренина_2"
    assert names["2"] == "host_" and names["3"] == "player"


async def test_votes_are_the_ones_each_city_counted(database, tmp_path):
    service, archiver = await open_archive(database)
    live = await service.create(1, 77, lobby(12))
    ids = [str(p["id"]) for p in live.record.lobby["players"]]
    setup = deal(
        {"A": ids[:6], "B": ids[6:]}, 3, RoleCounts(doctor=False, journalist=False, maniac=False)
    )
    await service.start(live.id, setup, 3)
    game = live.game
    assert game is not None
    a, b = game.residents["A"], game.residents["B"]
    await service.apply(live.id, Nominate(a[0], a[1]), source="player")
    await service.apply(live.id, Nominate(b[0], b[1]), source="player")
    await service.apply(live.id, StartVoting(), source="timer")
    from rules import CastVote, Unvote

    await service.apply(live.id, CastVote(a[2], a[1]), source="player")
    await service.apply(live.id, CastVote(a[3], a[1]), source="player")
    await service.apply(live.id, Unvote(a[3]), source="player")
    await service.apply(live.id, CastVote(b[2], b[1]), source="player")
    await service.apply(live.id, EndDay(), source="host")
    source = await service.storage.archive_source(live.id)
    assert source is not None
    source.record.state = "cancelled"
    archived = build_archive(source)
    assert [(v.day, v.city, v.voter, v.candidate) for v in archived.votes] == [
        (1, "A", a[2], a[1]),
        (1, "B", b[2], b[1]),
    ]
    await service.storage.close()


async def test_a_replaced_player_stays_in_the_record_as_replaced(database, tmp_path):
    from cogs.history_text import stats_lines, summary_lines

    service, archiver = await open_archive(database)
    live = await play_game(service, seed=31, players=12, replace=(0, "2000"))
    await archiver.settle()
    storage = service.storage
    archived = await storage.archived_game(live.id)
    assert archived is not None
    (left,) = archived.replaced
    assert (left.player, left.replaced_by, left.won, left.survived) == ("1000", "2000", 0, 0)
    assert "2000" in [p.player for p in archived.players]
    assert "1000" not in [p.player for p in archived.players]
    for language in ("ru", "en"):
        row = t(
            language,
            "archive.replaced",
            player="<@1000>",
            status=t(language, f"status.{left.status}"),
            new="<@2000>",
        )
        assert row in summary_lines(language, archived)
    stats = await storage.player_stats(1, "1000")
    assert stats is not None and (stats.games, stats.replaced) == (0, 1)
    assert t("en", "stats.replaced", count=1) in stats_lines("en", "<@1000>", stats)
    assert await rebuild_stats(storage) == 1
    again = await storage.player_stats(1, "1000")
    assert again is not None and (again.games, again.replaced) == (0, 1)
    newcomer = await storage.player_stats(1, "2000")
    assert newcomer is not None and (newcomer.games, newcomer.replaced) == (1, 0)
    await storage.close()


async def test_figures_and_ratings_rebuild_to_the_same_values(database, tmp_path):
    service, archiver = await open_archive(database)
    for seed in range(20, 26):
        await play_game(service, seed=seed, players=12, maniac=seed % 2 == 0)
        await archiver.settle()
    storage = service.storage
    before = await storage.leaderboard(1, "rating", limit=100)
    assert len(before) == 12 and all(row.games == 6 for row in before)
    total_wins = sum(row.wins for row in before)
    winners = (await raw(database, "SELECT COUNT(*) FROM archive_players WHERE won = 1"))[0][0]
    assert total_wins == winners
    assert await rebuild_stats(storage) == 6
    after = await storage.leaderboard(1, "rating", limit=100)
    assert [(r.player, r.games, r.wins, round(r.rating, 9)) for r in after] == [
        (r.player, r.games, r.wins, round(r.rating, 9)) for r in before
    ]
    await storage.close()


def test_the_rating_pays_more_for_a_win_with_the_weaker_side():
    from bot.storage import ArchivedPlayer

    def team(city: str, side: str, won: int, names: list[str]) -> list[ArchivedPlayer]:
        status = "mafioso" if side == "mafia" else "citizen"
        return [ArchivedPlayer(n, n, city, status, side, won, 1, 0, 0, 0, 0, 0) for n in names]

    players = team("A", "honest", 0, ["h1", "h2", "h3", "h4", "h5", "h6"]) + team(
        "A", "mafia", 1, ["m1", "m2"]
    )
    fresh, _ = rate_game(players, {}, {})
    # the same win when the mafia side has been winning everything in this guild
    strong_mafia = {"mafia": (35.0, 2.0), "honest": (15.0, 2.0)}
    expected, _ = rate_game(players, {}, strong_mafia)
    assert fresh["m1"][0] > expected["m1"][0] > 25.0
    assert fresh["h1"][0] < expected["h1"][0] < 25.0
    # team size does not make the honest residents favourites: a fresh win moves both alike
    assert abs((fresh["m1"][0] - 25.0) + (fresh["h1"][0] - 25.0)) < 1e-9


async def test_a_v1_database_with_finished_games_is_archived_when_upgraded(tmp_path):
    """Games finished before the archive existed are archived at the next start, quietly."""
    played = tmp_path / "played.sqlite3"
    service, _ = await open_archive(played)
    for seed in (31, 32):
        await play_game(service, seed=seed, players=10)
    running = await service.create(2, 77, lobby(10))
    await service.storage.close()
    # a V1 database (V1's schema alone) holding those games and their logs
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as raw:
        raw.executescript(Path("bot/migrations/V1__init.sql").read_text(encoding="utf-8"))
        raw.execute(
            "CREATE TABLE schema_migrations "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
        )
        raw.execute("INSERT INTO schema_migrations VALUES (1, 'V1__init.sql', 0)")
        raw.execute("ATTACH DATABASE ? AS played", (str(played),))
        for table in ("games", "commands", "snapshots"):
            columns = ", ".join(row[1] for row in raw.execute(f"PRAGMA main.table_info({table})"))
            raw.execute(
                f"INSERT INTO main.{table} ({columns}) SELECT {columns} FROM played.{table}"
            )
        raw.commit()
        raw.execute("DETACH DATABASE played")
        # later migrations may add columns (V3: stage_since); the ones V1 had are kept as they were
        game_columns = ", ".join(row[1] for row in raw.execute("PRAGMA main.table_info(games)"))
        games_before = raw.execute(f"SELECT {game_columns} FROM games ORDER BY id").fetchall()
        log_before = raw.execute("SELECT * FROM commands ORDER BY game_id, seq").fetchall()
    storage = await Storage.open(path)
    archiver = Archiver(storage)
    assert await archiver.sweep() == 2
    page, total = await storage.archived_games(1, offset=0, limit=10)
    assert total == 2 and [row.game_id for row in page] == [2, 1]
    assert await storage.archived_game(running.id) is None
    assert len(await storage.leaderboard(1, "rating", limit=100)) == 10
    # the wins board lists only those who won; every player is on the rating board
    winners = await storage.leaderboard(1, "wins", limit=100)
    assert winners and all(row.wins >= 1 for row in winners) and len(winners) < 10
    # nothing is announced for games that ended before the upgrade, and nothing was lost
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT COUNT(*) FROM outbox").fetchone()[0] == 0
        assert (
            raw.execute(f"SELECT {game_columns} FROM games ORDER BY id").fetchall() == games_before
        )
        assert raw.execute("SELECT * FROM commands ORDER BY game_id, seq").fetchall() == log_before
    assert await archiver.sweep() == 0
    await storage.close()


def test_export_on_the_command_line(database, tmp_path, capsys):
    async def prepare() -> int:
        service, archiver = await open_archive(database)
        live = await play_game(service, seed=41)
        await archiver.settle()
        await service.storage.close()
        return live.id

    game_id = asyncio.run(prepare())
    out = tmp_path / "game.yaml"
    assert (
        main(["export", "--database", str(database), "--game", str(game_id), "--out", str(out)])
        == 0
    )
    assert json.loads(simulate(out, as_json=True))["over"] is True
    assert main(["export", "--database", str(database), "--game", "999"]) == 2
    assert "999" in capsys.readouterr().err
    assert main(["rebuild-stats", "--database", str(database)]) == 0
    assert "1" in capsys.readouterr().out


async def test_a_game_whose_replay_differs_is_not_exported(database, tmp_path):
    service, archiver = await open_archive(database)
    live = await play_game(service, seed=51)
    await archiver.settle()
    archived = await service.storage.archived_game(live.id)
    assert archived is not None
    # a recorded result that the log does not give (a tampered archive) is refused, never exported
    forged = ArchivedGame(**{**archived.__dict__, "winners": [*archived.winners, "maniac"]})
    with pytest.raises(ExportError, match="winners"):
        export_scenario(forged)
    forged = ArchivedGame(**{**archived.__dict__, "deaths": archived.deaths[1:]})
    with pytest.raises(ExportError, match="deaths"):
        export_scenario(forged)
    data = scenario_data(archived)
    assert "host" not in data["cities"][next(iter(data["cities"]))]
    await service.storage.close()


def test_a_touring_change_maps_to_the_touring_city_of_every_night():
    from rules import Game, Stage, command_to_dict
    from rules.events import PhaseStarted

    cities = {name: [f"{name}{i}" for i in range(9)] for name in ("A", "B", "C")}
    setup = deal(cities, 9, RoleCounts(mafiosi=1, doctor=False, journalist=False, maniac=False))
    game = Game.create(setup, 9)
    log: list[tuple[dict[str, Any], str]] = []
    nights: list[str | None] = []
    for command in (
        StartVoting(),
        EndDay(),
        EndNight(),
        SetTouringOrder(("C", "C", "A")),
        StartVoting(),
        EndDay(),
        EndNight(),
        StartVoting(),
        EndDay(),
    ):
        events = game.apply(command)
        nights += [
            e.touring_city for e in events if isinstance(e, PhaseStarted) and e.stage is Stage.NIGHT
        ]
        log.append((command_to_dict(command), "host"))
    assert nights == ["A", "C", "A"]  # the default rotation would have given B on night 2
    archived = ArchivedGame(
        game_id=1,
        guild_id=1,
        host_id=1,
        ended="cancelled",
        created_at=0.0,
        ended_at=0.0,
        seed=9,
        setup=setup.to_dict(),
        names={},
        log=log,
        winners=game.winners(),
        last_phase=str(game.phase),
        cities=list(game.cities),
        deaths=[],
        votes=[],
        last_words=[],
        players=[],
    )
    data = scenario_data(archived)
    assert data["touring_order"] == nights
    assert len(data["steps"]) == len(log) - 1 and all(
        "touring" not in step for step in data["steps"]
    )
    # its executions are the game's deaths: the file must replay them, so record them
    deaths = [d for d in game.deaths]
    from bot.storage import ArchivedDeath

    archived = ArchivedGame(
        **{
            **archived.__dict__,
            "deaths": [
                ArchivedDeath(d.player, d.city, d.status.value, d.cause.value, str(d.phase))
                for d in deaths
            ],
        }
    )
    assert "touring_order:" in export_scenario(archived)


async def test_last_words_are_archived_with_the_recording_and_the_message_that_posted_it(
    database, tmp_path
):
    from bot.storage import OutboxItem
    from rules import RequestLastWord

    service, archiver = await open_archive(database)
    live = await service.create(1, 77, lobby(12))
    ids = [str(p["id"]) for p in live.record.lobby["players"]]
    setup = deal(
        {"A": ids[:6], "B": ids[6:]}, 3, RoleCounts(doctor=False, journalist=False, maniac=False)
    )
    await service.start(live.id, setup, 3)
    game = live.game
    assert game is not None
    a = game.residents["A"]
    await service.apply(live.id, Nominate(a[0], a[1]), source="player")
    await service.apply(live.id, Nominate(a[2], a[3]), source="player")
    voice = OutboxItem(
        "voice",
        {"channel_id": 555},
        {"path": "/data/lastwords/1-x.ogg", "duration": 83.5, "waveform": "AAAA", "fallback": ""},
    )
    await service.apply(live.id, RequestLastWord(a[1]), source="player", extra_outbox=[voice])
    await service.apply(live.id, RequestLastWord(a[3]), source="player")  # he said nothing
    item = next(i for i in await service.storage.pending_outbox(live.id) if i.kind == "voice")
    await service.storage.outbox_sent(item, 987654)

    def cancel(live: LiveGame) -> list:
        live.record.state = "cancelled"
        return []

    await service.update(live.id, cancel)
    await archiver.settle()
    archived = await service.storage.archived_game(live.id)
    assert archived is not None
    spoken, silent = archived.last_words
    assert (spoken.player, spoken.phase, spoken.path, spoken.duration) == (
        a[1],
        "day 1",
        "/data/lastwords/1-x.ogg",
        83.5,
    )
    assert (spoken.outbox_id, spoken.channel_id, spoken.message_id) == (item.id, 555, 987654)
    assert (silent.player, silent.outbox_id, silent.message_id) == (a[3], None, None)
    from cogs.history import summary_lines

    text = "\n".join(summary_lines("ru", archived))
    assert "запись 1:23" in text and "https://discord.com/channels/1/555/987654" in text
    assert "без записи" in text
    await service.storage.close()
