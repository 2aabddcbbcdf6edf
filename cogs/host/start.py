"""``/host start``: the room check, the provisioning of the game's roles and channels, its answer
(late in the log when the token is gone), the rollback of a start that failed, the welcome."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any

import discord

from bot.channels import (
    Layout,
    exposure,
    exposure_lines,
    layout_for,
    lobby_exposure,
    missing_permissions,
    permission_names,
    resolved,
)
from bot.errors import UserError
from bot.footprint import (
    provision_plan,
    rollback_plan,
)
from bot.i18n import NO_PINGS, key_str, mention, phrase, t
from bot.outbox import CREATES
from bot.outbox.intents import Send, Sweep
from bot.service import GameBroken, LiveGame, NoGame
from bot.storage import GameRecord, GameState, OutboxItem
from cogs.failures import Failure, failure_of, reason_failure, start_refused_text
from cogs.host.common import (
    HOST,
    NEEDS,
    TOKEN_MARGIN,
    HostBase,
    seat_players,
)
from cogs.host.welcome import welcome_items
from cogs.lobby import lobby_cities, lobby_edit, log_items
from cogs.room import check_room
from cogs.spectators import mode_of as spectator_mode
from rules import (
    Game,
    RoleCounts,
    RuleError,
    RuleOptions,
    Setup,
    deal,
)
from rules.table import SWITCHABLE

log = logging.getLogger(__name__)


class HostStart(HostBase):
    """``/host start`` and what follows it."""

    _waiters: dict[int, asyncio.Future[str]]
    start_wait: float
    token_lifetime: float

    @HOST.command(
        name=key_str("cmd.host.start.name"),
        description=key_str("cmd.host.start.description"),
    )
    async def start(self, interaction: discord.Interaction) -> None:
        try:  # making roles and channels takes longer than Discord waits for an answer
            await interaction.response.defer(ephemeral=True, thinking=True)
        except discord.HTTPException as error:
            log.info(
                "/host start %s not deferred (%s): delivered twice, answered once",
                interaction.id,
                error,
            )
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
            await interaction.edit_original_response(
                content=text[:2000], allowed_mentions=discord.AllowedMentions.none()
            )
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
        refuse_unless_lobby(live.record)
        guild = interaction.guild
        assert guild is not None
        players = [p["id"] for p in live.record.lobby.get("players", [])]
        self._check_startable(live, guild, players)
        seed = self.bot.deal_seed()
        cities = lobby_cities(live)
        setup = self._deal(live, players, cities, seed)
        game = Game.create(setup, seed)
        quiet = {str(user) for user in await self.bot.service.quiet_players(players)}
        check_room(guild, game, quiet, spectators=spectator_mode(live.record) != "off")
        start = Start(
            players,
            seed,
            setup,
            game,
            quiet,
            exposed=self._exposure(guild, live),
            guild_id=guild.id,
            bot_id=self.bot.user.id if self.bot.user else 0,
            # how to answer the interaction when the start ends after this waiter (or process)
            answer={
                "application_id": interaction.application_id,
                "token": interaction.token,
                "at": interaction.created_at.timestamp(),
            },
        )
        if not await self.bot.service.update(live.id, start.begin, interaction_id=interaction.id):
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

    def _check_startable(self, live: LiveGame, guild: discord.Guild, players: list[int]) -> None:
        """Refuse a start with a player seated in another game, or the bot lacking permissions.

        Raises:
            UserError: ``error.player_in_other_game`` or ``error.missing_permissions``.
        """
        for player in players:
            other = self.bot.service.game_of_player(player)
            if other is not None and other.id != live.id:
                raise UserError("error.player_in_other_game", player=mention(str(player)))
        lacking = missing_permissions(guild.me.guild_permissions)
        if lacking:
            raise UserError(
                "error.missing_permissions", permissions=permission_names(live.language, lacking)
            )

    def _deal(self, live: LiveGame, players: list[int], cities: list[str], seed: int) -> Setup:
        """The lobby's players seated and dealt their statuses under the lobby's rules.

        Raises:
            UserError: ``error.cannot_deal`` saying why the rules refuse the deal.
        """
        lobby = live.record.lobby
        setup_options = lobby.get("setup", {})
        try:
            options = RuleOptions.from_dict(
                {**self.bot.config.rules.to_dict(), **lobby.get("rules", {})}
            )
            return deal(
                seat_players(players, cities, seed),
                seed,
                RoleCounts(
                    setup_options.get("mafiosi"),
                    switches={s.value: setup_options.get(s.value) for s in SWITCHABLE},
                ),
                options,
            )
        except RuleError as error:
            raise UserError(
                "error.cannot_deal", reason=phrase(live, f"error.{error.code}", **error.params)
            ) from None

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
        if live.record.state != GameState.STARTING or not provision:
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
            items = welcome_items(live)
            # nobody waits (a long start, or one resumed after a restart): the host's log says
            # what the interaction's answer can no longer say
            lines = (
                [phrase(live, "host.started"), *warnings]
                if late
                else warnings
                if not waiting
                else []
            )
            if lines:
                message = {"content": "\n".join(lines)[:2000], "allowed_mentions": NO_PINGS}
                items.append(Send(message, channel=layout.log).item())
            return items

        try:
            await self.bot.service.start(
                live.id,
                Setup.from_dict(record.setup),
                record.seed,
                prepare=prepare,
                from_state=GameState.STARTING,
            )
        except NoGame:
            return  # finished, or rolled back, meanwhile
        log.info(
            "game %s started: %d players in %s",
            live.id,
            len(live.game.players) if live.game else 0,
            [city.name for city in layout.cities],
        )
        text = "\n".join([phrase(live, "host.started"), *warnings])
        if self._tell(live.id, text) or late:
            return
        if not await self._answer_late(live.id, answer, text):  # the token ran out meanwhile
            with contextlib.suppress(NoGame, GameBroken):
                await self.bot.service.update(
                    live.id, lambda live: log_items(live, phrase(live, "host.started"))
                )

    def _token_alive(self, answer: dict[str, Any] | None) -> bool:
        """Whether Discord still takes an edit of the stored /host start answer."""
        return (
            answer is not None
            and time.time() - float(answer["at"]) < self.token_lifetime - TOKEN_MARGIN
        )

    async def _answer_late(self, game_id: int, answer: dict[str, Any] | None, text: str) -> bool:
        """Answer a /host start nobody waits for any more (its waiter gave up, or its process
        stopped) by editing the interaction's answer while its token lasts (False: it did not)."""
        if answer is None or not self._token_alive(answer):
            return False
        webhook = discord.Webhook.partial(
            int(answer["application_id"]), str(answer["token"]), client=self.bot
        )
        try:
            await webhook.edit_message(
                "@original",
                content=text[:2000],  # type: ignore[call-overload]
                allowed_mentions=discord.AllowedMentions.none(),
            )
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
        if live.record.state != GameState.STARTING or not provision:
            return
        if provision["state"] == "rollback":
            log.error(
                "game %s: could not remove %s while rolling back: %s", live.id, item.target, error
            )
            return
        guild = self.bot.get_guild(live.record.guild_id)
        lacking = missing_permissions(guild.me.guild_permissions) if guild is not None else []
        failure = failure_of(
            error,
            kind=item.kind,
            lacking=lacking if isinstance(error, discord.Forbidden) else [],
            needs=NEEDS.get(item.kind, []),
        )
        reason: dict[str, Any] = {"failure": failure.to_dict()}
        await self._rollback(live, reason)

    async def _rollback(
        self, live: LiveGame, reason: dict[str, Any], target: str = "lobby"
    ) -> None:
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
        creates_until = (
            time.time() + self.bot.outbox.call_timeout
            if any(item.kind in CREATES for item in pending)
            else None
        )

        def change(live: LiveGame) -> list[OutboxItem]:
            provision = live.record.lobby["provision"]
            provision["state"], provision["reason"], provision["target"] = (
                "rollback",
                reason,
                target,
            )
            sweep = (
                Sweep(
                    Sweep.read(plans[-1]).guild,
                    {
                        **plans[-1].payload,
                        "category": None,
                        "rollback": True,
                        "creates_until": creates_until,
                    },
                    lane="provision",
                ).item()
                if plans
                else None
            )
            return rollback_plan(live.record.guild_id, made, int(provision["attempt"]), sweep)

        # the lane is kicked when the hold ends: with nothing to remove, it ends the rollback
        await self.bot.service.update(live.id, change, cancel_lane="provision")

    async def _rolled_back(self, live: LiveGame, attempt: int, made: dict[str, int]) -> None:
        removed = {
            int(item.target.get("channel_id") or item.target.get("role") or 0)
            for item in await self.bot.storage.outbox_items(live.id, "provision")
            if item.kind in ("delete_channel", "delete_role")
        }
        left = {
            key: value
            for key, value in made.items()
            if key.startswith(f"{attempt}:") and value not in removed
        }
        if left:  # made while the rollback was being decided: remove it too
            await self.bot.service.update(
                live.id, lambda live: rollback_plan(live.record.guild_id, left, attempt)
            )
            return
        provision = live.record.lobby["provision"]
        reason, target = provision.get("reason", {}), provision.get("target", "lobby")
        text = (
            self._failure_text(live, reason)
            if target == "lobby"
            else phrase(live, "host.ended_reply")
        )
        waiting = live.id in self._waiters
        answer = provision.get("answer")

        def change(live: LiveGame) -> list[OutboxItem]:
            record = live.record
            record.state, record.setup, record.seed = GameState(target), None, None
            record.channels = {}
            record.lobby.pop("provision", None)
            items = lobby_edit(live)
            channel = record.lobby.get("channel_id")
            if target == "lobby" and not waiting and channel:  # resumed after a restart: say it
                message = {"content": text, "allowed_mentions": NO_PINGS}
                items.append(Send(message, channel=int(channel)).item())
            return items

        await self.bot.service.update(live.id, change)
        self.bot.outbox.forget(live.id)
        log.warning("game %s: provisioning rolled back (%s)", live.id, reason)
        if not self._tell(live.id, text) and target == "lobby":
            await self._answer_late(live.id, answer, text)  # the lobby channel has it anyway

    def _failure_text(self, live: LiveGame, reason: dict[str, Any]) -> str:
        return start_refused_text(live.language, reason_failure(reason))


def refuse_unless_lobby(record: GameRecord) -> None:
    """Refuse to start a game that is not a lobby.

    Raises:
        UserError: ``error.already_starting`` or ``error.not_lobby``.
    """
    if record.state == GameState.STARTING:
        raise UserError("error.already_starting")
    if record.state != GameState.LOBBY:
        raise UserError("error.not_lobby")


@dataclass(frozen=True)
class Start:
    """A start dealt outside the game's lock, stored under it by :meth:`begin`."""

    players: list[int]
    seed: int
    setup: Setup
    game: Game
    quiet: set[str]
    exposed: dict[str, list[str]]
    guild_id: int
    bot_id: int
    answer: dict[str, Any]

    def begin(self, live: LiveGame) -> list[OutboxItem]:
        """The lobby becomes a game being started: the deal, this attempt's layout and the
        provisioning plan, stored in one commit (refused if the lobby changed meanwhile)."""
        record = live.record
        refuse_unless_lobby(record)
        if [p["id"] for p in record.lobby.get("players", [])] != self.players:
            raise UserError("error.lobby_changed")  # someone joined or left while it was dealt
        attempt = int(record.lobby.get("attempts", 0)) + 1
        layout = layout_for(
            live,
            self.game,
            guild_id=self.guild_id,
            bot_id=self.bot_id,
            quiet=self.quiet,
            attempt=attempt,
        )
        record.state, record.setup, record.seed = (
            GameState.STARTING,
            self.setup.to_dict(),
            self.seed,
        )
        record.lobby["attempts"] = attempt
        record.lobby["provision"] = {
            "attempt": attempt,
            "state": "creating",
            "layout": layout.to_channels(),
            "exposed": self.exposed,
            "answer": self.answer,
        }
        return provision_plan(live, self.game, layout) + lobby_edit(live)
