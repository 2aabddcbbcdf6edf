"""The chaos harness: games in several guilds driven at random while the bot is killed and Discord misbehaves.

The fake Discord runs in this process with a few guilds (an owner who hosts,
some members, a general channel); the bot runs as ``python -m bot run`` in its
own process, pointed at the fake by DISCORD_API_BASE and DISCORD_GATEWAY_URL,
its SQLite file in a folder of its own. One driver per guild plays: it opens a
lobby, members join from the lobby's button, the host sets up and starts, then
players and the host send random commands whose targets the bot's own
autocomplete offers (so most are legal: nominations, votes, night actions, the
host's next, execute, skip, pause, resume, extend), now and then the host
strikes a player out or ends the game, and a finished game is followed by a
new one. A strike-out or an end only asks the host to confirm: the harness
presses "Yes" (now and then twice at once), "No", or nothing, as the host, and
it is the press that is the command. Meanwhile the process is SIGKILLed at
random moments and started again, and the fake injects faults: 429s, 5xx,
slow answers, gateway drops, and Discord forgetting its nonces.

Then, with the bot stopped, :meth:`Chaos.check` reads the database and the
fake's record and counts what would be a bug:

* *lost*: a command acknowledged with a success text that is not in the log
  (or not in the lobby, for a join; not in the game's record, for a spectator
  toggle, a pause, a resume, an extension or an end; an ended game not
  cancelled), an outbox item marked sent with no message of its nonce on
  Discord, an item still pending or refused; a game paused or not against the
  pauses and resumes it recorded;
* *doubled*: an interaction applied twice, two messages of one nonce, a
  refused command that is in the log (or the record) anyway, a question or a
  "No" that changed anything;
* *orphaned*: a channel or role in a guild that no game in the database owns;
* *diverged*: a game whose restored state (snapshot + log, through the game
  service) is not the replay of its whole log, or a broken one.

With a PostgreSQL server (``postgres=``, a :class:`tests.storage.server.PostgresServer`
of the run's own, durable: it acknowledges a commit once its WAL is flushed, as a server does by
default) the bot keeps its games in a schema of it, and ``pg_crashes`` times during the run the
server is stopped at once (``pg_ctl stop -m immediate``: every connection cut, mid-statement or
mid-COMMIT), left down a while, and started again (it recovers from its WAL); the bot is not
killed while the server is down (it could not start again until it is back). The same check
follows: a command refused as not stored must not be in the log, one acknowledged must be.

Every random choice comes from one seeded ``random.Random``; the seed is in
every report. (The bot's own timing is not seeded: a seed reproduces the plan
of commands, kills and faults, not the interleaving.)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.config import Config
from bot.service import GameService
from bot.storage import Storage
from rules import Game, Setup, command_from_dict
from tests.fakediscord import FakeDiscord, InteractionResult
from tests.fakediscord.ratelimits import GlobalLimit
from tests.harness import SUITE_REST_PER_SECOND
from tests.storage.plugin import raw_sync
from tests.storage.server import PostgresServer

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = json.loads((ROOT / "bot" / "locales" / "ru.json").read_text(encoding="utf-8"))

CONFIG = """\
database: "{database}"
log_level: INFO
snapshot_every: 4
rest_per_second: {rest}
timers: {{discussion: {discussion}, voting: 0, night: 0, reminders: []}}
last_word: {{join_timeout: 5, dave_timeout: 5, progress_every: 5, max_upload_mib: 25}}
"""

#: the day's discussion has a deadline (so ``/host extend`` has one to move) that no run reaches
DISCUSSION_SECONDS = 3600

#: REST routes faults are injected on: everything a game does, not the startup's command sync
FAULT_ROUTES = (
    r"/channels/\d+/messages(/\d+)?",
    r"/channels/\d+(/permissions/\d+)?",
    r"/guilds/\d+/(channels|roles)(/\d+)?",
    r"/guilds/\d+/members/\d+/roles/\d+",
    r"/interactions/\d+/[^/]+/callback",
    r"/webhooks/\d+/[^/]+(/messages/.*)?",
)

#: (command, the option its target goes in, weight) for a player's turn
PLAYER_COMMANDS = (
    ("nominate", "player", 6),
    ("vote", "player", 8),
    ("unvote", None, 1),
    ("kill", "player", 3),
    ("check", "player", 2),
    ("protect", "player", 2),
    ("elect", "player", 1),
)
#: the same for the host (``duration`` is not autocompleted: one of :data:`EXTENSIONS`)
HOST_COMMANDS = (
    ("host next", "from", 6),
    ("host execute", "player", 2),
    ("host skip", None, 1),
    ("host kill", "player", 1),
    ("host godfather", "player", 1),
    ("host pause", None, 1),
    ("host resume", None, 1),
    ("host extend", "duration", 1),
)
EXTENSIONS = ("90s", "10m", "1h30m")
#: host commands that ask for a confirmation first (the press is the command)
ASKING = ("host kill", "host end")
#: host commands that change the game's record, not its log
RECORDING = ("host pause", "host resume", "host extend")
#: commands whose success answer says they were applied, and the catalogue keys of those answers
GAME_SUCCESS = (
    "reply.nominate",
    "reply.vote",
    "reply.unvote",
    "reply.check",
    "reply.protect",
    "reply.elect",
    "reply.decision",
    "reply.proposal",
    "reply.decision_tour",
    "reply.proposal_tour",
    "reply.maniac",
    "reply.pass",
    "reply.done",
    "host.done",
    "host.killed",
    "host.deferred",
    "host.began",
    "host.began_end",
)


def template(key: str) -> re.Pattern[str]:
    """The Russian text of ``key`` as a pattern: its parameters match anything."""
    text = CATALOGUE[key]
    if isinstance(text, dict):
        text = text["other"]
    parts = re.split(r"\{[a-z_]+\}", text)
    return re.compile(".*".join(re.escape(part) for part in parts), re.S)


SUCCESS = [template(key) for key in GAME_SUCCESS if key in CATALOGUE]
WATCHES, UNWATCHES = template("spectate.started"), template("spectate.stopped")
PAUSED, RESUMED = template("host.paused"), template("host.resumed")
RECORDED = {"host pause": PAUSED, "host resume": RESUMED, "host extend": template("host.extended")}
ENDED, CANCELLED = template("host.ended_reply"), template("confirm.cancelled")
REFUSALS = [template(key) for key in CATALOGUE if key.startswith("error.")]
JOINED = template("lobby.joined")


def is_success(text: str) -> bool:
    """Whether an answer says the command was applied."""
    return any(p.fullmatch(text) for p in SUCCESS)


def is_refusal(text: str) -> bool:
    """Whether an answer says the command was refused."""
    return any(p.fullmatch(text) for p in REFUSALS) and not is_success(text)


@dataclass
class Club:
    """One guild of the run: its host, members and general channel."""

    guild_id: int
    host_id: int
    members: list[int]
    general: int


@dataclass
class Sent:
    """An interaction the harness sent, what it was for, and in which game.

    ``what``: ``new``, ``join``, ``setup``, ``start``, ``spectate``, ``game``
    (a command of the log, or the "Yes" of a strike-out), ``record`` (pause,
    resume, extend), ``ask`` (a command that asks to confirm), ``end`` (the "Yes"
    of an end), ``no`` (a confirmation's "No").
    """

    result: InteractionResult
    what: str
    guild_id: int
    game_id: int | None
    command: str = ""


def confirmation(result: InteractionResult) -> tuple[str | None, str | None]:
    """The custom ids of the "Yes" and the "No" of a host's confirmation in an answer."""
    yes = no = None
    for row in result.components:
        for component in row.get("components", []):
            custom_id = str(component.get("custom_id", ""))
            if custom_id.startswith("mafia:confirm:"):
                yes = custom_id
            elif custom_id.startswith("mafia:cancel:"):
                no = custom_id
    return yes, no


@dataclass
class Figures:
    """What a run did and what its check found."""

    seed: int
    kills: int = 0
    pg_crashes: int = 0
    faults: int = 0
    sent: int = 0
    acknowledged: int = 0
    games: int = 0
    finished: int = 0
    intents: int = 0
    answered: Counter[str] = field(default_factory=Counter)
    """Acknowledged host acts by command: each confirmation's Yes and No, pauses, resumes, extensions."""
    lost: list[str] = field(default_factory=list)
    doubled: list[str] = field(default_factory=list)
    orphaned: list[str] = field(default_factory=list)
    diverged: list[str] = field(default_factory=list)
    harness: list[str] = field(default_factory=list)
    """Errors of the harness's own drivers (a run with any proves nothing)."""
    elapsed: float = 0.0

    @property
    def problems(self) -> list[str]:
        """Every finding, each saying what it is."""
        return (
            [f"lost: {x}" for x in self.lost]
            + [f"doubled: {x}" for x in self.doubled]
            + [f"orphaned: {x}" for x in self.orphaned]
            + [f"diverged: {x}" for x in self.diverged]
            + [f"harness: {x}" for x in self.harness]
        )

    def summary(self) -> str:
        """One paragraph of figures."""
        return (
            f"seed {self.seed}: {self.kills} kills, {self.pg_crashes} PostgreSQL crashes, "
            f"{self.faults} faults injected, "
            f"{self.sent} commands sent, {self.acknowledged} acknowledged, {self.games} games "
            f"({self.finished} finished), {self.intents} intents carried out; "
            f"lost {len(self.lost)}, doubled {len(self.doubled)}, orphaned {len(self.orphaned)}, "
            f"diverged {len(self.diverged)}; {self.elapsed:.1f} s; host acts answered: "
            f"{', '.join(f'{what} {n}' for what, n in sorted(self.answered.items())) or 'none'}"
        )


class BotProcess:
    """The bot as its own process against the fake, killed and started again at will."""

    def __init__(
        self,
        fake: FakeDiscord,
        folder: Path,
        *,
        rest_per_second: int = SUITE_REST_PER_SECOND,
        database: str | None = None,
    ) -> None:
        self.fake = fake
        self.folder = folder
        self.database: Path | str = database or folder / "bot.sqlite3"
        self.config = folder / "config.yaml"
        self.config.write_text(
            CONFIG.format(
                database=self.database, discussion=DISCUSSION_SECONDS, rest=rest_per_second
            )
        )
        self.log = folder / "bot.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def up(self) -> bool:
        """Whether the process runs."""
        return self.process is not None and self.process.poll() is None

    async def start(self, timeout: float = 60.0) -> None:
        """Start it and wait until it is connected (an IDENTIFY more than before)."""
        identified = self.fake.gateway.count("identify")
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
                cwd=self.folder,
                stdout=log,
                stderr=log,
            )
        await self.fake.wait_until(
            lambda: self.fake.gateway.count("identify") > identified or not self.up or None,
            timeout,
            "the bot did not connect",
        )
        if not self.up:
            raise RuntimeError(f"the bot stopped at start; its log:\n{self.tail()}")
        await asyncio.sleep(0.3)  # discord.py settles its guilds before it handles interactions

    def kill(self) -> None:
        """SIGKILL: nothing of the process gets to run."""
        if self.process is not None and self.up:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not go."""
        if self.process is not None and self.up:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def tail(self, size: int = 4000) -> str:
        """The end of the bot's log."""
        return self.log.read_text(errors="replace")[-size:] if self.log.exists() else ""


class Unavailable(Exception):
    """The bot's database cannot be read now (the PostgreSQL server is down)."""


def rows(where: Path | str, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """A read of the bot's database behind its back (it may be writing: wait for it): its SQLite
    file, or its PostgreSQL schema's URL; each row as a dict by column name.

    Raises:
        Unavailable: the database cannot be reached.
    """
    try:
        if isinstance(where, Path):
            with contextlib.closing(sqlite3.connect(where, timeout=30)) as connection:
                connection.row_factory = sqlite3.Row
                return [dict(row) for row in connection.execute(sql, params)]
        return [dict(row) for row in raw_sync(where, sql, params)]
    except (sqlite3.Error, OSError) as error:
        raise Unavailable(repr(error)) from error
    except Exception as error:
        if type(error).__module__.startswith("asyncpg"):
            raise Unavailable(repr(error)) from error
        raise


def ids_in(value: Any) -> Iterator[int]:
    """Every integer id in a game's stored channels (nested dicts and lists)."""
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        yield value
    elif isinstance(value, str) and value.isdigit():
        yield int(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from ids_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from ids_in(item)


def keys_in(value: Any) -> Iterator[str]:
    """Every provisioning key (``spectate:role``, ``notify:quiet:0``) in a game's stored channels."""
    if isinstance(value, str) and ":" in value:
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from keys_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from keys_in(item)


class Chaos:
    """One run: build the guilds, drive, kill, inject, then check (see the module docstring)."""

    def __init__(
        self,
        folder: Path,
        seed: int,
        *,
        guilds: int = 3,
        players: int = 8,
        kill_gap: tuple[float, float] = (3.0, 6.0),
        say: Callable[[str], None] | None = None,
        rest_per_second: int = SUITE_REST_PER_SECOND,
        postgres: PostgresServer | None = None,
    ) -> None:
        self.folder = folder
        self.seed = seed
        self.random = random.Random(seed)
        self.players = players
        self.kill_gap = kill_gap
        self.say = say or (lambda text: None)
        self.fake = FakeDiscord()
        # as the suite's bots (tests/harness.py), unless asked for Discord's own 50 a second
        self.fake.global_limit = GlobalLimit(rest_per_second)
        self.clubs = [self._club(index) for index in range(guilds)]
        self.initial_channels = {c for c in self.fake.state.channels}
        self.initial_roles = {
            r for club in self.clubs for r in self.fake.state.guild(club.guild_id).roles
        }
        self.postgres = postgres
        self.bot = BotProcess(
            self.fake,
            folder,
            rest_per_second=rest_per_second,
            database=postgres.new_url() if postgres is not None else None,
        )
        self._last_rows: dict[int, dict[str, Any] | None] = {}
        """Each guild's game as the driver last read it (used while the database is down)."""
        self._outage = asyncio.Lock()
        """Held while the bot is killed and started, or the server is down: one at a time."""
        self.sent: list[Sent] = []
        self.figures = Figures(seed)
        self._stop = asyncio.Event()
        self._started_at = 0.0

    def _club(self, index: int) -> Club:
        host = self.fake.create_user(f"host{index}", global_name=f"Host {index}")
        guild = self.fake.create_guild(f"Club {index}", owner=host, preferred_locale="ru")
        general = self.fake.create_channel(guild.id, "general")
        members = [
            self.fake.add_member(guild.id, f"c{index}p{p}").user.id for p in range(self.players + 2)
        ]
        return Club(guild.id, host.id, members, general.id)

    # ------------------------------------------------------------------ running

    async def run(
        self, *, kills: int | None = None, seconds: float | None = None, pg_crashes: int = 0
    ) -> Figures:
        """Drive until ``kills`` kills (and ``pg_crashes`` crashes of the PostgreSQL server) were
        made or ``seconds`` went by, settle, check."""
        began = time.monotonic()
        await self.fake.start()
        try:
            await self.bot.start()
            self._started_at = time.monotonic()
            drivers = [
                asyncio.create_task(self._drive(club), name=f"chaos-{club.guild_id}-{worker}")
                for club in self.clubs
                for worker in range(2)
            ]
            faults = asyncio.create_task(self._faults(), name="chaos-faults")
            try:
                await asyncio.gather(
                    self._kills(kills, seconds), self._crashes(pg_crashes, seconds)
                )
            finally:
                self._stop.set()
                for task in [*drivers, faults]:
                    task.cancel()
                await asyncio.gather(*drivers, faults, return_exceptions=True)
            self.fake.clear_faults()
            if not self.bot.up:
                await self.bot.start()
            await self._settle()
            self.bot.stop()
            await self.check()
        finally:
            self.bot.stop()
            await self.fake.close()
        self.figures.elapsed = time.monotonic() - began
        return self.figures

    async def _kills(self, kills: int | None, seconds: float | None) -> None:
        while True:
            elapsed = time.monotonic() - self._started_at
            if kills is not None and self.figures.kills >= kills:
                return
            if seconds is not None and elapsed >= seconds:
                return
            await asyncio.sleep(self.random.uniform(*self.kill_gap))
            async with self._outage:
                self.bot.kill()
                self.figures.kills += 1
                if self.random.random() < 0.3:
                    await asyncio.sleep(
                        self.random.uniform(0.0, 1.0)
                    )  # a while down: interactions go nowhere
                await self.bot.start()
            if self.figures.kills % 10 == 0:
                self.say(f"  {self.figures.kills} kills, {len(self.sent)} commands sent")

    async def _crashes(self, crashes: int, seconds: float | None) -> None:
        """Stop the PostgreSQL server at once now and then, leave it down a while, start it."""
        if self.postgres is None:
            return
        server = self.postgres
        while self.figures.pg_crashes < crashes:
            if seconds is not None and time.monotonic() - self._started_at >= seconds:
                return
            await asyncio.sleep(self.random.uniform(*self.kill_gap))
            async with self._outage:
                await asyncio.to_thread(server.crash)
                self.figures.pg_crashes += 1
                await asyncio.sleep(
                    self.random.uniform(0.3, 3.0)
                )  # commands and deadlines meet it down
                await asyncio.to_thread(server.resume)
            self.say(
                f"  {self.figures.pg_crashes} PostgreSQL crashes, {len(self.sent)} commands sent"
            )

    async def _faults(self) -> None:
        while not self._stop.is_set():
            await asyncio.sleep(self.random.uniform(0.5, 2.0))
            route = self.random.choice(FAULT_ROUTES)
            roll = self.random.random()
            self.figures.faults += 1
            if roll < 0.3:
                self.fake.fail(
                    None,
                    route,
                    status=429,
                    count=self.random.randint(1, 4),
                    retry_after=self.random.choice((0.05, 0.3, 1.0)),
                )
            elif roll < 0.6:
                self.fake.fail(
                    None,
                    route,
                    status=self.random.choice((500, 502, 503)),
                    count=self.random.randint(1, 4),
                )
            elif roll < 0.8:
                self.fake.delay(
                    None, route, self.random.uniform(0.2, 2.0), count=self.random.randint(1, 6)
                )
            elif roll < 0.95:
                if self.bot.up:
                    with contextlib.suppress(
                        Exception
                    ):  # no connection at this moment: nothing to drop
                        await self.fake.drop_gateway(resumable=self.random.random() < 0.7)
            else:
                self.fake.forget_nonces()
            # spent faults are dropped so the list stays short
            self.fake.faults.faults[:] = [f for f in self.fake.faults.faults if f.active]

    # ------------------------------------------------------------------ driving

    def _game(self, club: Club) -> dict[str, Any] | None:
        found = rows(
            self.bot.database,
            "SELECT id, state, lobby FROM games WHERE guild_id = ? ORDER BY id DESC LIMIT 1",
            (club.guild_id,),
        )
        return found[0] if found else None

    async def _send(
        self,
        club: Club,
        what: str,
        game_id: int | None,
        deliver: Callable[[], Any],
        timeout: float = 4.0,
        command: str = "",
    ) -> InteractionResult | None:
        """Send one interaction and wait a while for its answer (the bot may be down: then none)."""
        try:
            result: InteractionResult = await deliver()
        except RuntimeError:
            return None  # no gateway session: Discord would tell the user the app did not respond
        self.sent.append(Sent(result, what, club.guild_id, game_id, command))
        with contextlib.suppress(TimeoutError, AssertionError):
            await self.fake.wait_until(
                lambda: result.callback is not None or bool(result.attempts) or None, timeout, ""
            )
        return result

    async def _choices(self, club: Club, user: int, command: str, option: str) -> list[str]:
        try:
            result = await self.fake.autocomplete(
                club.guild_id, user, command, option, "", locale="ru", wait=False
            )
        except RuntimeError:
            return []
        try:
            await self.fake.wait_until(
                lambda: result.callback is not None or bool(result.attempts) or None, 3.0, ""
            )
        except (TimeoutError, AssertionError):
            return []
        return [str(choice["value"]) for choice in result.choices]

    async def _ask(self, club: Club, game_id: int, command: str, options: dict[str, Any]) -> None:
        """A host's command that asks to confirm, then, as the host, its "Yes" (now and then
        twice at once, as a double click), its "No", or nothing."""
        guild, host = club.guild_id, club.host_id
        result = await self._send(
            club,
            "ask",
            game_id,
            lambda: self.fake.slash(guild, host, command, options, locale="ru", wait=False),
            command=command,
        )
        if result is None or result.callback is None:
            return
        question = result.original
        yes, no = confirmation(result)
        if question is None or yes is None or no is None:
            return  # refused at once: not his game, a dead target...
        roll = self.random.random()
        if roll < 0.15:
            return  # never answered: nothing may happen
        await asyncio.sleep(self.random.uniform(0.0, 0.5))  # the host reads the question
        if roll < 0.3:
            await self._send(
                club,
                "no",
                game_id,
                lambda: self.fake.click(question, no, host, locale="ru", wait=False),
                command=f"{command} (No)",
            )
            return
        what = "end" if command == "host end" else "game"
        presses = 2 if self.random.random() < 0.15 else 1
        # both clicks leave before the bot answers either, so both find the button
        await asyncio.gather(
            *(
                self._send(
                    club,
                    what,
                    game_id,
                    lambda: self.fake.click(question, yes, host, locale="ru", wait=False),
                    command=f"{command} (Yes)",
                )
                for _ in range(presses)
            )
        )

    async def _drive(self, club: Club) -> None:
        while not self._stop.is_set():
            await asyncio.sleep(self.random.uniform(0.02, 0.15))
            if not self.bot.up:
                await asyncio.sleep(0.2)
                continue
            try:
                try:
                    row = await asyncio.to_thread(self._game, club)
                    self._last_rows[club.guild_id] = row
                except Unavailable:
                    if club.guild_id not in self._last_rows:
                        raise
                    # the server is down: play on as last seen (what the bot cannot store it refuses)
                    row = self._last_rows[club.guild_id]
                await self._turn(club, row)
            except asyncio.CancelledError:
                raise
            except Unavailable:
                await asyncio.sleep(0.2)
            except Exception as error:  # a fault of the harness itself: the run is worth nothing
                self.figures.harness.append(f"{club.guild_id}: {error!r}")
                raise

    async def _turn(self, club: Club, row: dict[str, Any] | None) -> None:
        guild, host = club.guild_id, club.host_id
        if row is None or row["state"] in ("over", "cancelled"):
            await self._send(
                club,
                "new",
                None,
                lambda: self.fake.slash(
                    guild, host, "mafia new", {}, channel_id=club.general, locale="ru", wait=False
                ),
            )
            await asyncio.sleep(0.3)
            return
        game_id, state = int(row["id"]), row["state"]
        if state == "starting":
            if self.random.random() < 0.02:
                await self._ask(club, game_id, "host end", {})
            await asyncio.sleep(0.3)
            return
        if state == "lobby":
            lobby = json.loads(row["lobby"])
            joined = {int(p["id"]) for p in lobby.get("players", [])}
            message = next(
                (
                    m
                    for m in self.fake.messages(club.general)
                    if f"mafia:join:{game_id}" in m.custom_ids()
                ),
                None,
            )
            if message is None:
                await asyncio.sleep(0.2)
                return
            waiting = [m for m in club.members[: self.players] if m not in joined]
            if waiting:
                user = self.random.choice(waiting)
                await self._send(
                    club,
                    "join",
                    game_id,
                    lambda: self.fake.click(
                        message, f"mafia:join:{game_id}", user, locale="ru", wait=False
                    ),
                )
                return
            await self._send(
                club,
                "setup",
                game_id,
                lambda: self.fake.slash(
                    guild,
                    host,
                    "host setup",
                    {"cities": "Верона", "maniac": False},
                    locale="ru",
                    wait=False,
                ),
            )
            await self._send(
                club,
                "start",
                game_id,
                lambda: self.fake.slash(guild, host, "host start", {}, locale="ru", wait=False),
                timeout=15.0,
            )
            return
        # running
        if self.random.random() < 0.006:
            await self._ask(club, game_id, "host end", {})
            return
        if self.random.random() < 0.03:  # a member who does not play starts or stops watching
            watcher = self.random.choice(club.members[self.players :])
            command = self.random.choice(("mafia spectate", "mafia spectate", "mafia leave"))
            await self._send(
                club,
                "spectate",
                game_id,
                lambda: self.fake.slash(guild, watcher, command, {}, locale="ru", wait=False),
            )
            return
        if self.random.random() < 0.3:
            user = host
            command, option, _ = self.random.choices(HOST_COMMANDS, [w for *_, w in HOST_COMMANDS])[
                0
            ]
        else:
            user = self.random.choice(club.members[: self.players])
            command, option, _ = self.random.choices(
                PLAYER_COMMANDS, [w for *_, w in PLAYER_COMMANDS]
            )[0]
        options: dict[str, Any] = {}
        if option == "duration":
            options[option] = self.random.choice(EXTENSIONS)
        elif option is not None:
            choices = await self._choices(club, user, command, option)
            if not choices and option != "from":
                return
            if choices and (option != "from" or self.random.random() < 0.7):
                options[option] = self.random.choice(choices)
        if command in ASKING:
            await self._ask(club, game_id, command, options)
            return
        what = "record" if command in RECORDING else "game"
        await self._send(
            club,
            what,
            game_id,
            lambda: self.fake.slash(guild, user, command, options, locale="ru", wait=False),
            command=command,
        )

    async def _settle(self, timeout: float = 90.0) -> None:
        """Wait until nothing is pending and no game is being started or cancelled."""

        def settled() -> bool | None:
            pending = rows(
                self.bot.database, "SELECT COUNT(*) AS n FROM outbox WHERE state = 'pending'"
            )[0]["n"]
            starting = rows(
                self.bot.database, "SELECT COUNT(*) AS n FROM games WHERE state = 'starting'"
            )[0]["n"]
            return (pending == 0 and starting == 0) or None

        try:
            await self.fake.wait_until(settled, timeout, "")
        except (TimeoutError, AssertionError):
            self.figures.lost.append("the outbox or a start never settled after the chaos")
        await asyncio.sleep(1.0)  # edits coalesce for a while; then one more look
        with contextlib.suppress(TimeoutError, AssertionError):
            await self.fake.wait_until(settled, timeout, "")

    # ------------------------------------------------------------------ checking

    async def check(self) -> Figures:
        """Count every lost, doubled, orphaned and diverged thing (see the module docstring)."""
        figures = self.figures
        figures.sent = len(self.sent)
        where = self.bot.database
        games = {int(r["id"]): r for r in rows(where, "SELECT * FROM games")}
        logged = Counter(
            int(r["interaction_id"])
            for r in rows(
                where, "SELECT interaction_id FROM commands WHERE interaction_id IS NOT NULL"
            )
        )
        outbox = rows(where, "SELECT id, game_id, kind, state, last_error FROM outbox")
        # the interactions that changed a game's record (lobby joins, spectators...): id -> game
        recorded = {
            int(r["id"]): int(r["game_id"])
            for r in rows(where, "SELECT id, game_id FROM interactions WHERE game_id IS NOT NULL")
        }
        figures.games = len(games)
        figures.finished = sum(1 for g in games.values() if g["state"] == "over")
        self._check_answers(games, logged, recorded)
        self._check_intents(outbox)
        self._check_orphans(games)
        await self._check_replays(games)
        return figures

    def _check_answers(
        self, games: dict[int, dict[str, Any]], logged: Counter[int], recorded: dict[int, int]
    ) -> None:
        figures = self.figures
        for interaction_id, times in logged.items():
            if times > 1:
                figures.doubled.append(f"interaction {interaction_id} is in the log {times} times")
        for sent in self.sent:
            result = sent.result
            if sent.what in ("ask", "no") and (logged[result.id] or result.id in recorded):
                # a question (its message may since show the press's answer) or a "No" changes nothing
                figures.doubled.append(
                    f"{sent.command} {result.id} only asked or declined, yet it is in "
                    f"the log {logged[result.id]} times, recorded for "
                    f"{recorded.get(result.id)}"
                )
            if result.callback is None:
                continue
            text = result.content
            if sent.what == "game":
                if is_success(text):
                    figures.acknowledged += 1
                    if sent.command == "host kill (Yes)":
                        figures.answered[sent.command] += 1
                    if logged[result.id] != 1:
                        figures.lost.append(
                            f"{sent.command} {result.id} answered "
                            f"{text!r} but is in the log {logged[result.id]} times"
                        )
                elif is_refusal(text) and logged[result.id]:
                    figures.doubled.append(
                        f"{result.id} answered {text!r} (a refusal) but is in the log"
                    )
            elif sent.what == "no" and CANCELLED.fullmatch(text):
                figures.acknowledged += 1
                figures.answered[sent.command] += 1
            elif sent.what == "record":
                if RECORDED[sent.command].fullmatch(text):
                    figures.acknowledged += 1
                    figures.answered[sent.command] += 1
                    if recorded.get(result.id) != sent.game_id:
                        figures.lost.append(
                            f"{sent.command} {result.id} answered {text!r}; game "
                            f"{sent.game_id} did not record it"
                        )
                elif is_refusal(text) and result.id in recorded:
                    figures.doubled.append(
                        f"{sent.command} {result.id} answered {text!r} (a refusal) "
                        f"but game {recorded[result.id]} recorded it"
                    )
            elif sent.what == "end":
                if logged[result.id]:
                    figures.doubled.append(f"end {result.id} is in the log of commands")
                if ENDED.fullmatch(text):
                    figures.acknowledged += 1
                    figures.answered[sent.command] += 1
                    game = games.get(sent.game_id or 0)
                    if game is None or game["state"] != "cancelled":
                        figures.lost.append(
                            f"end {result.id} of game {sent.game_id} answered, "
                            f"the game is {game and game['state']}"
                        )
                    # an end of a game being started is its rollback; of a started one, a record
                    elif game["setup"] is not None and recorded.get(result.id) != sent.game_id:
                        figures.lost.append(
                            f"end {result.id} of started game {sent.game_id} answered, not recorded"
                        )
                elif is_refusal(text) and result.id in recorded:
                    figures.doubled.append(
                        f"end {result.id} answered {text!r} (a refusal) but game "
                        f"{recorded[result.id]} recorded it"
                    )
            elif sent.what == "join" and JOINED.fullmatch(text) and sent.game_id in games:
                figures.acknowledged += 1
                lobby = json.loads(games[sent.game_id]["lobby"])
                ids = [int(p["id"]) for p in lobby.get("players", [])]
                if ids.count(result.user_id) != 1:
                    figures.lost.append(
                        f"join {result.id} of {result.user_id} answered, "
                        f"in game {sent.game_id}'s lobby {ids.count(result.user_id)} times"
                    )
            elif sent.what == "spectate" and (WATCHES.fullmatch(text) or UNWATCHES.fullmatch(text)):
                figures.acknowledged += 1
                game_id = int(re.findall(r"№(\d+)", text)[0])
                if recorded.get(result.id) != game_id:
                    figures.lost.append(
                        f"{result.id} answered {text!r}; game {game_id} did not record it"
                    )
            elif sent.what == "start" and "началась" in text:
                figures.acknowledged += 1
                game = games.get(sent.game_id or 0)
                if (
                    game is None
                    or game["setup"] is None
                    or game["state"] not in ("running", "over", "cancelled")
                ):
                    figures.lost.append(
                        f"start {result.id} of game {sent.game_id} answered, "
                        f"the game is {game and game['state']}"
                    )

        # a recorded pause or resume flips the game's clock (each is refused unless it does)
        pauses: Counter[int] = Counter()
        for sent in self.sent:
            if (
                sent.what == "record"
                and sent.command != "host extend"
                and sent.result.id in recorded
            ):
                pauses[recorded[sent.result.id]] += 1 if sent.command == "host pause" else -1
        for game_id, game in games.items():
            paused = bool(json.loads(game["lobby"] or "{}").get("paused"))
            if pauses[game_id] != (1 if paused else 0):
                figures.lost.append(
                    f"game {game_id}: paused {paused}, its recorded pauses less resumes "
                    f"are {pauses[game_id]}"
                )

        # every toggle a game recorded flips its member's watching (answered or not: one applied
        # just before a kill is never answered), so he watches after an odd number of them
        toggles: Counter[tuple[int, int]] = Counter(
            (recorded[sent.result.id], sent.result.user_id)
            for sent in self.sent
            if sent.what == "spectate" and sent.result.id in recorded
        )
        for game_id, game in games.items():
            watching = {int(u) for u in json.loads(game["channels"] or "{}").get("watching", [])}
            expected = {
                user
                for (toggled, user), count in toggles.items()
                if toggled == game_id and count % 2
            }
            if watching != expected:
                figures.lost.append(
                    f"game {game_id}: watched by {sorted(watching)}, its recorded toggles "
                    f"say {sorted(expected)}"
                )

    def _check_intents(self, outbox: list[dict[str, Any]]) -> None:
        figures = self.figures
        nonces = Counter(
            str(m.nonce) for m in self.fake.messages(include_deleted=True) if m.nonce is not None
        )
        for nonce, times in nonces.items():
            if times > 1:
                figures.doubled.append(f"{times} messages of nonce {nonce}")
        for item in outbox:
            if item["state"] == "sent":
                figures.intents += 1
                if item["kind"] == "send" and f"ob{item['id']}" not in nonces:
                    figures.lost.append(
                        f"outbox item {item['id']} (send) is marked sent, Discord has no "
                        f"message of its nonce"
                    )
            elif item["state"] == "pending":
                figures.lost.append(
                    f"outbox item {item['id']} ({item['kind']}) of game {item['game_id']} "
                    f"is still pending"
                )
            elif item["state"] == "failed" and item["last_error"] != "cancelled":
                # (cancelled: a start called off, its plan replaced by the rollback; not an intent lost)
                figures.lost.append(
                    f"outbox item {item['id']} ({item['kind']}) of game {item['game_id']} "
                    f"failed: {item['last_error']}"
                )

    def _check_orphans(self, games: dict[int, dict[str, Any]]) -> None:
        owned: set[int] = set()
        made = {
            (int(r["game_id"]), json.loads(r["target"]).get("key")): int(r["message_id"])
            for r in rows(
                self.bot.database,
                "SELECT game_id, target, message_id FROM outbox WHERE state = 'sent' "
                "AND kind IN ('create_role', 'create_channel') AND message_id IS NOT NULL",
            )
        }
        for game_id, game in games.items():
            channels = json.loads(game["channels"] or "{}")
            owned.update(ids_in(channels))
            # a role made mid-game (a quiet twin, the spectators') is named by its key there
            owned.update(
                made[(game_id, key)] for key in keys_in(channels) if (game_id, key) in made
            )
        for club in self.clubs:
            for channel in self.fake.state.guild_channels(club.guild_id):
                if channel.id not in self.initial_channels and channel.id not in owned:
                    self.figures.orphaned.append(
                        f"channel {channel.id} {channel.name!r} (topic "
                        f"{channel.topic!r}, parent {channel.parent_id}) in guild "
                        f"{club.guild_id}"
                    )
            for role in self.fake.state.guild(club.guild_id).roles.values():
                if role.id not in self.initial_roles and role.id not in owned and not role.managed:
                    self.figures.orphaned.append(
                        f"role {role.id} {role.name!r} in guild {club.guild_id}"
                    )

    async def _check_replays(self, games: dict[int, dict[str, Any]]) -> None:
        logs: dict[int, list[Any]] = {game_id: [] for game_id in games}
        seq_lists: dict[int, list[int]] = {game_id: [] for game_id in games}
        for r in rows(
            self.bot.database, "SELECT game_id, seq, command FROM commands ORDER BY game_id, seq"
        ):
            if int(r["game_id"]) in logs:
                logs[int(r["game_id"])].append(json.loads(r["command"]))
                seq_lists[int(r["game_id"])].append(int(r["seq"]))
        replays: dict[int, Game] = {}
        for game_id, game in games.items():
            if game["setup"] is None or game["seed"] is None:
                continue
            replay = Game.create(Setup.from_dict(json.loads(game["setup"])), int(game["seed"]))
            try:
                for command in logs[game_id]:
                    replay.apply(command_from_dict(command))
            except Exception as error:
                self.figures.diverged.append(f"game {game_id}'s log does not replay: {error!r}")
                continue
            replays[game_id] = replay
            seqs = seq_lists[game_id]
            if seqs != list(range(1, len(seqs) + 1)):
                self.figures.diverged.append(f"game {game_id}'s log has gaps or repeats: {seqs}")
            if game["state"] == "over" and not replay.over:
                self.figures.diverged.append(
                    f"game {game_id} is stored as over, its log's replay is not"
                )
            if game["state"] == "running" and replay.over:
                self.figures.diverged.append(
                    f"game {game_id} is stored as running, its log's replay is over"
                )
        # the running games as the bot restores them: snapshot and log, checksums checked
        storage = await Storage.open(self.bot.database)
        try:
            service = GameService(storage, Config(database=self.bot.database))
            for live in await service.restore():
                if live.broken is not None:
                    self.figures.diverged.append(f"game {live.id} loads as broken: {live.broken}")
                elif (
                    live.game is not None
                    and live.id in replays
                    and live.game.to_dict() != replays[live.id].to_dict()
                ):
                    self.figures.diverged.append(
                        f"game {live.id} restores to a state that is not its log's replay"
                    )
        finally:
            await storage.close()
