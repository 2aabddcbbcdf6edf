"""A finished game as a page people can read and keep: a self-contained HTML page and its
plain-text twin.

Both are made from the archive (who played, their fates, each day's votes, the last words, the
picture) and from what was read of the game's channels when its transcript was made
(:class:`Reading`: every message with its author's name, the names of the members, roles and
channels its text names, and the server's time zone then), with every Discord code written out
as a name (:mod:`bot.readable`). The HTML page has no external resource: its style is inline
and the picture is embedded as a ``data:`` URI; Jinja2 escapes every text put in it
(autoescape), so a nickname cannot become markup.

A :class:`Reading` is stored compressed with the game (``transcript_pages``), so the pages can
be made again at any time: when ``/mafia game N`` finds the archive's message gone, and by
``mafia-bot export-site``.
"""

from __future__ import annotations

import base64
import datetime
import json
import zlib
from dataclasses import asdict, dataclass, field
from functools import cache, partial
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from bot.i18n import phase_words, t, winner_words
from bot.readable import Readable, zone_of
from bot.storage import ArchivedGame
from bot.storage.records import ArchivedDeath, ArchivedPlayer


@dataclass(frozen=True)
class Said:
    """One message as read back: when (unix time), who, and its text as Discord holds it."""

    when: float
    author: str
    text: str


@dataclass(frozen=True)
class ChannelRead:
    """One channel of the game as read back (``unread``: why it could not be)."""

    heading: str
    messages: list[Said] = field(default_factory=list)
    unread: str | None = None


@dataclass(frozen=True)
class Reading:
    """What was read of a game's channels, with the names their texts need."""

    zone: str = "UTC"
    members: dict[str, str] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    channels: dict[str, str] = field(default_factory=dict)
    read: list[ChannelRead] = field(default_factory=list)

    def pack(self) -> bytes:
        """Stored form: compressed JSON."""
        return zlib.compress(json.dumps(asdict(self), ensure_ascii=False).encode("utf-8"), 9)

    @classmethod
    def unpack(cls, data: bytes) -> Reading:
        raw: dict[str, Any] = json.loads(zlib.decompress(data).decode("utf-8"))
        read = [
            ChannelRead(c["heading"], [Said(**m) for m in c["messages"]], c.get("unread"))
            for c in raw.pop("read", [])
        ]
        return cls(**raw, read=read)


def page_data(
    archived: ArchivedGame,
    language: str,
    reading: Reading | None,
    *,
    picture: bytes | None = None,
    links: tuple[tuple[str, str], ...] = (),
) -> dict[str, Any]:
    """Everything the page shows, in words (see the module docstring)."""
    reading = reading or Reading()
    say = partial(t, language)
    names = {**reading.members, **archived.names}
    readable = readable_for(archived, language, reading)

    def name(player: str) -> str:
        return names.get(player, player)

    def moment(seconds: float) -> str:
        return readable.moment(datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC))

    if archived.over:
        winners = ", ".join(winner_words(language, w) for w in archived.winners) or say(
            "winners.none"
        )
        result = say(
            "archive.over", phase=phase_words(language, archived.last_phase), winners=winners
        )
    else:
        result = say("archive.cancelled", phase=phase_words(language, archived.last_phase))
    return {
        "language": language,
        "title": say("page.title", game=archived.game_id),
        "head": [
            say("page.host", host=name(str(archived.host_id))),
            say(
                "page.when",
                start=moment(archived.created_at),
                end=moment(archived.ended_at),
                zone=reading.zone,
            ),
            say("archive.seed", seed=archived.seed),
        ],
        "result": result,
        "picture": base64.b64encode(picture).decode("ascii") if picture else None,
        "picture_alt": say("page.picture"),
        "links": [{"href": href, "text": text} for href, text in links],
        "labels": {
            key: say(f"page.{key}") for key in ("player", "status", "fate", "votes", "last_words")
        },
        "cities": _cities(archived, language, name),
        "votes": _votes(archived, language, name),
        "last_words": [
            f"{name(w.player)}, {phase_words(language, w.phase)}: "
            + (say("archive.recording", length=length_words(w.duration)) if w.outbox_id else "")
            for w in archived.last_words
        ],
        "channels": _channels(reading, readable, moment),
    }


def _votes(archived: ArchivedGame, language: str, name: Any) -> list[dict[str, str]]:
    """Each day's votes: the day and city, the candidate, who voted for him."""
    tally: dict[tuple[int, str, str], list[str]] = {}
    for vote in archived.votes:
        tally.setdefault((vote.day, vote.city, vote.candidate), []).append(vote.voter)
    return [
        {
            "day": f"{t(language, 'phase_name.day', number=day)}, {city}",
            "candidate": name(candidate),
            "voters": ", ".join(name(v) for v in voters),
        }
        for (day, city, candidate), voters in tally.items()
    ]


def _channels(reading: Reading, readable: Readable, moment: Any) -> list[dict[str, Any]]:
    """Each channel read back, its messages' texts written out."""
    return [
        {
            "heading": channel.heading,
            "unread": channel.unread,
            "messages": [
                {"when": moment(m.when), "author": m.author, "text": readable.text(m.text)}
                for m in channel.messages
            ],
        }
        for channel in reading.read
    ]


def city_result(archived: ArchivedGame, city: str) -> str:
    """How the city ended: ``honest``, ``mafia`` or ``undecided``."""
    for side in ("honest", "mafia"):
        if f"{city}:{side}" in archived.winners:
            return side
    return "undecided"


def roll(archived: ArchivedGame, city: str) -> list[ArchivedPlayer]:
    """The city's seats at the end: the living in the deal's order, then the dead in the order
    they died."""
    order = {d.player: n for n, d in enumerate(archived.deaths)}
    seats = [p for p in archived.players if p.city == city]
    living = [p for p in seats if p.player not in order]
    return living + sorted((p for p in seats if p.player in order), key=lambda p: order[p.player])


def fate_words(language: str, death: ArchivedDeath | None) -> str:
    """A player's fate in words: alive, or how and when he died."""
    if death is None:
        return t(language, "archive.alive")
    return t(
        language,
        "archive.died",
        cause=t(language, f"cause_short.{death.cause}"),
        phase=phase_words(language, death.phase),
    )


def length_words(seconds: float | None) -> str:
    """A recording's length, ``m:ss``."""
    whole = int(seconds or 0)
    return f"{whole // 60}:{whole % 60:02d}"


def _cities(archived: ArchivedGame, language: str, name: Any) -> list[dict[str, Any]]:
    say = partial(t, language)
    deaths = {d.player: d for d in archived.deaths}
    cities = []
    for city in archived.cities:
        seats = roll(archived, city)
        rows = [(p, fate_words(language, deaths.get(p.player))) for p in seats]
        rows += [
            (p, say("page.replaced", new=name(p.replaced_by or "")))
            for p in archived.replaced
            if p.city == city
        ]
        cities.append(
            {
                "heading": say(
                    "page.city",
                    city=city,
                    result=say(f"picture.city.{city_result(archived, city)}"),
                    alive=sum(p.player not in deaths for p in seats),
                    total=len(seats),
                ),
                "rows": [
                    {
                        "name": name(p.player),
                        "status": say(f"status.{p.status}"),
                        "side": p.side if p.won else "",
                        "fate": fate,
                    }
                    for p, fate in rows
                ],
            }
        )
    return cities


@cache
def environment() -> Environment:
    """The pages' Jinja2 environment: templates from the package, every text escaped."""
    return Environment(
        loader=PackageLoader("bot", "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )


def page_html(data: dict[str, Any]) -> str:
    """The page as HTML (escaped, self-contained)."""
    return environment().get_template("game.html").render(page=data)


def page_text(data: dict[str, Any]) -> str:
    """The page's plain-text twin: the same content, names resolved, no picture."""
    lines = summary_text(data)
    for channel in data["channels"]:
        lines.append(f"=== #{channel['heading']} ===")
        if channel["unread"]:
            lines.append(channel["unread"])
        lines += [f"[{m['when']}] {m['author']}: {m['text']}" for m in channel["messages"]]
        lines.append("")
    return "\n".join(lines)


def summary_text(data: dict[str, Any]) -> list[str]:
    """The page's text before its channels: the game, its cities, votes and last words."""
    lines = [data["title"], *data["head"], data["result"], ""]
    for city in data["cities"]:
        lines += [city["heading"]]
        lines += [f"  • {r['name']} — {r['status']}, {r['fate']}" for r in city["rows"]]
        lines.append("")
    if data["votes"]:
        lines.append(data["labels"]["votes"])
        lines += [f"  {v['day']}: {v['candidate']} ← {v['voters']}" for v in data["votes"]]
        lines.append("")
    if data["last_words"]:
        lines += [data["labels"]["last_words"], *(f"  • {w}" for w in data["last_words"]), ""]
    return lines


def readable_for(archived: ArchivedGame, language: str, reading: Reading) -> Readable:
    """The names and the zone a game's texts are written out with."""
    names = {**reading.members, **archived.names}
    return Readable(language, zone_of(reading.zone), names, reading.roles, reading.channels)


__all__ = [
    "ChannelRead",
    "city_result",
    "fate_words",
    "length_words",
    "roll",
    "environment",
    "Reading",
    "Said",
    "page_data",
    "page_html",
    "page_text",
    "readable_for",
    "summary_text",
]
