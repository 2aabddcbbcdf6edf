"""The real bot, in this process, against the local fake Discord: a "table" to play at.

    async with bot_table(players=16) as table:
        live = await table.new_game(cities="Верона, Падуя")
        result = await table.slash("p3", "nominate", {"player": table.pid("p5")})

Players are the fake guild's members ``p0``, ``p1``, ...; ``table.pid(name)``
is the player id the rules know (the Discord user id as text) and
``table.name(pid)`` goes back.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bot.bot import ProkuratorBot
from bot.config import Config, Timers
from bot.service import LiveGame
from rules import Game
from tests.fakediscord import (
    FakeDiscord,
    InteractionResult,
    Member,
    Message,
    build_standard_guild,
    running_client,
)
from tests.fakediscord.fixtures import StandardGuild
from tests.fakediscord.permissions import OVERWRITE_ROLE, Overwrite, Permission
from tests.fakediscord.ratelimits import GlobalLimit

NO_TIMERS = Timers(discussion=0, voting=0, night=0, execution=0, reminders=())

#: the suite's bot is one whose global rate limit Discord raised (and the fake enforces that):
#: at Discord's own 50 a second, evenly spaced, a game's start alone would take seconds.
#: tests/bot/test_pacing.py plays by Discord's 50.
SUITE_REST_PER_SECOND = 2_000

#: the suite's outbox gives a REST call 3 s (the fake answers in milliseconds), not 15: a bot
#: started after another one waits that long before it looks for what the first was making,
#: and the restart tests would otherwise spend most of their time waiting for it
SUITE_CALL_TIMEOUT = 3

#: the suite's outbox edits a message at most every 0.05 s, not every 1.5 s: most tests wait for
#: the outbox to settle, and would wait out each coalescing interval; a test about coalescing
#: sets the bot's own (:data:`bot.outbox.EDIT_INTERVAL`)
SUITE_EDIT_INTERVAL = 0.05

#: what @everyone may do in the general channel of a locked-down guild
GENERAL_CHANNEL = int(
    Permission.VIEW_CHANNEL
    | Permission.SEND_MESSAGES
    | Permission.READ_MESSAGE_HISTORY
    | Permission.USE_APPLICATION_COMMANDS
)


@dataclass
class Table:
    """A fake Discord, its guild, and the bot connected to it."""

    fake: FakeDiscord
    world: StandardGuild
    bot: ProkuratorBot
    config: Config

    @property
    def guild_id(self) -> int:
        return self.world.guild.id

    @property
    def host(self) -> Member:
        return self.world.owner

    def member(self, who: str | int | Member) -> Member:
        """A member by username, user id (int or text) or as is."""
        if isinstance(who, Member):
            return who
        if isinstance(who, int) or str(who).isdigit():
            return self.world.guild.members[int(who)]
        if who == "host":
            return self.host
        return self.world.player(str(who))

    def pid(self, who: str | Member) -> str:
        """The player id the rules use for a member."""
        return str(self.member(who).user.id)

    def name(self, pid: str) -> str:
        """The username of a player id."""
        return self.member(int(pid)).user.username

    async def slash(
        self, who: str | Member, command: str, options: dict[str, Any] | None = None, **kwargs: Any
    ) -> InteractionResult:
        """``who`` runs a slash command in the guild's general channel (unless ``channel_id``), his
        client in the guild's preferred locale (unless ``locale``)."""
        kwargs.setdefault("channel_id", self.world.text_channel.id)
        return await self.fake.slash(
            self.guild_id, self.member(who).user.id, command, options or {}, **kwargs
        )

    async def drain(self, timeout: float = 10.0) -> None:
        """Wait until the outbox has sent everything. A loaded machine may take longer than
        ``timeout``: the wait goes on while the bot gets REST calls answered, and fails once
        ``timeout`` seconds pass without one (or after the fake's patience), never returning
        with items still being sent."""

        # a change seen in memory may still be committing under its game's lock, its outbox items
        # not stored yet: first every lock is let go (the commit, its items, the outbox's kick)
        for lock in list(self.bot.service._locks.values()):
            async with lock:
                pass
        outbox = self.bot.outbox
        await outbox.drain(timeout=0.5)
        if not outbox.idle():
            await self.fake.wait_until(
                lambda: outbox.idle() or None, timeout, "the outbox never drained"
            )

    def live(self) -> LiveGame:
        """The guild's loaded game."""
        games = [g for g in self.bot.service.games() if g.record.guild_id == self.guild_id]
        assert games, "no loaded game in the guild"
        return games[-1]

    @property
    def game(self) -> Game:
        """The guild's running game (or the last one seen, once it ended)."""
        games = [
            g for g in self.bot.service.games() if g.record.guild_id == self.guild_id and g.game
        ]
        if games:
            self.last_game = games[-1].game
        assert self.last_game is not None
        return self.last_game

    def game_status(self, user_id: int) -> str | None:
        """The status of a user in the guild's latest game, or None if he does not play."""
        games = [
            g for g in self.bot.service.games() if g.record.guild_id == self.guild_id and g.game
        ]
        game = games[-1].game if games else self.last_game
        if game is None or str(user_id) not in game.players:
            return None
        return game.status_of(str(user_id)).value

    last_game: Game | None = None

    def players_of(self, status: str, city: str | None = None) -> list[str]:
        """Usernames of living players with a status (optionally in one city)."""
        game = self.game
        return [self.name(p) for p in game.alive(city) if game.status_of(p).value == status]

    async def lobby_message(self) -> Message:
        """The lobby message of the guild's latest game, once the outbox has posted it."""
        await self.drain()
        latest = await self.bot.storage.latest_game(self.guild_id)
        assert latest is not None, "no game in the guild"
        reference = await self.bot.storage.message_ref(latest.id, "lobby")
        assert reference is not None, "the lobby message was never posted"
        return self.fake.message(reference[1])

    async def open_lobby(self, players: list[str] | None = None) -> InteractionResult:
        """``/mafia new`` by the host (answered privately; the lobby message is posted by the
        outbox), then everyone presses Join."""
        opened = await self.slash("host", "mafia new")
        assert opened.ephemeral and opened.callback_type == 4, opened.describe()
        lobby = await self.lobby_message()
        live = self.live()
        for name in (
            players if players is not None else [m.user.username for m in self.world.players]
        ):
            joined = await self.fake.click(
                lobby, f"mafia:join:{live.id}", self.member(name).user.id
            )
            assert joined.callback_type == 4, joined.describe()
        return opened

    async def new_game(self, *, players: list[str] | None = None, **setup: Any) -> LiveGame:
        """Open a lobby, everyone joins, ``/host setup`` with ``setup``, ``/host start``."""
        await self.open_lobby(players)
        if setup:
            configured = await self.slash("host", "host setup", setup)
            assert configured.ephemeral, configured.describe()
        started = await self.slash("host", "host start")
        await started.wait_original(60.0)  # roles, channels and each player's role are made first
        assert "началась" in started.text or "started" in started.text, started.text
        await self.drain()
        return self.live()

    def channel_messages(self, channel_id: int) -> list[str]:
        """Contents of the non-deleted messages of a channel, oldest first."""
        return [m.content for m in self.fake.messages(channel_id)]

    def city_channel(self, city: str) -> int:
        return int(self.live().record.channels["cities"][city]["text"])

    def mafia_channel(self, city: str) -> int:
        return int(self.live().record.channels["cities"][city]["mafia"])


@contextlib.asynccontextmanager
async def bot_on(
    fake: FakeDiscord,
    world: StandardGuild,
    config: Config,
    *,
    clock: Callable[[], float] | None = None,
    **bot_options: Any,
) -> AsyncIterator[Table]:
    """The bot running against an already started fake (a second bot after a "restart", say);
    ``bot_options`` go to :class:`ProkuratorBot` (its ``identify_pause`` is 0 unless given).
    Unless the config sets ``rest_per_second``, the bot (and the fake) take the suite's raised
    global limit, :data:`SUITE_REST_PER_SECOND`, and unless it sets ``call_timeout``, the suite's
    :data:`SUITE_CALL_TIMEOUT`; its outbox edits a message at most every :data:`SUITE_EDIT_INTERVAL`."""
    options: dict[str, Any] = {"clock": clock} if clock is not None else {}
    options["deal_seed"] = repeatable_seeds()
    # no turns to IDENTIFY: one shard (a test of several passes its own), and a restart's turn
    # read from PostgreSQL would wait out the first bot's (tests/bot/test_gateway_budget.py)
    options["identify_pause"] = 0
    options.update(bot_options)
    if config.call_timeout == Config.call_timeout:  # not set by the test
        config = replace(config, call_timeout=SUITE_CALL_TIMEOUT)
    if config.rest_per_second == Config.rest_per_second:  # not set by the test
        config = replace(config, rest_per_second=SUITE_REST_PER_SECOND)
        if fake.global_limit.limit < SUITE_REST_PER_SECOND:
            fake.global_limit = GlobalLimit(SUITE_REST_PER_SECOND)
    if fake.gateway.history:  # a restart: it took longer than an IDENTIFY's interval, as a
        # real one does (the fake's limit is tests/fakediscord/test_gateway_limits.py's subject)
        fake.gateway.limits.pass_time(fake.gateway.limits.identify_interval)
    bot = ProkuratorBot(config, **options)
    async with running_client(fake, bot):
        bot.outbox.edit_interval = SUITE_EDIT_INTERVAL
        yield Table(fake, world, bot, config)


def repeatable_seeds() -> Callable[[], int]:
    """Deal seeds that repeat from run to run of the same test (and differ between tests), so a
    test plays the same deal each time and its REST traffic can be compared between two trees
    (tests/fakediscord/compare.py)."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]
    return functools.partial(random.Random(test).randrange, 2**31)


@contextlib.asynccontextmanager
async def bot_table(
    *,
    players: int = 16,
    config: Config | None = None,
    clock: Callable[[], float] | None = None,
    guild_locale: str = "ru",
    everyone_permissions: int | None = None,
    refusals: bool = False,
    database: Path | str | None = None,
) -> AsyncIterator[Table]:
    """A started fake with a guild of ``players`` members (``p0``...) and the bot against it.

    ``everyone_permissions`` replaces what the guild's @everyone may do (0: nothing at all, as a
    locked-down server); the general channel then lets @everyone in by an overwrite, so that
    members can still run the bot's commands there.

    When the test ends, every REST call the bot made must have been accepted (a fault the test
    injected aside): the fake refuses what Discord refuses, so a refusal is a bug. A test about
    Discord refusing something the bot could not know of passes ``refusals=True``.

    ``database``: where the bot stores (the ``database`` fixture: a SQLite file or a PostgreSQL
    URL); by default a SQLite file in a temporary folder.
    """
    fake = FakeDiscord()
    world = build_standard_guild(
        fake, players=[f"p{i}" for i in range(players)], preferred_locale=guild_locale
    )
    if everyone_permissions is not None:
        guild_id = world.guild.id
        fake.update_role(guild_id, guild_id, permissions=everyone_permissions)
        fake.set_overwrite(
            world.text_channel.id, Overwrite(guild_id, OVERWRITE_ROLE, allow=GENERAL_CHANNEL)
        )
    with tempfile.TemporaryDirectory() as folder:
        base = replace(
            config or Config(timers=NO_TIMERS),
            database=database if database is not None else Path(folder) / "bot.sqlite3",
        )
        await fake.start()
        try:
            async with bot_on(fake, world, base, clock=clock) as table:
                yield table
            if not refusals:
                assert refused_calls(fake) == [], "Discord would have refused these calls"
        finally:
            await fake.close()


def refused_calls(fake: FakeDiscord) -> list[str]:
    """The REST calls the fake refused that no injected fault explains."""
    return [
        f"{c.method} {c.path} -> {c.status} {c.response}"
        for c in fake.calls()
        if c.status >= 400 and c.fault is None
    ]
