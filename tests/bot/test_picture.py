"""The end-of-game picture: what it lays out (lanes, seats, marks, columns, votes) and what it paints.

The layout is the data the drawing is made from, so most tests read it; a few
read the painted pixels where a lane's mark must be.
"""

from __future__ import annotations

import dataclasses
import io
import logging
from functools import cache

from PIL import Image

from bot.archive import build_archive
from bot.i18n import t
from bot.picture import (
    FACES,
    GRID,
    LABEL,
    LANES_UP_TO,
    MARKER,
    PREVIEW_WIDTH,
    RUN_COLUMNS,
    UPLOAD_LIMIT,
    WIDTH,
    End,
    Picture,
    Seat,
    VoteCell,
    layout,
    paint,
    render_png,
)
from bot.picture.reflow import columns_of, scale
from bot.storage import ArchivedGame
from rules import CastVote, EndDay, EndNight, Game, Nominate, ProcuratorKill, Setup, StartVoting
from tests.archive_play import FOURTEEN, crowd_game, showcase_game, source_of

NAMES = {player: player.capitalize() for city in FOURTEEN.values() for player in city} | {
    "juliet": "Juliet"
}


@cache
def showcase() -> ArchivedGame:
    game, log = showcase_game()
    return build_archive(source_of(game, log, names=NAMES))


def lane_of(picture: Picture, player: str):  # type: ignore[no-untyped-def]
    return next(lane for lane in picture.lanes() if lane.seats[0].player == player)


def test_every_seat_of_the_deal_has_a_lane_from_the_deal_to_the_end():
    archived = showcase()
    picture = layout(archived, "ru")
    assert picture.mode == "lanes"
    dealt = [player for city in FOURTEEN.values() for player in city]
    assert [lane.seats[0].player for lane in picture.lanes()] == dealt
    assert [lane.number for lane in picture.lanes()] == list(range(1, 15))
    assert [block.city for block in picture.cities] == ["Verona", "Padua"]
    # survivors run to the end, the dead end where they died; winners are marked
    final = {p.player: p for p in archived.players}
    for lane in picture.lanes():
        holder = final[lane.seats[-1].player]
        assert (lane.end is None) == bool(holder.survived), lane
        assert (
            lane.won == bool(holder.won)
            and lane.status == holder.status
            and lane.side == holder.side
        )
    assert lane_of(picture, "escalus").end is None and lane_of(picture, "escalus").won
    assert not lane_of(picture, "tybalt").won
    # the city rows: result and who is alive
    verona = picture.cities[0]
    assert (verona.result, verona.alive, verona.residents) == ("honest", 2, 7)


def test_a_replaced_players_lane_goes_on_as_the_newcomers():
    picture = layout(showcase(), "en")
    romeo = lane_of(picture, "romeo")
    # juliet took the seat on day 2 (the third column) and is alive at the end
    assert romeo.seats == (Seat("romeo", "Romeo", 0), Seat("juliet", "Juliet", 2))
    assert romeo.end is None and romeo.won
    assert all(len(lane.seats) == 1 for lane in picture.lanes() if lane is not romeo)


def test_each_way_out_has_its_own_mark_and_a_cross_city_execution_names_the_voting_city():
    picture = layout(showcase(), "ru")
    ends = {lane.seats[0].player: lane.end for lane in picture.lanes()}
    assert ends["sampson"] == End(0, "vote")  # Verona's votes
    assert ends["curtis"] == End(0, "host")  # Padua cast none; the host named him
    assert ends["gregory"] == End(1, "mafia")
    assert ends["gremio"] == End(1, "touring")  # Verona's mafia on tour
    assert ends["friar"] == End(1, "maniac")
    assert ends["bianca"] == End(2, "idle")  # the bot struck out a player who left
    assert ends["mercutio"] == End(2, "vote", "Padua")  # of Verona, voted out by Padua
    assert ends["tybalt"] == End(2, "lot")  # Verona cast no vote: the absent host's lot
    assert {"vote", "lot", "host", "mafia", "touring", "maniac", "idle"} <= set(picture.marks())


def test_the_hosts_own_kill_is_told_from_the_bots_strike_out():
    game = Game.create(Setup.from_dict({"cities": FOURTEEN}), 1)
    log = [(ProcuratorKill("romeo"), "host"), (ProcuratorKill("bianca"), "timer")]
    for command, _ in log:
        game.apply(command)
    picture = layout(build_archive(source_of(game, log, ended="cancelled")), "en")
    assert lane_of(picture, "romeo").end == End(0, "procurator")
    assert lane_of(picture, "bianca").end == End(0, "idle")
    assert picture.marks() == ["procurator", "idle"]
    assert picture.verdict == t("en", "picture.cancelled", phase="Day 1")


def test_ten_days_at_ten_cities_are_twenty_columns_in_one_row():
    game, log = crowd_game(10, 14, 0)
    archived = build_archive(source_of(game, log))
    assert archived.last_phase == "day 10" and len(archived.cities) == 10
    picture = layout(archived, "ru")
    assert picture.mode == "lanes" and len(picture.lanes()) == 140
    assert [column.phases for column in picture.columns] == [
        (f"{kind} {n}",) for n in range(1, 11) for kind in ("day", "night")
    ][:19]
    assert [column.label for column in picture.columns][-3:] == ["9", "9", "10"]
    png = paint(picture)
    image = Image.open(io.BytesIO(png))
    assert len(png) < UPLOAD_LIMIT
    # one column would be some 5,800 px tall: 66 px wide in the chat's box; the cities go side
    # by side instead, each column under the header row, the picture about the box's shape
    one_column = 140 * 34 + 10 * 40 + 400
    columns = image.width // WIDTH
    assert image.width == columns * WIDTH and columns >= 3
    assert image.height < one_column / columns + 1200
    assert scale(image.width, image.height) > 2 * scale(WIDTH, one_column)
    assert image.width * scale(image.width, image.height) > 300  # px wide in the chat, not 47


def test_the_votes_panel_gives_each_players_vote_under_its_day():
    picture = layout(showcase(), "en", votes=True)
    assert picture.votes is not None and not picture.votes_omitted
    # day 1: Verona's four voters chose sampson (6), who was executed; day 2: Padua's chose mercutio (2)
    day_one = VoteCell(0, 2, 6, "honest", True)
    assert {lane: cells for lane, cells in picture.votes.items() if lane <= 7} == {
        number: (day_one,) for number in (1, 2, 3, 4)
    }
    assert picture.votes[10] == (VoteCell(2, 2, 2, "honest", True),)
    assert layout(showcase(), "en").votes is None
    taller = Image.open(io.BytesIO(paint(picture))).height
    assert taller > Image.open(io.BytesIO(render_png(showcase(), "en"))).height + 14 * 34


def test_a_vote_for_who_was_not_executed_has_no_red_ground():
    game = Game.create(Setup.from_dict({"cities": FOURTEEN}), 1)
    log = [
        (Nominate("romeo", "sampson"), "player"),
        (Nominate("mercutio", "gregory"), "player"),
        (StartVoting(), "timer"),
        (CastVote("romeo", "sampson"), "player"),
        (CastVote("mercutio", "sampson"), "player"),
        (CastVote("tybalt", "gregory"), "player"),
        (EndDay(), "timer"),
    ]
    for command, _ in log:
        game.apply(command)
    picture = layout(build_archive(source_of(game, log, ended="cancelled")), "ru", votes=True)
    assert picture.votes is not None
    assert picture.votes[1] == (VoteCell(0, 2, 6, "honest", True),)
    assert picture.votes[3] == (VoteCell(0, 2, 7, "honest", False),)  # tybalt's vote for gregory


def test_a_game_too_big_for_lanes_counts_its_dead_per_city_without_the_votes():
    game, log = crowd_game(9, 18, 1)
    archived = build_archive(source_of(game, log))
    assert len(archived.players) > LANES_UP_TO
    picture = layout(archived, "en", votes=True)
    assert picture.mode == "counts" and picture.lanes() == []
    assert picture.votes is None and picture.votes_omitted
    counted = sum(
        n for block in picture.cities for cells in block.counts.values() for n in cells.values()
    )
    assert counted == len(archived.deaths)
    if len(picture.columns) < len(set(d.phase for d in archived.deaths)):
        assert len(picture.columns) <= RUN_COLUMNS


def test_a_long_game_groups_its_phases_into_runs():
    game, log = crowd_game(10, 100, 3)
    archived = build_archive(source_of(game, log))
    picture = layout(archived, "ru")
    assert archived.last_phase == "day 90" and len(picture.columns) <= RUN_COLUMNS
    assert picture.columns[0].label == "Д1–Д8" and picture.columns[0].phases[-1] == "day 8"
    assert [phase for column in picture.columns for phase in column.phases][-1] == "day 90"


def test_the_title_and_legend_are_in_the_guilds_language():
    assert layout(showcase(), "en").title == "Procurator · game #1: Verona, Padua"
    assert layout(showcase(), "ru").title == "Прокуратор · игра №1: Verona, Padua"


def test_the_text_stays_legible_at_discords_preview_width():
    smallest = min(size for size, _ in FACES.values())
    assert smallest * PREVIEW_WIDTH / WIDTH >= 8
    assert FACES["name"][0] * PREVIEW_WIDTH / WIDTH >= 10


def test_the_painted_lane_ends_in_its_mark():
    picture = layout(showcase(), "en")
    image = Image.open(io.BytesIO(paint(picture))).convert("RGB")
    # find sampson's row by the red of his vote mark in the first column, right of the labels
    x = 20 + LABEL + GRID / len(picture.columns) / 2
    column = [image.getpixel((int(x), y)) for y in range(image.height)]
    reds = [y for y, pixel in enumerate(column) if pixel == (192, 57, 43)]
    # two executions in day 1's column: sampson (vote: solid) and curtis (host: a diamond inside)
    runs = []
    for y in reds:
        if runs and y == runs[-1][1] + 1:
            runs[-1][1] = y
        else:
            runs.append([y, y])
    solid = [run for run in runs if run[1] - run[0] + 1 >= MARKER - 1]
    assert len(solid) == 1  # the host's mark has its diamond cut out of the middle


def test_a_night_first_game_pairs_each_night_with_the_day_after_it():
    game = Game.create(
        Setup.from_dict(
            {"cities": FOURTEEN, "rules": {"first_phase": "night", "maniac_idle": "none"}}
        ),
        1,
    )
    log = [
        (EndNight(), "timer"),
        (Nominate("romeo", "sampson"), "player"),
        (StartVoting(), "timer"),
        (CastVote("romeo", "sampson"), "player"),
        (EndDay(), "timer"),
    ]
    for command, _ in log:
        game.apply(command)
    picture = layout(build_archive(source_of(game, log, ended="cancelled")), "en", votes=True)
    assert [(column.phases, column.label, column.night) for column in picture.columns] == [
        (("night 1",), "1", True),
        (("day 1",), "1", False),
        (("night 2",), "2", True),
    ]
    assert picture.votes is not None and picture.votes[1] == (VoteCell(0, 2, 6, "honest", True),)


def test_a_lane_whose_holder_the_archive_lacks_is_drawn_as_dealt(caplog):
    archived = showcase()
    missing = dataclasses.replace(
        archived, players=[p for p in archived.players if p.player != "escalus"]
    )
    with caplog.at_level(logging.WARNING, logger="bot.picture"):
        picture = layout(missing, "en")
    escalus = lane_of(picture, "escalus")
    assert (escalus.status, escalus.side, escalus.won) == ("commissar", "honest", False)
    assert "escalus is not among the archived players" in caplog.text
    assert paint(picture).startswith(b"\x89PNG")


def test_a_long_game_of_few_players_keeps_its_lanes_in_runs_of_phases():
    game, log = crowd_game(2, 40, 1)
    archived = build_archive(source_of(game, log))
    picture = layout(archived, "en", votes=True)
    assert archived.last_phase == "night 26" and picture.mode == "lanes"
    assert len(picture.columns) == 11 and picture.columns[0].label == "D1–D3"
    assert [phase for column in picture.columns for phase in column.phases] == [
        f"{kind} {n}" for n in range(1, 27) for kind in ("day", "night")
    ]
    # each death is in the run that holds its phase
    for death in archived.deaths:
        lane = next(lane for lane in picture.lanes() if lane.seats[-1].player == death.player)
        assert lane.end is not None and death.phase in picture.columns[lane.end.column].phases
    assert picture.votes is None and picture.votes_omitted  # a vote per day no longer fits a column


def test_each_city_is_marked_where_it_was_decided():
    picture = layout(showcase(), "en")
    decided = {block.city: block.decided for block in picture.cities}
    # the replay's CityDecided events, mapped to their columns
    game, log = showcase_game()
    expected = {}
    phases = {p: i for i, c in enumerate(picture.columns) for p in c.phases}
    replayed = Game.create(game.setup, game.seed)
    for command, _ in log:
        phase = str(replayed.phase)
        for event in replayed.apply(command):
            if type(event).__name__ == "CityDecided":
                expected.setdefault(event.city, phases[phase])
    assert expected and decided == {city: expected.get(city) for city in decided}
    legend = [
        key for _, key in __import__("bot.picture.glyphs").picture.glyphs.legend_items(picture)
    ]
    assert "picture.legend.decided" in legend


def test_a_painted_decided_city_has_its_dashed_line_at_the_end_of_that_column():
    picture = layout(showcase(), "en")
    block = next(b for b in picture.cities if b.decided is not None)
    image = Image.open(io.BytesIO(paint(picture))).convert("RGB")
    x = int(20 + LABEL + GRID / len(picture.columns) * (block.decided + 1) - 2)
    inks = {(30, 110, 60), (176, 58, 46)}
    assert sum(image.getpixel((x, y)) in inks for y in range(image.height)) > 3 * 8


def test_a_small_game_keeps_one_column_and_cities_split_evenly():
    image = Image.open(io.BytesIO(render_png(showcase(), "en")))
    assert image.width == WIDTH
    assert columns_of([100, 300, 200, 100], 2) == [[0, 1], [2, 3]]
    assert columns_of([50] * 5, 3) == [[0], [1, 2], [3, 4]]
    assert columns_of([10], 3) == [[0]]
