"""The reconciler: one task per game, woken by the gateway's events, a refused intent and the
outbox's idle lanes, that compares the game's footprint with what Discord shows and stores what
repairs the difference (see :mod:`bot.footprint`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import discord

from bot.channels import Layout, resolved
from bot.footprint import effective
from bot.footprint.declared import Footprint, declared, of_roles
from bot.footprint.diff import Observed, Repairs, confirmed, observe, powers_of, repairs
from bot.footprint.record import kept_after_end, marker, note_pass, noted_standins, notes
from bot.footprint.repair import kept_items, notices, remade_items, repair_items, to_log
from bot.footprint.room import room_of
from bot.outbox import CREATES
from bot.powers import lacking_in
from bot.service import Broken, LiveGame, NoGame, NotStored, Unconfirmed
from bot.storage import GameRecord, GameState, OutboxItem
from bot.storage.records import is_storage_failure
from bot.timers import Backoff
from bot.wiring import Hooks
from rules import Game

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

log = logging.getLogger(__name__)

#: seconds a burst of gateway events is given to end before one pass over the game
SETTLE = 0.2
#: the lanes that change roles, channels and overwrites (a pass waits until they are idle)
CHANGING_LANES = ("provision", "permissions")
#: first passes (a game's first since the start) run one at a time
FIRST_PASSES_AT_ONCE = 1
#: the longest a first pass waits for a moment with no player's command being applied (seconds)
FIRST_PASS_PATIENCE = 0.25

_Hook = TypeVar("_Hook")


def database_failed(error: BaseException) -> bool:
    """Whether a pass failed on the database (down, full): it is tried again once it is back."""
    return is_storage_failure(error) or isinstance(error, (NotStored, Unconfirmed))


def powerless(guild: discord.Guild) -> bool:
    """Whether the bot lacks Manage Roles in ``guild`` (as the gateway shows it), which every
    repair of a footprint needs (a role given or taken, an overwrite, a role or channel made
    again). A pass then stores nothing: its items would wait at the outbox's gate
    (:mod:`bot.outbox.breaker`) and be carried out once the power is back, on what the pass saw
    before; a moderator's change meanwhile (a member overwrite granting what a role the bot
    gives back then lets through) would reach the member before the next pass saw it. The
    power given back is a gateway event that asks for a pass (the bot's role edited, a role
    given to the bot, the server handed to it): that pass decides on what Discord shows then."""
    return "manage_roles" in lacking_in(guild)


def _unhook(hooks: list[_Hook], hook: _Hook) -> None:
    """Stop calling ``hook`` (if it is still called)."""
    if hook in hooks:
        hooks.remove(hook)


class Reconciler:
    """Brings each running game's footprint on Discord back to what it should be (see the module
    docstring); one task per game, woken by events, never two passes of a game at once."""

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._dirty: set[int] = set()
        self._waiting: set[int] = set()
        """Games whose pass waits for their lanes to go idle."""
        self._queried: set[int] = set()
        self._refused: dict[tuple[int, str], str] = {}
        """Discord's code for each making again it refused: (game, key) → code."""
        self._kept: dict[int, set[int]] = {}
        """Guild → its finished games whose channels are kept (their lock is kept true too)."""
        self._finished: dict[int, Game | None] = {}
        """Each kept finished game as its log makes it (None: its log does not replay)."""
        self._started: dict[int, tuple[dict[str, list[str]], set[int]]] = {}
        """Who held powers when a game started (its first commit seen running), and the members
        the bot knew of then, until a pass notes it in the record."""
        self._closed = False
        self._first_turns = asyncio.Semaphore(FIRST_PASSES_AT_ONCE)
        """A game's first pass since the start takes a turn (see :meth:`_first_pass`)."""
        self.passes = 0
        """Passes made (for tests and benchmarks: a pass that found nothing counts too)."""
        self.listeners: dict[str, Callable[..., Coroutine[Any, Any, None]]] = {
            "on_guild_channel_delete": self._channel_event,
            "on_guild_channel_create": self._channel_event,
            "on_guild_channel_update": self._channel_update,
            "on_guild_role_delete": self._role_event,
            "on_guild_role_create": self._role_event,
            "on_guild_role_update": self._role_update,
            "on_member_join": self._member_event,
            "on_member_remove": self._member_event,
            "on_member_update": self._member_update,
            "on_guild_available": self._guild_available,
            "on_guild_update": self._guild_update,
        }

    def hooks(self) -> Hooks:
        """What it listens to, for the composition to install (:func:`bot.wiring.wire`): the
        gateway's events about its games' roles, channels and members, the outbox's idle lanes
        and refusals, and every commit."""
        return Hooks(
            gateway=list(self.listeners.items()),
            idle_hooks=[self._idle],
            failure_hooks=[self._failed],
            after_commit=[self._committed],
        )

    async def close(self) -> None:
        """Stop listening and stop every pass."""
        self._closed = True
        for name, listener in self.listeners.items():
            self.bot.remove_listener(listener, name)
        _unhook(self.bot.outbox.idle_hooks, self._idle)
        _unhook(self.bot.outbox.failure_hooks, self._failed)
        _unhook(self.bot.service.after_commit, self._committed)
        for task in self._tasks.values():
            task.cancel()
        for task in self._tasks.values():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # ------------------------------------------------------------------ what wakes it

    def request(self, game_id: int) -> None:
        """Look at a game again soon."""
        if self._closed:
            return
        self._dirty.add(game_id)
        task = self._tasks.get(game_id)
        if task is None or task.done():
            self._tasks[game_id] = asyncio.create_task(
                self._run(game_id), name=f"footprint-{game_id}"
            )

    def _guild(self, guild_id: int | None) -> None:
        if guild_id is None:
            return
        for live in self.bot.service.games_of(guild_id):
            if live.record.state == GameState.RUNNING:
                self.request(live.id)
        for game_id in sorted(self._kept.get(guild_id, ())):
            self.request(game_id)

    async def _channel_event(self, channel: discord.abc.GuildChannel) -> None:
        self._guild(channel.guild.id)

    async def _channel_update(
        self, before: discord.abc.GuildChannel, after: discord.abc.GuildChannel
    ) -> None:
        if before.overwrites != after.overwrites or before.category_id != after.category_id:
            self._guild(after.guild.id)

    async def _role_event(self, role: discord.Role) -> None:
        self._guild(role.guild.id)

    async def _role_update(self, before: discord.Role, after: discord.Role) -> None:
        if before.position != after.position or before.permissions != after.permissions:
            self._guild(after.guild.id)

    async def _member_event(self, member: discord.Member) -> None:
        self._guild(member.guild.id)

    async def _member_update(self, before: discord.Member, after: discord.Member) -> None:
        if before.roles != after.roles:
            self._guild(after.guild.id)

    async def _guild_update(self, before: discord.Guild, after: discord.Guild) -> None:
        if before.owner_id != after.owner_id:  # the bot made the owner: its powers changed
            self._guild(after.id)

    async def _guild_available(self, guild: discord.Guild) -> None:
        try:
            kept = await self.bot.storage.kept_finished(guild.id)
        except Exception:
            log.exception(
                "guild %s: could not read which finished games keep their channels", guild.id
            )
            kept = []
        if kept:
            self._kept.setdefault(guild.id, set()).update(kept)
        self._guild(guild.id)

    async def _failed(self, item: OutboxItem, error: BaseException) -> None:
        if item.kind in CREATES and str(item.target.get("key", "")).startswith("again"):
            # a role or channel made again that Discord refused: said to the host when the lane
            # is idle, and not tried again in this game (its cap reached, a permission taken)
            code = getattr(error, "code", None) or getattr(error, "status", None) or "—"
            self._refused[(item.game_id, str(item.target["key"]))] = str(code)
            return
        if item.kind in ("member_role", "overwrite", "send", "edit_channel"):
            live = self.bot.service.find(item.game_id)
            if live is not None and live.record.state == GameState.RUNNING:
                self.request(item.game_id)

    def _committed(self, live: LiveGame) -> None:
        if live.record.state != GameState.RUNNING:
            self._started.pop(live.id, None)
        if (
            live.record.state == GameState.RUNNING
            and "footprint" not in live.record.channels
            and live.game is not None
        ):
            # a game just started: who holds powers now is what a later grant is compared with,
            # taken here and not at the first pass (which waits for the lanes: a grant meanwhile
            # would be taken for one held at the start)
            guild = self.bot.get_guild(live.record.guild_id)
            if guild is not None and live.id not in self._started:
                self._started[live.id] = (
                    {str(user): kinds for user, kinds in powers_of(guild).items()},
                    {member.id for member in guild.members},
                )
            self.request(live.id)
        elif kept_after_end(live.record) and live.id not in self._kept.get(
            live.record.guild_id, set()
        ):
            self._kept.setdefault(live.record.guild_id, set()).add(live.id)
            self.request(live.id)  # a game just ended: once its lock is on, it is kept so

    async def _idle(self, game_id: int, lane: str) -> None:
        if lane == "provision":
            await self._remade(game_id)
        if game_id in self._waiting and lane in ("provision", "permissions"):
            self._waiting.discard(game_id)
            self.request(game_id)

    # ------------------------------------------------------------------ a pass

    async def _run(self, game_id: int) -> None:
        backoff = Backoff(f"game {game_id}: the footprint's pass")
        while game_id in self._dirty and not self._closed:
            await asyncio.sleep(SETTLE)  # the rest of a burst of events
            self._dirty.discard(game_id)
            if await self._busy(game_id):
                self._waiting.add(game_id)
                if await self._busy(game_id):
                    if game_id in self._waiting:
                        return  # the idle hook asks again
                    # it asked already, while the second look read what was before it: this
                    # task is the one that answers (a request sees it still running)
                    continue
                self._waiting.discard(game_id)
            try:
                if game_id in self._queried:
                    await self.reconcile(game_id)
                else:
                    await self._first_pass(game_id)
            except NoGame:
                return
            except Exception as error:
                if not database_failed(error):
                    log.exception("game %s: could not reconcile its roles and channels", game_id)
                    continue
                # what it would repair waits for the database, and is repaired once it is back
                self._dirty.add(game_id)
                await self.bot.storage.health.sleep(asyncio.Event(), backoff.failed(error))
            else:
                backoff.succeeded()

    async def _first_pass(self, game_id: int) -> None:
        """A game's first pass since the start: after a restart every running game's comes at
        once, beside the players' commands. Its members are looked up first (batched and paced
        by :mod:`bot.members`); then the pass takes its turn, one first pass at a time, each
        begun between two players' commands (waiting :data:`FIRST_PASS_PATIENCE` at most), so
        a thousand games' passes yield to the commands instead of running beside them. What the
        rules change on Discord never waits for it: the commands' own items carry it out."""
        await self._look_up_members(game_id)
        async with self._first_turns:
            await self.bot.service.applying.quiet(FIRST_PASS_PATIENCE)
            await self.reconcile(game_id)

    async def _look_up_members(self, game_id: int) -> None:
        """Ask for the members a running game's footprint names (after a restart the bot knows
        none yet); nothing for a game not looked at (the pass says why)."""
        live = self.bot.service.find(game_id)
        if live is None or live.record.state != GameState.RUNNING or live.game is None:
            return
        guild = self.bot.get_guild(live.record.guild_id)
        layout = await self._ids(live)
        if guild is None or layout is None or live.broken is not None:
            return
        self._queried.add(game_id)
        await self.bot.members.fetch(
            guild, [s.user for s in declared(live, live.game, layout).seats]
        )

    async def _look_when_idle(self, game_id: int) -> None:
        """Look at the game again once its changing lanes are idle: their idle hook asks, or, if
        they went idle before the game was put on the waiting list, a pass is asked for now."""
        self._waiting.add(game_id)
        if not await self._busy(game_id):
            self._waiting.discard(game_id)
            self.request(game_id)

    async def _busy(self, game_id: int) -> bool:
        return (await self.bot.storage.lanes_progress(game_id, CHANGING_LANES))[1] > 0

    async def _ids(self, live: LiveGame) -> Layout | None:
        """The game's layout with every id resolved (None: something is still being made)."""
        channels = live.record.channels
        if "roles" not in channels:
            return None
        layout = Layout.from_channels(channels)
        try:
            return resolved(layout, await self.bot.storage.provisioned(live.id))
        except KeyError:
            return None

    async def reconcile(self, game_id: int) -> Repairs | None:
        """One pass over a game: the difference found (and repaired), None if it was not looked at."""
        live = self.bot.service.find(game_id)
        if live is None or live.record.state != GameState.RUNNING:
            return await self._reconcile_kept(game_id)
        if live.game is None or live.broken is not None:
            return None
        if notes(live.record.channels).get("remaking"):
            return None
        guild = self.bot.get_guild(live.record.guild_id)
        layout = await self._ids(live)
        if guild is None or layout is None or powerless(guild):
            return None
        if game_id not in self._queried:  # after a restart the bot knows no member yet
            await self._look_up_members(game_id)
            # batched and paced (bot.members), the lookup may have taken minutes: the pass looks
            # at the game as it is now
            return await self.reconcile(game_id)
        progress = await self.bot.storage.lanes_progress(game_id, CHANGING_LANES)
        if progress[1]:  # the game's own changes are on their way: look once they are made
            await self._look_when_idle(game_id)
            return None
        if self.bot.service.lock(game_id).locked():
            # a command is being applied: the game in memory is ahead of what is stored, and of
            # the outbox items that carry it out; what the pass declared now would be done twice
            self.request(game_id)
            return None
        self.passes += 1
        # read together, with no await between: the game as it stands between two commands
        footprint, looked = declared(live, live.game, layout), marker(live)
        users = [seat.user for seat in footprint.seats]
        seen = observe(guild, [int(place.id) for place in footprint.places], users)
        given_up = {tuple(path) for path in notes(live.record.channels).get("given_up", [])}
        found = repairs(footprint, seen, given_up)
        if found:
            found = await confirmed(self.bot.http, guild, footprint, seen, found, given_up)
            if await self.bot.storage.lanes_progress(game_id, CHANGING_LANES) != progress:
                # the game changed Discord while the pass looked (a death committed meanwhile, its
                # roles being given): what it saw is stale, and repairing it would do them twice
                await self._look_when_idle(game_id)
                return None
        fixes = await self._beyond_rules(guild, footprint, found, notes(live.record.channels))
        await self._write(live, footprint, seen, found, looked, fixes)
        return found

    async def _beyond_rules(
        self, guild: discord.Guild, footprint: Footprint, found: Repairs, state: dict[str, Any]
    ) -> effective.Fixes:
        """What members may do in the game's channels beyond the rules once ``found`` is
        repaired, and what removes it (:mod:`bot.footprint.effective`); confirmed by REST."""
        if found.lost_roles or found.lost_places:
            return effective.Fixes()  # made again first
        channels = [int(place.id) for place in footprint.places]
        scene = effective.observe(guild, channels)
        if scene is None:
            return effective.Fixes()
        standins = noted_standins(state)
        ours = {(c, user) for user, chans in found.standins.items() for c in chans}
        fixes = effective.check(footprint, effective.after_repairs(scene, found, standins), ours)
        if fixes:
            scene = await effective.confirmed(self.bot.http, scene, fixes)
            after = effective.after_repairs(scene, found, standins)
            fixes = effective.check(footprint, after, ours)
        return fixes

    async def _reconcile_kept(self, game_id: int) -> Repairs | None:
        """One pass over a finished game whose channels are kept: the footprint of the game over
        (the end's lock, the spectators' role where it reads) is put back, every overwrite of a
        game role or @everyone and who holds which game role; nothing is made again (what a
        person deletes of a finished game stays deleted, as its transcript would delete it)."""
        record = await self.bot.storage.game(game_id)
        if record is None or not await self._still_kept(record):
            return None
        guild = self.bot.get_guild(record.guild_id)
        live = LiveGame(record, language=await self.bot.service.language(record.guild_id))
        layout = await self._ids(live)
        if guild is None or layout is None or powerless(guild):
            return None
        self.passes += 1
        game = await self._finished_game(record)
        footprint = declared(
            live, game, layout, over=True, reveal=bool(record.lobby.get("reveal", True))
        )
        users = [seat.user for seat in footprint.seats]
        seen = observe(guild, [int(place.id) for place in footprint.places], users)
        footprint = of_roles(footprint, seen.roles.keys() | {footprint.guild})
        everything = {role.path for role in footprint.roles} | {
            place.path for place in footprint.places
        }
        found = repairs(footprint, seen, everything)
        if found:
            found = await confirmed(self.bot.http, guild, footprint, seen, found, everything)
        if found and await self._store_kept(record, kept_items(footprint, found)):
            log.warning(
                "game %s (over): footprint repaired: %d role(s) given, %d taken, "
                "%d overwrite(s) put back",
                game_id,
                len(found.adds),
                len(found.removals),
                len(found.overwrites),
            )
        return found

    async def _finished_game(self, record: GameRecord) -> Game | None:
        """A kept finished game as its log makes it (None: its log does not replay); a finished
        game changes no more, so it is replayed once."""
        if record.id not in self._finished:
            try:
                self._finished[record.id] = (
                    await self.bot.service.finished_game(record)
                    if record.setup and record.seed is not None
                    else None
                )
            except Broken:
                self._finished[record.id] = None
        return self._finished[record.id]

    async def _store_kept(self, record: GameRecord, items: list[OutboxItem]) -> bool:
        """Store a finished game's repairs, unless its record changed since the pass read it
        (then it is looked at again); whether they were stored."""
        storage = self.bot.storage
        async with self.bot.service.lock(record.id):
            now = await storage.game(record.id)
            if now is None or now.channels != record.channels or not await self._still_kept(now):
                self.request(record.id)  # someone began or stopped watching meanwhile: look again
                return False
            await storage.add_outbox(record.id, items)
        self.bot.outbox.kick(record.id)
        return True

    async def _still_kept(self, record: GameRecord) -> bool:
        """Whether a finished game's channels are still kept (no transcript replaces them); a game
        no longer kept is forgotten."""
        transcript = await self.bot.storage.transcript(record.id)
        if kept_after_end(record) and (
            transcript is None or transcript["state"] not in ("posting", "done")
        ):
            return True
        self._kept.get(record.guild_id, set()).discard(record.id)
        self._finished.pop(record.id, None)
        return False

    # ------------------------------------------------------------------ what a pass stores

    async def _write(
        self,
        live: LiveGame,
        footprint: Footprint,
        seen: Observed,
        found: Repairs,
        looked: str,
        fixes: effective.Fixes | None = None,
    ) -> None:
        """Store what the pass decided (its intents, the host's notices, its notes); nothing if
        the game changed since it looked (``looked``: its :func:`marker`), then it looks again."""
        before = notes(live.record.channels)
        known_stuck = set(before.get("stuck", []))
        new_stuck = [role for role in found.stuck if role not in known_stuck]
        powers = {str(user): kinds for user, kinds in seen.powers.items()}
        gained = self._gained(live, before.get("powers"), powers)
        old_standins = noted_standins(before)
        fixes = fixes if fixes is not None else effective.Fixes()
        gained = effective.not_told_here(gained, fixes)
        told = sorted(fixes.unfixable)
        if (
            not found
            and not fixes
            and before.get("told", []) == told
            and not new_stuck
            and not gained
            and before.get("powers") == powers
            and old_standins == found.standins
            and set(found.stuck) == known_stuck
        ):
            return
        bot_role = self._bot_role_name(live)
        room = room_of(self.bot.get_guild(live.record.guild_id))

        def change(live: LiveGame) -> list[OutboxItem]:
            if live.record.state != GameState.RUNNING:
                return []
            if marker(live) != looked:
                self.request(live.id)
                return []
            state = notes(live.record.channels)
            narrowing = effective.items(footprint.guild, fixes)
            items = repair_items(live, footprint, found, old_standins, room, narrowing)
            note_pass(state, found.stuck, powers, found.standins)
            channels = live.record.channels
            lines = notices(live, footprint, new_stuck, gained, bot_role)
            lines += effective.reports(live, fixes, state, bot_role)
            for line in lines:
                items += to_log(channels, line[:2000])
            return items

        await self.bot.service.update(live.id, change)
        stored = self.bot.service.find(live.id)
        if stored is None or "powers" in notes(stored.record.channels):
            self._started.pop(live.id, None)  # noted in the record from now on
        if found or new_stuck or gained:
            _log_repaired(live.id, found, gained)
        effective.log_fixed(live.id, fixes)
        if found.lost_roles or found.lost_places:
            self.request(live.id)  # what waits for room is given up now: the rest is repaired

    def _gained(
        self, live: LiveGame, noted: dict[str, list[str]] | None, powers: dict[str, list[str]]
    ) -> dict[str, list[str]]:
        """Who gained :data:`~bot.footprint.diff.POWERS` since they were ``noted`` (or since the
        game started), the game's host and co-hosts left out: member → the powers gained."""
        if noted is None and live.id in self._started:
            # a member the bot did not know of at the start (met since, or queried by this pass)
            # is taken to hold then what he holds now
            held, known = self._started[live.id]
            noted = {
                **{user: kinds for user, kinds in powers.items() if int(user) not in known},
                **held,
            }
        if noted is None:
            return {}
        gained = {
            user: [kind for kind in kinds if kind not in noted.get(user, [])]
            for user, kinds in powers.items()
        }
        staff = self._staff(live)
        return {user: kinds for user, kinds in gained.items() if kinds and int(user) not in staff}

    def _staff(self, live: LiveGame) -> set[int]:
        return {live.record.host_id, *(int(c) for c in live.record.channels.get("cohosts", []))}

    def _bot_role_name(self, live: LiveGame) -> str:
        guild = self.bot.get_guild(live.record.guild_id)
        me = guild.me if guild is not None else None
        return me.top_role.name if me is not None else "—"

    async def _remade(self, game_id: int) -> None:
        """The provisioning lane is idle: what was made again takes the old ids' place in the
        record, a category's channels go back in it, and each new channel says why it is new
        (:func:`~bot.footprint.repair.remade_items`)."""
        live = self.bot.service.find(game_id)
        if live is None or live.record.state != GameState.RUNNING:
            return
        remaking = notes(live.record.channels).get("remaking")
        if not remaking:
            return
        made = await self.bot.storage.provisioned(game_id)
        await self.bot.service.update(game_id, lambda live: remade_items(live, made, self._refused))
        self.request(game_id)


def _log_repaired(game_id: int, found: Repairs, gained: dict[str, list[str]]) -> None:
    log.warning(
        "game %s: footprint repaired: %d role(s) and %d channel(s) made again, %d role(s) given, "
        "%d taken, %d overwrite(s) put back, roles above the bot %s, members standing in %s, "
        "powers gained %s",
        game_id,
        len(found.lost_roles),
        len(found.lost_places),
        len(found.adds),
        len(found.removals),
        len(found.overwrites),
        list(found.stuck),
        sorted(found.standins),
        gained,
    )
