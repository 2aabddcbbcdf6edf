"""A picture of a whole game: every player's lane from the deal to the end, days and nights as columns.

Drawn with Pillow. The text is DejaVu Sans, which has Cyrillic; the project
ships no font file of its own: the one matplotlib bundles is used (found on
disk, matplotlib itself is not imported).

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
the names (22 px) 10 px. In the chat itself a picture taller than that box is
shown smaller still, as every tall image is: a thumbnail to tap.
"""

from __future__ import annotations

import importlib.util
import io
import logging
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from bot.archive import replay_log, side_of
from bot.i18n import t
from bot.storage import ArchivedGame
from rules import Command, Execute, Game, Phase, ProcuratorKill, Setup
from rules import events as ev

log = logging.getLogger(__name__)

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
#: every mark of a death, in the legend's order
MARKS = ("vote", "lot", "host", "mafia", "touring", "maniac", "procurator", "idle")
CAUSES = ("execution", "mafia", "touring", "maniac", "procurator")
#: a cause's mark when only causes are known (the counting cells)
CAUSE_MARK = {"execution": "vote", "mafia": "mafia", "touring": "touring", "maniac": "maniac",
              "procurator": "procurator"}

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
SIDE_INK = {"honest": (27, 38, 49), "mafia": (176, 58, 46), "maniac": (108, 52, 131)}
SIDE_BAR = {"honest": (186, 198, 214), "mafia": (232, 180, 172), "maniac": (214, 190, 226)}
RESULT_INK = {"honest": (30, 110, 60), "mafia": (176, 58, 46), "undecided": GREY}
RED = (192, 57, 43)
EXECUTED_GROUND = (245, 205, 198)
MARK_INK = {
    "vote": RED, "lot": RED, "host": RED, "mafia": (31, 42, 68), "touring": (31, 42, 68),
    "maniac": (108, 52, 131), "procurator": (110, 112, 112), "idle": (110, 112, 112),
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


#: the faces, by use; the smallest is 18 px (8 px at Discord's preview width)
FACES = {"title": (30, True), "text": (22, False), "city": (22, True), "name": (22, False),
         "small": (18, False), "number": (18, True), "vote": (18, True)}


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


# ---------------------------------------------------------------------- the layout


@dataclass(frozen=True)
class Column:
    """One column: a phase, or (in a long game) a run of consecutive ones."""

    phases: tuple[str, ...]
    label: str
    """The header: the phase's number, or the run's first and last phase ("D13–N18")."""

    @property
    def night(self) -> bool:
        """A night (a run is neither)."""
        return len(self.phases) == 1 and self.phases[0].startswith("night")


@dataclass(frozen=True)
class Seat:
    """Who held a lane from ``column`` on: the dealt player (column 0) or a newcomer."""

    player: str
    name: str
    column: int


@dataclass(frozen=True)
class End:
    """How a lane ended: its player's death in ``column``.

    ``mark`` is one of :data:`MARKS`; ``by_city`` the city that executed the
    player, when it is not the player's own.
    """

    column: int
    mark: str
    by_city: str | None = None


@dataclass(frozen=True)
class Lane:
    """One seat of the deal from the deal to the end: ``end`` is None for who is alive at the end."""

    number: int
    city: str
    status: str
    side: str
    seats: tuple[Seat, ...]
    end: End | None
    won: bool


@dataclass(frozen=True)
class CityBlock:
    """A city: its result, who is alive, its lanes (or, counting, its dead by column and cause)."""

    city: str
    result: str
    alive: int
    residents: int
    lanes: tuple[Lane, ...] = ()
    counts: dict[int, dict[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class VoteCell:
    """A player's vote at the end of one day: for the lane ``candidate``, in columns
    ``column`` … ``column + span - 1`` (the day's number)."""

    column: int
    span: int
    candidate: int
    side: str
    executed: bool


@dataclass(frozen=True)
class Picture:
    """What the picture shows, before it is painted."""

    language: str
    mode: str
    """``lanes`` (a lane per player) or ``counts`` (a lane per city)."""
    title: str
    verdict: str
    columns: tuple[Column, ...]
    cities: tuple[CityBlock, ...]
    votes: dict[int, tuple[VoteCell, ...]] | None = None
    """Lane number -> its votes, when the votes panel was asked for and can be drawn."""
    votes_omitted: bool = False
    """The votes panel was asked for but the game is too big for it."""

    def lanes(self) -> list[Lane]:
        """Every lane, city by city."""
        return [lane for block in self.cities for lane in block.lanes]

    def marks(self) -> list[str]:
        """The marks the picture uses, in the legend's order."""
        used = {lane.end.mark for lane in self.lanes() if lane.end is not None}
        used |= {CAUSE_MARK[cause] for block in self.cities for cells in block.counts.values() for cause in cells}
        return [mark for mark in MARKS if mark in used]


def _mark(event: ev.PlayerKilled, command: Command, source: str) -> str:
    if event.cause.value == "execution":
        return "lot" if event.by_chance else "host" if isinstance(command, Execute) else "vote"
    if event.cause.value == "procurator":
        return "idle" if isinstance(command, ProcuratorKill) and source == "timer" else "procurator"
    return event.cause.value


@dataclass
class _Story:
    """What the replay tells beyond the archive's rows."""

    deaths: dict[str, tuple[str, str, str | None]] = field(default_factory=dict)
    """player -> (phase, mark, the executing city)."""
    replaced: dict[str, tuple[str, str]] = field(default_factory=dict)
    """old player -> (newcomer, phase)."""

    def listen(self, command: Command, source: str, phase: Phase, events: list[ev.Event]) -> None:
        for event in events:
            if isinstance(event, ev.PlayerKilled):
                self.deaths[event.player] = (str(event.phase), _mark(event, command, source), event.by_city)
            elif isinstance(event, ev.PlayerReplaced):
                self.replaced[event.old] = (event.new, str(phase))


def _columns(say: Callable[..., str], every: list[str]) -> list[Column]:
    """One column per phase, or at most :data:`MAX_COLUMNS`, each a run of phases."""
    if len(every) <= MAX_COLUMNS:
        return [Column((phase,), phase.split()[1]) for phase in every]
    size = math.ceil(len(every) / RUN_COLUMNS)
    runs = [tuple(every[start:start + size]) for start in range(0, len(every), size)]
    return [Column(run, f"{_short(say, run[0])}–{_short(say, run[-1])}" if len(run) > 1 else _short(say, run[0]))
            for run in runs]


def layout(archived: ArchivedGame, language: str, *, votes: bool = False) -> Picture:
    """What the picture of ``archived`` shows, texts in ``language`` (module docstring)."""
    say: Callable[..., str] = partial(t, language)
    columns = _columns(say, phases(archived))
    at = {phase: index for index, column in enumerate(columns) for phase in column.phases}
    last = len(columns) - 1
    title = say("picture.title", game=archived.game_id, cities=", ".join(archived.cities))
    if archived.over:
        winners = ", ".join(_winner(say, w) for w in archived.winners) or say("winners.none")
        verdict = say("picture.winners", winners=winners)
    else:
        verdict = say("picture.cancelled", phase=_phase_name(say, archived.last_phase))
    residents = {city: sum(1 for p in archived.players if p.city == city) for city in archived.cities}
    alive = {city: sum(1 for p in archived.players if p.city == city and p.survived) for city in archived.cities}

    def block(city: str, **parts: Any) -> CityBlock:
        return CityBlock(city, _result(archived, city), alive[city], residents[city], **parts)

    if len(archived.players) > LANES_UP_TO:
        counts: dict[str, dict[int, dict[str, int]]] = {city: {} for city in archived.cities}
        for death in archived.deaths:
            cell = counts.setdefault(death.city, {}).setdefault(at.get(death.phase, last), {})
            cell[death.cause] = cell.get(death.cause, 0) + 1
        return Picture(language, "counts", title, verdict, tuple(columns),
                       tuple(block(city, counts=counts[city]) for city in archived.cities), votes_omitted=votes)

    story = _Story()
    replay_log(archived.setup, archived.seed,
               [(index, command, source) for index, (command, source) in enumerate(archived.log, 1)],
               story.listen)
    dealt = Game.create(Setup.from_dict(archived.setup), archived.seed)
    final = {p.player: p for p in archived.players}
    blocks, lane_of, number = [], {}, 0
    for city in archived.cities:
        lanes = []
        for player in dealt.residents[city]:
            number += 1
            seats = [Seat(player, archived.names.get(player, player), 0)]
            while seats[-1].player in story.replaced:
                new, phase = story.replaced[seats[-1].player]
                seats.append(Seat(new, archived.names.get(new, new), at.get(phase, last)))
            holder = seats[-1].player
            end = None
            if holder in story.deaths:
                phase, mark, by_city = story.deaths[holder]
                end = End(at.get(phase, last), mark, by_city if by_city not in (None, city) else None)
            known = final.get(holder)
            if known is None:  # the replay and the archive disagree (the rules changed since)
                log.warning("picture of game %s: %s is not among the archived players; drawn as dealt",
                            archived.game_id, holder)
                status = dealt.status_of(player).value
                lanes.append(Lane(number, city, status, side_of(status), tuple(seats), end, False))
            else:
                lanes.append(Lane(number, city, known.status, known.side, tuple(seats), end, bool(known.won)))
            lane_of.update({seat.player: lanes[-1] for seat in seats})
        blocks.append(block(city, lanes=tuple(lanes)))
    panel = None
    if votes and len(columns) == len(phases(archived)):
        panel = _votes(archived, columns, lane_of, story)
    return Picture(language, "lanes", title, verdict, tuple(columns), tuple(blocks), panel,
                   votes_omitted=votes and panel is None)


def _votes(archived: ArchivedGame, columns: list[Column], lane_of: dict[str, Lane],
           story: _Story) -> dict[int, tuple[VoteCell, ...]]:
    """Each lane's votes, a cell per day under the columns of that day's number."""
    spans: dict[int, list[int]] = {}
    for index, column in enumerate(columns):
        spans.setdefault(int(column.phases[0].split()[1]), []).append(index)
    executed = {(int(phase.split()[1]), by_city, player)
                for player, (phase, mark, by_city) in story.deaths.items() if mark in ("vote", "lot", "host")}
    cells: dict[int, list[VoteCell]] = {}
    for vote in archived.votes:
        voter, candidate = lane_of.get(vote.voter), lane_of.get(vote.candidate)
        if voter is None or candidate is None or vote.day not in spans:
            continue
        span = spans[vote.day]
        cells.setdefault(voter.number, []).append(VoteCell(
            span[0], len(span), candidate.number, candidate.side,
            (vote.day, vote.city, vote.candidate) in executed,
        ))
    return {lane: tuple(found) for lane, found in cells.items()}


def _result(archived: ArchivedGame, city: str) -> str:
    return ("honest" if f"{city}:honest" in archived.winners
            else "mafia" if f"{city}:mafia" in archived.winners else "undecided")


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


# ---------------------------------------------------------------------- the painting


def marker(draw: ImageDraw.ImageDraw, mark: str, x: float, y: float, size: int = MARKER) -> None:
    """The mark's marker with its top left corner at (x, y)."""
    ink = MARK_INK.get(mark, GREY)
    box = (x, y, x + size, y + size)
    middle = (x + size / 2, y + size / 2)
    diamond = [(x + size / 2, y), (x + size, y + size / 2), (x + size / 2, y + size), (x, y + size / 2)]
    if mark == "vote":
        draw.rectangle(box, fill=ink)
    elif mark == "lot":  # a die: an open square with one pip
        draw.rectangle(box, outline=ink, fill=PAPER, width=3)
        pip = size / 7
        draw.ellipse((middle[0] - pip, middle[1] - pip, middle[0] + pip, middle[1] + pip), fill=ink)
    elif mark == "host":  # the execution square with the Procurator's diamond in it
        draw.rectangle(box, fill=ink)
        inset = size / 4
        draw.polygon([(middle[0], y + inset), (x + size - inset, middle[1]), (middle[0], y + size - inset),
                      (x + inset, middle[1])], fill=PAPER)
    elif mark == "mafia":
        draw.ellipse(box, fill=ink)
    elif mark == "touring":
        draw.ellipse(box, outline=ink, fill=PAPER, width=4)
    elif mark == "maniac":
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


def _sun_or_moon(draw: ImageDraw.ImageDraw, night: bool, x: float, y: float, size: int, ground: Any) -> None:
    if night:
        draw.ellipse((x, y, x + size, y + size), fill=MOON)
        draw.ellipse((x + size * 0.35, y - size * 0.1, x + size * 1.15, y + size * 0.7), fill=ground)
    else:
        draw.ellipse((x, y, x + size, y + size), fill=SUN)


@dataclass
class _Canvas:
    """Where things go: the grid's columns and the drawing."""

    picture: Picture
    draw: ImageDraw.ImageDraw
    say: Callable[..., str]
    status_width: float = 0.0

    def __post_init__(self) -> None:
        small = face("small")
        widest = max([small.getlength(self.say(f"status.{lane.status}")) for lane in self.picture.lanes()] or [0])
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
                _sun_or_moon(self.draw, False, middle - 8, y + 6, 16, DAY)
                self.draw.text((middle, y + 36), label, font=number, fill=INK, anchor="mm")
            return
        for index, column in enumerate(self.picture.columns):
            left, middle = self.x(index), self.x(index) + self.column / 2
            ground = NIGHT if column.night else DAY
            if len(column.phases) == 1:
                _sun_or_moon(self.draw, column.night, middle - 8, y + 6, 16, ground)
                self.draw.text((middle, y + 36), column.label, font=number, fill=INK, anchor="mm")
            else:
                start, end = column.label.split("–", 1)
                small = font(15, True)
                self.draw.text((middle, y + 14), fit(start, small, self.column - 2), font=small, fill=INK, anchor="mm")
                self.draw.text((middle, y + 36), fit(end, small, self.column - 2), font=small, fill=INK, anchor="mm")
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
        self.draw.text((x, y + CITY_ROW / 2), verdict, font=small, fill=RESULT_INK[block.result], anchor="lm")
        x += small.getlength(verdict) + 20
        count = fit(self.say("picture.alive", count=block.alive, total=block.residents), small, WIDTH - MARGIN - x)
        self.draw.text((x, y + CITY_ROW / 2), count, font=small, fill=GREY, anchor="lm")

    def city_label(self, block: CityBlock, y: float) -> None:
        """A counting lane's label: the city, its result, who is alive, in three lines."""
        small = face("small")
        self.draw.text((MARGIN + 8, y + 10), fit(block.city, face("city"), LABEL - 24), font=face("city"), fill=INK)
        self.draw.text((MARGIN + 8, y + 42), fit(self.say(f"picture.city.{block.result}"), small, LABEL - 24),
                       font=small, fill=RESULT_INK[block.result])
        self.draw.text((MARGIN + 8, y + 68), fit(self.say("picture.alive", count=block.alive, total=block.residents),
                                                 small, LABEL - 24), font=small, fill=GREY)

    def lane_label(self, lane: Lane, y: float, *, status: bool = True) -> None:
        middle = y + LANE_ROW / 2
        if lane.won:
            star(self.draw, MARGIN + 2, middle - 8)
        small, name_face = face("small"), face("name")
        self.draw.text((MARGIN + 52, middle), str(lane.number), font=small, fill=GREY, anchor="rm")
        name = lane.seats[0].name.strip() or lane.seats[0].player
        room = LABEL - 66 - (self.status_width + 8 if status else 0)
        self.draw.text((MARGIN + 58, middle), fit(name, name_face, room), font=name_face,
                       fill=SIDE_INK.get(lane.side, INK), anchor="lm")
        if status:
            self.draw.text((MARGIN + LABEL - 6, middle), fit(self.say(f"status.{lane.status}"), small,
                                                               self.status_width), font=small, fill=GREY, anchor="rm")

    def lane(self, lane: Lane, y: float) -> None:
        """The bar from the deal to the end, the ticks of newcomers, the mark of the death."""
        draw, middle = self.draw, y + LANE_ROW / 2
        end_x = self.x(lane.end.column) + self.column / 2 if lane.end else WIDTH - MARGIN - 2
        draw.rounded_rectangle((self.x(0) + 2, middle - BAR / 2, end_x, middle + BAR / 2), radius=BAR / 2,
                               fill=SIDE_BAR.get(lane.side, RULE))
        small = face("small")
        notes: list[str] = []
        for index, seat in enumerate(lane.seats[1:], 1):
            x = self.x(seat.column) + 2
            draw.rectangle((x - 3, middle - 11, x, middle + 11), fill=INK)
            following = lane.seats[index + 1].column if index + 1 < len(lane.seats) else None
            limit = self.x(following) - 4 if following is not None else end_x - (MARKER / 2 + 4 if lane.end else 0)
            name = seat.name.strip() or seat.player
            if limit - x - 6 >= 60:
                draw.text((x + 5, middle), fit(name, small, limit - x - 6), font=small, fill=INK, anchor="lm")
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
                    self.draw.text((middle, top + size + 9), str(cells[cause]), font=number, fill=INK, anchor="mm")
                    top += COUNT_ROW

    def vote_cells(self, cells: Iterable[VoteCell], y: float) -> None:
        vote = face("vote")
        for cell in cells:
            left, right = self.x(cell.column) + 3, self.x(cell.column + cell.span) - 3
            if cell.executed:
                self.draw.rounded_rectangle((left, y + 4, right, y + LANE_ROW - 4), radius=5, fill=EXECUTED_GROUND)
            self.draw.text(((left + right) / 2, y + LANE_ROW / 2), str(cell.candidate), font=vote,
                           fill=SIDE_INK.get(cell.side, INK), anchor="mm")


def _legend_items(picture: Picture) -> list[tuple[str, str]]:
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
        marks = picture.marks()
        items.extend((mark, f"picture.mark.{mark}") for mark in marks)
        voting = [lane.end.by_city for lane in picture.lanes() if lane.end is not None and lane.end.by_city]
        if voting:
            items.append((f"city:{voting[0]}", "picture.legend.by_city"))
    else:
        items.extend((CAUSE_MARK[cause], f"cause_short.{cause}") for cause in CAUSES)
    return items


def _legend_lines(picture: Picture, say: Callable[..., str]) -> list[list[tuple[str, str, float, float]]]:
    """The legend's items flowed into lines of the picture's width: (symbol, text, x, the symbol's width)."""
    small = face("small")
    lines: list[list[tuple[str, str, float, float]]] = [[]]
    x = float(MARGIN)
    for symbol, key in _legend_items(picture):
        text = say(key)
        sign = small.getlength(symbol[5:]) + 6 if symbol.startswith("city:") else 28
        width = sign + small.getlength(text)
        if lines[-1] and x + width > WIDTH - MARGIN:
            lines.append([])
            x = MARGIN
        lines[-1].append((symbol, fit(text, small, WIDTH - 2 * MARGIN - sign), x, sign))
        x += width + 22
    return lines


def _symbol(draw: ImageDraw.ImageDraw, symbol: str, x: float, y: float) -> None:
    if symbol in ("day", "night"):
        draw.rectangle((x, y, x + MARKER, y + MARKER), fill=NIGHT if symbol == "night" else DAY, outline=RULE)
        _sun_or_moon(draw, symbol == "night", x + 3, y + 3, MARKER - 6, NIGHT if symbol == "night" else DAY)
    elif symbol == "star":
        star(draw, x + 1, y + 1)
    elif symbol == "bar":
        draw.rounded_rectangle((x - 4, y + 3, x + MARKER, y + MARKER - 3), radius=6, fill=SIDE_BAR["honest"])
    elif symbol == "tick":
        draw.rounded_rectangle((x - 4, y + 3, x + MARKER, y + MARKER - 3), radius=6, fill=SIDE_BAR["honest"])
        draw.rectangle((x + 6, y - 2, x + 9, y + MARKER + 2), fill=INK)
    elif symbol.startswith("city:"):
        draw.text((x - 4, y + MARKER / 2), symbol[5:], font=face("small"), fill=RED, anchor="lm")
    else:
        marker(draw, symbol, x, y)


def render_png(archived: ArchivedGame, language: str, *, votes: bool = False) -> bytes:
    """The game's picture as PNG bytes, texts in ``language``; ``votes`` adds the votes panel.

    Raises:
        PictureError: no font to draw with.
    """
    return paint(layout(archived, language, votes=votes))


def paint(picture: Picture) -> bytes:
    """The picture as PNG bytes.

    Raises:
        PictureError: no font to draw with.
    """
    say: Callable[..., str] = partial(t, picture.language)
    title_face, text_face, small = face("title"), face("text"), face("small")
    title_lines = wrap(picture.title, title_face, WIDTH - 2 * MARGIN, 2)
    verdict_lines = wrap(picture.verdict, text_face, WIDTH - 2 * MARGIN, 6)
    top = MARGIN + 40 * len(title_lines) + 4
    head = top + 30 * len(verdict_lines) + 12
    if picture.mode == "lanes":
        rows = [CITY_ROW + LANE_ROW * len(block.lanes) for block in picture.cities]
    else:
        rows = [max(12 + COUNT_ROW * max([len(c) for c in block.counts.values()] or [0]), 100)
                for block in picture.cities]
    grid = HEADER_ROW + sum(rows)
    legend = _legend_lines(picture, say)
    notes = []
    if picture.mode == "counts":
        notes.extend(wrap(say("picture.counts"), small, WIDTH - 2 * MARGIN, 3))
    if picture.votes_omitted:
        notes.extend(wrap(say("picture.votes.omitted"), small, WIDTH - 2 * MARGIN, 2))
    votes_head = wrap(say("picture.votes.title"), small, WIDTH - 2 * MARGIN, 3) if picture.votes is not None else []
    panel = 0
    if picture.votes is not None:
        panel = 24 + 34 + 26 * len(votes_head) + HEADER_ROW + sum(rows)
    height = head + grid + 16 + 30 * len(legend) + 26 * len(notes) + panel + MARGIN

    image = Image.new("RGB", (WIDTH, height), PAPER)
    draw = ImageDraw.Draw(image)
    canvas = _Canvas(picture, draw, say)
    for index, line in enumerate(title_lines):
        draw.text((MARGIN, MARGIN + 40 * index), line, font=title_face, fill=INK)
    for index, line in enumerate(verdict_lines):
        draw.text((MARGIN, top + 30 * index), line, font=text_face, fill=INK)

    def grid_at(y: float, cells: Callable[[CityBlock, float], None], *, result: bool) -> float:
        canvas.shade(y, y + grid, days=not result)
        canvas.header(y, days=not result)
        y += HEADER_ROW
        for block, row in zip(picture.cities, rows, strict=True):
            if picture.mode == "lanes":
                canvas.city_row(block, y, result=result)
                cells(block, y + CITY_ROW)
            else:
                canvas.city_label(block, y)
                cells(block, y)
            y += row
            draw.line((MARGIN, y, WIDTH - MARGIN, y), fill=RULE, width=1)
        return y

    def lanes(block: CityBlock, y: float) -> None:
        for lane in block.lanes:
            canvas.lane_label(lane, y)
            canvas.lane(lane, y)
            y += LANE_ROW

    def voted(block: CityBlock, y: float) -> None:
        assert picture.votes is not None
        for lane in block.lanes:
            canvas.lane_label(lane, y, status=False)
            canvas.vote_cells(picture.votes.get(lane.number, ()), y)
            y += LANE_ROW

    y = grid_at(head, lanes if picture.mode == "lanes" else canvas.counts, result=True) + 16
    for items in legend:
        for symbol, text, x, sign in items:
            _symbol(draw, symbol, x, y + 4)
            draw.text((x + sign, y + 4 + MARKER / 2), text, font=small, fill=INK, anchor="lm")
        y += 30
    for note in notes:
        draw.text((MARGIN, y), note, font=small, fill=GREY)
        y += 26
    if picture.votes is not None:
        y += 24
        draw.line((MARGIN, y - 12, WIDTH - MARGIN, y - 12), fill=INK, width=2)
        draw.text((MARGIN, y), say("picture.votes.heading"), font=face("city"), fill=INK)
        y += 34
        for line in votes_head:
            draw.text((MARGIN, y), line, font=small, fill=GREY)
            y += 26
        grid_at(y, voted, result=False)
    buffer = io.BytesIO()
    image.save(buffer, "PNG", compress_level=3)
    return buffer.getvalue()
