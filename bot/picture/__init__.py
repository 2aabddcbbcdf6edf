"""A picture of a whole game: every player's lane from the deal to the end, days and nights as columns.

Drawn with Pillow. The text is DejaVu Sans, which has Cyrillic: the package
ships its two font files (regular and bold, with their free licence) in
``bot/picture/fonts``.

What is drawn is first laid out as plain data (:func:`layout` gives a
:class:`Picture`: its columns, its cities, each city's lanes, each lane's
seats and end, the votes), then painted (:func:`paint`); tests read the
layout, players see the painting.

The layout. One column per phase of the game (day 1, night 1, …), all in one
row: a game of 10 days is 20 columns side by side, never wrapped. A longer
game groups consecutive phases into at most :data:`MAX_COLUMNS` columns
("D13–N18"). Under a header row (a sun or a moon and the phase's number), a
block per city: the city, its result and how many are alive, then one lane
per seat of the deal: a bar from the deal to the player's death, or to the
right edge for those alive at the end, tinted by the player's side. At the
left of a lane: a star for a winner, the player's number, name and status.
A replaced player's lane goes on as the newcomer's: a tick where he took the
seat and his name on the bar after it. At the end of a dead player's bar, the
mark of his death; executions are told apart (by the city's vote, by lot, on
the Procurator's choice), and so are the Procurator's kills (his own, or the
bot's strike-out of a player who left or stayed idle). A player executed by
another city's vote has that city's name beside the mark. Below: the legend
of the marks the game has. With ``votes``, a second panel: each player's vote
at the end of each day, as the number of the candidate (red ground: that
candidate was executed by the voter's city).

The marks that the archive's rows do not keep (lot or vote, the host's
choice, the bot's strike-out, replacements) are read by replaying the game's
command log (:func:`bot.archive.replay_log`). A game of more than
:data:`LANES_UP_TO` players is drawn with a lane per city instead, each cell
counting the dead by cause, from the archive's rows: a 10-city game of 1,000
players that lasts 90 days is a picture of the same size as a short one.

Phones. Discord shows an image in a message at most about 400 px wide and
300 px high (:data:`PREVIEW_WIDTH`, :data:`PREVIEW_HEIGHT`: measured in the
embed-visualizer project's issue 30), and a phone's chat column is about as
wide; tapped, the image opens at the phone's width. The picture is
:data:`WIDTH` px wide, so at that width its smallest text (18 px) is 8 px and
the names (22 px) 10 px. A picture much taller than that box would be a thin
strip in the chat (a 140-player game: 47 px wide), so its cities are set side by
side in as many columns as make it largest in the box (:mod:`bot.picture.reflow`;
not with the votes panel, a second grid under the first).

Each city's lanes carry a dashed line with a flag at the end of the column in
which the city was decided for good (the replay's ``CityDecided``), in the colour
of its result.
"""

from bot.picture.glyphs import marker, star
from bot.picture.layout import (
    CityBlock,
    Column,
    End,
    Lane,
    Picture,
    Seat,
    VoteCell,
    layout,
    phases,
)
from bot.picture.paint import (
    paint,
    render_png,
)
from bot.picture.style import (
    BAR,
    CAUSE_MARK,
    CAUSES,
    CITY_GROUND,
    CITY_ROW,
    COUNT_ROW,
    DAY,
    EXECUTED_GROUND,
    FACES,
    GREY,
    GRID,
    HEADER_ROW,
    INK,
    LABEL,
    LANE_ROW,
    LANES_UP_TO,
    MARGIN,
    MARK_INK,
    MARKER,
    MARKS,
    MAX_COLUMNS,
    MOON,
    NIGHT,
    PAPER,
    PREVIEW_HEIGHT,
    PREVIEW_WIDTH,
    RED,
    RESULT_INK,
    RULE,
    RUN,
    RUN_COLUMNS,
    SIDE_BAR,
    SIDE_INK,
    STAR,
    STATUS_MAX,
    SUN,
    UPLOAD_LIMIT,
    WIDTH,
    PictureError,
    face,
    fit,
    font,
    wrap,
)

__all__ = [
    "BAR",
    "CAUSES",
    "CAUSE_MARK",
    "CITY_GROUND",
    "CITY_ROW",
    "COUNT_ROW",
    "CityBlock",
    "Column",
    "DAY",
    "EXECUTED_GROUND",
    "End",
    "FACES",
    "GREY",
    "GRID",
    "HEADER_ROW",
    "INK",
    "LABEL",
    "LANES_UP_TO",
    "LANE_ROW",
    "Lane",
    "MARGIN",
    "MARKER",
    "MARKS",
    "MARK_INK",
    "MAX_COLUMNS",
    "MOON",
    "NIGHT",
    "PAPER",
    "PREVIEW_HEIGHT",
    "PREVIEW_WIDTH",
    "Picture",
    "PictureError",
    "RED",
    "RESULT_INK",
    "RULE",
    "RUN",
    "RUN_COLUMNS",
    "SIDE_BAR",
    "SIDE_INK",
    "STAR",
    "STATUS_MAX",
    "SUN",
    "Seat",
    "UPLOAD_LIMIT",
    "VoteCell",
    "WIDTH",
    "face",
    "fit",
    "font",
    "layout",
    "marker",
    "paint",
    "phases",
    "render_png",
    "star",
    "wrap",
]
