"""Crash tests: the bot process is killed with SIGKILL mid-game; a new process carries on.

The fake Discord runs in the test; the bot runs as ``python -m bot run`` in
its own process, pointed at the fake through DISCORD_API_BASE and
DISCORD_GATEWAY_URL, with its database a SQLite file in a temporary folder or a schema of the
session's PostgreSQL server (each test runs on both). After each
kill a new bot process starts on the same file, and the test checks: the
state is the replay of the stored log, no acknowledged command is lost and
none is applied twice, every pending announcement is posted exactly once,
and the stage's deadline still holds.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from rules import Game, Setup, command_from_dict
from tests.fakediscord import FakeDiscord, InteractionResult, build_standard_guild
from tests.harness import SUITE_CALL_TIMEOUT
from tests.storage.plugin import raw_sync

ROOT = Path(__file__).resolve().parents[2]
SYNC = "/applications/{application_id}/commands"


class BotProcess:
    """One ``mafia-bot run`` process against the fake."""

    def __init__(self, fake: FakeDiscord, folder: Path, timers: str, database: Path | str) -> None:
        self.fake = fake
        self.config = folder / "config.yaml"
        self.config.write_text(
            f"database: {json.dumps(str(database))}\nlog_level: INFO\n"
            f"timers: {timers}\ncall_timeout: {SUITE_CALL_TIMEOUT}\n"
        )
        self.log = folder / "bot.log"
        self.process: subprocess.Popen[bytes] | None = None

    async def start(self) -> None:
        sessions = (
            len(self.fake.gateway.events("READY")) if hasattr(self.fake.gateway, "events") else 0
        )
        env = {
            **os.environ,
            "DISCORD_TOKEN": self.fake.token,
            "DISCORD_API_BASE": self.fake.api_base,
            "DISCORD_GATEWAY_URL": self.fake.gateway_url,
            "PYTHONPATH": str(ROOT),
        }
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "bot", "run", "--config", str(self.config)],
                env=env,
                cwd=self.log.parent,
                stdout=log,
                stderr=log,
            )
        await self.fake.wait_until(
            lambda: len(self.fake.gateway.events("READY")) > sessions or None,
            30.0,
            f"the bot did not connect; its log:\n{self.log.read_text(errors='replace')[-3000:]}",
        )
        await asyncio.sleep(0.3)  # discord.py settles its guilds before handling interactions

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


@asynccontextmanager
async def crash_table(
    tmp_path: Path,
    database: Path | str,
    timers: str = "{discussion: 0, voting: 0, night: 0, reminders: []}",
) -> AsyncIterator[tuple[FakeDiscord, object, BotProcess]]:
    fake = FakeDiscord()
    world = build_standard_guild(fake, players=[f"p{i}" for i in range(8)])
    await fake.start()
    bot = BotProcess(fake, tmp_path, timers, database)
    try:
        await bot.start()
        yield fake, world, bot
    finally:
        bot.stop()
        await fake.close()


def one(database: Path | str, sql: str, params: tuple = ()):
    """The first row of a query on the bot's database."""
    return raw_sync(database, sql, params)[0]


def replayed(database: Path | str, game_id: int) -> Game:
    """The game as its stored setup, seed and command log make it."""
    row = one(database, "SELECT setup, seed FROM games WHERE id = ?", (game_id,))
    game = Game.create(Setup.from_dict(json.loads(row["setup"])), row["seed"])
    for (command,) in raw_sync(
        database, "SELECT command FROM commands WHERE game_id = ? ORDER BY seq", (game_id,)
    ):
        game.apply(command_from_dict(json.loads(command)))
    return game


def logged_interactions(database: Path | str) -> list[int]:
    return [
        r[0]
        for r in raw_sync(
            database, "SELECT interaction_id FROM commands WHERE interaction_id IS NOT NULL"
        )
    ]


async def start_game(fake: FakeDiscord, world, players: int = 8) -> int:
    guild, host = world.guild.id, world.owner.user.id
    opened = await fake.slash(
        guild, host, "mafia new", {}, channel_id=world.text_channel.id, locale="ru"
    )
    await opened.wait_original()
    lobby = await lobby_posted(fake, world)
    for member in world.players[:players]:
        await fake.click(lobby, "mafia:join:1", member.user.id)
    await fake.slash(guild, host, "host setup", {"cities": "Верона", "maniac": False}, locale="ru")
    started = await fake.slash(guild, host, "host start", {}, locale="ru")
    await started.wait_original(15.0)
    assert "началась" in started.text, started.text
    return 1


async def lobby_posted(fake: FakeDiscord, world, game: int = 1, timeout: float = 10.0):
    """The lobby message of ``game`` in the general channel, once the bot's outbox posted it."""

    def found():
        return next(
            (
                m
                for m in fake.messages(world.text_channel.id)
                if f"mafia:join:{game}" in m.custom_ids()
            ),
            None,
        )

    return await fake.wait_until(found, timeout, "the lobby message was never posted")


async def outbox_settled(fake: FakeDiscord, database: Path | str, timeout: float = 20.0) -> None:
    def settled() -> bool | None:
        pending = one(database, "SELECT COUNT(*) FROM outbox WHERE state = 'pending'")[0]
        return pending == 0 or None

    await fake.wait_until(settled, timeout, "the outbox still has pending items")


def city_channel(database: Path | str) -> int:
    channels = json.loads(one(database, "SELECT channels FROM games WHERE id = 1")[0])
    return int(channels["cities"]["Верона"]["text"])


def posted_exactly_once(fake: FakeDiscord, database: Path | str) -> None:
    """Every sent outbox item is one message on Discord, and no message repeats an item."""
    sent = [
        r["id"]
        for r in raw_sync(database, "SELECT id FROM outbox WHERE kind = 'send' AND state = 'sent'")
    ]
    nonces = Counter(str(m.nonce) for m in fake.messages() if m.nonce is not None)
    duplicates = {nonce: n for nonce, n in nonces.items() if n > 1}
    assert duplicates == {}
    assert {f"ob{i}" for i in sent} <= set(nonces)


async def test_killed_between_commit_and_announcement(tmp_path: Path, database: Path | str):
    """Discord got the announcement only after the bot died (the answer was lost): it is not posted twice."""
    async with crash_table(tmp_path, database) as (fake, world, bot):
        await start_game(fake, world)
        await outbox_settled(fake, database)
        channel = city_channel(database)
        held = fake.hang("POST", rf"/channels/{channel}/messages$")
        moved = await fake.slash(world.guild.id, world.owner.user.id, "host next", {}, locale="ru")
        assert moved.ephemeral  # acknowledged: the command is committed
        await fake.wait_until(lambda: held.hits or None, 5.0, "the announcement was never sent")
        bot.kill()
        held.release()  # Discord carries the held request out: the message exists, nobody heard back
        await fake.wait_until(
            lambda: any("голосование" in m.content for m in fake.messages(channel)) or None, 5.0, ""
        )
        fake.clear_faults()
        await bot.start()
        await outbox_settled(fake, database)
        voting = [m for m in fake.messages(channel) if "**День 1**: голосование" in m.content]
        assert len(voting) == 1
        posted_exactly_once(fake, database)
        assert replayed(database, 1).stage.value == "voting"


async def test_killed_while_discord_refuses_then_posted_once(tmp_path: Path, database: Path | str):
    """The announcement never reached Discord before the kill (503s): the new process posts it once."""
    async with crash_table(tmp_path, database) as (fake, world, bot):
        await start_game(fake, world)
        await outbox_settled(fake, database)
        channel = city_channel(database)
        refusing = fake.fail("POST", rf"/channels/{channel}/messages$", status=503, count=None)
        await fake.slash(world.guild.id, world.owner.user.id, "host next", {}, locale="ru")
        await fake.wait_until(lambda: refusing.hits >= 2 or None, 10.0, "the outbox did not retry")
        bot.kill()
        fake.clear_faults()
        assert not any("голосование" in m.content for m in fake.messages(channel))
        await bot.start()
        await outbox_settled(fake, database)
        assert (
            len([m for m in fake.messages(channel) if "**День 1**: голосование" in m.content]) == 1
        )
        posted_exactly_once(fake, database)


async def answered(fake: FakeDiscord, guild: int, user: int, command: str) -> InteractionResult:
    """The command's answer; run again (up to five times) while the bot's answer reaches Discord
    after its 3 s (a loaded machine), which the fake refuses as Discord does."""
    for _ in range(5):
        result = await fake.slash(guild, user, command, {}, locale="ru")
        if result.callback is not None or not all(a.error_code == 10062 for a in result.attempts):
            return result
    return result


async def test_killed_during_a_burst_of_commands(tmp_path: Path, database: Path | str):
    """Nothing answered is lost, nothing is applied twice, the state is the log's replay.

    How many of the burst the killed process answered, deferred ("thinking…", type 5: sent
    before a command that waits for the game's lock) or never saw depends on the machine's
    load; each kind is checked for what it promises. A deferred one the process died before
    committing cannot be acknowledged again when Discord delivers it anew, and the service
    then applies nothing (bot/service, answer first): it is not counted as lost here."""
    async with crash_table(tmp_path, database) as (fake, world, bot):
        await start_game(fake, world)
        guild = world.guild.id
        players = [m.user.id for m in world.players[:8]]
        burst: list[InteractionResult] = []
        for index, user in enumerate(players):
            target = players[(index + 1) % len(players)]
            burst.append(
                await fake.slash(
                    guild, user, "nominate", {"player": str(target)}, locale="ru", wait=False
                )
            )
        await asyncio.sleep(0.02)
        bot.kill()
        logged = logged_interactions(database)
        assert len(logged) == len(set(logged))
        await bot.start()
        tried = {r.id: len(r.attempts) for r in burst}
        for result in burst:  # Discord delivers them again (a resumed gateway, say)
            await fake.resend(result)
        # each is settled: in the log, or the new process tried to answer it (and was refused)
        await fake.wait_until(
            lambda: (
                all(
                    r.id in set(logged_interactions(database)) or len(r.attempts) > tried[r.id]
                    for r in burst
                )
                or None
            ),
            20.0,
            "a resent command was never handled",
        )
        await outbox_settled(fake, database)
        logged = logged_interactions(database)
        assert len(logged) == len(set(logged)), "an interaction was applied twice"
        assert set(logged) <= {r.id for r in burst}
        for result in burst:
            if result.id not in set(logged):
                # one the killed process had deferred; or one it never saw, delivered again after
                # Discord's 3 s (a slow restart on a loaded machine): every answer refused as too
                # late, the player was told it failed, and nothing was applied
                too_late = (
                    result.callback is None
                    and len(result.attempts) > tried[result.id]
                    and all(a.error_code == 10062 for a in result.attempts[tried[result.id] :])
                )
                assert result.callback_type == 5 or too_late, (
                    f"a command was lost: {result.describe()}"
                )
        game = replayed(database, 1)
        applied = [players.index(r.user_id) for r in burst if r.id in set(logged)]
        assert len(game.nominees("Верона")) == len(applied)
        status = await answered(fake, guild, players[0], "mafia status")
        for index in applied:  # the restored game shows every nomination of the log
            assert f"<@{players[(index + 1) % len(players)]}> — 0" in status.content
        posted_exactly_once(fake, database)


async def test_the_deadline_holds_across_a_kill(tmp_path: Path, database: Path | str):
    """The stage's stored deadline is kept by the new process and fires on time."""
    async with crash_table(
        tmp_path, database, "{discussion: 4, voting: 0, night: 0, reminders: []}"
    ) as (fake, world, bot):
        await start_game(fake, world)
        deadline, stage = one(database, "SELECT deadline, deadline_stage FROM games WHERE id = 1")
        assert stage == "day 1 discussion" and deadline > time.time()
        bot.kill()
        await bot.start()
        channel = city_channel(database)
        await fake.wait_until(
            lambda: any("голосование" in m.content for m in fake.messages(channel)) or None,
            max(1.0, deadline - time.time()) + 5.0,
            "the deadline did not fire after the restart",
        )
        source = one(database, "SELECT source FROM commands ORDER BY seq DESC LIMIT 1")[0]
        assert source == "timer"
        assert time.time() >= deadline - 0.5
        await outbox_settled(fake, database)
        posted_exactly_once(fake, database)


async def test_killed_right_after_mafia_new_answered_the_lobby_still_counts_its_players(
    tmp_path: Path, database: Path | str
):
    """The process dies as soon as /mafia new is answered, before it knows which message is the
    lobby: after the restart the lobby is there once and shows who joins."""
    async with crash_table(tmp_path, database) as (fake, world, bot):
        guild, host, general = world.guild.id, world.owner.user.id, world.text_channel.id
        # whatever would tell the bot which message the lobby is does not come back in time
        posting = fake.hang("POST", rf"/channels/{general}/messages$")
        asking = fake.hang("GET", r"/webhooks/\d+/[^/]+/messages/@original")
        opened = await fake.slash(
            guild, host, "mafia new", {}, channel_id=general, locale="ru", wait=False
        )
        await opened.wait_callback()
        await fake.wait_until(
            lambda: posting.hits or asking.hits, 5.0, "the bot never posted nor asked"
        )
        bot.kill()
        posting.release()  # Discord carries the held call out: the lobby exists, the bot never heard
        asking.release()
        fake.clear_faults()
        await bot.start()
        lobby = await lobby_posted(fake, world)
        joined = [member.user.id for member in world.players[:3]]
        for user in joined:
            click = await fake.click(lobby, "mafia:join:1", user)
            await click.wait_callback()
        players = f"<@{joined[0]}>, <@{joined[1]}>, <@{joined[2]}>"
        await fake.wait_until(
            lambda: f"3 игрока: {players}" in fake.message(lobby.id).content or None,
            10.0,
            f"the lobby does not show its players: {fake.message(lobby.id).content}",
        )
        lobbies = [m for m in fake.messages(general) if "mafia:join:1" in m.custom_ids()]
        assert lobbies == [fake.message(lobby.id)], "the lobby was posted twice"
        posted_exactly_once(fake, database)


pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")


async def test_killed_while_the_channels_are_made_resumes_without_a_second_category(
    tmp_path: Path, database: Path | str
):
    """SIGKILL while Discord makes the category (it does; nobody hears): the next process adopts
    it, makes the rest once, and the game starts."""
    async with crash_table(tmp_path, database) as (fake, world, bot):
        guild, host = world.guild.id, world.owner.user.id
        opened = await fake.slash(
            guild, host, "mafia new", {}, channel_id=world.text_channel.id, locale="ru"
        )
        await opened.wait_original()
        lobby = await lobby_posted(fake, world)
        for member in world.players[:8]:
            await fake.click(lobby, "mafia:join:1", member.user.id)
        held = fake.hang("POST", r"/guilds/\d+/channels", count=1)
        await fake.slash(guild, host, "host start", {}, locale="ru", wait=False)
        await fake.wait_until(lambda: held.hits or None, 10.0, "no channel was being made")
        bot.kill()
        assert one(database, "SELECT state FROM games WHERE id = 1")[0] == "starting"
        held.release()
        await fake.wait_until(
            lambda: [c for c in fake.state.guild_channels(guild) if c.type == 4] or None
        )
        await bot.start()

        def running() -> bool | None:
            return one(database, "SELECT state FROM games WHERE id = 1")[0] == "running" or None

        await fake.wait_until(running, 30.0, "the start was not resumed")
        await outbox_settled(fake, database)
        channels = json.loads(one(database, "SELECT channels FROM games WHERE id = 1")[0])
        made = [
            int(c.response["id"]) for c in fake.calls("POST", "/guilds/{guild_id}/channels") if c.ok
        ]
        alive = sorted(i for i in made if not fake.state.channels[i].deleted)
        ours = [channels["category"], channels["voice"], channels["dead"], channels["log"]] + [
            ids[kind] for ids in channels["cities"].values() for kind in ("text", "mafia")
        ]
        assert alive == sorted(ours)
        assert len([c for c in fake.state.guild_channels(guild) if c.type == 4]) == 1
        posted_exactly_once(fake, database)
