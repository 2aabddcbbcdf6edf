"""The end-of-game picture: how long it takes to draw and how big it is, with the PNGs to look at.

Draws, in Russian and in English:

1. the game of 14 in two cities (``tests.archive_play.showcase_game``: executions by
   vote, by another city's vote, on the host's choice and by lot, the mafia at home and
   on tour, the maniac, a strike-out, a replacement), without and with the votes panel;
2. a 10-city game of 140 players that lasts 10 days (20 columns in one row), with and
   without the votes panel;
3. a 10-city game of 1,000 players that lasts 90 days (a counting lane per city).

For each it prints the median and the slowest of ``--runs`` drawings (the replay of
the log included), the size in pixels and bytes against Discord's upload limit, and
the smallest text's height once Discord scales it to its preview width (and the scale
of the chat's preview box, at most 400×300, a thumbnail to tap for tall pictures). It writes
each PNG to the folder given, and beside it ``*-phone.png``, the same picture at the
preview width, as a phone shows it.

Run: ``python benchmarks/picture_bench.py OUT_DIR [--runs N]``
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from PIL import Image  # noqa: E402

from bot.archive import build_archive  # noqa: E402
from bot.picture import FACES, PREVIEW_HEIGHT, PREVIEW_WIDTH, UPLOAD_LIMIT, render_png  # noqa: E402
from bot.storage import ArchivedGame  # noqa: E402
from tests.archive_play import crowd_game, showcase_game, source_of  # noqa: E402

#: the showcase's lobby names on a Russian server
RUSSIAN = {
    "romeo": "Ромео",
    "mercutio": "Меркуцио",
    "tybalt": "Тибальт",
    "escalus": "Эскал",
    "friar": "Лоренцо",
    "sampson": "Самсон",
    "gregory": "Грегорио",
    "bianca": "Бьянка",
    "gremio": "Гремио",
    "lucentio": "Люченцио",
    "baptista": "Баптиста",
    "tranio": "Транио",
    "curtis": "Кертис",
    "grumio": "Грумио",
    "juliet": "Джульетта",
}
ENGLISH = {player: player.capitalize() for player in RUSSIAN}


def games(language: str) -> list[tuple[str, ArchivedGame]]:
    """The three games, the 14 with the cities and names a server of ``language`` would have."""
    cities, names = (
        (("Верона", "Падуя"), RUSSIAN) if language == "ru" else (("Verona", "Padua"), ENGLISH)
    )
    game, log = showcase_game(cities=cities)
    fourteen = build_archive(source_of(game, log, names=names))
    game, log = crowd_game(10, 14, 0)
    ten = build_archive(source_of(game, log, game_id=2))
    game, log = crowd_game(10, 100, 3)
    crowd = build_archive(source_of(game, log, game_id=3))
    return [("14", fourteen), ("10cities-10days", ten), ("1000players-90days", crowd)]


def draw(
    name: str, archived: ArchivedGame, language: str, votes: bool, runs: int, out: Path
) -> None:
    times = []
    png = b""
    for _ in range(runs):
        start = time.perf_counter()
        png = render_png(archived, language, votes=votes)
        times.append(time.perf_counter() - start)
    image = Image.open(io.BytesIO(png))
    width, height = image.size
    stem = f"{name}-{language}{'-votes' if votes else ''}"
    (out / f"{stem}.png").write_bytes(png)
    scale = PREVIEW_WIDTH / width
    image.convert("RGB").resize(
        (PREVIEW_WIDTH, round(height * scale)), Image.Resampling.LANCZOS
    ).save(out / f"{stem}-phone.png")
    smallest = min(size for size, _ in FACES.values()) * scale
    verdict = "ok" if len(png) < UPLOAD_LIMIT else "OVER THE LIMIT"
    print(
        f"{stem:36} {len(archived.players):5} players, {archived.last_phase:7}: "
        f"median {statistics.median(times) * 1000:5.0f} ms, max {max(times) * 1000:5.0f} ms, "
        f"{width}x{height} px, {len(png) / 1024:6.0f} KiB ({verdict}); "
        f"smallest text at {PREVIEW_WIDTH} px wide: {smallest:.1f} px; "
        f"the chat's preview box shows it at {min(scale, PREVIEW_HEIGHT / height) * 100:.0f} %"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the folder the PNGs are written to")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for language in ("ru", "en"):
        for name, archived in games(language):
            for votes in (False, True):
                draw(name, archived, language, votes, args.runs, args.out)
    print(f"PNGs written to {args.out}")


if __name__ == "__main__":
    main()
