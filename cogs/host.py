"""``/host``: the Procurator's tools: set up, start, move the game on, act, end.

Only the game's host, or a member with the host role, may use them.

A command whose meaning depends on the stage carries the stage its sender
saw, checked under the game's lock (:class:`bot.service.Seen`): ``/host next``
names it in its ``from`` option (offered by autocomplete) or, left out, is
taken as meant for the stage the game was in when Discord created the
interaction; ``/host execute`` likewise. So a second "next", or one sent while
the timer moved the game on, is refused ("already moved on") and changes
nothing; and one sent within ``fairness.stage_settle`` seconds after the
timer began the stage is refused too, naming that stage (the host could not
have seen it yet). Lobby settings and ``/host timer`` look at the game under the lock
too, and ``/host timer`` on the running stage is one commit (its length, the
new deadline and the announcement of it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import re
import time
import unicodedata
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands
from discord.ext import commands

from bot.errors import UserError
from bot.footprint import Reconciler, cohost_items, provision_plan, replacement_items, rollback_plan
from bot.i18n import key_str, t
from bot.options import duration_text, parse_duration
from bot.outbox import CREATES
from bot.service import GameBroken, JustBegan, LiveGame, MovedOn, NoGame, Seen, command_for_deadline
from bot.storage import DamagedLog, OutboxItem
from cogs.channels import (
    Layout,
    exposure,
    exposure_lines,
    layout_for,
    lobby_exposure,
    missing_permissions,
    permission_names,
    resolved,
)
from cogs.common import (
    InteractionAnswer,
    answer,
    answer_lines,
    cohosts,
    delivered,
    guild_game,
    host_choices,
    is_host,
    mention,
    phrase,
    plays_in,
    require_host,
    resolve_player,
    running_game,
    sent_at,
    shown_name,
    status_text,
)
from cogs.components import CancelButton, ConfirmButton
from cogs.failures import Failure, failure_of, reason_failure, start_refused_text
from cogs.limits import CITIES, CITY_NAME, chunks, clip, sections
from cogs.lobby import lobby_cities, lobby_edit, lobby_payload, log_items
from cogs.mentions import command
from cogs.render import (
    NO_PINGS,
    ballot_payload,
    ballot_ref,
    closing_channels,
    closing_items,
    deadline_text,
    moment_of,
    moment_text,
    phase_text,
    pings_on,
    summary_lines,
)
from cogs.room import check_room
from cogs.spectators import MODES as SPECTATOR_MODES
from cogs.spectators import is_spectator, watch_items
from cogs.spectators import mode_of as spectator_mode
from cogs.votes import vote_summary_lines
from rules import (
    AppointGodfather,
    AppointJudge,
    Command,
    Execute,
    Game,
    ProcuratorKill,
    Replace,
    RoleCounts,
    RuleError,
    RuleOptions,
    SetTouringOrder,
    Setup,
    Stage,
    Status,
    command_from_dict,
    deal,
)
from rules.events import PhaseStarted

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot
    from cogs.game import GameCog

log = logging.getLogger(__name__)

#: how long /host start waits for its roles and channels before answering "still starting"
#: (Discord accepts the answer to a deferred interaction for 15 minutes)
START_WAIT = 840.0
#: how long Discord accepts edits of an interaction's answer ("interaction tokens are valid for 15
#: minutes"), and the margin kept from its end: a start that ends later says so in the host's log
TOKEN_LIFETIME, TOKEN_MARGIN = 900.0, 30.0
#: characters of residents' mentions in one welcome message
RESIDENTS_LIMIT = 1500
#: what each kind of provisioning intent needs, to name when Discord refuses it
NEEDS = {"create_channel": ["manage_channels"], "create_role": ["manage_roles"],
         "member_role": ["manage_roles"], "delete_channel": ["manage_channels"], "delete_role": ["manage_roles"]}
#: the longest stage timer, seconds (a week)
MAX_TIMER = 604800
TIMED = ("discussion", "voting", "night", "execution")
#: how long a host's confirmation button may be pressed, seconds
CONFIRM_SECONDS = 120
#: the most co-hosts a game may have (each is an overwrite on every game channel)
MAX_COHOSTS = 5
#: a stage as the service names it: ``day 1 discussion``
STAGE_KEY = re.compile(r"(day|night) \d{1,6} (discussion|voting|execution|night)")
PLAYER = key_str("player", "opt.player.name")
PLAYER_DESCRIPTION = key_str("The player", "opt.player.description")


def duration_or_off(text: str) -> int:
    """A lobby setting's time (``10m``, ``24h``...), or 0 for ``off``."""
    off = text.strip().casefold() in ("off", "no", "0", "выкл", "нет")
    return 0 if off else parse_duration(text)


def _choice(value: str, key: str) -> app_commands.Choice[str]:
    return app_commands.Choice(name=key_str(value, key), value=value)


#: the one separator of city names (the README's "comma separated"): nothing else splits a name
CITY_SEPARATOR = ","


def _visible(char: str) -> bool:
    """A character that shows by itself (not a joiner, a mark or a variation selector alone)."""
    return unicodedata.category(char)[0] not in "CMZ"


def split_names(text: str) -> list[str]:
    """``"Верона, Падуя"`` → the names, split on commas only and stripped; inner runs of white
    space, line breaks and control characters become one space. Every other character is kept
    as written: zero-width joiners and non-joiners (``"👨\u200d👩\u200d👧"``, ``"خرم\u200cآباد"``),
    combining marks, variation selectors. A name with nothing visible in it is dropped."""
    names = []
    for part in text.split(CITY_SEPARATOR):
        kept = "".join(" " if char.isspace() or unicodedata.category(char) in ("Cc", "Zl", "Zp") else char
                       for char in part)
        name = " ".join(kept.split())
        if any(_visible(char) for char in name):
            names.append(name)
    return names


def _same_name(name: str) -> str:
    """What two names must differ in to be two cities: not case, nor how a letter is encoded
    (``"Å"`` written as one character or as ``A`` and a combining ring)."""
    return unicodedata.normalize("NFC", name).casefold()


def check_city_names(names: list[str]) -> None:
    """Refuse a list of cities the game cannot have: none, too many, twice the same, too long.

    Raises:
        UserError: ``error.bad_cities`` or ``error.city_name_too_long`` naming the city.
    """
    if not names or len(names) > CITIES or len({_same_name(n) for n in names}) != len(names):
        raise UserError("error.bad_cities", count=CITIES)
    for name in names:
        if len(name) > CITY_NAME:
            raise UserError("error.city_name_too_long", city=clip(name, CITY_NAME), limit=CITY_NAME)


def seat_players(players: list[int], cities: list[str], seed: int) -> dict[str, list[str]]:
    """Share the lobby's players among the cities at random (seeded), as evenly as possible."""
    shuffled = [str(p) for p in players]
    random.Random(f"{seed}:seats").shuffle(shuffled)
    seats: dict[str, list[str]] = {city: [] for city in cities}
    for index, player in enumerate(shuffled):
        seats[cities[index % len(cities)]].append(player)
    return seats


def deadline_changed_items(live: LiveGame, key: str = "host.timer_changed", **params: Any) -> list[OutboxItem]:
    """A line about the clock (by default: the current stage's new end) in every living city's
    channel, and the ballot's deadline refreshed while voting."""
    game = live.game
    if game is None or not live.record.channels:
        return []
    line = phrase(live, key, deadline=deadline_text(live), **params)
    items: list[OutboxItem] = []
    for city, ids in live.record.channels.get("cities", {}).items():
        if not game.alive(city):
            continue
        items.append(OutboxItem("send", {"channel_id": ids["text"]},
                                {"content": line, "allowed_mentions": NO_PINGS}))
        if game.stage is Stage.VOTING:
            items.append(OutboxItem("edit", {"ref": ballot_ref(city, game.phase.number)},
                                    ballot_payload(live, city)))
    return items


#: the lane of the newcomer's pings: after his roles and overwrites (that lane's items go in
#: order), so that he can see the channels when he is pinged in them (Discord pings only those
#: who can)
AFTER_ACCESS = "permissions"


def replaced_items(live: LiveGame, old: str, new: str, *, name: str, quiet: bool,
                   exposed: list[str] | None = None) -> list[OutboxItem]:
    """After ``/host replace``: the lobby knows the newcomer (and that the old player left), the
    roles and the mafia room's overwrite move to him, and he is told where to look, pinged alone:
    his status behind "My status" (privately), a mafioso's room greeting him. The host's log
    names the status; nobody else learns it."""
    game = live.game
    assert game is not None
    record = live.record
    players = record.lobby.setdefault("players", [])
    for entry in players:
        if str(entry["id"]) == old:
            entry["replaced_by"] = int(new)
    players.append({"id": int(new), "name": name, "replaces": int(old), **({"exposed": exposed} if exposed else {})})
    record.lobby.get("leaving", {}).pop(old, None)
    items = replacement_items(live, game, old, new, quiet=quiet)
    city = game.city_of(new)
    ids = record.channels.get("cities", {}).get(city, {})
    only_him = {"parse": [], "users": [new]}
    if ids.get("text") is not None:
        items.append(OutboxItem("send", {"channel_id": ids["text"]}, {
            "content": phrase(live, "replace.welcome", player=mention(new), old=mention(old),
                              me=command(live.language, "mafia me")),
            "allowed_mentions": only_him,
            "components": [{"type": 1, "components": [{
                "type": 2, "style": 1, "custom_id": f"mafia:role:{live.id}", "label": phrase(live, "welcome.role"),
            }]}],
        }, lane=AFTER_ACCESS))
    if game.status_of(new) is Status.MAFIOSO and ids.get("mafia") is not None:
        godfather = game.godfather_of(city)
        items.append(OutboxItem("send", {"channel_id": ids["mafia"]}, {
            "content": phrase(live, "replace.mafia", player=mention(new), old=mention(old),
                              godfather=mention(godfather) if godfather else phrase(live, "role.no_godfather")),
            "allowed_mentions": only_him,
        }, lane=AFTER_ACCESS))
    items += log_items(live, phrase(live, "log.replaced", old=mention(old), new=mention(new), city=city,
                                    status=status_text(live, game.status_of(new).value)))
    for line in exposure_lines(live, {new: exposed} if exposed else {}):  # he sees more than his seat
        items += log_items(live, line)
    return items


class LeaveStrikes:
    """The Procurator's strike of players who left the game or the server (``leave_strike``):
    each game's pending strikes are stored in its record (``lobby.leaving``: player → when), so
    a restart re-arms them; one task per game sleeps until the earliest and is woken by every
    commit. A strike is a :class:`rules.ProcuratorKill` (the rules announce the status, as for
    any death); one no longer possible (he died meanwhile) is dropped."""

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._wake: dict[int, asyncio.Event] = {}
        self._closed = False

    @staticmethod
    def pending(live: LiveGame | None) -> dict[str, float]:
        """The game's strikes to come: player → unix time."""
        if live is None or live.record.state != "running" or live.game is None or live.broken is not None:
            return {}
        return {player: float(at) for player, at in live.record.lobby.get("leaving", {}).items() if at is not None}

    def arm(self, live: LiveGame) -> None:
        """(Re)consider a game's strikes; called after every commit."""
        if self._closed or not self.pending(live):
            return
        self._wake.setdefault(live.id, asyncio.Event()).set()
        task = self._tasks.get(live.id)
        if task is None or task.done():
            self._tasks[live.id] = asyncio.create_task(self._run(live.id), name=f"strikes-{live.id}")

    async def restore(self, live: LiveGame) -> None:
        """A game loaded at start: arm what it had pending."""
        self.arm(live)

    async def close(self) -> None:
        """Stop every task (the strikes stay stored)."""
        self._closed = True
        for task in self._tasks.values():
            task.cancel()
        for task in self._tasks.values():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _run(self, game_id: int) -> None:
        wake = self._wake.setdefault(game_id, asyncio.Event())
        while not self._closed:
            wake.clear()
            live = self.bot.service.find(game_id)
            due = self.pending(live)
            if live is None or not due:
                return
            player, at = min(due.items(), key=lambda row: row[1])
            delay = at - self.bot.clock()
            if delay <= 0:
                try:
                    await self._strike(live, player)
                except Exception:
                    log.exception("game %s: could not strike out %s; trying again", game_id, player)
                    delay = 1.0
                else:
                    continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), timeout=delay)

    async def _strike(self, live: LiveGame, player: str) -> None:
        def after(live: LiveGame, events: list[Any]) -> list[OutboxItem]:
            live.record.lobby.get("leaving", {}).pop(player, None)
            return log_items(live, phrase(live, "log.struck", player=mention(player)))

        try:
            await self.bot.service.apply(live.id, ProcuratorKill(player), source="timer", after=after)
            log.info("game %s: %s struck out after leaving", live.id, player)
        except (RuleError, NoGame, GameBroken, MovedOn) as error:
            log.info("game %s: no strike of %s (%s)", live.id, player, error)

            def forget(live: LiveGame) -> list[OutboxItem]:
                live.record.lobby.get("leaving", {}).pop(player, None)
                return []

            with contextlib.suppress(NoGame, GameBroken):
                await self.bot.service.update(live.id, forget)


class HostCog(commands.Cog):
    """The Procurator's commands."""

    host = app_commands.Group(
        name=key_str("host", "cmd.host.name"),
        description=key_str("The Procurator's tools", "cmd.host.description"),
        guild_only=True,
    )

    cohost = app_commands.Group(
        name=key_str("cohost", "cmd.host.cohost.name"),
        description=key_str("Co-hosts: they see what you see and cannot play", "cmd.host.cohost.description"),
        parent=host,
    )

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot
        self._waiters: dict[int, asyncio.Future[str]] = {}
        """The /host start waiting for each game's provisioning, to answer it."""
        self.start_wait = START_WAIT
        self.token_lifetime = TOKEN_LIFETIME
        bot.outbox.idle_hooks.append(self._provision_idle)
        bot.outbox.failure_hooks.append(self._provision_failed)
        game_cog: GameCog = bot.get_cog("GameCog")  # type: ignore[assignment]
        game_cog.register("confirm", self._confirmed)
        game_cog.register("cancel", self._cancelled)
        self.strikes = LeaveStrikes(bot)
        bot.service.after_commit.append(self.strikes.arm)
        bot.service.restorers.append(self.strikes.restore)
        self.footprint = Reconciler(bot)
        """Keeps each running game's roles and channels what they should be."""
        self.footprint.install()

    async def cog_unload(self) -> None:
        """Stop listening to the outbox."""
        if self._provision_idle in self.bot.outbox.idle_hooks:
            self.bot.outbox.idle_hooks.remove(self._provision_idle)
        if self._provision_failed in self.bot.outbox.failure_hooks:
            self.bot.outbox.failure_hooks.remove(self._provision_failed)
        if self.strikes.arm in self.bot.service.after_commit:
            self.bot.service.after_commit.remove(self.strikes.arm)
        if self.strikes.restore in self.bot.service.restorers:
            self.bot.service.restorers.remove(self.strikes.restore)
        await self.strikes.close()
        await self.footprint.close()

    async def _host_game(self, interaction: discord.Interaction, *, running: bool = True) -> LiveGame:
        live = await (running_game if running else guild_game)(self.bot, interaction)
        await require_host(self.bot, interaction, live)
        return live

    async def _settings_game(self, interaction: discord.Interaction) -> LiveGame:
        """The host's game for a setting (a lobby or a running game), not a broken one."""
        live = await self._host_game(interaction, running=False)
        if live.broken is not None:
            raise GameBroken()
        return live

    async def _apply(self, interaction: discord.Interaction, live: LiveGame, command: Command, *,
                     seen: Seen | None = None, tell_stage: bool = False) -> None:
        """Apply the host's command and answer him; ``tell_stage``: the answer names the stage
        the game is in now (``/host next``: which stage began)."""
        try:
            applied = await self.bot.service.apply(
                live.id, command, source="host", interaction_id=interaction.id, seen=seen,
                answer=InteractionAnswer(interaction),
            )
        except JustBegan as began:
            phase, _, stage = began.stage.rpartition(" ")
            raise UserError("error.just_began", moment=moment_of(live, phase, stage),
                            ms=max(0, int(began.late * 1000))) from None
        if applied.duplicate and not interaction.response.is_done():
            return  # delivered twice: done and answered the first time
        game = live.game
        if applied.deferred:
            text = phrase(live, "host.deferred")
        elif tell_stage and game is not None and game.over:
            text = phrase(live, "host.began_end")
        elif tell_stage and game is not None:
            text = phrase(live, "host.began", moment=moment_text(live), deadline=deadline_text(live))
        else:
            text = phrase(live, "host.done")
        await answer(interaction, text)

    async def _update(self, interaction: discord.Interaction, live: LiveGame,
                      change: Callable[[LiveGame], list[OutboxItem]]) -> bool:
        """Change the game's record under its lock; False if delivered twice (answered then)."""
        return await self.bot.service.update(live.id, change, interaction_id=interaction.id,
                                             answer=InteractionAnswer(interaction))

    async def _host_targets(self, interaction: discord.Interaction, verb: str, current: str) -> list[app_commands.Choice[str]]:
        if interaction.guild_id is None:
            return []
        live = await self.bot.service.open_game(interaction.guild_id)
        if live is None:
            return []
        role = await self.bot.storage.guild_host_role(live.record.guild_id)
        if not is_host(self.bot, live, interaction.user, role):
            return []  # the host's lists are his alone: /host godfather's names every mafioso
        return host_choices(live, verb, current)

    # ------------------------------------------------------------------ lobby

    @host.command(name=key_str("setup", "cmd.host.setup.name"),
                  description=key_str("Set the cities, roles and rules of the game", "cmd.host.setup.description"))
    @app_commands.rename(
        cities=key_str("cities", "opt.cities.name"), mafiosi=key_str("mafiosi", "opt.mafiosi.name"),
        doctor=key_str("doctor", "opt.doctor.name"), journalist=key_str("journalist", "opt.journalist.name"),
        maniac=key_str("maniac", "opt.maniac.name"), first_phase=key_str("first_phase", "opt.first_phase.name"),
        day_fallback=key_str("day_fallback", "opt.day_fallback.name"),
        doctor_self_protect=key_str("doctor_self_protect", "opt.doctor_self_protect.name"),
        maniac_idle=key_str("maniac_idle", "opt.maniac_idle.name"),
        maniac_wins_if_survives=key_str("maniac_wins_if_survives", "opt.maniac_wins_if_survives.name"),
        last_word_seconds=key_str("last_word_seconds", "opt.last_word_seconds.name"),
        pings=key_str("pings", "opt.pings.name"), reveal=key_str("reveal_at_end", "opt.reveal.name"),
        leave_strike=key_str("leave_strike", "opt.leave_strike.name"),
        spectators=key_str("spectators", "opt.spectators.name"),
        archive=key_str("archive_after", "opt.archive.name"),
    )
    @app_commands.describe(
        cities=key_str("City names, comma separated", "opt.cities.description"),
        mafiosi=key_str("Mafiosi per city (default: a quarter)", "opt.mafiosi.description"),
        doctor=key_str("A doctor in the game", "opt.doctor.description"),
        journalist=key_str("A journalist in the game", "opt.journalist.description"),
        maniac=key_str("A maniac in the game", "opt.maniac.description"),
        first_phase=key_str("The game opens with day or night", "opt.first_phase.description"),
        day_fallback=key_str("Nobody chosen: random or the host names him", "opt.day_fallback.description"),
        doctor_self_protect=key_str("The doctor may protect himself", "opt.doctor_self_protect.description"),
        maniac_idle=key_str("An idle maniac kills at random or nobody", "opt.maniac_idle.description"),
        maniac_wins_if_survives=key_str("A living maniac wins when every city is decided",
                                        "opt.maniac_wins_if_survives.description"),
        last_word_seconds=key_str("Longest last word, seconds", "opt.last_word_seconds.description"),
        pings=key_str("Ping the living of each city at each phase and reminder (default: yes)",
                      "opt.pings.description"),
        reveal=key_str("At the end, every player reads the mafia rooms and the host's log (default: yes)",
                       "opt.reveal.description"),
        leave_strike=key_str("Strike out a player who left, after: 10m, 1h... or off (default: off)",
                             "opt.leave_strike.description"),
        spectators=key_str("Members who do not play read the city channels: on, off, or after the game "
                           "(default: on)", "opt.spectators.description"),
        archive=key_str("After the end, the channels become one transcript in the archive channel: 24h... "
                        "or off", "opt.archive.description"),
    )
    @app_commands.choices(
        first_phase=[_choice("day", "choice.day"), _choice("night", "choice.night")],
        day_fallback=[_choice("random", "choice.random"), _choice("host", "choice.host")],
        maniac_idle=[_choice("random", "choice.random"), _choice("none", "choice.none")],
        spectators=[_choice("on", "choice.on"), _choice("off", "choice.off"), _choice("after", "choice.after")],
    )
    async def setup(
        self,
        interaction: discord.Interaction,
        cities: app_commands.Range[str, 1, CITIES * (CITY_NAME + 2)] | None = None,
        mafiosi: app_commands.Range[int, 1, 50] | None = None,
        doctor: bool | None = None,
        journalist: bool | None = None,
        maniac: bool | None = None,
        first_phase: str | None = None,
        day_fallback: str | None = None,
        doctor_self_protect: bool | None = None,
        maniac_idle: str | None = None,
        maniac_wins_if_survives: bool | None = None,
        last_word_seconds: app_commands.Range[int, 1, 180] | None = None,
        pings: bool | None = None,
        reveal: bool | None = None,
        leave_strike: app_commands.Range[str, 1, 40] | None = None,
        spectators: str | None = None,
        archive: app_commands.Range[str, 1, 40] | None = None,
    ) -> None:
        live = await self._settings_game(interaction)
        strike = None if leave_strike is None else duration_or_off(leave_strike)
        archive_after = None if archive is None else duration_or_off(archive)
        if live.record.state != "lobby":
            raise UserError("error.not_lobby")
        if cities is not None and not 1 <= len(cities) <= CITIES * (CITY_NAME + 2):
            raise UserError("error.bad_cities", count=CITIES)
        names = split_names(cities) if cities is not None else None
        if names is not None:
            check_city_names(names)
        rules = {
            key: value for key, value in {
                "first_phase": first_phase, "day_fallback": day_fallback,
                "doctor_self_protect": doctor_self_protect, "maniac_idle": maniac_idle,
                "maniac_wins_if_survives": maniac_wins_if_survives,
                "last_word_seconds": last_word_seconds,
            }.items() if value is not None
        }
        RuleOptions.from_dict(rules)
        if spectators is not None and spectators not in SPECTATOR_MODES:
            raise UserError("error.bad_option", option="spectators", value=repr(spectators)[:40])

        def change(live: LiveGame) -> list[OutboxItem]:
            if live.record.state != "lobby":  # started while this waited for the lock
                raise UserError("error.not_lobby")
            setup = live.record.lobby.setdefault("setup", {})
            if names is not None:
                setup["cities"] = names
                live.record.lobby.get("rules", {}).pop("touring_order", None)
            for key, value in (("mafiosi", mafiosi), ("doctor", doctor), ("journalist", journalist),
                               ("maniac", maniac)):
                if value is not None:
                    setup[key] = value
            live.record.lobby.setdefault("rules", {}).update(rules)
            for key, value in (("pings", pings), ("reveal", reveal), ("leave_strike", strike),
                               ("spectators", spectators), ("archive_after", archive_after)):
                if value is not None:
                    live.record.lobby[key] = value
            return lobby_edit(live)

        if not await self._update(interaction, live, change):
            return  # delivered twice: done and answered the first time
        await answer(interaction, lobby_payload(live)["content"])

    @host.command(name=key_str("touring", "cmd.host.touring.name"),
                  description=key_str("Set the touring rotation of the cities", "cmd.host.touring.description"))
    @app_commands.rename(order=key_str("order", "opt.order.name"))
    @app_commands.describe(order=key_str("City names in touring order, comma separated", "opt.order.description"))
    async def touring(self, interaction: discord.Interaction,
                      order: app_commands.Range[str, 1, CITIES * (CITY_NAME + 2)]) -> None:
        live = await self._settings_game(interaction)
        if not 1 <= len(order) <= CITIES * (CITY_NAME + 2):
            raise UserError("error.unknown_city", city=clip(order, 200) or "—")
        names = split_names(order)
        if live.record.state == "running":
            await self._apply(interaction, live, SetTouringOrder(tuple(names)))
            return

        def change(live: LiveGame) -> list[OutboxItem]:
            if live.record.state != "lobby":  # started while this waited for the lock
                raise UserError("error.not_lobby")
            known = lobby_cities(live)
            unknown = [name for name in names if name not in known]
            if not names or unknown:
                raise UserError("error.unknown_city", city=clip(", ".join(unknown), 200) or "—")
            live.record.lobby.setdefault("rules", {})["touring_order"] = names
            return []

        if not await self._update(interaction, live, change):
            return  # delivered twice: done and answered the first time
        await answer(interaction, phrase(live, "host.touring", order=", ".join(names)))

    @cohost.command(name=key_str("add", "cmd.host.cohost.add.name"),
                    description=key_str("Make a member your co-host: he sees the log and the mafia rooms",
                                        "cmd.host.cohost.add.description"))
    @app_commands.rename(member=key_str("member", "opt.member.name"))
    @app_commands.describe(member=key_str("The member", "opt.member.description"))
    async def cohost_add(self, interaction: discord.Interaction, member: discord.Member) -> None:
        await self._cohost(interaction, member, add=True)

    @cohost.command(name=key_str("remove", "cmd.host.cohost.remove.name"),
                    description=key_str("Take a co-host's access back", "cmd.host.cohost.remove.description"))
    @app_commands.rename(member=key_str("member", "opt.member.name"))
    @app_commands.describe(member=key_str("The member", "opt.member.description"))
    async def cohost_remove(self, interaction: discord.Interaction, member: discord.Member) -> None:
        await self._cohost(interaction, member, add=False)

    async def _cohost(self, interaction: discord.Interaction, member: discord.Member, *, add: bool) -> None:
        live = await self._settings_game(interaction)
        if interaction.user.id != live.record.host_id:
            raise UserError("error.only_host")
        who = mention(str(member.id))
        if add and (member.bot or member.id == live.record.host_id):
            raise UserError("error.cohost_bad", member=who)

        def change(live: LiveGame) -> list[OutboxItem]:
            record = live.record
            if record.state == "starting":  # the channels being made carry the co-hosts they had
                raise UserError("error.already_starting")
            current = cohosts(live)
            if add:
                if plays_in(live, member.id):
                    raise UserError("error.cohost_plays", member=who)
                if is_spectator(record, member.id):  # he would read the secrets holding the watchers' role
                    raise UserError("error.cohost_spectates", member=who)
                if member.id in current:
                    raise UserError("error.cohost_already", member=who)
                if len(current) >= MAX_COHOSTS:
                    raise UserError("error.cohosts_full", count=MAX_COHOSTS)
                record.lobby["cohosts"] = [*current, member.id]
            else:
                if member.id not in current:
                    raise UserError("error.not_cohost", member=who)
                record.lobby["cohosts"] = [c for c in current if c != member.id]
            items = cohost_items(live, member.id, add=add) if record.state == "running" else []
            items += log_items(live, phrase(live, "log.cohost_added" if add else "log.cohost_removed", member=who))
            return items + lobby_edit(live)

        if not await self._update(interaction, live, change):
            return
        log.info("game %s: co-host %s %s", live.id, member.id, "added" if add else "removed")
        await answer(interaction, phrase(live, "host.cohost_added" if add else "host.cohost_removed", member=who))

    @host.command(name=key_str("kick", "cmd.host.kick.name"),
                  description=key_str("Remove a player from the lobby", "cmd.host.kick.description"))
    @app_commands.rename(member=key_str("member", "opt.member.name"))
    @app_commands.describe(member=key_str("The member", "opt.member.description"))
    async def kick(self, interaction: discord.Interaction, member: discord.User) -> None:
        live = await self._settings_game(interaction)
        who = mention(str(member.id))
        if live.record.state != "lobby":
            raise UserError("error.kick_not_lobby", player=who)

        def change(live: LiveGame) -> list[OutboxItem]:
            record = live.record
            if record.state != "lobby":
                raise UserError("error.kick_not_lobby", player=who)
            players = record.lobby.get("players", [])
            if not any(p["id"] == member.id for p in players):
                raise UserError("error.not_in_lobby", player=who)
            record.lobby["players"] = [p for p in players if p["id"] != member.id]
            items = lobby_edit(live)
            channel = record.lobby.get("channel_id")
            if channel:  # he is told where he joined, pinged alone
                items.append(OutboxItem("send", {"channel_id": int(channel)}, {
                    "content": phrase(live, "lobby.kicked", player=who, join=command(live.language, "mafia join")),
                    "allowed_mentions": {"parse": [], "users": [str(member.id)]},
                }))
            return items

        if not await self._update(interaction, live, change):
            return
        log.info("game %s: %s kicked from the lobby", live.id, member.id)
        await answer(interaction, phrase(live, "host.kicked", player=who))

    @host.command(name=key_str("timer", "cmd.host.timer.name"),
                  description=key_str("Change how long a stage lasts from now on (0: no timer)",
                                      "cmd.host.timer.description"))
    @app_commands.rename(stage=key_str("stage", "opt.stage.name"), duration=key_str("duration", "opt.duration.name"))
    @app_commands.describe(stage=key_str("The stage", "opt.stage.description"),
                           duration=key_str("90s, 10m, 1h30m or seconds (0: no timer)", "opt.duration.description"))
    @app_commands.choices(stage=[_choice("discussion", "choice.discussion"),
                                 _choice("voting", "choice.voting"), _choice("night", "choice.night"),
                                 _choice("execution", "choice.execution")])
    async def timer(self, interaction: discord.Interaction, stage: str,
                    duration: app_commands.Range[str, 1, 40]) -> None:
        live = await self._settings_game(interaction)
        if stage not in TIMED:  # Discord's client checks; a crafted one is not
            raise UserError("error.bad_timer", limit=MAX_TIMER)
        seconds = parse_duration(duration, allow_zero=True)

        def change(live: LiveGame) -> list[OutboxItem]:
            live.record.lobby.setdefault("timers", {})[stage] = seconds
            game = live.game
            if game is None or game.over or game.stage.value != stage:
                return []  # only remembered for the stage's next turn
            # the running stage: its new end, stored and announced in this same commit
            record = live.record
            paused = record.lobby.get("paused")
            if isinstance(paused, dict):  # it starts counting on resume
                paused["remaining"] = seconds if seconds > 0 else None
                return []
            record.deadline = self.bot.clock() + seconds if seconds > 0 else None
            record.deadline_stage = live.stage_key() if seconds > 0 else None
            record.reminders_sent = []
            return deadline_changed_items(live)

        if not await self._update(interaction, live, change):
            return  # delivered twice: done and answered the first time
        key = "host.timer_set" if seconds else "host.timer_off"
        await answer(interaction, phrase(live, key, stage=phrase(live, f"stage.{stage}"),
                                         duration=duration_text(live.language, seconds)))

    @host.command(name=key_str("extend", "cmd.host.extend.name"),
                  description=key_str("Give the current stage more time (this stage only)",
                                      "cmd.host.extend.description"))
    @app_commands.rename(duration=key_str("duration", "opt.duration.name"))
    @app_commands.describe(duration=key_str("How much more: 90s, 10m, 1h30m or seconds",
                                            "opt.extend_duration.description"))
    async def extend(self, interaction: discord.Interaction, duration: app_commands.Range[str, 1, 40]) -> None:
        live = await self._host_game(interaction)
        seconds = parse_duration(duration)
        now = self.bot.clock()

        def change(live: LiveGame) -> list[OutboxItem]:
            record = live.record
            paused = record.lobby.get("paused")
            if isinstance(paused, dict):
                if paused.get("remaining") is None:
                    raise UserError("error.no_deadline")
                paused["remaining"] = min(MAX_TIMER, float(paused["remaining"]) + seconds)
            else:
                if record.deadline is None:
                    raise UserError("error.no_deadline")
                record.deadline = min(now + MAX_TIMER, record.deadline + seconds)
                # a reminder already sent counts again if its moment moved into the future
                record.reminders_sent = [o for o in record.reminders_sent if o >= record.deadline - now]
            return deadline_changed_items(live, "host.extended_notice",
                                          duration=duration_text(live.language, seconds))

        if not await self._update(interaction, live, change):
            return
        await answer(interaction, phrase(live, "host.extended", duration=duration_text(live.language, seconds),
                                         deadline=deadline_text(live)))

    @host.command(name=key_str("pause", "cmd.host.pause.name"),
                  description=key_str("Stop the clock: the stage waits until you resume", "cmd.host.pause.description"))
    async def pause(self, interaction: discord.Interaction) -> None:
        live = await self._host_game(interaction)
        now = self.bot.clock()

        def change(live: LiveGame) -> list[OutboxItem]:
            record = live.record
            if record.lobby.get("paused"):
                raise UserError("error.already_paused")
            remaining = max(0.0, record.deadline - now) if record.deadline is not None else None
            record.lobby["paused"] = {"stage": live.stage_key(), "remaining": remaining}
            record.deadline, record.deadline_stage = None, None
            return deadline_changed_items(live, "host.paused_notice",
                                          resume=command(live.language, "host resume"))

        if not await self._update(interaction, live, change):
            return
        await answer(interaction, phrase(live, "host.paused", resume=command(live.language, "host resume")))

    @host.command(name=key_str("resume", "cmd.host.resume.name"),
                  description=key_str("Start the clock again where it stopped", "cmd.host.resume.description"))
    async def resume(self, interaction: discord.Interaction) -> None:
        live = await self._host_game(interaction)
        now = self.bot.clock()
        reminders = self.bot.timers.reminders

        def change(live: LiveGame) -> list[OutboxItem]:
            record = live.record
            paused = record.lobby.pop("paused", None)
            if not isinstance(paused, dict):
                raise UserError("error.not_paused")
            remaining = paused.get("remaining")
            if remaining is not None and live.stage_key() is not None:
                record.deadline = now + float(remaining)
                record.deadline_stage = live.stage_key()
                # reminders whose moment passed while the clock stood are not sent late
                record.reminders_sent = [o for o in reminders if o >= float(remaining)]
            return deadline_changed_items(live, "host.resumed_notice")

        if not await self._update(interaction, live, change):
            return
        await answer(interaction, phrase(live, "host.resumed", deadline=deadline_text(live)))

    @host.command(name=key_str("start", "cmd.host.start.name"),
                  description=key_str("Deal the statuses, create the channels, start", "cmd.host.start.description"))
    async def start(self, interaction: discord.Interaction) -> None:
        try:  # making roles and channels takes longer than Discord waits for an answer
            await interaction.response.defer(ephemeral=True, thinking=True)
        except discord.HTTPException as error:
            log.info("/host start %s not deferred (%s): delivered twice, answered once", interaction.id, error)
            return
        try:
            text = await self._start(interaction)
        except (UserError, RuleError, NoGame) as error:
            text = await self._refusal(interaction, error)
        except Exception:
            log.exception("/host start failed in guild %s", interaction.guild_id)
            text = t(await self.bot.language_for(interaction), "error.unexpected")
        if text is None:
            return  # delivered twice: the first delivery answers
        try:
            await interaction.edit_original_response(content=text[:2000],
                                                     allowed_mentions=discord.AllowedMentions.none())
        except discord.HTTPException as error:
            log.warning("could not answer /host start %s: %s", interaction.id, error)

    async def _refusal(self, interaction: discord.Interaction, error: Exception) -> str:
        language = await self.bot.language_for(interaction)
        if isinstance(error, UserError):
            log.info("refused /host start by %s: %s", interaction.user.id, error.key)
            return t(language, error.key, **error.params)
        if isinstance(error, RuleError):
            return t(language, f"error.{error.code}", **error.params)
        return t(language, "error.no_game")

    async def _start(self, interaction: discord.Interaction) -> str | None:
        """Deal, store the deal and the provisioning plan (lobby → starting), wait for the plan to
        be carried out; the host's answer (None: the interaction was applied before)."""
        live = await self._host_game(interaction, running=False)
        if live.record.state == "starting":
            raise UserError("error.already_starting")
        if live.record.state != "lobby":
            raise UserError("error.not_lobby")
        guild = interaction.guild
        assert guild is not None
        lobby = live.record.lobby
        players = [p["id"] for p in lobby.get("players", [])]
        for player in players:
            other = self.bot.service.game_of_player(player)
            if other is not None and other.id != live.id:
                raise UserError("error.player_in_other_game", player=mention(str(player)))
        lacking = missing_permissions(guild.me.guild_permissions)
        if lacking:
            raise UserError("error.missing_permissions", permissions=permission_names(live.language, lacking))
        seed = random.SystemRandom().randrange(2**31)
        cities = lobby_cities(live)
        setup_options = lobby.get("setup", {})
        try:
            options = RuleOptions.from_dict({**self.bot.config.rules.to_dict(), **lobby.get("rules", {})})
            setup = deal(
                seat_players(players, cities, seed), seed,
                RoleCounts(setup_options.get("mafiosi"), setup_options.get("doctor"),
                           setup_options.get("journalist"), setup_options.get("maniac")),
                options,
            )
        except RuleError as error:
            raise UserError("error.cannot_deal", reason=phrase(live, f"error.{error.code}", **error.params)) from None
        game = Game.create(setup, seed)
        quiet = {str(user) for user in await self.bot.service.quiet_players(players)}
        check_room(guild, game, quiet, spectators=spectator_mode(live.record) != "off")
        exposed = self._exposure(guild, live)
        bot_id = self.bot.user.id if self.bot.user else 0
        # how to answer the interaction when the start ends after this waiter (or this process)
        answer = {"application_id": interaction.application_id, "token": interaction.token,
                  "at": interaction.created_at.timestamp()}

        def begin(live: LiveGame) -> list[OutboxItem]:
            record = live.record
            if record.state == "starting":
                raise UserError("error.already_starting")
            if record.state != "lobby":
                raise UserError("error.not_lobby")
            if [p["id"] for p in record.lobby.get("players", [])] != players:
                raise UserError("error.lobby_changed")  # someone joined or left while it was dealt
            attempt = int(record.lobby.get("attempts", 0)) + 1
            layout = layout_for(live, game, guild_id=guild.id, bot_id=bot_id, quiet=quiet, attempt=attempt)
            record.state, record.setup, record.seed = "starting", setup.to_dict(), seed
            record.lobby["attempts"] = attempt
            record.lobby["provision"] = {"attempt": attempt, "state": "creating",
                                         "layout": layout.to_channels(), "exposed": exposed,
                                         "answer": answer}
            return provision_plan(live, game, layout) + lobby_edit(live)

        if not await self.bot.service.update(live.id, begin, interaction_id=interaction.id):
            return None
        # registered before anything yields to the loop: the provisioning cannot have ended yet
        waiter: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiters[live.id] = waiter
        log.info("game %s: starting, %d players in %s", live.id, len(players), cities)
        try:
            return await asyncio.wait_for(asyncio.shield(waiter), self.start_wait)
        except TimeoutError:
            return phrase(live, "host.still_starting")
        finally:
            if self._waiters.get(live.id) is waiter:
                del self._waiters[live.id]

    def _exposure(self, guild: discord.Guild, live: LiveGame) -> dict[str, list[str]]:
        """The players whose server permissions show them hidden rooms or the audit log: as the
        bot sees them now, else as they were when they joined."""
        joined = lobby_exposure(live)
        found: dict[str, list[str]] = {}
        for entry in live.record.lobby.get("players", []):
            player = str(entry["id"])
            member = guild.get_member(int(player))
            kinds = exposure(member) if member is not None else joined.get(player, [])
            if kinds:
                found[player] = kinds
        return found

    def _tell(self, game_id: int, text: str) -> bool:
        """Answer a /host start still waiting for its game (False: nobody waits any more)."""
        waiter = self._waiters.get(game_id)
        if waiter is None or waiter.done():
            return False
        waiter.set_result(text)
        return True

    async def _provision_idle(self, game_id: int, lane: str) -> None:
        """The outbox's provisioning lane of a game has nothing left: finish its start or its
        rollback (this is also how a start interrupted by a restart is resumed)."""
        if lane != "provision":
            return
        try:
            live = self.bot.service.live(game_id)
        except NoGame:
            return
        provision = live.record.lobby.get("provision")
        if live.record.state != "starting" or not provision:
            return
        attempt = int(provision["attempt"])
        made = await self.bot.storage.provisioned(game_id)
        if provision["state"] == "rollback":
            await self._rolled_back(live, attempt, made)
            return
        try:
            layout = resolved(Layout.from_channels(provision["layout"]), made)
        except KeyError as missing_key:
            log.error("game %s: provisioning ended without %s; rolling back", game_id, missing_key)
            await self._rollback(live, {"failure": Failure("failure.not_made").to_dict()})
            return
        await self._started(live, layout, provision.get("exposed", {}))

    async def _started(self, live: LiveGame, layout: Layout, exposed: dict[str, list[str]]) -> None:
        record = live.record
        assert record.setup is not None and record.seed is not None
        waiting = live.id in self._waiters
        warnings = exposure_lines(live, exposed)
        answer = record.lobby.get("provision", {}).get("answer")
        late = not waiting and not self._token_alive(answer)

        def prepare(live: LiveGame) -> list[OutboxItem]:
            live.record.channels = layout.to_channels()
            live.record.lobby.pop("provision", None)
            items = self._welcome(live)
            # nobody waits (a long start, or one resumed after a restart): the host's log says
            # what the interaction's answer can no longer say
            lines = [phrase(live, "host.started"), *warnings] if late else warnings if not waiting else []
            if lines:
                items.append(OutboxItem("send", {"channel_id": layout.log},
                                        {"content": "\n".join(lines)[:2000], "allowed_mentions": NO_PINGS}))
            return items

        try:
            await self.bot.service.start(live.id, Setup.from_dict(record.setup), record.seed, prepare=prepare,
                                         from_state="starting")
        except NoGame:
            return  # finished, or rolled back, meanwhile
        log.info("game %s started: %d players in %s", live.id, len(live.game.players) if live.game else 0,
                 [city.name for city in layout.cities])
        text = "\n".join([phrase(live, "host.started"), *warnings])
        if self._tell(live.id, text) or late:
            return
        if not await self._answer_late(live.id, answer, text):  # the token ran out meanwhile
            with contextlib.suppress(NoGame, GameBroken):
                await self.bot.service.update(live.id, lambda live: log_items(live, phrase(live, "host.started")))

    def _token_alive(self, answer: dict[str, Any] | None) -> bool:
        """Whether Discord still takes an edit of the stored /host start answer."""
        return answer is not None and time.time() - float(answer["at"]) < self.token_lifetime - TOKEN_MARGIN

    async def _answer_late(self, game_id: int, answer: dict[str, Any] | None, text: str) -> bool:
        """Answer a /host start nobody waits for any more (its waiter gave up, or its process
        stopped) by editing the interaction's answer while its token lasts (False: it did not)."""
        if answer is None or not self._token_alive(answer):
            return False
        webhook = discord.Webhook.partial(int(answer["application_id"]), str(answer["token"]), client=self.bot)
        try:
            await webhook.edit_message("@original", content=text[:2000],  # type: ignore[call-overload]
                                       allowed_mentions=discord.AllowedMentions.none())
        except discord.HTTPException as error:
            log.warning("game %s: could not answer /host start late: %s", game_id, error)
            return False
        log.info("game %s: /host start answered after its waiter", game_id)
        return True

    async def _provision_failed(self, item: OutboxItem, error: BaseException) -> None:
        """Discord refused a provisioning intent for good: undo the attempt, telling the host what
        to grant (by the names Discord's client gives the permissions)."""
        if item.queue != "provision":
            return
        try:
            live = self.bot.service.live(item.game_id)
        except NoGame:
            return
        provision = live.record.lobby.get("provision")
        if live.record.state != "starting" or not provision:
            return
        if provision["state"] == "rollback":
            log.error("game %s: could not remove %s while rolling back: %s", live.id, item.target, error)
            return
        guild = self.bot.get_guild(live.record.guild_id)
        lacking = missing_permissions(guild.me.guild_permissions) if guild is not None else []
        failure = failure_of(error, kind=item.kind, lacking=lacking if isinstance(error, discord.Forbidden) else [],
                             needs=NEEDS.get(item.kind, []))
        reason: dict[str, Any] = {"failure": failure.to_dict()}
        await self._rollback(live, reason)

    async def _rollback(self, live: LiveGame, reason: dict[str, Any], target: str = "lobby") -> None:
        """Remove what the game's provisioning made, then the lobby is a lobby again (or, after
        /host end, cancelled). The removals are intents of the provisioning lane too."""
        async with self.bot.outbox.holding(live.id, "provision"):  # no create begins meanwhile
            await self._plan_rollback(live, reason, target)

    async def _plan_rollback(self, live: LiveGame, reason: dict[str, Any], target: str) -> None:
        made = await self.bot.storage.provisioned(live.id)
        pending = await self.bot.storage.outbox_items(live.id, "provision")
        # the plan's own sweep names what the attempt makes: swept again, all of it, at the end
        plans = [item for item in pending if item.kind == "sweep"]
        # a create given up here may be under way at Discord still (sent before now): a process
        # that carries the sweep out after a restart waits until it would have timed out
        creates_until = (time.time() + self.bot.outbox.call_timeout
                         if any(item.kind in CREATES for item in pending) else None)

        def change(live: LiveGame) -> list[OutboxItem]:
            provision = live.record.lobby["provision"]
            provision.update(state="rollback", reason=reason, target=target)
            sweep = OutboxItem("sweep", plans[-1].target, {
                **plans[-1].payload, "category": None, "rollback": True, "creates_until": creates_until,
            }, lane="provision") if plans else None
            return rollback_plan(live.record.guild_id, made, int(provision["attempt"]), sweep)

        # the lane is kicked when the hold ends: with nothing to remove, it ends the rollback
        await self.bot.service.update(live.id, change, cancel_lane="provision")

    async def _rolled_back(self, live: LiveGame, attempt: int, made: dict[str, int]) -> None:
        removed = {int(item.target.get("channel_id") or item.target.get("role") or 0)
                   for item in await self.bot.storage.outbox_items(live.id, "provision")
                   if item.kind in ("delete_channel", "delete_role")}
        left = {key: value for key, value in made.items() if key.startswith(f"{attempt}:") and value not in removed}
        if left:  # made while the rollback was being decided: remove it too
            await self.bot.service.update(
                live.id, lambda live: rollback_plan(live.record.guild_id, left, attempt))
            return
        provision = live.record.lobby["provision"]
        reason, target = provision.get("reason", {}), provision.get("target", "lobby")
        text = self._failure_text(live, reason) if target == "lobby" else phrase(live, "host.ended_reply")
        waiting = live.id in self._waiters
        answer = provision.get("answer")

        def change(live: LiveGame) -> list[OutboxItem]:
            record = live.record
            record.state, record.setup, record.seed, record.channels = target, None, None, {}
            record.lobby.pop("provision", None)
            items = lobby_edit(live)
            channel = record.lobby.get("channel_id")
            if target == "lobby" and not waiting and channel:  # resumed after a restart: say it
                items.append(OutboxItem("send", {"channel_id": int(channel)},
                                        {"content": text, "allowed_mentions": NO_PINGS}))
            return items

        await self.bot.service.update(live.id, change)
        self.bot.outbox.forget(live.id)
        log.warning("game %s: provisioning rolled back (%s)", live.id, reason)
        if not self._tell(live.id, text) and target == "lobby":
            await self._answer_late(live.id, answer, text)  # the lobby channel has it anyway

    def _failure_text(self, live: LiveGame, reason: dict[str, Any]) -> str:
        return start_refused_text(live.language, reason_failure(reason))

    def _welcome(self, live: LiveGame) -> list[OutboxItem]:
        """The first messages: residents per city (pinging the city's role) with a "my status"
        button, the mafia its own, the deal in the log."""
        game = live.game
        assert game is not None
        channels = live.record.channels
        roles = channels.get("roles", {}).get("cities", {})
        items: list[OutboxItem] = []
        role_button = [{"type": 1, "components": [{
            "type": 2, "style": 1, "custom_id": f"mafia:role:{live.id}", "label": phrase(live, "welcome.role"),
        }]}]
        for city in game.cities:
            # the residents that fit beside the text, the rest in messages of their own
            residents = chunks([", ".join(mention(p) for p in game.residents[city])], RESIDENTS_LIMIT)
            text = phrase(live, "welcome.city", city=city, players=residents[0] if residents else "—",
                          me=command(live.language, "mafia me"), help=command(live.language, "help"),
                          rules=command(live.language, "rules"))
            if len(game.cities) > 1:
                text += "\n" + phrase(live, "welcome.touring", touring=", ".join(game.touring_order))
            living = roles.get(city, {}).get("living")
            mentions: dict[str, Any] = NO_PINGS
            if living is not None and pings_on(live):
                text = f"<@&{living}>\n{text}"
                mentions = {"parse": [], "roles": [str(living)]}
            parts = [text, *residents[1:]]
            for index, part in enumerate(parts):
                payload: dict[str, Any] = {"content": part, "allowed_mentions": mentions if index == 0 else NO_PINGS}
                if index == len(parts) - 1:
                    payload["components"] = role_button
                items.append(OutboxItem("send", {"channel_id": channels["cities"][city]["text"]}, payload))
            for part in chunks([", ".join(mention(p) for p in game.living_mafiosi(city))], RESIDENTS_LIMIT):
                items.append(OutboxItem("send", {"channel_id": channels["cities"][city]["mafia"]}, {
                    "content": phrase(live, "welcome.mafia", city=city, players=part), "allowed_mentions": NO_PINGS,
                }))
        deal_lines = [phrase(live, "log.deal", seed=game.seed)]
        for city in game.cities:
            deal_lines.append(phrase(live, "summary.city", city=city))
            for player in game.residents[city]:
                deal_lines.append(f"• {mention(player)} ({shown_name(live, player)}) — "
                                  f"{status_text(live, game.status_of(player).value)}")
        for chunk in chunks(deal_lines):
            items.append(OutboxItem("send", {"channel_id": channels["log"]},
                                    {"content": chunk, "allowed_mentions": NO_PINGS}))
        items.extend(lobby_edit(live))
        return items

    # ------------------------------------------------------------------ running

    @host.command(name=key_str("next", "cmd.host.next.name"),
                  description=key_str("Move to the next stage now", "cmd.host.next.description"))
    @app_commands.rename(from_stage=key_str("from", "opt.from_stage.name"))
    @app_commands.describe(from_stage=key_str("The stage you move on from (as offered): refused if the game "
                                              "has left it", "opt.from_stage.description"))
    async def next(self, interaction: discord.Interaction,
                   from_stage: app_commands.Range[str, 1, 40] | None = None) -> None:
        live = await self._host_game(interaction)
        seen = self._stage_move(interaction)
        if from_stage is not None:
            if not STAGE_KEY.fullmatch(from_stage):
                raise UserError("error.bad_stage")
            seen = Seen(stage=from_stage, at=seen.at)
        game = live.game
        assert game is not None
        if game.stage is Stage.EXECUTION:
            if from_stage is not None and from_stage != live.stage_key():
                raise MovedOn()
            raise UserError("error.use_execute")
        # worked out from the stage as it is now; under the lock the service refuses it
        # unless that is still the stage the host saw
        command = command_for_deadline(game.stage)
        assert command is not None
        await self._apply(interaction, live, command, seen=seen, tell_stage=True)

    def _stage_move(self, interaction: discord.Interaction) -> Seen:
        """What the sender of a stage move saw: the stage of the moment Discord created his
        interaction, and not one the timer began a moment before (``fairness.stage_settle``)."""
        return Seen(at=sent_at(interaction).at, settle=self.bot.config.fairness.stage_settle)

    @next.autocomplete("from_stage")
    async def _next_stages(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        if interaction.guild_id is None:
            return []
        live = await self.bot.service.open_game(interaction.guild_id)
        if live is None or live.game is None or live.game.over or live.game.stage is Stage.EXECUTION:
            return []
        role = await self.bot.storage.guild_host_role(live.record.guild_id)
        if not is_host(self.bot, live, interaction.user, role):
            return []
        key = live.stage_key()
        assert key is not None
        label = phrase(live, f"host.next_choice.{live.game.stage.value}",
                       phase=phase_text(live, str(live.game.phase)))
        return [app_commands.Choice(name=clip(label, 100), value=key)]

    @host.command(name=key_str("kill", "cmd.host.kill.name"),
                  description=key_str("Strike out a player: he dies at once", "cmd.host.kill.description"))
    @app_commands.rename(player=PLAYER)
    @app_commands.describe(player=PLAYER_DESCRIPTION)
    async def kill(self, interaction: discord.Interaction, player: str) -> None:
        live = await self._host_game(interaction)
        target = resolve_player(live, player)
        assert live.game is not None
        live.game.check(ProcuratorKill(target))  # refused now, not after the confirmation
        await self._ask(interaction, live, "kill", target, phrase(live, "confirm.kill", player=mention(target)))

    @kill.autocomplete("player")
    async def _kill_targets(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return await self._host_targets(interaction, "kill", current)

    @host.command(name=key_str("judge", "cmd.host.judge.name"),
                  description=key_str("Name a city's Judge", "cmd.host.judge.description"))
    @app_commands.rename(player=PLAYER)
    @app_commands.describe(player=PLAYER_DESCRIPTION)
    async def judge(self, interaction: discord.Interaction, player: str) -> None:
        live = await self._host_game(interaction)
        await self._apply(interaction, live, AppointJudge(resolve_player(live, player)))

    @judge.autocomplete("player")
    async def _judge_targets(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return await self._host_targets(interaction, "judge", current)

    @host.command(name=key_str("godfather", "cmd.host.godfather.name"),
                  description=key_str("Appoint a city's Godfather", "cmd.host.godfather.description"))
    @app_commands.rename(player=PLAYER)
    @app_commands.describe(player=PLAYER_DESCRIPTION)
    async def godfather(self, interaction: discord.Interaction, player: str) -> None:
        live = await self._host_game(interaction)
        await self._apply(interaction, live, AppointGodfather(resolve_player(live, player)))

    @godfather.autocomplete("player")
    async def _godfather_targets(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return await self._host_targets(interaction, "godfather", current)

    @host.command(name=key_str("execute", "cmd.host.execute.name"),
                  description=key_str("Name the one to execute when nobody was chosen", "cmd.host.execute.description"))
    @app_commands.rename(player=PLAYER)
    @app_commands.describe(player=PLAYER_DESCRIPTION)
    async def execute(self, interaction: discord.Interaction, player: str) -> None:
        live = await self._host_game(interaction)
        await self._apply(interaction, live, Execute(resolve_player(live, player)),
                          seen=self._stage_move(interaction))

    @execute.autocomplete("player")
    async def _execute_targets(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return await self._host_targets(interaction, "execute", current)

    @host.command(name=key_str("replace", "cmd.host.replace.name"),
                  description=key_str("Seat a newcomer in a living player's place", "cmd.host.replace.description"))
    @app_commands.rename(old=key_str("player", "opt.old.name"), new=key_str("newcomer", "opt.new.name"))
    @app_commands.describe(old=key_str("The player who leaves", "opt.old.description"),
                           new=key_str("The member who takes his place", "opt.new.description"))
    async def replace(self, interaction: discord.Interaction, old: str, new: discord.Member) -> None:
        live = await self._host_game(interaction)
        leaving = resolve_player(live, old)
        who = mention(str(new.id))
        if new.bot:
            raise UserError("error.replace_bad", member=who)
        if new.id == live.record.host_id or new.id in cohosts(live):
            raise UserError("error.host_cannot_play")
        if plays_in(live, new.id):
            raise UserError("error.replace_plays", member=who)
        if self.bot.service.game_of_player(new.id) is not None:
            raise UserError("error.player_in_other_game", player=who)
        quiet = not await self.bot.service.wants_pings(new.id)
        name, exposed = new.display_name, exposure(new)
        # a spectator who takes a seat stops watching in the same commit: one game role at a time
        busy = bool(await self.bot.storage.pending_outbox(live.id, 1, lane="provision"))

        def after(live: LiveGame, events: list[Any]) -> list[OutboxItem]:
            items: list[OutboxItem] = []
            if is_spectator(live.record, new.id):
                log.info("game %s: %s stops watching to take a seat", live.id, new.id)
                items = watch_items(live, new.id, watch=False, busy=busy)
            return items + replaced_items(live, leaving, str(new.id), name=name, quiet=quiet, exposed=exposed)

        applied = await self.bot.service.apply(
            live.id, Replace(leaving, str(new.id)), source="host", interaction_id=interaction.id,
            answer=InteractionAnswer(interaction), after=after,
        )
        if applied.duplicate and not interaction.response.is_done():
            return
        log.info("game %s: %s replaces %s", live.id, new.id, leaving)
        await answer(interaction, phrase(live, "host.replaced", old=mention(leaving), new=who))

    @replace.autocomplete("old")
    async def _replace_targets(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return await self._host_targets(interaction, "kill", current)  # the living

    @host.command(name=key_str("idle", "cmd.host.idle.name"),
                  description=key_str("Who has not acted for how many phases", "cmd.host.idle.description"))
    async def idle(self, interaction: discord.Interaction) -> None:
        live = await self._host_game(interaction)
        async with self.bot.service.lock(live.id):  # the log and the game as of one moment
            quiet = await self.idle_phases(live)
        lines = [phrase(live, "host.idle.title")]
        for player, phases in sorted(quiet.items(), key=lambda row: -row[1]):
            lines.append(phrase(live, "host.idle.row", player=mention(player), phases=phases))
        if len(lines) == 1:
            lines.append(phrase(live, "host.idle.none"))
        await answer_lines(interaction, lines)

    async def idle_phases(self, live: LiveGame) -> dict[str, int]:
        """For each living player who has not acted in the phase under way, how many phases went by
        since his last act, this one included (replayed from the log)."""
        record = live.record
        assert record.setup is not None and record.seed is not None and live.game is not None
        replay = Game.create(Setup.from_dict(record.setup), record.seed)
        phases = 0
        last: dict[str, int] = {}
        for row in await self.bot.storage.commands(live.id):
            command = command_from_dict(row.command)
            events = replay.apply(command)
            actor = getattr(command, "actor", None) or (command.new if isinstance(command, Replace) else None)
            if actor is not None:  # a newcomer counts from the phase he came in
                last[actor] = phases
            phases += sum(1 for e in events if isinstance(e, PhaseStarted) and e.stage in (
                Stage.DISCUSSION, Stage.NIGHT))
        # phases are numbered from 0 (the opening one): who never acted let every one pass
        quiet = {player: phases - last.get(player, -1) for player in live.game.alive()}
        return {player: count for player, count in quiet.items() if count > 0}

    @host.command(name=key_str("skip", "cmd.host.skip.name"),
                  description=key_str("Stop the last word being recorded", "cmd.host.skip.description"))
    async def skip(self, interaction: discord.Interaction) -> None:
        cog = self.bot.get_cog("LastWordCog")
        if cog is None:
            raise UserError("error.no_recording")
        await cog.skip(interaction)  # type: ignore[attr-defined]

    @host.command(name=key_str("end", "cmd.host.end.name"),
                  description=key_str("End the game now", "cmd.host.end.description"))
    async def end(self, interaction: discord.Interaction) -> None:
        live = await self._host_game(interaction, running=False)
        await self._ask(interaction, live, "end", None, phrase(live, "confirm.end"))

    async def _end(self, interaction: discord.Interaction, live: LiveGame) -> None:
        """End the game (confirmed): a game being started is rolled back, a running one summed up
        in its channels, which turn read-only (or are deleted)."""
        if live.record.state == "starting":
            # being started: what was made is removed (a rollback), then the game is cancelled
            provision = live.record.lobby.get("provision") or {}
            if provision.get("state") != "rollback":
                await self._rollback(live, {}, target="cancelled")
            await settle(interaction, phrase(live, "host.ended_reply"))
            return

        # a broken game is closed like any other: its channels locked (or deleted) as at an end,
        # with the last state its log still gives for who sits in which mafia room
        known = live.game if live.broken is None else await self._last_known_game(live)

        def change(live: LiveGame) -> list[OutboxItem]:
            items: list[OutboxItem] = []
            game = live.game if live.broken is None else known
            live.record.state = "cancelled"
            live.record.deadline = None
            if live.broken is not None and live.record.channels.get("roles"):
                for channel_id in closing_channels(live):
                    items.append(OutboxItem("send", {"channel_id": channel_id},
                                            {"content": phrase(live, "host.ended"), "allowed_mentions": NO_PINGS}))
                items.extend(closing_items(live, game))
            elif game is not None and live.record.channels:
                parts = [[phrase(live, "host.ended"), *summary_lines(live, game)], vote_summary_lines(live)]
                for channel_id in closing_channels(live):
                    for chunk in sections(parts):
                        items.append(OutboxItem("send", {"channel_id": channel_id},
                                                {"content": chunk, "allowed_mentions": NO_PINGS}))
                items.extend(closing_items(live, game))
            items.extend(lobby_edit(live))
            return items

        if not await self.bot.service.update(live.id, change, interaction_id=interaction.id):
            return  # delivered twice: done and answered the first time
        await settle(interaction, phrase(live, "host.ended_reply"))

    # ------------------------------------------------------------------ confirmations

    async def _ask(self, interaction: discord.Interaction, live: LiveGame, action: str, target: str | None,
                   question: str) -> None:
        """Answer privately with the question and "Yes"/"No" buttons: the act happens only on
        "Yes", pressed within :data:`CONFIRM_SECONDS` while the game is at the stage it was at."""
        issued = interaction.created_at.timestamp()
        custom_id = f"mafia:confirm:{live.id}:{action}:{int(issued * 1000)}" + (f":{target}" if target else "")
        view = discord.ui.View(timeout=None)
        view.add_item(ConfirmButton(discord.ui.Button(style=discord.ButtonStyle.danger, custom_id=custom_id,
                                                      label=phrase(live, "confirm.yes")), []))
        view.add_item(CancelButton(discord.ui.Button(style=discord.ButtonStyle.secondary,
                                                     custom_id=f"mafia:cancel:{live.id}",
                                                     label=phrase(live, "confirm.no")), []))
        text = phrase(live, "confirm.question", question=question,
                      until=f"<t:{int(issued + CONFIRM_SECONDS)}:R>")
        await interaction.response.send_message(text, view=view, ephemeral=True,
                                                allowed_mentions=discord.AllowedMentions.none())

    async def _confirmed(self, interaction: discord.Interaction, parts: list[str]) -> None:
        """"Yes" pressed: refused if it is not this guild's open game's, stale, or the game
        left the stage it was asked in; else the act."""
        game_id, action, issued = int(parts[0]), parts[1], int(parts[2]) / 1000
        live = await self.bot.service.open_game(interaction.guild_id) if interaction.guild_id else None
        if live is None or live.id != game_id:
            raise UserError("error.stale_button")
        await require_host(self.bot, interaction, live)
        if self.bot.service.wall() - issued > CONFIRM_SECONDS:
            raise UserError("error.confirm_expired")
        if action == "end":
            await self._end(interaction, live)
            return
        if len(parts) < 4:
            raise UserError("error.stale_button")
        live = await running_game(self.bot, interaction)
        applied = await self.bot.service.apply(
            live.id, ProcuratorKill(parts[3]), source="host", interaction_id=interaction.id,
            seen=Seen(at=issued), answer=InteractionAnswer(interaction),
        )
        if applied.duplicate and not interaction.response.is_done():
            return
        await settle(interaction, phrase(live, "host.done"))

    async def _cancelled(self, interaction: discord.Interaction, parts: list[str]) -> None:
        """"No" pressed: nothing happens; the question is replaced by "cancelled". Only by one
        who may host this guild's open game: anybody else (a crafted id on another message) is
        refused before anything is edited."""
        live = await self.bot.service.open_game(interaction.guild_id) if interaction.guild_id else None
        if live is None or not parts or str(live.id) != parts[0]:
            raise UserError("error.stale_button")
        await require_host(self.bot, interaction, live)
        await settle(interaction, phrase(live, "confirm.cancelled"))


    async def _last_known_game(self, live: LiveGame) -> Game | None:
        """A broken game as far as its log still replays (None: not even its deal is readable)."""
        record = live.record
        if record.damaged is not None or record.setup is None or record.seed is None:
            return None
        try:
            game = Game.create(Setup.from_dict(record.setup), record.seed)
        except Exception:
            return None
        upto = None
        while True:
            try:
                rows = await self.bot.storage.commands(live.id, upto=upto)
                break
            except DamagedLog as damaged:
                upto = damaged.seq - 1
        for row in rows:
            try:
                game.apply(command_from_dict(row.command))
            except Exception:
                break  # where the log stops replaying
        return game

async def settle(interaction: discord.Interaction, text: str) -> None:
    """Answer a confirmation's button: its question becomes ``text``, without buttons (or, if the
    press was acknowledged already, the acknowledgement says it)."""
    none = discord.AllowedMentions.none()
    if interaction.type is not discord.InteractionType.component:
        await answer(interaction, text)
        return

    async def send() -> None:
        if interaction.response.is_done():
            await interaction.edit_original_response(content=text, view=None, allowed_mentions=none)
        else:
            await interaction.response.edit_message(content=text, view=None, allowed_mentions=none)

    await delivered(interaction, text, send)

async def setup(bot: ProkuratorBot) -> None:
    """Load the cog."""
    await bot.add_cog(HostCog(bot))
