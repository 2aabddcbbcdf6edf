"""The picture's shape in the chat: cities side by side when one column of them is too tall.

Discord shows an image in a message inside a box of about :data:`PREVIEW_WIDTH` by
:data:`PREVIEW_HEIGHT` px, scaled down to fit it, so a picture much taller than that box's
shape is a thin strip until tapped (a 40-player game was 880 px wide and some 1,600 px tall:
165 px wide in the chat). :func:`reflow` cuts the painted grid between cities and sets the
pieces side by side, each under a copy of the phases' header row, when that makes the
picture larger in the box; the legend and the notes go under the shortest column. It works
on the painted image (Pillow), so the painting itself knows nothing of it.
"""

from __future__ import annotations

from collections.abc import Sequence

from PIL import Image, ImageDraw

from bot.picture.style import HEADER_ROW, PAPER, PREVIEW_HEIGHT, PREVIEW_WIDTH, RULE


def scale(width: float, height: float) -> float:
    """How much an image of this size is scaled to fit the chat's box."""
    return min(PREVIEW_WIDTH / width, PREVIEW_HEIGHT / height, 1.0)


def columns_of(rows: Sequence[int], count: int) -> list[list[int]]:
    """The cities' indices cut into ``count`` runs, in order, the tallest run as short as it can
    be (a game has a handful of cities: every cut is tried)."""
    n = len(rows)
    count = max(1, min(count, n))
    prefix = [0]
    for row in rows:
        prefix.append(prefix[-1] + row)
    # best[k][i]: the tallest run of the first i cities cut into k runs, and where the last begins
    best: list[list[tuple[float, int]]] = [[(float("inf"), 0)] * (n + 1) for _ in range(count + 1)]
    best[0][0] = (0, 0)
    for k in range(1, count + 1):
        for i in range(k, n + 1):
            best[k][i] = min(
                (max(best[k - 1][j][0], prefix[i] - prefix[j]), j) for j in range(k - 1, i)
            )
    cuts, i = [], n
    for k in range(count, 0, -1):
        j = best[k][i][1]
        cuts.append(list(range(j, i)))
        i = j
    return cuts[::-1]


def reflow(image: Image.Image, grid_top: int, rows: Sequence[int]) -> Image.Image:
    """The picture with its cities in as many columns as make it largest in the chat's box
    (itself when one column does). ``grid_top``: where the header row begins; ``rows``: each
    city's height below it, in order."""
    width, height = image.size
    body = grid_top + HEADER_ROW
    tail_top = body + sum(rows)
    tail = height - tail_top
    best, best_scale = 1, scale(width, height)
    for count in range(2, len(rows) + 1):
        groups = columns_of(rows, count)
        tallest = max(sum(rows[i] for i in group) for group in groups)
        shortest = min(sum(rows[i] for i in group) for group in groups)
        total = body + max(tallest, shortest + tail)
        if scale(width * count, total) > best_scale * 1.05:
            best, best_scale = count, scale(width * count, total)
    if best == 1:
        return image
    groups = columns_of(rows, best)
    tops = [body + sum(rows[: group[0]]) for group in groups]
    heights = [sum(rows[i] for i in group) for group in groups]
    shortest = heights.index(min(heights))
    canvas_height = body + max(max(heights), heights[shortest] + tail)
    result = Image.new("RGB", (width * best, canvas_height), PAPER)
    result.paste(image.crop((0, 0, width, body)), (0, 0))
    draw = ImageDraw.Draw(result)
    for column, (top, piece) in enumerate(zip(tops, heights, strict=True)):
        left = width * column
        if column:
            result.paste(image.crop((0, grid_top, width, body)), (left, grid_top))
            draw.line((left, grid_top, left, canvas_height), fill=RULE, width=2)
        result.paste(image.crop((0, top, width, top + piece)), (left, body))
    result.paste(
        image.crop((0, tail_top, width, height)), (width * shortest, body + heights[shortest])
    )
    return result


__all__ = ["columns_of", "reflow", "scale"]
