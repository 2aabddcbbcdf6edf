"""The Bot subclass: intents, shards, storage, the game service, cogs, one error handler.

The bot is discord.py's auto-sharded bot: one process runs every shard by default (as many as
Discord recommends), or the shards of ``config.shards`` out of ``config.shard_count``, each
shard with its own gateway connection, rate limits and reconnects. A process restores and
serves only the games of its shards' guilds (:meth:`bot.storage.Storage.set_shards`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import random
import time
from collections.abc import Callable
from typing import Any

import discord
from discord import app_commands
from discord.ext import commands

from bot.callbacks import parse_answers_lazily
from bot.collector import CollectorPolicy
from bot.config import Config
from bot.errors import UserError
from bot.fairness import CommandLimit, TooFast
from bot.i18n import reader_language, t, warm_up
from bot.identify import TURN, IdentifyTurns
from bot.members import MemberRequests
from bot.notices import Notices
from bot.options import OptionRefused, options_within_limits
from bot.outbox import Outbox
from bot.pacing import Pacer, pace, share
from bot.permissions import invite_url
from bot.powers import Powers
from bot.service import Clock, Expired, GameService, NoGame
from bot.storage import GameExists, Storage, is_storage_failure
from bot.timers import PhaseTimers
from bot.translator import CatalogueTranslator
from bot.wiring import Hooks, declared, wire
from rules import RuleError

log = logging.getLogger(__name__)

# the message an answer created is parsed only if read (nothing here reads it): bot.callbacks
parse_answers_lazily()

EXTENSIONS = (
    "cogs.game",
    "cogs.lobby",
    "cogs.play",
    "cogs.host",
    "cogs.attendance",
    "cogs.admin",
    "cogs.lastword",
    "cogs.history",
    "cogs.season",
    "cogs.schedule",
    "cogs.will",
    "cogs.help",
)


def intents() -> discord.Intents:
    """What the bot needs: guilds, members (who leaves the server, role changes) and voice
    states; no message content. Member lists are never requested at startup."""
    wanted = discord.Intents.none()
    wanted.guilds = True
    wanted.members = True
    wanted.voice_states = True
    return wanted


#: interactions remembered while they run, for the members' shares (bot.fairness)
CHARGED_KEPT = 10_000

#: Discord's codes for an interaction it no longer takes answers to (unknown interaction, and
#: unknown webhook: its token expired)
GONE = (10062, 10015)

#: Discord lets each max_concurrency bucket IDENTIFY once per 5 seconds: a turn is 5.5 s
#: (bot.identify)
IDENTIFY_PAUSE = TURN


def fresh_seed() -> int:
    """A new deal's seed, from the system's randomness (no player can guess it)."""
    return random.SystemRandom().randrange(2**31)


class ShardFilter(logging.Filter):
    """Gives every log record ``shard_tag``: `` [shard N]`` when the record names its shard (an
    ``extra={"shard": N}``, or discord.py's "Shard ID %s ..." lines), else nothing; the log
    format carries it after the logger's name."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Tag the record (never drops one)."""
        shard = getattr(record, "shard", None)
        if (
            shard is None
            and isinstance(record.msg, str)
            and "Shard ID %s" in record.msg
            and record.args
        ):
            args = record.args if isinstance(record.args, tuple) else (record.args,)
            position = record.msg[: record.msg.index("Shard ID %s")].count("%s")
            if position < len(args):
                shard = args[position]
        record.shard_tag = f" [shard {shard}]" if shard is not None else ""
        return True


#: the log line of ``mafia-bot run``
LOG_FORMAT = "%(asctime)s %(levelname)-7s %(name)s%(shard_tag)s: %(message)s"


class ProkuratorTree(app_commands.CommandTree["ProkuratorBot"]):
    """The bot's command tree: its interaction check and its errors are the bot's."""

    async def interaction_check(self, interaction: discord.Interaction, /) -> bool:
        """See :meth:`ProkuratorBot.check_command`."""
        return await self.client.check_command(interaction)

    async def on_error(
        self, interaction: discord.Interaction, error: app_commands.AppCommandError, /
    ) -> None:
        """See :meth:`ProkuratorBot.on_app_command_error`."""
        await self.client.on_app_command_error(interaction, error)


class ProkuratorBot(commands.AutoShardedBot):
    """The bot process: one instance hosts every game of the guilds of its shards."""

    storage: Storage
    service: GameService
    outbox: Outbox
    notices: Notices
    timers: PhaseTimers
    powers: Powers

    def __init__(
        self,
        config: Config,
        *,
        clock: Clock = time.time,
        extensions: tuple[str, ...] = EXTENSIONS,
        storage: Storage | None = None,
        identify_pause: float = IDENTIFY_PAUSE,
        deal_seed: Callable[[], int] = fresh_seed,
        **options: Any,
    ) -> None:
        if config.shards is not None:
            options.setdefault("shard_ids", list(config.shards))
        if config.shard_count is not None:
            options.setdefault("shard_count", config.shard_count)
        self.identify_pause = identify_pause
        self.deal_seed = deal_seed
        """Where a start's deal gets its seed (the tests give one that repeats per test)."""
        super().__init__(
            command_prefix=commands.when_mentioned,
            intents=intents(),
            help_command=None,
            allowed_mentions=discord.AllowedMentions.none(),
            # members come with the interactions that need them; asking Discord for every
            # guild's member list at startup takes minutes with many guilds (op 8 is rate
            # limited) and starves the heartbeat
            chunk_guilds_at_startup=False,
            tree_cls=ProkuratorTree,
            **options,
        )
        self.config = config
        self.clock = clock
        # every REST call but the interaction endpoints keeps under Discord's global limit
        self.pacer = Pacer(share(config.rest_per_second, self.shard_ids, self.shard_count))
        # discord.py has no hook around its REST calls: its own method is wrapped, which its
        # stubs type as a method (not assignable) returning a Coroutine (pace's is Awaitable)
        self.http.request = pace(self.http.request, self.pacer)  # type: ignore[method-assign,assignment]
        self.extensions_to_load = extensions
        self._opened_storage = storage
        self.limit = CommandLimit(config.fairness)
        """Each member's commands per game (:mod:`bot.fairness`)."""
        self._charged: dict[int, tuple[int, int]] = {}
        """Interactions counted against a member's share, until they are done: id → (game, member)."""
        self.wired = Hooks()
        """What the bot and its cogs plugged in (:func:`bot.wiring.wire` sets it at start)."""
        self.members = MemberRequests()
        """Member lookups, batched per guild and paced per shard (:mod:`bot.members`)."""
        self.identify_turns: IdentifyTurns | None = None
        """Each shard's turn to IDENTIFY (:mod:`bot.identify`), made at the first."""

    async def setup_hook(self) -> None:
        """Open storage, build the game service, the outbox, the notices and the timers, load
        the cogs and wire what each declares (:mod:`bot.wiring`), restore unfinished games,
        sync the commands."""
        if self.application_id is not None:  # logged in: the application is known
            log.info("invite link: %s", invite_url(self.application_id))
        warm_up()
        self.storage = self._opened_storage or await Storage.open(
            self.config.database, synchronous=self.config.sqlite_synchronous
        )
        self.storage.set_shards(self.shard_ids, self.shard_count)
        if self.shard_ids is not None:
            log.info(
                "running shard(s) %s of %s", ",".join(map(str, self.shard_ids)), self.shard_count
            )
        self.service = GameService(self.storage, self.config, clock=self.clock)
        self.service.locale_language = self.guild_locale_language
        self.outbox = Outbox(
            self.storage,
            self.http,
            call_timeout=self.config.call_timeout,
            self_id=self.user.id if self.user else None,
        )
        self.notices = Notices(self.storage)
        if await self.notices.load():
            log.info(
                "some members have answers Discord did not deliver: shown with their next ones"
            )
        self.timers = PhaseTimers(
            self.service, reminders=self.config.timers.reminders, clock=self.clock
        )
        self.powers = Powers(self)
        self.timers.holds.append(self.powers.holds)
        self.service.standstill = self.powers.standstill
        await self.tree.set_translator(CatalogueTranslator())
        for extension in self.extensions_to_load:
            await self.load_extension(extension)
        # the bot's own hooks, then each cog's in the order they were loaded (bot.wiring.wire)
        wire(self, Hooks.joined([self.hooks(), self.powers.hooks(), *declared(self.cogs.values())]))
        began = time.perf_counter()
        restored = await self.service.restore()
        await self.outbox.start()
        armed = self.timers.arm_all()
        log.info(
            "restored %d open game(s) in %.2f s; %d deadline(s) armed",
            len(restored),
            time.perf_counter() - began,
            armed,
        )
        await self.sync_commands()

    def hooks(self) -> Hooks:
        """The bot's own hooks: after every commit, carry out its outbox items, then arm its
        deadline."""
        return Hooks(after_commit=[lambda live: self.outbox.kick(live.id), self.timers.arm])

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        """Wait for the shard's turn to IDENTIFY: :attr:`identify_pause` after the last IDENTIFY
        of its ``max_concurrency`` bucket, in any process sharing the database
        (:mod:`bot.identify`; a test against the local fake passes 0)."""
        if self.identify_turns is None:
            concurrency = await self._max_concurrency() if self.identify_pause > 0 else 1
            storage = getattr(self, "storage", None)
            self.identify_turns = IdentifyTurns(
                storage, max_concurrency=concurrency, interval=self.identify_pause
            )
        waited = await self.identify_turns.take(shard_id)
        if waited:
            log.info("shard %s waited %.1f s for its turn to identify", shard_id, waited)

    async def _max_concurrency(self) -> int:
        """Discord's ``max_concurrency`` for the bot (1 if it cannot be read)."""
        try:
            return int((await self.fetch_session_start_limits()).max_concurrency)
        except (discord.HTTPException, discord.GatewayNotFound, KeyError, TypeError) as error:
            log.warning(
                "could not read max_concurrency (%r): identifying one shard at a time", error
            )
            return 1

    async def on_shard_connect(self, shard_id: int) -> None:
        """Log each shard's gateway connection on its own."""
        log.info("shard %d connected to the gateway", shard_id, extra={"shard": shard_id})

    async def on_shard_ready(self, shard_id: int) -> None:
        """Log each shard's guilds once it has them all."""
        count = sum(1 for guild in self.guilds if guild.shard_id == shard_id)
        log.info("shard %d ready with %d guild(s)", shard_id, count, extra={"shard": shard_id})

    async def on_shard_resumed(self, shard_id: int) -> None:
        """Log a shard's resumed session."""
        log.info("shard %d resumed its session", shard_id, extra={"shard": shard_id})

    async def on_shard_disconnect(self, shard_id: int) -> None:
        """Log a shard's lost connection (discord.py reconnects it on its own)."""
        log.warning("shard %d disconnected from the gateway", shard_id, extra={"shard": shard_id})

    async def on_guild_available(self, guild: discord.Guild) -> None:
        """A guild is here (at start, or back after an outage): its loaded games, read before
        Discord sent it, speak its language now that its preferred locale is known."""
        games = self.service.games_of(guild.id)
        if not games:
            return  # most guilds have none: no question to the database for them
        language = await self.service.language(guild.id)
        for live in games:
            if live.language != language:
                log.info("game %s speaks %s, its server's language", live.id, language)
                live.language = language

    async def on_ready(self) -> None:
        """Once the caches are built, keep the garbage collector off what lives for good."""
        if not getattr(self, "_frozen", False):
            self._frozen = True
            # startup objects, then what survives each full collection, leave the full
            # collections: short pauses with many games (bot/collector.py)
            self.collector = CollectorPolicy(asyncio.get_running_loop())
            self.collector.install()
            log.info("ready as %s in %d guild(s)", self.user, len(self.guilds))

    async def sync_commands(self) -> None:
        """Sync the global command tree when it changed since the last sync; keep the ids
        Discord gave the commands, for the texts' clickable mentions (told to the wired
        ``command_ids``)."""
        translator = self.tree.translator
        assert translator is not None  # set in setup_hook
        payload = [
            await command.get_translated_payload(self.tree, translator)
            for command in self.tree.get_commands()
        ]
        digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
        key = f"commands:{self.application_id}"
        ids_key = f"command_ids:{self.application_id}"
        if await self.storage.meta(key) == digest:
            stored = await self.storage.meta(ids_key)
            if stored is not None:
                self._tell_command_ids(
                    {name: int(value) for name, value in json.loads(stored).items()}
                )
                log.info("slash commands unchanged; not synced")
                return
            synced = await self.tree.fetch_commands()  # synced before their ids were kept
        else:
            synced = await self.tree.sync()
        ids = {command.name: command.id for command in synced}
        await self.storage.set_meta(ids_key, json.dumps(ids, sort_keys=True))
        await self.storage.set_meta(key, digest)
        self._tell_command_ids(ids)
        log.info("synced %d slash commands", len(synced))

    def _tell_command_ids(self, ids: dict[str, int]) -> None:
        for told in self.wired.command_ids:
            told(ids)

    async def close(self) -> None:
        """Stop timers and the outbox, close storage, then disconnect."""
        await self.members.close()
        if hasattr(self, "timers"):
            await self.timers.close()
        if hasattr(self, "outbox"):
            await self.outbox.close()
        if hasattr(self, "storage"):
            await self.storage.close()
        if hasattr(self, "collector"):
            self.collector.uninstall()
        await super().close()

    def guild_locale_language(self, guild_id: int) -> str | None:
        """The language of a guild's preferred locale (None: the guild is not known here)."""
        guild = self.get_guild(guild_id)
        return None if guild is None else reader_language(guild.preferred_locale)

    async def language_for(self, interaction: discord.Interaction) -> str:
        """The language of an interaction's private answer: the member's own, from his
        client's locale (public posts speak the guild's: ``service.language``)."""
        return reader_language(interaction.locale)

    async def check_command(self, interaction: discord.Interaction) -> bool:
        """The command tree's interaction check: the options within their declaration, and the
        member within his share of the guild's open game.

        Raises:
            OptionRefused: an option breaks its declaration.
            TooFast: the member sent the game too many commands in a row.
        """
        await options_within_limits(interaction)
        if interaction.type is discord.InteractionType.application_command:
            await self.within_share(interaction)
        return True

    async def within_share(self, interaction: discord.Interaction) -> None:
        """Count a slash command or a component press against the member's share of the
        guild's open game (none open: nothing to share).

        Raises:
            TooFast: his bucket is empty.
        """
        if interaction.guild_id is None:
            return
        live = await self.service.open_game(interaction.guild_id)
        if live is not None:
            self.limit.admit(live.id, interaction.user.id)
            self._charged[interaction.id] = (live.id, interaction.user.id)
            if len(self._charged) > CHARGED_KEPT:  # a command that never finished: forget it
                self._charged.pop(next(iter(self._charged)))

    def share_settled(self, interaction: discord.Interaction) -> None:
        """The interaction is done with: if it changed nothing, its member has his place in the
        bucket back (:meth:`bot.fairness.CommandLimit.refund`)."""
        charged = self._charged.pop(interaction.id, None)
        if charged is not None and not self.service.applied(interaction.id):
            self.limit.refund(*charged)

    async def on_app_command_completion(
        self, interaction: discord.Interaction, command: Any
    ) -> None:
        """A slash command ran to its end (its errors go to :meth:`handle_error`)."""
        self.share_settled(interaction)

    async def on_app_command_error(
        self, interaction: discord.Interaction, error: app_commands.AppCommandError
    ) -> None:
        """The command tree's error handler: see :meth:`handle_error`."""
        original: BaseException = error
        if isinstance(error, app_commands.CommandInvokeError):
            original = error.original
        await self.handle_error(interaction, original)

    async def handle_error(self, interaction: discord.Interaction, original: BaseException) -> None:
        """Turn refusals into the user's localised ephemeral message; log everything else."""
        self.share_settled(interaction)
        if isinstance(original, Expired):
            log.info(
                "%s by %s: Discord no longer takes the interaction; not applied, not answered",
                _command_name(interaction),
                interaction.user.id,
            )
            return
        if isinstance(original, discord.NotFound) and original.code in GONE:
            # a command answered too late (a read-only one: what changes a game answers through
            # cogs.common.answer_lines, which keeps what it could not deliver)
            log.info(
                "%s by %s could not be answered: %s",
                _command_name(interaction),
                interaction.user.id,
                original,
            )
            return
        language = await self.language_for(interaction)
        text = await self._refusal_text(interaction, original, language)
        await reply(interaction, text)

    async def _refusal_text(
        self, interaction: discord.Interaction, original: BaseException, language: str
    ) -> str:
        """The user's message for an error (logged as what it is)."""
        if isinstance(original, TooFast):
            return t(language, original.key, **original.params)
        if isinstance(original, OptionRefused):
            key = original.params.get("option_key")
            option = t(language, key) if key else original.params.get("option")
            return t(language, original.key, **{**original.params, "option": option})
        if isinstance(original, RuleError):
            explain = self.wired.explain_refusal
            better = await explain(interaction, original) if explain else None
            text = better or t(language, f"error.{original.code}", **original.params)
            log.info(
                "refused %s by %s: %s", _command_name(interaction), interaction.user.id, original
            )
            return text
        if isinstance(original, UserError):
            text = t(language, original.key, **original.params_in(language))
            log.info(
                "refused %s by %s: %s",
                _command_name(interaction),
                interaction.user.id,
                original.key,
            )
            return text
        if isinstance(original, NoGame):
            return t(language, "error.no_game")
        if isinstance(original, GameExists):
            return t(language, "error.game_exists")
        if isinstance(original, app_commands.CheckFailure):
            return t(language, "error.not_allowed")
        if is_storage_failure(original):  # a read before any change: nothing was applied
            log.warning(
                "%s by %s: the database failed (%r); refused as not stored",
                _command_name(interaction),
                interaction.user.id,
                original,
            )
            return t(language, "error.not_stored")
        log.error(
            "unexpected error in %s (guild %s, channel %s, user %s, options %s)",
            _command_name(interaction),
            interaction.guild_id,
            interaction.channel_id,
            interaction.user.id,
            _options(interaction),
            exc_info=original,
        )
        return t(language, "error.unexpected")


def _command_name(interaction: discord.Interaction) -> str:
    command = interaction.command
    return command.qualified_name if command is not None else str(interaction.data)


def _options(interaction: discord.Interaction) -> Any:
    data: Any = interaction.data or {}
    return data.get("options")


async def reply(interaction: discord.Interaction, text: str, *, ephemeral: bool = True) -> None:
    """Answer an interaction: a deferred one by editing its "thinking…" message, one answered
    already by a follow-up; then the member's answers Discord did not deliver before."""
    try:
        deferred = (
            interaction.response.type is discord.InteractionResponseType.deferred_channel_message
        )
        if deferred:
            await interaction.edit_original_response(content=text)
        elif interaction.response.is_done():
            await interaction.followup.send(text, ephemeral=ephemeral)
        else:
            await interaction.response.send_message(text, ephemeral=ephemeral)
    except (discord.HTTPException, discord.RateLimited) as error:
        gone = (
            isinstance(error, discord.NotFound) and error.code in GONE
        )  # answered too late: expected
        log.log(
            logging.INFO if gone else logging.WARNING,
            "could not answer interaction %s: %s",
            interaction.id,
            error,
        )
        return
    bot = interaction.client
    if isinstance(bot, ProkuratorBot):
        await bot.notices.hand_out(interaction)
