"""The host's settings beyond the lobby's setup (:mod:`cogs.host.game_setup`): co-hosts, kicks,
and the timers (set, extended, paused, resumed)."""

from __future__ import annotations

import logging

import discord
from discord import app_commands

from bot.errors import UserError
from bot.footprint import (
    cohost_items,
)
from bot.i18n import key_str, mention, phrase
from bot.options import duration_text, parse_duration
from bot.outbox.intents import Send
from bot.service import LiveGame
from bot.storage import GameState, OutboxItem
from cogs.common import (
    answer,
    cohosts,
    plays_in,
    seen_by,
)
from cogs.host.common import (
    COHOST,
    HOST,
    MAX_COHOSTS,
    MAX_TIMER,
    TIMED,
    _choice,
    deadline_changed_items,
)
from cogs.host.game_setup import HostSetup
from cogs.lobby import lobby_edit, log_items
from cogs.mentions import command
from cogs.render import (
    deadline_text,
)
from cogs.spectators import is_spectator

log = logging.getLogger(__name__)


class HostSettings(HostSetup):
    """``/host cohost``, ``kick``, ``timer``, ``extend``, ``pause``, ``resume``, after the lobby's
    setup (:class:`~cogs.host.game_setup.HostSetup`)."""

    @COHOST.command(
        name=key_str("cmd.host.cohost.add.name"),
        description=key_str("cmd.host.cohost.add.description"),
    )
    @app_commands.rename(member=key_str("opt.member.name"))
    @app_commands.describe(member=key_str("opt.member.description"))
    async def cohost_add(self, interaction: discord.Interaction, member: discord.Member) -> None:
        await self._cohost(interaction, member, add=True)

    @COHOST.command(
        name=key_str("cmd.host.cohost.remove.name"),
        description=key_str("cmd.host.cohost.remove.description"),
    )
    @app_commands.rename(member=key_str("opt.member.name"))
    @app_commands.describe(member=key_str("opt.member.description"))
    async def cohost_remove(self, interaction: discord.Interaction, member: discord.Member) -> None:
        await self._cohost(interaction, member, add=False)

    async def _cohost(
        self, interaction: discord.Interaction, member: discord.Member, *, add: bool
    ) -> None:
        live = await self._settings_game(interaction)
        if interaction.user.id != live.record.host_id:
            raise UserError("error.only_host")
        who = mention(str(member.id))
        if add and (member.bot or member.id == live.record.host_id):
            raise UserError("error.cohost_bad", member=who)

        def change(live: LiveGame) -> list[OutboxItem]:
            record = live.record
            self.bot.powers.refuse(live)  # held: a co-host's overwrites could not be put
            if (
                record.state == GameState.STARTING
            ):  # the channels being made carry the co-hosts they had
                raise UserError("error.already_starting")
            current = cohosts(live)
            if add:
                if plays_in(live, member.id):
                    raise UserError("error.cohost_plays", member=who)
                if is_spectator(
                    record, member.id
                ):  # he would read the secrets holding the watchers' role
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
            items = (
                cohost_items(live, member.id, add=add) if record.state == GameState.RUNNING else []
            )
            items += log_items(
                live, phrase(live, "log.cohost_added" if add else "log.cohost_removed", member=who)
            )
            return items + lobby_edit(live)

        if not await self._update(interaction, live, change):
            return
        log.info("game %s: co-host %s %s", live.id, member.id, "added" if add else "removed")
        await answer(
            interaction,
            phrase(
                seen_by(live, interaction),
                "host.cohost_added" if add else "host.cohost_removed",
                member=who,
            ),
        )

    @HOST.command(
        name=key_str("cmd.host.kick.name"),
        description=key_str("cmd.host.kick.description"),
    )
    @app_commands.rename(member=key_str("opt.member.name"))
    @app_commands.describe(member=key_str("opt.member.description"))
    async def kick(self, interaction: discord.Interaction, member: discord.User) -> None:
        live = await self._settings_game(interaction)
        who = mention(str(member.id))
        if live.record.state != GameState.LOBBY:
            raise UserError("error.kick_not_lobby", player=who)

        def change(live: LiveGame) -> list[OutboxItem]:
            record = live.record
            if record.state != GameState.LOBBY:
                raise UserError("error.kick_not_lobby", player=who)
            players = record.lobby.get("players", [])
            if not any(p["id"] == member.id for p in players):
                raise UserError("error.not_in_lobby", player=who)
            record.lobby["players"] = [p for p in players if p["id"] != member.id]
            items = lobby_edit(live)
            channel = record.lobby.get("channel_id")
            if channel:  # he is told where he joined, pinged alone
                kicked = phrase(
                    live, "lobby.kicked", player=who, join=command(live.language, "mafia join")
                )
                message = {
                    "content": kicked,
                    "allowed_mentions": {"parse": [], "users": [str(member.id)]},
                }
                items.append(Send(message, channel=int(channel)).item())
            return items

        if not await self._update(interaction, live, change):
            return
        log.info("game %s: %s kicked from the lobby", live.id, member.id)
        await answer(interaction, phrase(seen_by(live, interaction), "host.kicked", player=who))

    @HOST.command(
        name=key_str("cmd.host.timer.name"),
        description=key_str("cmd.host.timer.description"),
    )
    @app_commands.rename(stage=key_str("opt.stage.name"), duration=key_str("opt.duration.name"))
    @app_commands.describe(
        stage=key_str("opt.stage.description"),
        duration=key_str("opt.duration.description"),
    )
    @app_commands.choices(
        stage=[
            _choice("discussion", "choice.discussion"),
            _choice("voting", "choice.voting"),
            _choice("night", "choice.night"),
            _choice("execution", "choice.execution"),
        ]
    )
    async def timer(
        self, interaction: discord.Interaction, stage: str, duration: app_commands.Range[str, 1, 40]
    ) -> None:
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
        await answer(
            interaction,
            phrase(
                live,
                key,
                stage=phrase(live, f"stage.{stage}"),
                duration=duration_text(live.language, seconds),
            ),
        )

    @HOST.command(
        name=key_str("cmd.host.extend.name"),
        description=key_str("cmd.host.extend.description"),
    )
    @app_commands.rename(duration=key_str("opt.duration.name"))
    @app_commands.describe(duration=key_str("opt.extend_duration.description"))
    async def extend(
        self, interaction: discord.Interaction, duration: app_commands.Range[str, 1, 40]
    ) -> None:
        live = await self._host_game(interaction)
        seconds = parse_duration(duration)
        now = self.bot.clock()

        def change(live: LiveGame) -> list[OutboxItem]:
            record = live.record
            paused = record.lobby.get("paused")
            if isinstance(paused, dict):
                remaining = paused.get("remaining")
                if remaining is None:
                    raise UserError("error.no_deadline")
                paused["remaining"] = min(MAX_TIMER, remaining + seconds)
            else:
                if record.deadline is None:
                    raise UserError("error.no_deadline")
                record.deadline = min(now + MAX_TIMER, record.deadline + seconds)
                # a reminder already sent counts again if its moment moved into the future
                record.reminders_sent = [
                    o for o in record.reminders_sent if o >= record.deadline - now
                ]
            return deadline_changed_items(
                live, "host.extended_notice", duration=duration_text(live.language, seconds)
            )

        if not await self._update(interaction, live, change):
            return
        await answer(
            interaction,
            phrase(
                live,
                "host.extended",
                duration=duration_text(live.language, seconds),
                deadline=deadline_text(live),
            ),
        )

    @HOST.command(
        name=key_str("cmd.host.pause.name"),
        description=key_str("cmd.host.pause.description"),
    )
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
            return deadline_changed_items(
                live, "host.paused_notice", resume=command(live.language, "host resume")
            )

        if not await self._update(interaction, live, change):
            return
        await answer(
            interaction,
            phrase(
                seen_by(live, interaction),
                "host.paused",
                resume=command(seen_by(live, interaction).language, "host resume"),
            ),
        )

    @HOST.command(
        name=key_str("cmd.host.resume.name"),
        description=key_str("cmd.host.resume.description"),
    )
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
        await answer(
            interaction,
            phrase(
                seen_by(live, interaction),
                "host.resumed",
                deadline=deadline_text(seen_by(live, interaction)),
            ),
        )
