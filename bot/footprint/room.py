"""Room on the server for what a game makes after its start, kept fail-closed at Discord's caps.

Discord caps a guild at 250 roles (@everyone included; a create past it is refused with
30005) and 500 channels (categories included; 30013). The start counts its room before it
makes anything (``cogs/room.py``); after the start three things make a role or a channel:
a quiet twin (``/mafia notify off``), the spectators' role (``/mafia spectate``), and the
reconciler making again what a person deleted. Each follows one rule: **make before break**.

* What is made comes first; what it replaces is taken away only once it is made. A player
  who turns pings off keeps his city role until the quiet twin is made; when Discord refuses
  to make it (the cap reached meanwhile), the swap is given up (its pending items marked
  failed, never sent), the record goes back to what he holds, and he and the host are told.
  The commands count the room first (:func:`room_of`) and say so at once, making nothing;
  nor do they move anyone onto a game role that was deleted and waits for room
  (:func:`no_swap_room`, :func:`no_spectators_room`).
* What cannot be made for lack of room is not tried blindly: it is noted (``no_room`` in the
  reconciler's notes, and given up for its passes), the host is told once, and it is made
  again when room is freed: on the gateway's GUILD_ROLE_DELETE and CHANNEL_DELETE
  (:class:`RoomWatch`), if everything waiting fits; the host is told when it is made.
* So is a quiet twin a player asked for: ``/mafia notify off`` with no room for it, or its
  making refused, notes him (``quiet_wanted``, :func:`wish`); when room is freed and the
  twins wanted fit beside what else waits, they are made and he is moved onto his (make
  before break, as ever), and he and the host are told. ``/mafia notify on`` meanwhile
  drops his wish. ``/mafia spectate`` has no such shape: at the cap it is refused and
  nothing is promised, so nothing waits.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import discord

from bot.footprint.changes import quiet_items
from bot.footprint.declared import SPECTATORS_KEY
from bot.footprint.record import notes
from bot.i18n import NO_PINGS, phrase
from bot.outbox import intents
from bot.service import LiveGame
from bot.storage import GameState, OutboxItem
from bot.storage.shapes import Channels
from bot.wiring import Hooks

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot
    from bot.footprint.reconciler import Reconciler

log = logging.getLogger(__name__)

ROLE_CAP = 250
"""Roles a guild may have, @everyone included (Discord refuses more: 30005)."""
CHANNEL_CAP = 500
"""Channels a guild may have, categories included, threads not (Discord refuses more: 30013)."""
#: Discord's code of each cap → what it caps
CAP_CODES = {"30005": "role", "30013": "channel"}
#: the key under which a quiet twin is made mid-game (its city's index follows)
QUIET_PREFIX = "notify:quiet:"
#: the reconciler's note of the players whose pings wait for room to be turned off
WANTED = "quiet_wanted"


@dataclass(frozen=True)
class Room:
    """What a guild has room for: roles and channels that may still be made."""

    roles: int
    channels: int

    def lacking(self, roles: int, channels: int) -> str | None:
        """The cap that ``roles`` new roles and ``channels`` new channels would pass (``role``
        or ``channel``), None when they fit."""
        if roles > self.roles:
            return "role"
        if channels > self.channels:
            return "channel"
        return None


def room_of(guild: discord.Guild | None) -> Room | None:
    """The room a guild has, as the gateway's cache shows it (None: the bot does not see it)."""
    if guild is None:
        return None
    return Room(ROLE_CAP - len(guild.roles), CHANNEL_CAP - len(guild.channels))


def cap_text(live: LiveGame, kind: str) -> str:
    """Why Discord makes no more of ``kind`` (``role`` or ``channel``), in the game's language."""
    if kind == "role":
        return phrase(live, "failure.max_roles", limit=ROLE_CAP)
    return phrase(live, "failure.max_channels", limit=CHANNEL_CAP)


def log_items(channels: Channels, content: str) -> list[OutboxItem]:
    """A text posted in the host's log (nothing while the log is not made)."""
    log_channel = channels.get("log")
    if log_channel is None or not str(log_channel).isdigit():
        return []
    message = {"content": content[:2000], "allowed_mentions": NO_PINGS}
    return [intents.Send(message, channel=int(log_channel)).item()]


def waiting(channels: Channels) -> list[dict[str, Any]]:
    """The roles and channels a game waits for room to make again: path, kind, name."""
    found: list[dict[str, Any]] = notes(channels).get("no_room", [])
    return found


def defer(live: LiveGame, entries: Iterable[dict[str, Any]], lacking: str) -> list[OutboxItem]:
    """Roles and channels (``entries``: path, kind, name) not made for want of room (``lacking``
    names the cap): given up until room is freed, and the host told, once for each."""
    channels = live.record.channels
    state = notes(channels)
    given_up = state.setdefault("given_up", [])
    noted = state.setdefault("no_room", [])
    items: list[OutboxItem] = []
    for entry in entries:
        path = list(entry["path"])
        if path not in given_up:
            given_up.append(path)
        if any(old["path"] == path for old in noted):
            continue  # told already: it is being tried again after room was freed
        noted.append({"path": path, "kind": entry["kind"], "name": entry.get("name", "—")})
        log.warning("game %s: no room to make %s again (%s cap)", live.id, path, lacking)
        text = phrase(
            live,
            f"footprint.no_room.{entry['kind']}",
            name=entry.get("name", "—"),
            reason=cap_text(live, lacking),
        )
        items += log_items(channels, text)
    return items


def retry(channels: Channels, room: Room) -> bool:
    """Room was freed: what waits for it is no longer given up (the next pass makes it again),
    if all of it fits; whether anything will be tried again."""
    entries = waiting(channels)
    roles = sum(1 for entry in entries if entry["kind"] == "role")
    if not entries or room.lacking(roles, len(entries) - roles) is not None:
        return False
    state = notes(channels)
    paths = [entry["path"] for entry in entries]
    state["given_up"] = [path for path in state.get("given_up", []) if path not in paths]
    return True


def wish(channels: Channels, player: str, *, quiet: bool) -> None:
    """Note that ``player``'s pings wait for room to be turned off in this game (``quiet``), or
    that they no longer do."""
    state = notes(channels)
    wanted = set(state.get(WANTED, [])) - {player}
    state[WANTED] = sorted(wanted | {player} if quiet else wanted)


def wanted_quiet(channels: Channels) -> list[str]:
    """The players whose pings wait for room to be turned off (:func:`wish`)."""
    found: list[str] = notes(channels).get(WANTED, [])
    return found


def quiet_again(live: LiveGame, room: Room, still: set[int]) -> tuple[list[OutboxItem], list[int]]:
    """Room was freed: each player noted by :func:`wish` who still wants his pings off
    (``still``) and lives is moved onto his city's quiet twin, made first where it is not yet
    (in the provisioning lane, the swap after it), if every twin wanted fits beside what else
    waits for room. The note is then cleared. Returns the items and who was moved."""
    channels, game = live.record.channels, live.game
    if game is None or "roles" not in channels:
        return [], []
    quiet = set(channels.get("quiet", []))
    players = [
        player
        for player in wanted_quiet(channels)
        if int(player) in still and game.is_alive(player) and player not in quiet
    ]
    cities = {game.city_of(player) for player in players}
    twins = sum(1 for city in cities if channels["roles"]["cities"][city].get("quiet") is None)
    roles = sum(1 for entry in waiting(channels) if entry["kind"] == "role")
    if room.lacking(roles + twins, 0) is not None:
        return [], []
    notes(channels)[WANTED] = []
    items: list[OutboxItem] = []
    for player in players:
        items += quiet_items(live, game, player, wants_pings=False, lane="provision")
    return items, [int(player) for player in players]


def made_again(live: LiveGame, path: list[str]) -> list[OutboxItem]:
    """A role or channel that waited for room is made: the host is told (nothing if it never
    waited)."""
    state = notes(live.record.channels)
    entries = state.get("no_room", [])
    entry = next((entry for entry in entries if entry["path"] == list(path)), None)
    if entry is None:
        return []
    entries.remove(entry)
    text = phrase(live, f"footprint.room_again.{entry['kind']}", name=entry["name"])
    return log_items(live.record.channels, text)


def _waits(channels: Channels, path: list[str]) -> bool:
    """Whether the role or channel at ``path`` was deleted and waits for room to be made."""
    return any(entry["path"] == path for entry in waiting(channels))


def no_swap_room(
    live: LiveGame, player: str, guild: discord.Guild | None, *, wants_pings: bool
) -> bool:
    """Whether ``/mafia notify`` would move a living player onto a role that is not there: the
    quiet twin his city has not yet (and the guild has no room for one more role), or the twin
    or his city role deleted and waiting for room. His role then stays as it is."""
    channels = live.record.channels
    game = live.game
    if game is None or "roles" not in channels or not game.is_alive(player):
        return False
    if (player not in channels.get("quiet", [])) == wants_pings:
        return False  # nothing to move
    city = game.city_of(player)
    target = ["roles", "cities", city, "living" if wants_pings else "quiet"]
    if not wants_pings and channels["roles"]["cities"][city].get("quiet") is None:
        room = room_of(guild)
        return room is not None and room.roles < 1
    return _waits(channels, target)


def no_spectators_room(channels: Channels, guild: discord.Guild | None) -> bool:
    """Whether the first spectator would need the spectators' role made and the guild has no room
    for one more role, or the role was deleted and waits for room."""
    if channels.get("spectators") is not None:
        return _waits(channels, ["spectators"])
    room = room_of(guild)
    return room is not None and room.roles < 1


def _names(item: OutboxItem, key: str) -> bool:
    """Whether an item acts on the role made under ``key`` (given, taken, or its overwrite)."""
    if item.kind == "member_role":
        return item.target.get("role") == key
    return item.kind == "overwrite" and item.target.get("id") == key


def revert_twin(live: LiveGame, key: str) -> tuple[set[int], Any]:
    """The quiet twin made under ``key`` was refused: the record no longer names it, and the
    residents moved onto it are back on their city role. Returns them and the city role."""
    channels = live.record.channels
    city = next(
        (name for name, ids in channels["roles"]["cities"].items() if ids.get("quiet") == key),
        None,
    )
    if city is None or live.game is None:
        return set(), None
    del channels["roles"]["cities"][city]["quiet"]
    residents = set(live.game.residents[city])
    moved = {player for player in channels.get("quiet", []) if player in residents}
    channels["quiet"] = sorted(set(channels.get("quiet", [])) - moved)
    return {int(player) for player in moved}, channels["roles"]["cities"][city]["living"]


def revert_spectators(live: LiveGame) -> set[int]:
    """The spectators' role was refused: the record no longer names it, nobody watches. Returns
    who asked to."""
    channels = live.record.channels
    channels.pop("spectators", None)
    watchers = {int(user) for user in channels.get("watching", [])}
    channels["watching"] = []
    return watchers


class RoomWatch:
    """Makes the footprint's changes fail closed at the caps (see the module docstring): gives
    up what a refused making would have replaced, and asks the reconciler to make again what
    waited for room once the gateway says room was freed."""

    def __init__(self, bot: ProkuratorBot, reconciler: Reconciler) -> None:
        self.bot = bot
        self.reconciler = reconciler

    def hooks(self) -> Hooks:
        """The gateway's role and channel deletions, and the outbox's refusals."""
        return Hooks(
            gateway=[
                ("on_guild_role_delete", self._role_deleted),
                ("on_guild_channel_delete", self._channel_deleted),
                ("on_guild_available", self.freed),  # after a restart: freed while away?
            ],
            failure_hooks=[self._failed],
        )

    def close(self) -> None:
        """Stop listening to the gateway and the outbox."""
        for name, listener in self.hooks().gateway:
            self.bot.remove_listener(listener, name)
        if self._failed in self.bot.outbox.failure_hooks:
            self.bot.outbox.failure_hooks.remove(self._failed)

    async def _role_deleted(self, role: discord.Role) -> None:
        await self.freed(role.guild)

    async def _channel_deleted(self, channel: discord.abc.GuildChannel) -> None:
        await self.freed(channel.guild)

    async def freed(self, guild: discord.Guild) -> None:
        """Room may have been freed in ``guild``: each running game's roles and channels that
        wait for room are tried again if all of them fit."""
        room = room_of(guild)
        if room is None:
            return
        for live in self.bot.service.games_of(guild.id):
            if live.record.state != GameState.RUNNING:
                continue
            if wanted_quiet(live.record.channels):
                try:
                    await self._quiet_again(live.id, room)
                except Exception:
                    log.exception("game %s: could not make the quiet twins wanted", live.id)
            if not waiting(live.record.channels):
                continue
            try:
                tried = await self._retry(live.id, room)
            except Exception:
                log.exception("game %s: could not note that room was freed", live.id)
                continue
            if tried:
                log.info("game %s: room freed, making again what waited for it", live.id)
                self.reconciler.request(live.id)

    async def _quiet_again(self, game_id: int, room: Room) -> None:
        """Under the game's lock: the quiet twins players asked for while there was no room
        (:func:`quiet_again`); each player moved is told privately, the host in his log."""
        live = self.bot.service.find(game_id)
        if live is None:
            return
        wanted = [int(player) for player in wanted_quiet(live.record.channels)]
        still = await self.bot.service.quiet_players(wanted)

        def change(live: LiveGame) -> list[OutboxItem]:
            if live.record.state != GameState.RUNNING:
                return []
            items, moved = quiet_again(live, room, still)
            for user in moved:
                text = phrase(live, "room.quiet_made")
                message = {"content": text, "allowed_mentions": NO_PINGS}
                items.append(intents.Send(message, user=user).item())
            if moved:
                log.info("game %s: room freed, pings off for %s", live.id, moved)
                members = ", ".join(f"<@{user}>" for user in moved)
                text = phrase(live, "room.quiet_made_log", members=members)
                items += log_items(live.record.channels, text)
            return items

        await self.bot.service.update(game_id, change)

    async def _retry(self, game_id: int, room: Room) -> bool:
        """Under the game's lock: what waits for room is no longer given up, if it all fits."""
        tried: list[bool] = []

        def change(live: LiveGame) -> list[OutboxItem]:
            running = live.record.state == GameState.RUNNING
            tried.append(running and retry(live.record.channels, room))
            return []

        await self.bot.service.update(game_id, change)
        return any(tried)

    async def _failed(self, item: OutboxItem, error: BaseException) -> None:
        """A role made mid-game (a quiet twin, the spectators') was refused: what depends on it
        is given up, the record goes back to what members hold, and they and the host are told."""
        key = str(item.target.get("key", ""))
        made_mid_game = key.startswith(QUIET_PREFIX) or key == SPECTATORS_KEY
        if item.kind != "create_role" or not made_mid_game:
            return
        live = self.bot.service.find(item.game_id)
        if live is not None and not live.record.open:
            live = None
        if live is None and key != SPECTATORS_KEY:
            return  # a quiet twin is made only while the game runs
        code = str(getattr(error, "code", "") or "")
        told: dict[str, set[int]] = {}

        def change(live: LiveGame) -> list[OutboxItem]:
            if key == SPECTATORS_KEY:
                told["spectate"] = revert_spectators(live)
            else:
                told["notify"], _ = revert_twin(live, key)
                for user in told["notify"]:  # made once room is freed
                    wish(live.record.channels, str(user), quiet=True)
            return self._told(live, told, code)

        source = live or await self._closed(item.game_id)
        if source is None:
            return
        dependents = [
            pending
            for pending in await self.bot.storage.pending_outbox(item.game_id, 1000)
            if _names(pending, key) or _swap_of(pending, source, key)
        ]
        for pending in dependents:
            await self.bot.storage.outbox_failed(pending, f"{key!r} was not made")
        if live is not None:
            await self.bot.service.update(item.game_id, change)
            return
        async with self.bot.service.lock(item.game_id):
            # a finished game is no longer in the service: its record is changed here
            closed = await self._closed(item.game_id)
            if closed is None:
                return
            await self.bot.storage.save_game(closed.record, outbox=change(closed))
        self.bot.outbox.kick(item.game_id)

    async def _closed(self, game_id: int) -> LiveGame | None:
        """A finished game as its stored record has it (None: none stored)."""
        record = await self.bot.storage.game(game_id)
        if record is None:
            return None
        return LiveGame(record, language=await self.bot.service.language(record.guild_id))

    def _told(self, live: LiveGame, told: dict[str, set[int]], code: str) -> list[OutboxItem]:
        """Each member a refused making left as he was, told privately; the host in his log."""
        kind = CAP_CODES.get(code)
        reason = (
            cap_text(live, kind)
            if kind
            else phrase(live, "failure.other", status="—", code=code or "—")
        )
        items: list[OutboxItem] = []
        for what, users in told.items():
            for user in sorted(users):
                text = phrase(live, f"room.refused.{what}", reason=reason)
                message = {"content": text, "allowed_mentions": NO_PINGS}
                items.append(intents.Send(message, user=user).item())
            if users:
                members = ", ".join(f"<@{user}>" for user in sorted(users))
                text = phrase(live, f"room.refused_log.{what}", members=members, reason=reason)
                items += log_items(live.record.channels, text)
        return items


def _swap_of(item: OutboxItem, live: LiveGame, key: str) -> bool:
    """Whether ``item`` takes a city role from a resident who was to hold the quiet twin made
    under ``key`` (a swap's second half, in the provisioning lane after the twin's making)."""
    if item.kind != "member_role" or item.payload.get("add", True) or item.queue != "provision":
        return False
    if not key.startswith(QUIET_PREFIX) or live.game is None:
        return False
    channels = live.record.channels
    for city, ids in channels["roles"]["cities"].items():
        if ids.get("quiet") == key:
            residents = {int(player) for player in live.game.residents[city]}
            taken = item.target.get("role") == ids["living"]
            return taken and int(item.target["user_id"]) in residents
    return False
