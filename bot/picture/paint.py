"""The painting of a laid-out picture with Pillow: marks, lanes, the votes panel, the legend."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial

from PIL import Image, ImageDraw

from bot.i18n import t
from bot.picture.glyphs import decided_mark, legend_lines, marker, star, sun_or_moon, symbol_glyph
from bot.picture.layout import (
    CityBlock,
    Lane,
    Picture,
    VoteCell,
    layout,
)
from bot.picture.reflow import reflow
from bot.picture.style import (
    BAR,
    CAUSE_MARK,
    CAUSES,
    CITY_GROUND,
    CITY_ROW,
    COUNT_ROW,
    DAY,
    EXECUTED_GROUND,
    GREY,
    GRID,
    HEADER_ROW,
    INK,
    LABEL,
    LANE_ROW,
    MARGIN,
    MARKER,
    NIGHT,
    PAPER,
    RED,
    RESULT_INK,
    RULE,
    RUN,
    SIDE_BAR,
    SIDE_INK,
    STATUS_MAX,
    WIDTH,
    face,
    fit,
    font,
    wrap,
)
from bot.storage import ArchivedGame


@dataclass
class _Canvas:
    """Where things go: the grid's columns and the drawing."""

    picture: Picture
    draw: ImageDraw.ImageDraw
    say: Callable[..., str]
    status_width: float = 0.0

    def __post_init__(self) -> None:
        small = face("small")
        widest = max(
            [small.getlength(self.say(f"status.{lane.status}")) for lane in self.picture.lanes()]
            or [0]
        )
        self.status_width = min(widest, STATUS_MAX)

    @property
    def column(self) -> float:
        return GRID / max(1, len(self.picture.columns))

    def x(self, column: int) -> float:
        return MARGIN + LABEL + column * self.column

    def days(self) -> list[tuple[int, int, str]]:
        """The votes panel's columns: (first column, last column, the day's number) of each number."""
        spans: list[tuple[int, int, str]] = []
        for index, column in enumerate(self.picture.columns):
            if spans and spans[-1][2] == column.label:
                spans[-1] = (spans[-1][0], index, column.label)
            else:
                spans.append((index, index, column.label))
        return spans

    def shade(self, top: float, bottom: float, *, days: bool = False) -> None:
        if days:
            for first, last, _ in self.days():
                self.draw.rectangle((self.x(first), top, self.x(last + 1), bottom), fill=DAY)
                if first:
                    self.draw.line((self.x(first), top, self.x(first), bottom), fill=RULE, width=1)
            return
        for index, column in enumerate(self.picture.columns):
            ground = NIGHT if column.night else DAY if len(column.phases) == 1 else RUN[index % 2]
            self.draw.rectangle((self.x(index), top, self.x(index + 1), bottom), fill=ground)

    def header(self, y: float, *, days: bool = False) -> None:
        """The phases' header row: a sun or a moon and the number (a run: its two ends); for the
        votes, a sun and the number over the day's columns."""
        number = face("number")
        if days:
            for first, last, label in self.days():
                middle = (self.x(first) + self.x(last + 1)) / 2
                sun_or_moon(self.draw, False, middle - 8, y + 6, 16, DAY)
                self.draw.text((middle, y + 36), label, font=number, fill=INK, anchor="mm")
            return
        for index, column in enumerate(self.picture.columns):
            left, middle = self.x(index), self.x(index) + self.column / 2
            ground = NIGHT if column.night else DAY
            if len(column.phases) == 1:
                sun_or_moon(self.draw, column.night, middle - 8, y + 6, 16, ground)
                self.draw.text((middle, y + 36), column.label, font=number, fill=INK, anchor="mm")
            else:
                start, end = column.label.split("–", 1)
                small = font(15, True)
                self.draw.text(
                    (middle, y + 14),
                    fit(start, small, self.column - 2),
                    font=small,
                    fill=INK,
                    anchor="mm",
                )
                self.draw.text(
                    (middle, y + 36),
                    fit(end, small, self.column - 2),
                    font=small,
                    fill=INK,
                    anchor="mm",
                )
            if index:
                self.draw.line((left, y, left, y + HEADER_ROW), fill=RULE, width=1)

    def city_row(self, block: CityBlock, y: float, *, result: bool = True) -> None:
        self.draw.rectangle((MARGIN, y, WIDTH - MARGIN, y + CITY_ROW), fill=CITY_GROUND)
        city = face("city")
        name = fit(block.city, city, LABEL - 20)
        self.draw.text((MARGIN + 8, y + CITY_ROW / 2), name, font=city, fill=INK, anchor="lm")
        if not result:
            return
        x = MARGIN + 16 + city.getlength(name) + 16
        small = face("small")
        verdict = self.say(f"picture.city.{block.result}")
        self.draw.text(
            (x, y + CITY_ROW / 2), verdict, font=small, fill=RESULT_INK[block.result], anchor="lm"
        )
        x += small.getlength(verdict) + 20
        count = fit(
            self.say("picture.alive", count=block.alive, total=block.residents),
            small,
            WIDTH - MARGIN - x,
        )
        self.draw.text((x, y + CITY_ROW / 2), count, font=small, fill=GREY, anchor="lm")

    def city_label(self, block: CityBlock, y: float) -> None:
        """A counting lane's label: the city, its result, who is alive, in three lines."""
        small = face("small")
        self.draw.text(
            (MARGIN + 8, y + 10),
            fit(block.city, face("city"), LABEL - 24),
            font=face("city"),
            fill=INK,
        )
        self.draw.text(
            (MARGIN + 8, y + 42),
            fit(self.say(f"picture.city.{block.result}"), small, LABEL - 24),
            font=small,
            fill=RESULT_INK[block.result],
        )
        self.draw.text(
            (MARGIN + 8, y + 68),
            fit(
                self.say("picture.alive", count=block.alive, total=block.residents),
                small,
                LABEL - 24,
            ),
            font=small,
            fill=GREY,
        )

    def lane_label(self, lane: Lane, y: float, *, status: bool = True) -> None:
        middle = y + LANE_ROW / 2
        if lane.won:
            star(self.draw, MARGIN + 2, middle - 8)
        small, name_face = face("small"), face("name")
        self.draw.text((MARGIN + 52, middle), str(lane.number), font=small, fill=GREY, anchor="rm")
        name = lane.seats[0].name.strip() or lane.seats[0].player
        room = LABEL - 66 - (self.status_width + 8 if status else 0)
        self.draw.text(
            (MARGIN + 58, middle),
            fit(name, name_face, room),
            font=name_face,
            fill=SIDE_INK.get(lane.side, INK),
            anchor="lm",
        )
        if status:
            self.draw.text(
                (MARGIN + LABEL - 6, middle),
                fit(self.say(f"status.{lane.status}"), small, self.status_width),
                font=small,
                fill=GREY,
                anchor="rm",
            )

    def lane(self, lane: Lane, y: float) -> None:
        """The bar from the deal to the end, the ticks of newcomers, the mark of the death."""
        draw, middle = self.draw, y + LANE_ROW / 2
        end_x = self.x(lane.end.column) + self.column / 2 if lane.end else WIDTH - MARGIN - 2
        draw.rounded_rectangle(
            (self.x(0) + 2, middle - BAR / 2, end_x, middle + BAR / 2),
            radius=BAR / 2,
            fill=SIDE_BAR.get(lane.side, RULE),
        )
        small = face("small")
        notes: list[str] = []
        for index, seat in enumerate(lane.seats[1:], 1):
            x = self.x(seat.column) + 2
            draw.rectangle((x - 3, middle - 11, x, middle + 11), fill=INK)
            following = lane.seats[index + 1].column if index + 1 < len(lane.seats) else None
            limit = (
                self.x(following) - 4
                if following is not None
                else end_x - (MARKER / 2 + 4 if lane.end else 0)
            )
            name = seat.name.strip() or seat.player
            if limit - x - 6 >= 60:
                draw.text(
                    (x + 5, middle),
                    fit(name, small, limit - x - 6),
                    font=small,
                    fill=INK,
                    anchor="lm",
                )
            else:
                notes.append(name)
        if lane.end is None:
            return
        marker(draw, lane.end.mark, end_x - MARKER / 2, middle - MARKER / 2)
        if lane.end.by_city:
            notes.append(lane.end.by_city)
        if notes:
            note = " · ".join(notes)
            after = end_x + MARKER / 2 + 6
            ink = RED if lane.end.by_city else INK
            if after + small.getlength(note) <= WIDTH - MARGIN:
                draw.text((after, middle), note, font=small, fill=ink, anchor="lm")
            else:
                note = fit(note, small, end_x - MARKER / 2 - 6 - self.x(0))
                draw.text((end_x - MARKER / 2 - 6, middle), note, font=small, fill=ink, anchor="rm")

    def counts(self, block: CityBlock, y: float) -> None:
        """A counting lane: in each cell, a marker over each cause's number of dead."""
        number = font(max(12, min(18, int(self.column / 2.2))), True)
        size = int(min(MARKER, self.column - 8))
        for column, cells in block.counts.items():
            middle, top = self.x(column) + self.column / 2, y + 8
            for cause in CAUSES:
                if cause in cells:
                    marker(self.draw, CAUSE_MARK[cause], middle - size / 2, top, size)
                    self.draw.text(
                        (middle, top + size + 9),
                        str(cells[cause]),
                        font=number,
                        fill=INK,
                        anchor="mm",
                    )
                    top += COUNT_ROW

    def vote_cells(self, cells: Iterable[VoteCell], y: float) -> None:
        vote = face("vote")
        for cell in cells:
            left, right = self.x(cell.column) + 3, self.x(cell.column + cell.span) - 3
            if cell.executed:
                self.draw.rounded_rectangle(
                    (left, y + 4, right, y + LANE_ROW - 4), radius=5, fill=EXECUTED_GROUND
                )
            self.draw.text(
                ((left + right) / 2, y + LANE_ROW / 2),
                str(cell.candidate),
                font=vote,
                fill=SIDE_INK.get(cell.side, INK),
                anchor="mm",
            )


def render_png(archived: ArchivedGame, language: str, *, votes: bool = False) -> bytes:
    """The game's picture as PNG bytes, texts in ``language``; ``votes`` adds the votes panel.

    Raises:
        PictureError: no font to draw with.
    """
    return paint(layout(archived, language, votes=votes))


@dataclass(frozen=True)
class _Sheet:
    """The painting's texts, cut into lines, and the heights of its parts."""

    title: list[str]
    verdict: list[str]
    legend: list[list[tuple[str, str, float, float]]]
    notes: list[str]
    votes_head: list[str]
    rows: list[int]
    panel: bool
    """Whether the votes panel is drawn."""

    @property
    def top(self) -> int:
        """Where the verdict begins."""
        return MARGIN + 40 * len(self.title) + 4

    @property
    def head(self) -> int:
        """Where the grid begins."""
        return self.top + 30 * len(self.verdict) + 12

    @property
    def grid(self) -> int:
        """The height of one grid: the header row and every city's rows."""
        return HEADER_ROW + sum(self.rows)

    @property
    def height(self) -> int:
        """The whole picture's height."""
        panel = 24 + 34 + 26 * len(self.votes_head) + self.grid if self.panel else 0
        return (
            self.head
            + self.grid
            + 16
            + 30 * len(self.legend)
            + 26 * len(self.notes)
            + panel
            + MARGIN
        )


def _sheet(picture: Picture, say: Callable[..., str]) -> _Sheet:
    small, width = face("small"), WIDTH - 2 * MARGIN
    if picture.mode == "lanes":
        rows = [CITY_ROW + LANE_ROW * len(block.lanes) for block in picture.cities]
    else:
        rows = [
            max(12 + COUNT_ROW * max([len(c) for c in block.counts.values()] or [0]), 100)
            for block in picture.cities
        ]
    notes = []
    if picture.mode == "counts":
        notes.extend(wrap(say("picture.counts"), small, width, 3))
    if picture.votes_omitted:
        notes.extend(wrap(say("picture.votes.omitted"), small, width, 2))
    votes_head = (
        wrap(say("picture.votes.title"), small, width, 3) if picture.votes is not None else []
    )
    return _Sheet(
        wrap(picture.title, face("title"), width, 2),
        wrap(picture.verdict, face("text"), width, 6),
        legend_lines(picture, say),
        notes,
        votes_head,
        rows,
        picture.votes is not None,
    )


def _grid(
    canvas: _Canvas,
    sheet: _Sheet,
    y: float,
    cells: Callable[[CityBlock, float], None],
    *,
    result: bool,
) -> float:
    """One grid (the lanes, or the votes panel's) from ``y``; where it ends."""
    picture, draw = canvas.picture, canvas.draw
    canvas.shade(y, y + sheet.grid, days=not result)
    canvas.header(y, days=not result)
    y += HEADER_ROW
    for block, row in zip(picture.cities, sheet.rows, strict=True):
        if picture.mode == "lanes":
            canvas.city_row(block, y, result=result)
            cells(block, y + CITY_ROW)
            if result and block.decided is not None:
                ink = RESULT_INK[block.result]
                decided_mark(draw, canvas.x(block.decided + 1) - 2, y + CITY_ROW, y + row, ink)
        else:
            canvas.city_label(block, y)
            cells(block, y)
        y += row
        draw.line((MARGIN, y, WIDTH - MARGIN, y), fill=RULE, width=1)
    return y


def _lanes(canvas: _Canvas, block: CityBlock, y: float) -> None:
    for lane in block.lanes:
        canvas.lane_label(lane, y)
        canvas.lane(lane, y)
        y += LANE_ROW


def _voted(canvas: _Canvas, block: CityBlock, y: float) -> None:
    votes = canvas.picture.votes or {}
    for lane in block.lanes:
        canvas.lane_label(lane, y, status=False)
        canvas.vote_cells(votes.get(lane.number, ()), y)
        y += LANE_ROW


def _legend_and_notes(canvas: _Canvas, sheet: _Sheet, y: float) -> float:
    small = face("small")
    for items in sheet.legend:
        for symbol, text, x, sign in items:
            symbol_glyph(canvas.draw, symbol, x, y + 4)
            canvas.draw.text(
                (x + sign, y + 4 + MARKER / 2), text, font=small, fill=INK, anchor="lm"
            )
        y += 30
    for note in sheet.notes:
        canvas.draw.text((MARGIN, y), note, font=small, fill=GREY)
        y += 26
    return y


def _votes_panel(canvas: _Canvas, sheet: _Sheet, y: float) -> None:
    draw = canvas.draw
    y += 24
    draw.line((MARGIN, y - 12, WIDTH - MARGIN, y - 12), fill=INK, width=2)
    draw.text((MARGIN, y), canvas.say("picture.votes.heading"), font=face("city"), fill=INK)
    y += 34
    for line in sheet.votes_head:
        draw.text((MARGIN, y), line, font=face("small"), fill=GREY)
        y += 26
    _grid(canvas, sheet, y, partial(_voted, canvas), result=False)


def paint(picture: Picture) -> bytes:
    """The picture as PNG bytes.

    Raises:
        PictureError: no font to draw with.
    """
    say: Callable[..., str] = partial(t, picture.language)
    sheet = _sheet(picture, say)
    image = Image.new("RGB", (WIDTH, sheet.height), PAPER)
    draw = ImageDraw.Draw(image)
    canvas = _Canvas(picture, draw, say)
    for index, line in enumerate(sheet.title):
        draw.text((MARGIN, MARGIN + 40 * index), line, font=face("title"), fill=INK)
    for index, line in enumerate(sheet.verdict):
        draw.text((MARGIN, sheet.top + 30 * index), line, font=face("text"), fill=INK)
    cells = partial(_lanes, canvas) if picture.mode == "lanes" else canvas.counts
    y = _legend_and_notes(canvas, sheet, _grid(canvas, sheet, sheet.head, cells, result=True) + 16)
    if picture.votes is not None:
        _votes_panel(canvas, sheet, y)
    if picture.votes is None:  # the votes panel is a second grid under the first: one column
        image = reflow(image, sheet.head, sheet.rows)
    buffer = io.BytesIO()
    image.save(buffer, "PNG", compress_level=3)
    return buffer.getvalue()
