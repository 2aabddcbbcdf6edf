"""The archive end to end through the fake Discord: three games played to the end with slash
commands, then ``/mafia history`` (with its buttons), ``/mafia game``, ``/mafia export``
(simulated back), ``/mafia stats``, ``/mafia top``, the picture posted at the end, and what a
running game shows: nothing.
"""

from __future__ import annotations

import io
import json
import sys
from collections import Counter
from pathlib import Path

from babel.numbers import format_percent
from PIL import Image

from bot.i18n import t
from bot.picture import LANE_ROW, UPLOAD_LIMIT
from bot.simulate import simulate
from rules import Game
from tests.cogs.scenes import accepted, run
from tests.harness import Table, bot_table

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class Tally:
    """What the test expects the figures to be, counted from the moves it made."""

    def __init__(self) -> None:
        self.votes: Counter[str] = Counter()
        self.votes_mafia: Counter[str] = Counter()
        self.checks: Counter[str] = Counter()
        self.hits: Counter[str] = Counter()
        self.games: list[Game] = []


async def vote_day(table: Table, tally: Tally, nominee: str, nominator: str) -> None:
    """A day: ``nominator`` nominates ``nominee``, every living resident votes for him, it ends."""
    game = table.game
    await accepted(table, nominator, "nominate", {"player": table.pid(nominee)})
    await accepted(table, "host", "host next")
    mafioso = game.status_of(table.pid(nominee)).value == "mafioso"
    for voter in [table.name(p) for p in game.alive()]:
        await accepted(table, voter, "vote", {"player": table.pid(nominee)})
        tally.votes[table.pid(voter)] += 1
        tally.votes_mafia[table.pid(voter)] += int(mafioso)
    await accepted(table, "host", "host next")


def who(table: Table, status: str) -> list[str]:
    return table.players_of(status)


async def settle(table: Table) -> None:
    await table.bot.get_cog("HistoryCog").archiver.settle()  # type: ignore[union-attr]
    await table.drain()


async def honest_win(table: Table, tally: Tally) -> Game:
    """The city executes its mafioso on day 1."""
    await table.new_game(cities="Верона", mafiosi=1, doctor=False, journalist=False, maniac=False)
    game = table.game
    mafioso, citizen = who(table, "mafioso")[0], who(table, "citizen")[0]
    await vote_day(table, tally, mafioso, citizen)
    assert game.over and game.winners() == ["Верона:honest"]
    return game


async def mafia_win(table: Table, tally: Tally) -> Game:
    """A citizen executed, a night kill, a check, then the Procurator strikes out two."""
    await table.new_game(cities="Верона", mafiosi=1, doctor=False, journalist=False, maniac=False)
    game = table.game
    mafioso, commissar = who(table, "mafioso")[0], who(table, "commissar")[0]
    citizens = who(table, "citizen")
    await vote_day(table, tally, citizens[0], citizens[1])
    await accepted(table, mafioso, "kill", {"player": table.pid(citizens[1])})
    await accepted(table, commissar, "check", {"player": table.pid(mafioso)})
    tally.checks[table.pid(commissar)] += 1
    tally.hits[table.pid(commissar)] += 1
    await accepted(table, "host", "host next")
    await accepted(table, "host", "host kill", {"player": table.pid(citizens[2])})
    await accepted(table, "host", "host kill", {"player": table.pid(citizens[3])})
    assert game.over and game.winners() == ["Верона:mafia"]
    return game


async def second_day_win(table: Table, tally: Tally) -> Game:
    """A citizen executed, the mafia passes, a miss by the commissar, the mafioso executed."""
    await table.new_game(cities="Верона", mafiosi=1, doctor=False, journalist=False, maniac=False)
    game = table.game
    mafioso, commissar = who(table, "mafioso")[0], who(table, "commissar")[0]
    citizens = who(table, "citizen")
    await vote_day(table, tally, citizens[0], commissar)
    await accepted(table, mafioso, "pass")
    await accepted(table, commissar, "check", {"player": table.pid(citizens[1])})
    tally.checks[table.pid(commissar)] += 1
    await accepted(table, "host", "host next")
    await vote_day(table, tally, mafioso, citizens[1])
    assert game.over and game.winners() == ["Верона:honest"]
    return game


def attachment(result, suffix: str):  # type: ignore[no-untyped-def]
    files = [a for m in result.messages for a in m.attachments if a.filename.endswith(suffix)]
    assert len(files) == 1, result.describe()
    return files[0]


def assert_png(data: bytes) -> None:
    assert data.startswith(PNG_MAGIC) and len(data) < UPLOAD_LIMIT
    image = Image.open(io.BytesIO(data))
    image.verify()
    assert image.format == "PNG" and image.size[0] >= 800


async def test_three_games_are_archived_shown_exported_counted_and_a_running_one_shows_nothing(
    tmp_path: Path, monkeypatch
) -> None:
    async with bot_table(players=6) as table:
        tally = Tally()
        before = await run(table, "p0", "mafia history")
        assert t("ru", "history.empty") in before.content
        for play in (honest_win, mafia_win, second_day_win):
            game = await play(table, tally)
            tally.games.append(game)
            await settle(table)
        ids = [1, 2, 3]

        # --- the picture was posted with the summary, in the city channel, once per game
        live_channels = {}
        for game_id in ids:
            record = await table.bot.storage.game(game_id)
            assert record is not None
            live_channels[game_id] = int(record.channels["cities"]["Верона"]["text"])
            posts = [
                m
                for m in table.fake.messages(live_channels[game_id])
                if any(a.filename == f"game-{game_id}.png" for a in m.attachments)
            ]
            assert len(posts) == 1
            assert posts[0].content == t("ru", "history.picture", game=game_id)
            summary = [
                m
                for m in table.fake.messages(live_channels[game_id])
                if "Игра окончена" in m.content
            ]
            assert summary and summary[-1].id < posts[0].id  # after the summary
            assert_png(posts[0].attachments[0].data)

        # --- /mafia history lists them, newest first, with the winners
        listed = await run(table, "p1", "mafia history")
        assert listed.ephemeral
        lines = listed.content.splitlines()
        rows = [line for line in lines if line.startswith("**№")]
        assert [row.split("**")[1] for row in rows] == ["№3", "№2", "№1"]
        assert "мафия города Верона" in rows[1] and "честные жители города Верона" in rows[0]
        assert "6 игроков" in rows[0]

        # --- /mafia game N: the summary (statuses, fates, votes) and the picture
        shown = await run(table, "p2", "mafia game", {"number": 2})
        assert shown.ephemeral
        text = "\n".join(m.content for m in shown.messages)
        game = tally.games[1]
        assert "Игра №2" in text and "Победители: мафия города Верона" in text
        for player in game.players:
            status = t("ru", f"status.{game.status_of(player).value}")
            assert f"<@{player}> — {status}" in text
        assert "гибель: Прокуратор" in text and "гибель: казнь, день 1" in text
        assert "🗳️" in text
        assert_png(attachment(shown, ".png").data)
        # the picture comes after the whole summary, its votes included
        assert shown.messages[-1].attachments and not any(
            m.attachments for m in shown.messages[:-1]
        )
        # with the votes: the same picture and, below it, a lane per player again under the days
        voted = await run(table, "p2", "mafia game", {"number": 2, "votes": True})
        plain, panel = (Image.open(io.BytesIO(attachment(m, ".png").data)) for m in (shown, voted))
        assert panel.width == plain.width
        assert panel.height > plain.height + len(game.players) * LANE_ROW

        # --- /mafia export N: a file that simulates to the same deaths and winners
        for index, game_id in enumerate(ids):
            exported = await run(table, "p3", "mafia export", {"number": game_id})
            file = attachment(exported, ".yaml")
            assert file.filename == f"game-{game_id}.yaml"
            path = tmp_path / file.filename
            path.write_bytes(file.data)
            result = json.loads(simulate(path, as_json=True))
            game = tally.games[index]
            names = {
                str(m.user.id): m.user.global_name or m.user.username for m in table.world.players
            }
            assert result["winners"] == game.winners() and result["over"] is True
            assert [
                (d["player"], d["cause"], d["phase"], d["status"]) for d in result["deaths"]
            ] == [
                (names[d.player], d.cause.value, str(d.phase), d.status.value) for d in game.deaths
            ]

        # --- /mafia stats: every player's figures, as counted from the moves above
        for member in table.world.players:
            pid = str(member.user.id)
            wins = sum(pid in g.players and _won(g, pid) for g in tally.games)
            executed = sum(
                1
                for g in tally.games
                for d in g.deaths
                if d.player == pid and d.cause.value == "execution"
            )
            answer = await run(table, "p0", "mafia stats", {"player": member})
            body = answer.content
            assert f"Сыграно 3 игры, из них {t('ru', 'stats.won', count=wins)} (" in body, body
            assert f"Казнили {executed} раз" in body
            votes = tally.votes[pid]
            assert t("ru", "stats.n_votes", count=votes) in body
            assert f"за мафиози — {tally.votes_mafia[pid]} " in body
            if tally.checks[pid]:
                assert (
                    f"{t('ru', 'stats.n_checks', count=tally.checks[pid])}, из них мафия — {tally.hits[pid]} "
                    in body
                )
        own = await run(table, "p4", "mafia stats")
        assert f"<@{table.pid('p4')}>" in own.content
        # the rating is explained in its own line: what the figures are and what moves it
        (rating,) = [line for line in own.content.splitlines() if line.startswith("Рейтинг")]
        assert "сила" in rating and "минус три её погрешности" in rating and "побед" in rating

        # --- /mafia top: by wins, by win rate (3 games at least), by rating
        top = await run(table, "p5", "mafia top", {"min_games": 3})
        wins = {pid: sum(_won(g, pid) for g in tally.games) for pid in tally.games[0].players}
        best = sorted(wins, key=lambda pid: (-wins[pid], pid))[0]
        assert f"1. <@{best}> — {t('ru', 'stats.n_wins', count=wins[best])}, 3 игры" in top.content
        # the wins board lists those who won at least once; the rate and rating boards all six
        winners = [pid for pid in wins if wins[pid]]
        assert winners
        by_wins = top.content.split(t("ru", "top.by_rate", count=3))[0]
        assert by_wins.count("<@") == len(winners) and all(
            f"<@{pid}>" in by_wins for pid in winners
        )
        assert top.content.count("<@") == len(winners) + 12
        # how each status and side fared on the server: every player's seat in every game counted
        seats: dict[str, list[int]] = {}
        sides: dict[str, list[int]] = {}
        for played in tally.games:
            for pid in played.players:
                status = played.status_of(pid).value
                side = (
                    "mafia" if status == "mafioso" else "maniac" if status == "maniac" else "honest"
                )
                for table_of, key in ((seats, status), (sides, side)):
                    entry = table_of.setdefault(key, [0, 0])
                    entry[0] += 1
                    entry[1] += _won(played, pid)

        def rows(found: dict[str, list[int]], name: str) -> str:
            return "; ".join(
                t(
                    "ru",
                    "top.result_row",
                    what=t("ru", name.format(key)),
                    wins=won,
                    seats=seated,
                    rate=format_percent(won / seated, locale="ru"),
                )
                for key, (seated, won) in found.items()
            )

        order = ["citizen", "mafioso", "commissar", "doctor", "journalist", "maniac"]
        seats = {key: seats[key] for key in order if key in seats}
        sides = {key: sides[key] for key in ("honest", "mafia", "maniac") if key in sides}
        assert t("ru", "top.results") in top.content
        assert t("ru", "top.statuses", rows=rows(seats, "status.{}")) in top.content
        assert t("ru", "top.sides", rows=rows(sides, "top.side.{}")) in top.content
        top_rate = max(won / seated for seated, won in seats.values())
        best = [key for key, (seated, won) in seats.items() if won / seated == top_rate]
        rate = format_percent(top_rate, locale="ru")
        named = ", ".join(t("ru", f"status.{key}") for key in best)
        assert (
            t("ru", "top.best_status", status=named, rate=rate)
            if len(best) == 1
            else t("ru", "top.best_tie", statuses=named, rate=rate)
        ) in top.content
        # the rating says what it is where it is shown
        assert t("ru", "top.by_rating") in top.content and "погрешност" in t("ru", "top.by_rating")
        short = await run(table, "p5", "mafia top")
        assert t("ru", "top.rate_none") in short.content

        # --- a running game: /mafia game and /mafia export refuse, /mafia history is unchanged
        history_before = (await run(table, "p0", "mafia history")).content
        await table.new_game(
            cities="Верона", mafiosi=1, doctor=False, journalist=False, maniac=False
        )
        running = table.live().id
        secret = [t("ru", f"status.{table.game.status_of(p).value}") for p in table.game.players]
        calls = len(table.fake.calls())
        for command in ("mafia game", "mafia export"):
            refused = await run(table, "p1", command, {"number": running})
            assert refused.content == t("ru", "error.game_not_over", game=running)
            assert not any(m.attachments for m in refused.messages)
        during = await run(table, "p1", "mafia history")
        assert during.content == history_before
        assert not any(word in during.content for word in secret if word != "гражданин")
        new_calls = [c for c in table.fake.calls()[calls:] if c.path.startswith("/channels/")]
        assert all(f"game-{running}" not in str(c.json) for c in new_calls)
        unknown = await run(table, "p1", "mafia game", {"number": 99})
        assert unknown.content == t("ru", "error.no_finished_game", game=99)

        # --- the host ends it: it is archived as stopped, counts in no figure
        await accepted_end(table)
        await settle(table)
        stopped = await run(table, "p0", "mafia game", {"number": running})
        assert "Остановлена ведущим" in stopped.content
        again = await run(table, "p0", "mafia top", {"min_games": 3})
        assert "3 игры" in again.content and "4 игры" not in again.content

        # --- the history's pages: Next and Previous edit the message in place
        # the loaded extension's module (discord.py loads it afresh, not as cogs.history's attribute)
        monkeypatch.setattr(sys.modules["cogs.history"], "PAGE", 3)
        paged = await run(table, "p2", "mafia history")
        message = paged.original
        assert message is not None
        first_page = [
            line.split("**")[1] for line in message.content.splitlines() if line.startswith("**№")
        ]
        assert first_page == ["№4", "№3", "№2"] and "Страница 1 из 2." in message.content
        clicked = await table.fake.click(message, "mafia:history:1", table.member("p2").user.id)
        assert clicked.callback_type == 7
        message = table.fake.message(message.id)
        assert [
            line.split("**")[1] for line in message.content.splitlines() if line.startswith("**№")
        ] == ["№1"]
        assert "Страница 2 из 2." in message.content
        back = await table.fake.click(message, "mafia:history:0", table.member("p2").user.id)
        assert back.callback_type == 7
        assert "Страница 1 из 2." in table.fake.message(message.id).content


def _won(game: Game, player: str) -> bool:
    status = game.status_of(player).value
    city = game.city_of(player)
    if status == "maniac":
        return "maniac" in game.winners()
    side = "mafia" if status == "mafioso" else "honest"
    return f"{city}:{side}" in game.winners()


async def accepted_end(table: Table) -> None:
    ended = await run(table, "host", "host end")
    assert ended.ephemeral and ended.content == t("ru", "host.ended_reply")
