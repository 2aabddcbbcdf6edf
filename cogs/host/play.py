"""The host in play: the next stage, his acts (kill, judge, godfather, execute), replacements,
the idle, skips, the end, and the confirmations they ask for."""

from __future__ import annotations

import logging
from typing import Any

import discord
from discord import app_commands

from bot.channels import (
    exposure,
)
from bot.errors import UserError
from bot.footprint import (
    watch_items,
)
from bot.i18n import NO_PINGS, key_str, mention, phrase
from bot.limits import block_sections, clip
from bot.outbox.intents import Send
from bot.service import LiveGame, MovedOn, Seen, command_for_deadline
from bot.storage import DamagedLog, GameState, OutboxItem
from cogs.common import (
    InteractionAnswer,
    answer,
    answer_lines,
    cohosts,
    is_host,
    plays_in,
    require_host,
    resolve_player,
    running_game,
    seen_by,
    sent_at,
    status_text,
)
from cogs.components import CancelButton, ConfirmButton
from cogs.host.common import (
    CONFIRM_SECONDS,
    HOST,
    PLAYER,
    PLAYER_DESCRIPTION,
    STAGE_KEY,
    settle,
)
from cogs.host.start import (
    HostStart,
)
from cogs.host.strikes import (
    LeaveStrikes,
)
from cogs.host.welcome import replaced_items
from cogs.idle import IdleWatch, idle_streaks, idle_strike
from cogs.lobby import lobby_edit
from cogs.render import (
    closing_channels,
    closing_items,
    phase_text,
    summary_blocks,
)
from cogs.spectators import is_spectator
from cogs.votes import vote_summary_lines
from rules import (
    AppointGodfather,
    AppointJudge,
    Execute,
    Game,
    ProcuratorKill,
    Replace,
    Setup,
    Stage,
    command_from_dict,
)

log = logging.getLogger(__name__)


class HostPlay(HostStart):
    """``/host next``, ``kill``, ``judge``, ``godfather``, ``execute``, ``replace``, ``idle``, ``skip``, ``end``."""

    strikes: LeaveStrikes
    idle_watch: IdleWatch

    @HOST.command(
        name=key_str("cmd.host.next.name"),
        description=key_str("cmd.host.next.description"),
    )
    @app_commands.rename(from_stage=key_str("opt.from_stage.name"))
    @app_commands.describe(from_stage=key_str("opt.from_stage.description"))
    async def next(
        self,
        interaction: discord.Interaction,
        from_stage: app_commands.Range[str, 1, 40] | None = None,
    ) -> None:
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
    async def _next_stages(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        if interaction.guild_id is None:
            return []
        live = await self.bot.service.open_game(interaction.guild_id)
        if (
            live is None
            or live.game is None
            or live.game.over
            or live.game.stage is Stage.EXECUTION
        ):
            return []
        role = await self.bot.storage.guild_host_role(live.record.guild_id)
        if not is_host(self.bot, live, interaction.user, role):
            return []
        key = live.stage_key()
        assert key is not None
        label = phrase(
            live,
            f"host.next_choice.{live.game.stage.value}",
            phase=phase_text(live, str(live.game.phase)),
        )
        return [app_commands.Choice(name=clip(label, 100), value=key)]

    @HOST.command(
        name=key_str("cmd.host.kill.name"),
        description=key_str("cmd.host.kill.description"),
    )
    @app_commands.rename(player=PLAYER)
    @app_commands.describe(player=PLAYER_DESCRIPTION)
    async def kill(self, interaction: discord.Interaction, player: str) -> None:
        live = await self._host_game(interaction)
        target = resolve_player(live, player)
        assert live.game is not None
        live.game.check(ProcuratorKill(target))
        self._held_without_powers(live)  # refused now, not after the confirmation
        await self._ask(
            interaction, live, "kill", target, phrase(live, "confirm.kill", player=mention(target))
        )

    @kill.autocomplete("player")
    async def _kill_targets(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return await self._host_targets(interaction, "kill", current)

    @HOST.command(
        name=key_str("cmd.host.judge.name"),
        description=key_str("cmd.host.judge.description"),
    )
    @app_commands.rename(player=PLAYER)
    @app_commands.describe(player=PLAYER_DESCRIPTION)
    async def judge(self, interaction: discord.Interaction, player: str) -> None:
        live = await self._host_game(interaction)
        await self._apply(interaction, live, AppointJudge(resolve_player(live, player)))

    @judge.autocomplete("player")
    async def _judge_targets(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return await self._host_targets(interaction, "judge", current)

    @HOST.command(
        name=key_str("cmd.host.godfather.name"),
        description=key_str("cmd.host.godfather.description"),
    )
    @app_commands.rename(player=PLAYER)
    @app_commands.describe(player=PLAYER_DESCRIPTION)
    async def godfather(self, interaction: discord.Interaction, player: str) -> None:
        live = await self._host_game(interaction)
        await self._apply(interaction, live, AppointGodfather(resolve_player(live, player)))

    @godfather.autocomplete("player")
    async def _godfather_targets(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return await self._host_targets(interaction, "godfather", current)

    @HOST.command(
        name=key_str("cmd.host.execute.name"),
        description=key_str("cmd.host.execute.description"),
    )
    @app_commands.rename(player=PLAYER)
    @app_commands.describe(player=PLAYER_DESCRIPTION)
    async def execute(self, interaction: discord.Interaction, player: str) -> None:
        live = await self._host_game(interaction)
        await self._apply(
            interaction,
            live,
            Execute(resolve_player(live, player)),
            seen=self._stage_move(interaction),
        )

    @execute.autocomplete("player")
    async def _execute_targets(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return await self._host_targets(interaction, "execute", current)

    @HOST.command(
        name=key_str("cmd.host.replace.name"),
        description=key_str("cmd.host.replace.description"),
    )
    @app_commands.rename(old=key_str("opt.old.name"), new=key_str("opt.new.name"))
    @app_commands.describe(
        old=key_str("opt.old.description"),
        new=key_str("opt.new.description"),
    )
    async def replace(
        self, interaction: discord.Interaction, old: str, new: discord.Member
    ) -> None:
        live = await self._host_game(interaction)
        leaving = resolve_player(live, old)
        self._held_without_powers(live)
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
            return items + replaced_items(
                live, leaving, str(new.id), name=name, quiet=quiet, exposed=exposed
            )

        applied = await self.bot.service.apply(
            live.id,
            Replace(leaving, str(new.id)),
            source="host",
            interaction_id=interaction.id,
            answer=InteractionAnswer(interaction),
            after=after,
        )
        if applied.duplicate and not interaction.response.is_done():
            return
        log.info("game %s: %s replaces %s", live.id, new.id, leaving)
        await answer(
            interaction,
            phrase(seen_by(live, interaction), "host.replaced", old=mention(leaving), new=who),
        )

    @replace.autocomplete("old")
    async def _replace_targets(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return await self._host_targets(interaction, "kill", current)  # the living

    @HOST.command(
        name=key_str("cmd.host.idle.name"),
        description=key_str("cmd.host.idle.description"),
    )
    async def idle(self, interaction: discord.Interaction) -> None:
        """Each living player's days in a row without a move the city saw: the very count the
        idle strike-out (``/host setup idle_strike``) warns and strikes by."""
        live = await self._host_game(interaction)
        async with self.bot.service.lock(live.id):  # the log and the game as of one moment
            quiet = await idle_streaks(self.bot.storage, live)
        reader = seen_by(live, interaction)
        lines = [phrase(reader, "host.idle.title")]
        for player, days in sorted(quiet.items(), key=lambda row: -row[1]):
            lines.append(phrase(reader, "host.idle.row", player=mention(player), days=days))
        if len(lines) == 1:
            lines.append(phrase(reader, "host.idle.none"))
        limit = idle_strike(live)
        lines.append(
            phrase(reader, "host.idle.limit", count=limit)
            if limit
            else phrase(reader, "host.idle.off")
        )
        await answer_lines(interaction, lines)

    @HOST.command(
        name=key_str("cmd.host.skip.name"),
        description=key_str("cmd.host.skip.description"),
    )
    async def skip(self, interaction: discord.Interaction) -> None:
        skip = self.bot.wired.skip_last_word
        if skip is None:
            raise UserError("error.no_recording")
        await skip(interaction)

    @HOST.command(
        name=key_str("cmd.host.end.name"),
        description=key_str("cmd.host.end.description"),
    )
    async def end(self, interaction: discord.Interaction) -> None:
        live = await self._host_game(interaction, running=False)
        self._held_without_powers(live)  # the channels could not be closed
        await self._ask(interaction, live, "end", None, phrase(live, "confirm.end"))

    async def _end(self, interaction: discord.Interaction, live: LiveGame) -> None:
        """End the game (confirmed): a game being started is rolled back, a running one summed up
        in its channels, which turn read-only (or are deleted)."""
        if live.record.state == GameState.STARTING:
            # being started: what was made is removed (a rollback), then the game is cancelled
            provision = live.record.lobby.get("provision") or {}
            if provision.get("state") != "rollback":
                await self._rollback(live, {}, target="cancelled")
            await settle(interaction, phrase(seen_by(live, interaction), "host.ended_reply"))
            return

        # a broken game is closed like any other: its channels locked (or deleted) as at an end,
        # with the last state its log still gives for who sits in which mafia room
        known = live.game if live.broken is None else await self._last_known_game(live)

        def change(live: LiveGame) -> list[OutboxItem]:
            items: list[OutboxItem] = []
            game = live.game if live.broken is None else known
            live.record.state = GameState.CANCELLED
            live.record.deadline = None
            if live.broken is not None and live.record.channels.get("roles"):
                for channel_id in closing_channels(live):
                    message = {"content": phrase(live, "host.ended"), "allowed_mentions": NO_PINGS}
                    items.append(Send(message, channel=channel_id).item())
                items.extend(closing_items(live, game))
            elif game is not None and live.record.channels:
                blocks = summary_blocks(live, game)
                blocks[0][:0] = [phrase(live, "host.ended")]
                parts = [blocks, [[line] for line in vote_summary_lines(live)]]
                for channel_id in closing_channels(live):
                    for chunk in block_sections(parts):
                        message = {"content": chunk, "allowed_mentions": NO_PINGS}
                        items.append(Send(message, channel=channel_id).item())
                items.extend(closing_items(live, game))
            items.extend(lobby_edit(live))
            return items

        if not await self.bot.service.update(live.id, change, interaction_id=interaction.id):
            return  # delivered twice: done and answered the first time
        await settle(interaction, phrase(seen_by(live, interaction), "host.ended_reply"))

    async def _ask(
        self,
        interaction: discord.Interaction,
        live: LiveGame,
        action: str,
        target: str | None,
        question: str,
    ) -> None:
        """Answer privately with the question and "Yes"/"No" buttons: the act happens only on
        "Yes", pressed within :data:`CONFIRM_SECONDS` while the game is at the stage it was at."""
        issued = interaction.created_at.timestamp()
        custom_id = f"mafia:confirm:{live.id}:{action}:{int(issued * 1000)}" + (
            f":{target}" if target else ""
        )
        view = discord.ui.View(timeout=None)
        view.add_item(
            ConfirmButton(
                discord.ui.Button(
                    style=discord.ButtonStyle.danger,
                    custom_id=custom_id,
                    label=phrase(live, "confirm.yes"),
                ),
                [],
            )
        )
        view.add_item(
            CancelButton(
                discord.ui.Button(
                    style=discord.ButtonStyle.secondary,
                    custom_id=f"mafia:cancel:{live.id}",
                    label=phrase(live, "confirm.no"),
                ),
                [],
            )
        )
        text = phrase(
            live,
            "confirm.question",
            question=question,
            until=f"<t:{int(issued + CONFIRM_SECONDS)}:R>",
        )
        await interaction.response.send_message(
            text, view=view, ephemeral=True, allowed_mentions=discord.AllowedMentions.none()
        )

    async def _confirmed(self, interaction: discord.Interaction, parts: list[str]) -> None:
        """ "Yes" pressed: refused if it is not this guild's open game's, stale, or the game
        left the stage it was asked in; else the act."""
        game_id, action, issued = int(parts[0]), parts[1], int(parts[2]) / 1000
        live = (
            await self.bot.service.open_game(interaction.guild_id) if interaction.guild_id else None
        )
        if live is None or live.id != game_id:
            raise UserError("error.stale_button")
        await require_host(self.bot, interaction, live)
        if self.bot.service.wall() - issued > CONFIRM_SECONDS:
            raise UserError("error.confirm_expired")
        self._held_without_powers(live)  # lost since the question was asked
        if action == "end":
            await self._end(interaction, live)
            return
        if len(parts) < 4:
            raise UserError("error.stale_button")
        live = await running_game(self.bot, interaction)
        applied = await self.bot.service.apply(
            live.id,
            ProcuratorKill(parts[3]),
            source="host",
            interaction_id=interaction.id,
            seen=Seen(at=issued),
            answer=InteractionAnswer(interaction),
        )
        if applied.duplicate and not interaction.response.is_done():
            return
        reader, target = seen_by(live, interaction), parts[3]
        if self.bot.powers.refusal(live) is not None:  # carried out once the power is back
            await settle(interaction, self._done_text(reader))
            return
        assert live.game is not None
        status = status_text(reader, live.game.status_of(target).value)
        await settle(
            interaction, phrase(reader, "host.killed", player=mention(target), status=status)
        )

    async def _cancelled(self, interaction: discord.Interaction, parts: list[str]) -> None:
        """ "No" pressed: nothing happens; the question is replaced by "cancelled". Only by one
        who may host this guild's open game: anybody else (a crafted id on another message) is
        refused before anything is edited."""
        live = (
            await self.bot.service.open_game(interaction.guild_id) if interaction.guild_id else None
        )
        if live is None or not parts or str(live.id) != parts[0]:
            raise UserError("error.stale_button")
        await require_host(self.bot, interaction, live)
        await settle(interaction, phrase(seen_by(live, interaction), "confirm.cancelled"))

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
