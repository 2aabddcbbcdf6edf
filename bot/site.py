"""``mafia-bot export-site DIR``: a server's season as a folder of static pages to host
anywhere: ``index.html`` (every archived game, newest first, with its result), one page per
game (``game-N.html``, and its text twin ``game-N.txt``: :mod:`bot.transcript_page`) and
``leaderboard.html`` (the rating). Pages link each other by relative paths and load nothing
from outside, so the folder can be opened from a disk as well as served."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from bot.i18n import LANGUAGES, t
from bot.picture import PictureError, render_png
from bot.readable import Readable
from bot.storage import Storage
from bot.transcript_page import Reading, environment, page_data, page_html, page_text


class SiteError(Exception):
    """The season cannot be written; the message says why."""


async def export_site(storage: Storage, folder: Path, guild: int | None, language: str) -> str:
    """Write the season of ``guild`` (the only one the database holds, when None) to ``folder``;
    returns one line saying what was written.

    Raises:
        SiteError: no such guild, several and none chosen, or the folder cannot be written.
    """
    games = await storage.archived_ids(guild)
    guilds = sorted({g for g, _ in games})
    if guild is None and len(guilds) > 1:
        raise SiteError(f"the database holds {len(guilds)} servers: choose one with --guild")
    if not games:
        raise SiteError("no archived game" + (f" of server {guild}" if guild else ""))
    guild = guilds[0]
    language = await storage.guild_language(guild) or language
    language = language if language in LANGUAGES else "en"
    links = (
        ("index.html", t(language, "page.index")),
        ("leaderboard.html", t(language, "page.leaderboard")),
    )
    try:
        folder.mkdir(parents=True, exist_ok=True)
        rows = await _game_pages(storage, folder, [g for _, g in games], language, links)
        title = t(language, "page.season", guild=guild)
        _write_list(folder / "index.html", language, title, links, [], rows[::-1])
        await _leaderboard(storage, folder, guild, language, links)
    except OSError as error:
        raise SiteError(f"cannot write {folder}: {error}") from None
    return f"{folder}: {len(rows)} game page(s) of server {guild}, index.html and leaderboard.html"


async def _game_pages(
    storage: Storage,
    folder: Path,
    games: list[int],
    language: str,
    links: tuple[tuple[str, str], ...],
) -> list[list[dict[str, Any]]]:
    """Each game's page and text twin; the index's row of each."""
    rows: list[list[dict[str, Any]]] = []
    for game_id in games:
        archived = await storage.archived_game(game_id)
        if archived is None:
            continue
        packed = await storage.reading(game_id)
        try:
            picture: bytes | None = render_png(archived, language)
        except PictureError:
            picture = None
        reading = Reading.unpack(packed) if packed else None
        data = page_data(archived, language, reading, picture=picture, links=links)
        (folder / f"game-{game_id}.html").write_text(page_html(data), encoding="utf-8")
        (folder / f"game-{game_id}.txt").write_text(page_text(data), encoding="utf-8")
        ended = datetime.datetime.fromtimestamp(archived.ended_at, tz=datetime.UTC)
        title = t(language, "page.title", game=game_id)
        rows.append(
            [
                {"text": title, "href": f"game-{game_id}.html"},
                {"text": Readable(language).moment(ended, "d")},
                {"text": data["result"]},
            ]
        )
    return rows


async def _leaderboard(
    storage: Storage, folder: Path, guild: int, language: str, links: tuple[tuple[str, str], ...]
) -> None:
    board = await storage.leaderboard(guild, "rating", limit=1000)
    header = [t(language, f"page.{key}") for key in ("player", "games", "wins", "rating")]
    ranked = [
        [
            {"text": r.name},
            {"text": str(r.games)},
            {"text": str(r.wins)},
            {"text": f"{r.rating:.1f}"},
        ]
        for r in board
    ]
    title = t(language, "page.leaderboard")
    _write_list(folder / "leaderboard.html", language, title, links, header, ranked)


def _write_list(
    path: Path,
    language: str,
    title: str,
    links: tuple[tuple[str, str], ...],
    header: list[str],
    rows: list[list[dict[str, Any]]],
) -> None:
    page = {
        "language": language,
        "title": title,
        "links": [{"href": href, "text": text} for href, text in links],
        "header": header,
        "rows": rows,
    }
    path.write_text(environment().get_template("list.html").render(page=page), encoding="utf-8")


__all__ = ["SiteError", "export_site"]
