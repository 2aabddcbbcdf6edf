"""A picture of a whole game: cities as lanes, days and nights as columns, who died when and how.

Drawn with Pillow. The text is DejaVu Sans, which has Cyrillic; the project
ships no font file of its own: the one matplotlib bundles is used (found on
disk, matplotlib itself is not imported). The picture is made to be read on a
phone: about 1,060 pixels wide whatever the game (a phone shows it at a
third of that), its columns wrapped into bands of two days (four columns;
eight narrower ones when cells count), so a long game grows downwards.

In each cell, the deaths of that city in that phase: a marker for the cause
(a red square for an execution; for the night, a dark disc for the city's own
mafia, a ring for the touring mafia, a triangle for the maniac; a grey diamond
for the Procurator's kill) and the player's name and status. A cell with more
deaths than fit shows how many died of each cause instead. A game of more
than :data:`NAMES_UP_TO` players, or of more than :data:`MAX_COLUMNS` phases,
is drawn counting in every cell, in at most :data:`MAX_COLUMNS` columns, each
a run of consecutive phases ("D1–N3"): a 10-city game of 1,000 players that
lasts 90 days is a picture of the same size as a short one, not a list.
Above: the game, its winners (or that the host ended it); at the left of each
lane: the city, its result and how many are alive; below: the legend. Every
text is from the catalogues, in the guild's language.
"""

from __future__ import annotations

import importlib.util
import io
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from bot.i18n import t
from bot.storage import ArchivedDeath, ArchivedGame

#: Discord's upload limit for a server without boosts
UPLOAD_LIMIT = 10 * 1024 * 1024
#: above this many players, cells count the dead instead of naming them
NAMES_UP_TO = 60
#: names per cell before it counts them instead
NAMES_PER_CELL = 4
#: at most this many columns (two bands) when cells count: a long game's phases are grouped
MAX_COLUMNS = 16

MARGIN = 24
LABEL = 250
COLUMN = {"names": 190, "counts": 95}
COLUMNS_PER_BAND = {"names": 4, "counts": 8}
HEADER_ROW = 50
NAME_ROW = 54
COUNT_ROW = 30
LANE_MIN = 100
CAUSES = ("execution", "mafia", "touring", "maniac", "procurator")

PAPER = (251, 248, 241)
INK = (34, 34, 34)
GREY = (120, 120, 120)
RULE = (214, 208, 196)
DAY = (255, 250, 232)
NIGHT = (226, 231, 242)
SIDE_INK = {"honest": (27, 38, 49), "mafia": (176, 58, 46), "maniac": (108, 52, 131)}
RESULT_INK = {"honest": (30, 110, 60), "mafia": (176, 58, 46), "undecided": GREY}
CAUSE_INK = {
    "execution": (192, 57, 43), "mafia": (31, 42, 68), "touring": (31, 42, 68),
    "maniac": (108, 52, 131), "procurator": (123, 125, 125),
}


class PictureError(Exception):
    """The picture cannot be drawn (no font found)."""


@cache
def _font_file(bold: bool) -> Path:
    spec = importlib.util.find_spec("matplotlib")
    if spec is None or spec.origin is None:
        raise PictureError("matplotlib (which bundles the DejaVu Sans font) is not installed")
    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    path = Path(spec.origin).parent / "mpl-data" / "fonts" / "ttf" / name
    if not path.exists():
        raise PictureError(f"the font {path} is missing")
    return path


@cache
def font(size: int, bold: bool = False) -> ImageFont.FreeTypeFont:
    """DejaVu Sans (regular or bold) at ``size`` pixels."""
    return ImageFont.truetype(str(_font_file(bold)), size)


def fit(text: str, face: ImageFont.FreeTypeFont, width: float) -> str:
    """``text``, cut with an ellipsis to fit ``width`` pixels."""
    if face.getlength(text) <= width:
        return text
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if face.getlength(text[:middle] + "…") <= width:
            low = middle
        else:
            high = middle - 1
    return text[:low].rstrip() + "…"


def wrap(text: str, face: ImageFont.FreeTypeFont, width: float, lines: int) -> list[str]:
    """``text`` in at most ``lines`` lines of ``width`` pixels (the last one cut if need be)."""
    words, out, current = text.split(), [], ""
    for word in words:
        candidate = f"{current} {word}".strip()
        if face.getlength(candidate) <= width or not current:
            current = candidate
        else:
            out.append(current)
            current = word
    if current:
        out.append(current)
    if len(out) > lines:
        out = out[: lines - 1] + [" ".join(out[lines - 1:])]
    return [fit(line, face, width) for line in out]


def phases(archived: ArchivedGame) -> list[str]:
    """Every phase the game had, in order: ``day 1``, ``night 1``, ..."""
    first = str(archived.setup.get("rules", {}).get("first_phase") or "day")
    kind, number = archived.last_phase.split()
    last = int(number)
    order: list[str] = []
    for n in range(1, last + 1):
        pair = [f"night {n}", f"day {n}"] if first == "night" else [f"day {n}", f"night {n}"]
        order.extend(pair)
    return order[: order.index(archived.last_phase) + 1]


def marker(draw: ImageDraw.ImageDraw, cause: str, x: float, y: float, size: int = 16) -> None:
    """The cause's marker with its top left corner at (x, y)."""
    ink = CAUSE_INK.get(cause, GREY)
    box = (x, y, x + size, y + size)
    if cause == "execution":
        draw.rectangle(box, fill=ink)
    elif cause == "mafia":
        draw.ellipse(box, fill=ink)
    elif cause == "touring":
        draw.ellipse(box, outline=ink, width=4)
    elif cause == "maniac":
        draw.polygon([(x + size / 2, y), (x + size, y + size), (x, y + size)], fill=ink)
    else:
        draw.polygon([(x + size / 2, y), (x + size, y + size / 2), (x + size / 2, y + size),
                      (x, y + size / 2)], fill=ink)


@dataclass
class _Cell:
    deaths: list[ArchivedDeath]
    counted: bool

    def height(self) -> int:
        if not self.deaths:
            return 0
        if self.counted:
            return COUNT_ROW * len({d.cause for d in self.deaths}) + 8
        return NAME_ROW * len(self.deaths) + 8


@dataclass(frozen=True)
class _Column:
    label: str
    phases: tuple[str, ...]
    shade: tuple[int, int, int]


def _columns(say: Callable[..., str], archived: ArchivedGame, mode: str) -> list[_Column]:
    """One column per phase; when counting, at most :data:`MAX_COLUMNS`, each a run of phases."""
    every = phases(archived)
    if mode == "names":
        return [_Column(_phase_name(say, phase), (phase,), DAY if phase.startswith("day") else NIGHT)
                for phase in every]
    size = max(1, -(-len(every) // MAX_COLUMNS))
    columns: list[_Column] = []
    for start in range(0, len(every), size):
        run = tuple(every[start:start + size])
        label = _short(say, run[0]) if len(run) == 1 else f"{_short(say, run[0])}–{_short(say, run[-1])}"
        shade = (DAY if run[0].startswith("day") else NIGHT) if len(run) == 1 else (DAY, NIGHT)[len(columns) % 2]
        columns.append(_Column(label, run, shade))
    return columns


def render_png(archived: ArchivedGame, language: str) -> bytes:
    """The game's picture as PNG bytes, texts in ``language``.

    Raises:
        PictureError: no font to draw with.
    """
    say: Callable[..., str] = partial(t, language)
    many = len(archived.players) > NAMES_UP_TO or len(phases(archived)) > MAX_COLUMNS
    mode = "counts" if many else "names"
    column, per_band = COLUMN[mode], COLUMNS_PER_BAND[mode]
    width = 2 * MARGIN + LABEL + column * per_band
    columns = _columns(say, archived, mode)
    bands = [columns[i:i + per_band] for i in range(0, len(columns), per_band)] or [[]]
    cities = archived.cities
    at = {phase: index for index, col in enumerate(columns) for phase in col.phases}
    cells: dict[tuple[str, int], _Cell] = {}
    for death in archived.deaths:
        key = (death.city, at.get(death.phase, len(columns) - 1))
        cells.setdefault(key, _Cell([], mode == "counts")).deaths.append(death)
    for cell in cells.values():
        cell.counted = cell.counted or len(cell.deaths) > NAMES_PER_CELL
    status_of = {p.player: p.status for p in archived.players}
    side_of = {p.player: p.side for p in archived.players}
    name_of = {p.player: p.name for p in archived.players}
    residents = {city: sum(1 for p in archived.players if p.city == city) for city in cities}
    alive = {city: sum(1 for p in archived.players if p.city == city and p.survived) for city in cities}

    title_face, text_face, small_face, bold_face = font(36, True), font(25), font(20), font(26, True)
    title = fit(say("picture.title", game=archived.game_id, cities=", ".join(cities)), title_face,
                width - 2 * MARGIN)
    if archived.over:
        winners = ", ".join(_winner(say, w) for w in archived.winners) or say("winners.none")
        verdict = say("picture.winners", winners=winners)
    else:
        verdict = say("picture.cancelled", phase=_phase_name(say, archived.last_phase))
    verdict_lines = wrap(verdict, text_face, width - 2 * MARGIN, 4)
    head_height = MARGIN + 52 + 32 * len(verdict_lines) + 14
    first = 0
    lane_heights = []
    for band in bands:
        indices = range(first, first + len(band))
        lane_heights.append([
            max([LANE_MIN, *(cells[(city, i)].height() + 8 for i in indices if (city, i) in cells)])
            for city in cities
        ])
        first += len(band)
    legend_height = 40 + (56 if mode == "counts" else 0) + MARGIN
    height = head_height + sum(HEADER_ROW + sum(lanes) + 16 for lanes in lane_heights) + legend_height

    image = Image.new("RGB", (width, height), PAPER)
    draw = ImageDraw.Draw(image)
    draw.text((MARGIN, MARGIN), title, font=title_face, fill=INK)
    for index, line in enumerate(verdict_lines):
        draw.text((MARGIN, MARGIN + 52 + 32 * index), line, font=text_face, fill=INK)

    y = head_height
    first = 0
    header_face = bold_face if mode == "names" else small_face
    for band, lanes in zip(bands, lane_heights, strict=True):
        band_height = HEADER_ROW + sum(lanes)
        for index, col in enumerate(band):
            x = MARGIN + LABEL + index * column
            draw.rectangle((x, y, x + column, y + band_height), fill=col.shade)
            label = col.label
            if header_face.getlength(label) > column - 12 and "–" in label:
                first_line, rest = label.split("–", 1)  # "D13–" over "N18"
                draw.text((x + 8, y + 4), first_line + "–", font=header_face, fill=INK)
                draw.text((x + 8, y + 26), fit(rest, header_face, column - 12), font=header_face, fill=INK)
            else:
                draw.text((x + 8, y + 10), fit(label, header_face, column - 12), font=header_face, fill=INK)
        lane_y = y + HEADER_ROW
        for city, lane in zip(cities, lanes, strict=True):
            draw.line((MARGIN, lane_y, width - MARGIN, lane_y), fill=RULE, width=2)
            _lane_label(draw, say, archived, city, MARGIN, lane_y, residents[city], alive[city],
                        bold_face, small_face)
            for index in range(len(band)):
                found = cells.get((city, first + index))
                if found is None:
                    continue
                cell = found
                x = MARGIN + LABEL + index * column
                if cell.counted:
                    _draw_counts(draw, cell, x + 8, lane_y + 8, text_face)
                else:
                    _draw_names(draw, say, cell, x + 8, lane_y + 8, column - 16, text_face, small_face,
                                name_of, status_of, side_of)
            lane_y += lane
        draw.line((MARGIN, lane_y, width - MARGIN, lane_y), fill=RULE, width=2)
        y += band_height + 16
        first += len(band)

    x = MARGIN
    for cause in CAUSES:
        marker(draw, cause, x, y + 10)
        label = say(f"cause_short.{cause}")
        draw.text((x + 24, y + 6), label, font=text_face, fill=INK)
        x += 24 + int(text_face.getlength(label)) + 28
    if mode == "counts":
        for index, line in enumerate(wrap(say("picture.counts"), small_face, width - 2 * MARGIN, 2)):
            draw.text((MARGIN, y + 40 + 26 * index), line, font=small_face, fill=GREY)
    buffer = io.BytesIO()
    image.save(buffer, "PNG", compress_level=3)
    return buffer.getvalue()


def _short(say: Callable[..., str], phase: str) -> str:
    kind, number = phase.split()
    return say(f"picture.short.{kind}", number=number)


def _phase_name(say: Callable[..., str], phase: str) -> str:
    kind, number = phase.split()
    text = say(f"phase_name.{kind}", number=number)
    return text[:1].upper() + text[1:]


def _winner(say: Callable[..., str], winner: str) -> str:
    if winner == "maniac":
        return say("winner.maniac")
    city, side = winner.rsplit(":", 1)
    return say(f"winner.{side}", city=city)


def _lane_label(draw: ImageDraw.ImageDraw, say: Callable[..., str], archived: ArchivedGame, city: str,
                x: float, y: float, residents: int, alive: int, bold: Any, small: Any) -> None:
    draw.text((x, y + 8), fit(city, bold, LABEL - 16), font=bold, fill=INK)
    result = ("honest" if f"{city}:honest" in archived.winners
              else "mafia" if f"{city}:mafia" in archived.winners else "undecided")
    draw.text((x, y + 42), fit(say(f"picture.city.{result}"), small, LABEL - 16), font=small,
              fill=RESULT_INK[result])
    draw.text((x, y + 68), fit(say("picture.alive", count=alive, total=residents), small, LABEL - 16),
              font=small, fill=GREY)


def _draw_counts(draw: ImageDraw.ImageDraw, cell: _Cell, x: float, y: float, face: Any) -> None:
    counts: dict[str, int] = {}
    for death in cell.deaths:
        counts[death.cause] = counts.get(death.cause, 0) + 1
    for cause in CAUSES:
        if cause in counts:
            marker(draw, cause, x, y + 4)
            draw.text((x + 24, y), f"{counts[cause]}", font=face, fill=INK)
            y += COUNT_ROW


def _draw_names(draw: ImageDraw.ImageDraw, say: Callable[..., str], cell: _Cell, x: float, y: float,
                width: float, face: Any, small: Any, name_of: dict[str, str],
                status_of: dict[str, str], side_of: dict[str, str]) -> None:
    for death in cell.deaths:
        marker(draw, death.cause, x, y + 6)
        name = fit(name_of.get(death.player, "").strip() or death.player, face, width - 24)
        draw.text((x + 24, y), name, font=face, fill=SIDE_INK.get(side_of.get(death.player, ""), INK))
        status = say(f"status.{status_of.get(death.player, death.status)}")
        draw.text((x + 24, y + 28), fit(status, small, width - 24), font=small, fill=GREY)
        y += NAME_ROW
