"""A transcript people can read and keep: each finished game's self-contained HTML page and its
plain-text twin, names in place of Discord's codes, times in the server's zone, stored
compressed, posted to the archive, attached again by ``/mafia game N`` when that message is
gone, and written out as a season by ``mafia-bot export-site``. The HTML is parsed here, and
opened in headless Chromium where one is installed."""

from __future__ import annotations

import asyncio
import base64
import datetime
import io
import re
import shutil
import subprocess
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from PIL import Image

from bot.cli import main
from bot.config import Config
from bot.i18n import t
from bot.readable import Readable
from tests.cogs.scenes import quick_edits, run
from tests.cogs.test_transcripts import (
    MESSAGE_CONTENT_LIMITED,
    archive_channel,
    play_and_end,
    transcript_state,
)
from tests.harness import NO_TIMERS, Table, bot_table

CODES = re.compile(r"<@!?&?\d+>|<#\d+>|</[^>]+:\d+>|<t:\d+(:\w)?>")


class Page(HTMLParser):
    """What a page holds: its text and every address it would load or link."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.addresses: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href") and value is not None:
                self.addresses.append((tag, name, value))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(html: str) -> Page:
    page = Page()
    page.feed(html)
    return page


def attachment(table: Table, channel_id: int, name: str) -> bytes:
    for message in table.fake.messages(channel_id):
        for file in message.attachments:
            if file.filename == name:
                return bytes(file.data)
    raise AssertionError(f"no {name} in channel {channel_id}")


def assert_self_contained(page: Page) -> None:
    for tag, name, value in page.addresses:
        assert not re.match(r"(https?:)?//", value), f"<{tag} {name}={value}> loads from outside"
        if tag == "img":
            assert value.startswith("data:image/png;base64,")
            image = Image.open(io.BytesIO(base64.b64decode(value.split(",", 1)[1])))
            assert image.format == "PNG"


async def finished(table: Table) -> tuple[int, dict]:
    table.fake.state.application_flags |= MESSAGE_CONTENT_LIMITED
    table.fake.update_member(table.guild_id, table.member("p2").user.id, nick="<b>Злодей</b>")
    game_id, channels = await play_and_end(table)
    await transcript_state(table, game_id, "done")
    await table.drain()
    return game_id, channels


@pytest.mark.parametrize("language", ["ru", "en"])
async def test_a_finished_game_gets_a_readable_page_and_text_twin_in_the_archive(
    database, language
):
    config = replace(Config(timers=NO_TIMERS), time_zone="Europe/Moscow")
    async with bot_table(players=8, database=database, config=config) as table:
        quick_edits(table)
        if language == "en":
            assert (await run(table, "host", "admin language", {"language": "en"})).ephemeral
        game_id, channels = await finished(table)
        archive = archive_channel(table, "архив-игр" if language == "ru" else "game-archive")
        html = attachment(table, archive, f"game-{game_id}.html").decode("utf-8")
        text = attachment(table, archive, f"game-{game_id}.txt").decode("utf-8")
        page = parsed(html)
        words = "".join(page.text)
        assert_self_contained(page)
        assert any(tag == "img" for tag, _, _ in page.addresses), "the picture is embedded"
        assert not CODES.search(words) and not CODES.search(text), "no Discord code is left"
        archived = await table.bot.storage.archived_game(game_id)
        assert archived is not None
        for player in archived.players:
            assert (
                archived.names[player.player] in words
                and t(language, f"status.{player.status}") in words
            )
        assert "Доброе утро, Верона" in words and "Доброе утро, Верона" in text
        assert t(language, "page.host", host=table.host.user.display_name) in words
        assert "<b>Злодей</b>" in words and "<b>Злодей</b>" not in html, "a nickname is escaped"
        assert t(language, "page.votes") in words or not archived.votes
        ended = datetime.datetime.fromtimestamp(archived.ended_at, tz=datetime.UTC)
        moscow = Readable(language, ZoneInfo("Europe/Moscow")).moment(ended)
        assert moscow in words, "times in the server's zone"
        assert text.startswith(t(language, "transcript.title", game=game_id))
        assert t(language, "page.title", game=game_id) in text
        stored = await table.bot.storage.reading(game_id)
        assert stored is not None and stored[:1] == b"\x78", "stored compressed (zlib)"
        assert not CODES.search(base64.b64encode(stored).decode())


async def test_mafia_game_attaches_the_pages_again_once_the_archive_message_is_gone():
    async with bot_table(players=8, config=Config(timers=NO_TIMERS)) as table:
        quick_edits(table)
        game_id, _ = await finished(table)
        archive = archive_channel(table)
        shown = await run(table, "p1", "mafia game", {"number": game_id})
        files = [f.filename for m in shown.messages for f in m.attachments]
        assert f"game-{game_id}.html" not in files, "while the archive holds it, a link is enough"
        for message in list(table.fake.messages(archive)):
            table.fake.delete_message(message)
        again = await run(table, "p1", "mafia game", {"number": game_id})
        files = [f.filename for m in again.messages for f in m.attachments]
        assert {f"game-{game_id}.html", f"game-{game_id}.txt"} <= set(files)
        assert "discord.com/channels" not in again.content, "no link to a message that is gone"


async def test_export_site_writes_the_season_as_pages_with_an_index_and_the_leaderboard(
    tmp_path: Path,
):
    database = tmp_path / "bot.sqlite3"
    async with bot_table(players=8, config=Config(timers=NO_TIMERS), database=database) as table:
        quick_edits(table)
        game_id, _ = await finished(table)
    site = tmp_path / "site"
    assert (
        await asyncio.to_thread(main, ["export-site", str(site), "--database", str(database)]) == 0
    )
    index = (site / "index.html").read_text(encoding="utf-8")
    assert f'href="game-{game_id}.html"' in index
    for name in ("index.html", "leaderboard.html", f"game-{game_id}.html"):
        assert_self_contained(parsed((site / name).read_text(encoding="utf-8")))
    assert "Доброе утро, Верона" in (site / f"game-{game_id}.txt").read_text(encoding="utf-8")
    missing = ["export-site", str(site), "--database", str(tmp_path / "none.sqlite3")]
    assert await asyncio.to_thread(main, missing) == 2


@pytest.mark.skipif(shutil.which("chromium") is None, reason="headless Chromium is not installed")
async def test_the_page_opens_in_headless_chromium(tmp_path: Path):
    database = tmp_path / "bot.sqlite3"
    async with bot_table(players=8, config=Config(timers=NO_TIMERS), database=database) as table:
        quick_edits(table)
        game_id, _ = await finished(table)
    written = ["export-site", str(tmp_path / "site"), "--database", str(database)]
    assert await asyncio.to_thread(main, written) == 0
    page = tmp_path / "site" / f"game-{game_id}.html"
    shown = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert t("ru", "page.title", game=game_id) in shown.stdout
    assert "Доброе утро, Верона" in shown.stdout


def test_every_code_is_written_as_the_client_shows_it():
    readable = Readable(
        "en",
        ZoneInfo("Europe/Moscow"),
        {"1": "Romeo"},
        {"2": "Verona · living"},
        {"3": "verona"},
    )
    text = readable.text("<@1> and <@!1> in <#3>, <@&2>: </vote:99> at <t:0:t> <:mafia:77> <@5>")
    assert (
        text == "@Romeo and @Romeo in #verona, @Verona · living: /vote at 3:00\u202fAM :mafia: @5"
    )
