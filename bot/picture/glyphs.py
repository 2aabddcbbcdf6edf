"""What the picture draws with: the marks of deaths, the winners' star, the sun and the moon,
the line where a city was decided, and the legend that explains them."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from PIL import ImageDraw

from bot.picture.layout import Picture
from bot.picture.style import (
    CAUSE_MARK,
    CAUSES,
    DAY,
    GREY,
    INK,
    MARGIN,
    MARK_INK,
    MARKER,
    MOON,
    NIGHT,
    PAPER,
    RED,
    ROLE_KILLS,
    RULE,
    SIDE_BAR,
    STAR,
    SUN,
    WIDTH,
    face,
    fit,
)


def marker(draw: ImageDraw.ImageDraw, mark: str, x: float, y: float, size: int = MARKER) -> None:
    """The mark's marker with its top left corner at (x, y)."""
    ink = MARK_INK.get(mark, GREY)
    box = (x, y, x + size, y + size)
    middle = (x + size / 2, y + size / 2)
    diamond = [
        (x + size / 2, y),
        (x + size, y + size / 2),
        (x + size / 2, y + size),
        (x, y + size / 2),
    ]
    if mark == "vote":
        draw.rectangle(box, fill=ink)
    elif mark == "lot":  # a die: an open square with one pip
        draw.rectangle(box, outline=ink, fill=PAPER, width=3)
        pip = size / 7
        draw.ellipse((middle[0] - pip, middle[1] - pip, middle[0] + pip, middle[1] + pip), fill=ink)
    elif mark == "host":  # the execution square with the Procurator's diamond in it
        draw.rectangle(box, fill=ink)
        inset = size / 4
        draw.polygon(
            [
                (middle[0], y + inset),
                (x + size - inset, middle[1]),
                (middle[0], y + size - inset),
                (x + inset, middle[1]),
            ],
            fill=PAPER,
        )
    elif mark == "mafia":
        draw.ellipse(box, fill=ink)
    elif mark == "touring":
        draw.ellipse(box, outline=ink, fill=PAPER, width=4)
    elif mark in ROLE_KILLS:
        draw.polygon([(x + size / 2, y), (x + size, y + size), (x, y + size)], fill=ink)
    elif mark == "idle":
        draw.polygon(diamond, fill=PAPER, outline=ink, width=3)
    else:
        draw.polygon(diamond, fill=ink)


def star(draw: ImageDraw.ImageDraw, x: float, y: float, size: int = 16) -> None:
    """A winner's five-pointed star in the box at (x, y)."""
    cx, cy, outer, inner = x + size / 2, y + size / 2, size / 2, size / 4.6
    points = []
    for k in range(10):
        radius = outer if k % 2 == 0 else inner
        angle = math.pi / 2 + k * math.pi / 5
        points.append((cx + radius * math.cos(angle), cy - radius * math.sin(angle)))
    draw.polygon(points, fill=STAR)


def sun_or_moon(
    draw: ImageDraw.ImageDraw, night: bool, x: float, y: float, size: int, ground: Any
) -> None:
    if night:
        draw.ellipse((x, y, x + size, y + size), fill=MOON)
        draw.ellipse(
            (x + size * 0.35, y - size * 0.1, x + size * 1.15, y + size * 0.7), fill=ground
        )
    else:
        draw.ellipse((x, y, x + size, y + size), fill=SUN)


def decided_mark(
    draw: ImageDraw.ImageDraw, x: float, top: float, bottom: float, ink: tuple[int, int, int]
) -> None:
    """The moment a city was decided: a dashed line down its lanes at the end of that column,
    a small flag on top."""
    y = top
    while y < bottom:
        draw.line((x, y, x, min(y + 8, bottom)), fill=ink, width=3)
        y += 14
    draw.polygon(((x, top), (x + 12, top + 5), (x, top + 10)), fill=ink)


def legend_items(picture: Picture) -> list[tuple[str, str]]:
    """(what is drawn, its explanation's key) for the legend."""
    items = []
    if any(len(column.phases) == 1 for column in picture.columns):
        items = [("day", "picture.legend.day"), ("night", "picture.legend.night")]
    if picture.mode == "lanes":
        if any(lane.won for lane in picture.lanes()):
            items.append(("star", "picture.legend.winner"))
        items.append(("bar", "picture.legend.survived"))
        if any(len(lane.seats) > 1 for lane in picture.lanes()):
            items.append(("tick", "picture.legend.replaced"))
        if any(block.decided is not None for block in picture.cities):
            items.append(("decided", "picture.legend.decided"))
        marks = picture.marks()
        items.extend((mark, f"picture.mark.{mark}") for mark in marks)
        voting = [
            lane.end.by_city
            for lane in picture.lanes()
            if lane.end is not None and lane.end.by_city
        ]
        if voting:
            items.append((f"city:{voting[0]}", "picture.legend.by_city"))
    else:
        items.extend((CAUSE_MARK[cause], f"cause_short.{cause}") for cause in CAUSES)
    return items


def legend_lines(
    picture: Picture, say: Callable[..., str]
) -> list[list[tuple[str, str, float, float]]]:
    """The legend's items flowed into lines of the picture's width: (symbol, text, x, the symbol's width)."""
    small = face("small")
    lines: list[list[tuple[str, str, float, float]]] = [[]]
    x = float(MARGIN)
    for symbol, key in legend_items(picture):
        text = say(key)
        sign = small.getlength(symbol[5:]) + 6 if symbol.startswith("city:") else 28
        width = sign + small.getlength(text)
        if lines[-1] and x + width > WIDTH - MARGIN:
            lines.append([])
            x = MARGIN
        lines[-1].append((symbol, fit(text, small, WIDTH - 2 * MARGIN - sign), x, sign))
        x += width + 22
    return lines


def symbol_glyph(draw: ImageDraw.ImageDraw, symbol: str, x: float, y: float) -> None:
    if symbol in ("day", "night"):
        draw.rectangle(
            (x, y, x + MARKER, y + MARKER), fill=NIGHT if symbol == "night" else DAY, outline=RULE
        )
        sun_or_moon(
            draw, symbol == "night", x + 3, y + 3, MARKER - 6, NIGHT if symbol == "night" else DAY
        )
    elif symbol == "star":
        star(draw, x + 1, y + 1)
    elif symbol == "bar":
        draw.rounded_rectangle(
            (x - 4, y + 3, x + MARKER, y + MARKER - 3), radius=6, fill=SIDE_BAR["honest"]
        )
    elif symbol == "tick":
        draw.rounded_rectangle(
            (x - 4, y + 3, x + MARKER, y + MARKER - 3), radius=6, fill=SIDE_BAR["honest"]
        )
        draw.rectangle((x + 6, y - 2, x + 9, y + MARKER + 2), fill=INK)
    elif symbol == "decided":
        decided_mark(draw, x + MARKER / 2, y - 2, y + MARKER + 2, INK)
    elif symbol.startswith("city:"):
        draw.text((x - 4, y + MARKER / 2), symbol[5:], font=face("small"), fill=RED, anchor="lm")
    else:
        marker(draw, symbol, x, y)
