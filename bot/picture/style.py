"""The picture's sizes, colours and faces, and how text is fitted into a width."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from PIL import ImageFont

from rules import Cause
from rules.roles import KILL_CAUSES, LONE_SIDES

#: Discord's upload limit for a server without boosts
UPLOAD_LIMIT = 10 * 1024 * 1024

#: the box Discord scales an image in a message into, at most (embed-visualizer issue 30, measured)
PREVIEW_WIDTH = 400

PREVIEW_HEIGHT = 300

#: above this many players, a lane per city counts the dead instead of a lane per player
LANES_UP_TO = 160

#: one column per phase up to this many (10 days); a longer game's phases are grouped
MAX_COLUMNS = 20

#: a longer game's columns: at most this many runs of phases (wide enough for their labels)
RUN_COLUMNS = 12

MARGIN = 20

LABEL = 316

GRID = 524

WIDTH = 2 * MARGIN + LABEL + GRID

HEADER_ROW = 50

CITY_ROW = 40

LANE_ROW = 34

COUNT_ROW = 36

BAR = 12

MARKER = 18

#: the status column's widest (a longer name of a status is cut)
STATUS_MAX = 116

#: every cause of death, in the rules' order
CAUSES = tuple(cause.value for cause in Cause)

#: every mark of a death, in the legend's order: an execution's three (by vote, by lot, the
#: host's), every other cause's own, and an idle player's struck out
MARKS = ("vote", "lot", "host", *(c for c in CAUSES if c != Cause.EXECUTION), "idle")

#: a cause's mark when only causes are known (the counting cells)
CAUSE_MARK = {cause: "vote" if cause == Cause.EXECUTION else cause for cause in CAUSES}

#: the marks of the roles' own night kills (a triangle each, in the killer side's ink)
ROLE_KILLS = tuple(cause.value for cause in KILL_CAUSES)

PAPER = (251, 248, 241)

INK = (34, 34, 34)

GREY = (110, 110, 110)

RULE = (214, 208, 196)

CITY_GROUND = (238, 232, 219)

DAY = (255, 249, 226)

NIGHT = (225, 230, 242)

#: the grounds of runs of phases, in turn
RUN = ((250, 246, 236), (236, 233, 226))

SUN = (226, 163, 18)

MOON = (84, 98, 138)

STAR = (212, 160, 23)

#: a side that plays alone: its lane's ink and bar
LONE_INK = (108, 52, 131)

LONE_BAR = (214, 190, 226)

SIDE_INK = {"honest": (27, 38, 49), "mafia": (176, 58, 46), **dict.fromkeys(LONE_SIDES, LONE_INK)}

SIDE_BAR = {
    "honest": (186, 198, 214),
    "mafia": (232, 180, 172),
    **dict.fromkeys(LONE_SIDES, LONE_BAR),
}

RESULT_INK = {"honest": (30, 110, 60), "mafia": (176, 58, 46), "undecided": GREY}

RED = (192, 57, 43)

EXECUTED_GROUND = (245, 205, 198)

MARK_INK = {
    "vote": RED,
    "lot": RED,
    "host": RED,
    "mafia": (31, 42, 68),
    "touring": (31, 42, 68),
    "procurator": (110, 112, 112),
    "idle": (110, 112, 112),
    **{cause.value: SIDE_INK[side] for cause, side in KILL_CAUSES.items()},
}


class PictureError(Exception):
    """The picture cannot be drawn (no font found)."""


#: where the package keeps its font: DejaVu Sans (free licence, in ``LICENSE_DEJAVU`` beside it)
FONTS = Path(__file__).resolve().parent / "fonts"


@cache
def _font_file(bold: bool) -> Path:
    path = FONTS / ("DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf")
    if not path.exists():
        raise PictureError(f"the font {path} is missing: reinstall the package")
    return path


@cache
def font(size: int, bold: bool = False) -> ImageFont.FreeTypeFont:
    """DejaVu Sans (regular or bold) at ``size`` pixels."""
    return ImageFont.truetype(str(_font_file(bold)), size)


#: the faces, by use; the smallest is 18 px (8 px at Discord's preview width)
FACES = {
    "title": (30, True),
    "text": (22, False),
    "city": (22, True),
    "name": (22, False),
    "small": (18, False),
    "number": (18, True),
    "vote": (18, True),
}


def face(use: str) -> ImageFont.FreeTypeFont:
    """The face of one use of text (:data:`FACES`)."""
    size, bold = FACES[use]
    return font(size, bold)


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
        out = out[: lines - 1] + [" ".join(out[lines - 1 :])]
    return [fit(line, face, width) for line in out]
