"""Acceptance (issue 13): two bot processes on different shards of one bot, one fake Discord,
one PostgreSQL. A player in a game on one cannot join a game on the other (the localised
refusal); SIGKILL one: the other's game is untouched and keeps answering; restart the killed
one: it resumes its own game, and only its own."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from bot.i18n import t
from tests.fakediscord import FakeDiscord
from tests.fakediscord.fixtures import StandardGuild
from tests.storage.plugin import raw
from tests.storage.test_shards import guilds_on_every_shard, shard_of

ROOT = Path(__file__).resolve().parents[2]


class ShardProcess:
    """``python -m bot run --shards N --shard-count 2`` against the fake and the database."""

    def __init__(self, fake: FakeDiscord, folder: Path, database: str, shard: int) -> None:
        self.fake, self.shard = fake, shard
        self.config = folder / f"shard{shard}.yaml"
        self.config.write_text(
            f"database: {json.dumps(database)}\nlog_level: INFO\n"
            "timers: {discussion: 0, voting: 0, night: 0, reminders: []}\n"
        )
        self.log = folder / f"shard{shard}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    async def start(self) -> None:
        ready = self.text().count("ready as") if self.log.exists() else 0
        env = {
            **os.environ,
            "DISCORD_TOKEN": self.fake.token,
            "DISCORD_API_BASE": self.fake.api_base,
            "DISCORD_GATEWAY_URL": self.fake.gateway_url,
            "PYTHONPATH": str(ROOT),
        }
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "bot",
                    "run",
                    "--config",
                    str(self.config),
                    "--shards",
                    str(self.shard),
                    "--shard-count",
                    "2",
                ],
                env=env,
                cwd=self.log.parent,
                stdout=out,
                stderr=out,
            )
        await self.fake.wait_until(
            lambda: self.text().count("ready as") > ready or None,
            60.0,
            f"shard {self.shard} was never ready:\n{self.text()[-3000:]}",
        )

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()


async def lobby_of(fake: FakeDiscord, world: StandardGuild, game: int):
    def found():
        return next(
            (
                m
                for m in fake.messages(world.text_channel.id)
                if f"mafia:join:{game}" in m.custom_ids()
            ),
            None,
        )

    return await fake.wait_until(found, 20.0, f"the lobby of game {game} was never posted")


async def open_game(fake: FakeDiscord, world: StandardGuild, database: str) -> int:
    """``/mafia new`` by the guild's owner; the new game's id."""
    opened = await fake.slash(
        world.guild.id,
        world.owner.user.id,
        "mafia new",
        {},
        channel_id=world.text_channel.id,
        locale="ru",
    )
    await opened.wait_original()
    rows = await raw(
        database, "SELECT id FROM games WHERE guild_id = ? AND state = 'lobby'", (world.guild.id,)
    )
    return int(rows[0][0])


async def start(fake: FakeDiscord, world: StandardGuild) -> None:
    await fake.slash(
        world.guild.id,
        world.owner.user.id,
        "host setup",
        {"cities": "Верона", "maniac": False},
        locale="ru",
    )
    started = await fake.slash(world.guild.id, world.owner.user.id, "host start", {}, locale="ru")
    await started.wait_original(30.0)
    assert "началась" in started.text, started.text


async def test_two_processes_on_two_shards_share_one_postgresql(tmp_path: Path, postgres_url: str):
    fake = FakeDiscord()
    worlds = await guilds_on_every_shard(fake, 2)
    verona = next(w for w in worlds if shard_of(w.guild.id, 2) == 0)
    padua = next(w for w in worlds if shard_of(w.guild.id, 2) == 1)
    # one person is a member of both servers
    wanderer = verona.players[0]
    fake.add_member(padua.guild.id, wanderer.user)
    await fake.start()
    first, second = (ShardProcess(fake, tmp_path, postgres_url, shard) for shard in (0, 1))
    try:
        await asyncio.gather(first.start(), second.start())
        # started together: they took turns to IDENTIFY through the database (bot.identify)
        assert fake.gateway.limits.identifies_too_soon == 0
        assert "waited" in first.text() + second.text()
        # a game runs in Verona (shard 0, the first process), the wanderer in it
        game_a = await open_game(fake, verona, postgres_url)
        lobby = await lobby_of(fake, verona, game_a)
        for member in verona.players[:8]:
            await fake.click(lobby, f"mafia:join:{game_a}", member.user.id)
        await start(fake, verona)
        # Padua (shard 1, the second process): he cannot join its lobby; the others can
        game_b = await open_game(fake, padua, postgres_url)
        lobby_b = await lobby_of(fake, padua, game_b)
        refused = await fake.click(lobby_b, f"mafia:join:{game_b}", wanderer.user.id)
        await refused.wait_callback()
        assert refused.ephemeral and refused.text == t("ru", "error.in_other_game"), (
            refused.describe()
        )
        for member in padua.players[:8]:
            joined = await fake.click(lobby_b, f"mafia:join:{game_b}", member.user.id)
            assert joined.callback_type == 4, joined.describe()
        await start(fake, padua)
        players = await raw(postgres_url, "SELECT user_id, game_id FROM active_players")
        assert dict(players)[wanderer.user.id] == game_a and len(players) == 16

        # the first process dies; the second's game is untouched and answers
        commands_a = await raw(
            postgres_url, "SELECT COUNT(*) FROM commands WHERE game_id = ?", (game_a,)
        )
        first.kill()
        status = await fake.slash(
            padua.guild.id, padua.players[1].user.id, "mafia status", {}, locale="ru"
        )
        await status.wait_callback()
        assert "Верона" in status.text and f"<@{padua.players[2].user.id}>" in status.text, (
            status.describe()
        )
        nominated = await fake.slash(
            padua.guild.id,
            padua.players[1].user.id,
            "nominate",
            {"player": str(padua.players[2].user.id)},
            locale="ru",
        )
        await nominated.wait_callback()
        assert "выдвинули" in nominated.text, nominated.describe()
        logged = await raw(postgres_url, "SELECT source FROM commands WHERE game_id = ?", (game_b,))
        assert len(logged) == 1
        assert (
            await raw(postgres_url, "SELECT COUNT(*) FROM commands WHERE game_id = ?", (game_a,))
            == commands_a
        )
        assert "restored 0 open game(s)" in second.text()  # it never took the first one's games

        # the first process comes back: it resumes its own game, and only that one
        await first.start()
        assert first.text().count("restored 1 open game(s)") == 1, first.text()[-2000:]
        again = await fake.slash(
            verona.guild.id, verona.players[1].user.id, "mafia status", {}, locale="ru"
        )
        await again.wait_callback()
        assert f"<@{verona.players[2].user.id}>" in again.text, again.describe()
        moved = await fake.slash(
            verona.guild.id,
            verona.players[1].user.id,
            "nominate",
            {"player": str(verona.players[2].user.id)},
            locale="ru",
        )
        await moved.wait_callback()
        assert "выдвинули" in moved.text, moved.describe()
        logged_a = await raw(
            postgres_url, "SELECT COUNT(*) FROM commands WHERE game_id = ?", (game_a,)
        )
        assert logged_a[0][0] == commands_a[0][0] + 1
        # the restart did not free the wanderer: the database still holds him in his game
        assert await raw(
            postgres_url,
            "SELECT game_id FROM active_players WHERE user_id = ?",
            (wanderer.user.id,),
        ) == [(game_a,)]
    finally:
        first.stop()
        second.stop()
        await fake.close()


async def test_a_start_the_database_refuses_is_answered_with_the_players_name(database):
    """Another process started a game with one of this lobby's players (its row is in the
    database, this process knows nothing of it): /host start is refused, localised, nothing
    starts."""
    from tests.cogs.scenes import run
    from tests.harness import bot_table

    async with bot_table(players=8, database=database) as table:
        await table.open_lobby()
        wanderer = table.world.players[3].user.id
        storage = table.bot.storage
        elsewhere = await storage.create_game(
            table.guild_id + (1 << 22), 5, {"players": [{"id": wanderer}]}
        )
        elsewhere.state = "running"
        await storage.save_game(elsewhere)  # as the other process would
        refused = await run(table, "host", "host start")
        expected = t("ru", "error.player_in_other_game", player=f"<@{wanderer}>")
        assert refused.text == expected, refused.describe()
        assert table.live().record.state == "lobby"
        assert await storage.player_game(wanderer) == elsewhere.id
        assert await storage.player_game(table.world.players[0].user.id) is None
