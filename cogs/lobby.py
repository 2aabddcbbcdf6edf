"""``/mafia``: open a lobby, join and leave it, see the game and one's own status.

The lobby message is an outbox item committed with the game itself (its
reference is stored when Discord accepts it), and ``/mafia new`` is answered
privately: a crash at any moment leaves either no game or a game whose lobby
message is posted, once, and edited as players join. Joining and leaving
check the lobby under the game's lock, so a join that meets a start is
refused rather than left out of the deal.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.channels import exposure
from bot.errors import UserError
from bot.footprint import quiet_items
from bot.footprint.room import ROLE_CAP, no_swap_room, wish
from bot.i18n import NO_PINGS, key_str, mention, phrase, t
from bot.outbox.intents import Send
from bot.service import GameBroken, LiveGame
from bot.storage import GameExists, GameState, OutboxItem
from bot.storage.shapes import Lobby
from bot.wiring import Hooks
from cogs import spectators
from cogs.common import (
    InteractionAnswer,
    answer,
    answer_lines,
    cohosts,
    guild_game,
    is_host,
    player_of,
    plays_in,
    running_game,
    seen_by,
    status_text,
)
from cogs.lobby_message import lobby_cities, lobby_edit, lobby_payload, lobby_post
from cogs.mentions import command
from cogs.render import deadline_text, moment_text, note_lines, winner_text
from cogs.scheduled import next_scheduled, scheduled_line

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

log = logging.getLogger(__name__)

MAX_PLAYERS = 200


async def may_host(bot: ProkuratorBot, member: discord.abc.User, guild_id: int) -> bool:
    """Whether a member may open a game: Manage Server, or the server's host role."""
    if isinstance(member, discord.Member) and member.guild_permissions.manage_guild:
        return True
    role_id = await bot.storage.guild_host_role(guild_id)
    roles = getattr(member, "roles", [])
    if role_id is not None and any(role.id == role_id for role in roles):
        return True
    name = bot.config.host_role
    return name is not None and any(role.name == name for role in roles)


def new_lobby(bot: ProkuratorBot, channel_id: int | None) -> Lobby:
    """A fresh lobby's record, posted in ``channel_id``."""
    config = bot.config
    return {
        "players": [],
        "channel_id": channel_id,
        "setup": {},
        "rules": {},
        "timers": {},
        "everyone_reads": config.channels.everyone_reads,
        "at_end": config.channels.at_end,
    }


def log_items(live: LiveGame, line: str) -> list[OutboxItem]:
    """One line in the host's log (nothing before the game has channels)."""
    channel = live.record.channels.get("log")
    if channel is None:
        return []
    return [Send({"content": line, "allowed_mentions": NO_PINGS}, channel=channel).item()]


def leave_strike(live: LiveGame, default: int) -> int:
    """Seconds after a player leaves before the Procurator strikes him out (0: never)."""
    value = live.record.lobby.get("leave_strike")
    return int(default if value is None else value)


def mark_leaving(
    live: LiveGame, player: str, *, now: float, strike: int, reason: str
) -> list[OutboxItem]:
    """A living player leaves the running game (``reason``: ``left`` by ``/mafia leave``,
    ``server``: he left the server): stored with when he is struck out (if ever), and the host
    told in his log. Nobody else is told: a strike is a death, announced as the rules say.

    Raises:
        UserError: he is dead already, or leaving already.
    """
    game = live.game
    assert game is not None
    if not game.is_alive(player):
        raise UserError("error.leave_dead")
    leaving = live.record.lobby.setdefault("leaving", {})
    if player in leaving:
        raise UserError("error.already_leaving")
    leaving[player] = now + strike if strike > 0 else None
    tools = {
        "replace": command(live.language, "host replace"),
        "kill": command(live.language, "host kill"),
    }
    then = (
        phrase(live, "log.strike_at", when=f"<t:{int(now + strike)}:R>", **tools)
        if strike > 0
        else phrase(live, "log.strike_off", **tools)
    )
    line = phrase(live, f"log.left_{reason}", player=mention(player), then=then)
    return log_items(live, line)


def status_lines(live: LiveGame, viewer: str | None) -> list[str]:
    """What anyone may know about the game now (no secret ever)."""
    record = live.record
    lines = [phrase(live, "status.title", game=live.id, host=mention(str(record.host_id)))]
    game = live.game
    if game is None:
        lines.append(phrase(live, "status.lobby", count=len(record.lobby.get("players", []))))
        return lines
    if game.over:
        winners = ", ".join(winner_text(live, w) for w in game.winners())
        lines.append(phrase(live, "status.over", winners=winners or phrase(live, "winners.none")))
    else:
        lines.append(
            phrase(live, "status.phase", moment=moment_text(live), deadline=deadline_text(live))
        )
        lines.append(phrase(live, "status.touring", city=game.touring_city()))
    for city in game.cities:
        alive = game.alive(city)
        lines.append(
            phrase(
                live,
                "status.city",
                city=city,
                count=len(alive),
                players=", ".join(mention(p) for p in alive) or "—",
            )
        )
        if city in game.decided:
            lines.append(phrase(live, f"decided.{game.decided[city].value}", city=city))
        judge = game.judge_of(city)
        if judge:
            lines.append(phrase(live, "judge", city=city, player=mention(judge)))
        counts = game.vote_counts(city)
        if counts and not game.over and game.stage.value != "night":
            rows = ", ".join(f"{mention(name)} — {votes}" for name, votes in counts)
            lines.append(phrase(live, "status.nominees", rows=rows))
    if game.deaths:
        dead = ", ".join(
            f"{mention(d.player)} ({status_text(live, d.status.value)})" for d in game.deaths
        )
        lines.append(phrase(live, "status.dead", players=dead))
    return lines


def role_lines(live: LiveGame, player: str) -> list[str]:
    """A player's private view: his status and city, for a member of the mafia his mafia."""
    game = live.game
    assert game is not None
    status = game.status_of(player)
    city = game.city_of(player)
    lines = [phrase(live, "role.status", status=status_text(live, status.value), city=city)]
    if not game.is_alive(player):
        lines.append(phrase(live, "role.dead"))
    lines.append(phrase(live, f"role.help.{status.value}"))
    lines.extend(note_lines(live, player))
    if status.in_mafia:
        mafia = ", ".join(mention(p) for p in game.living_mafiosi(city))
        godfather = game.godfather_of(city)
        lines.append(
            phrase(
                live,
                "role.mafia",
                players=mafia,
                godfather=mention(godfather) if godfather else phrase(live, "role.no_godfather"),
            )
        )
        places = live.record.channels.get("cities", {}).get(city)
        room = places["mafia"] if places is not None else None
        if room is not None and game.is_alive(player):
            lines.append(phrase(live, "role.room", room=f"<#{room}>"))
    return lines


class LobbyCog(commands.Cog):
    """``/mafia new|status|me|notify|join|leave`` and the lobby's buttons."""

    mafia = app_commands.Group(
        name=key_str("cmd.mafia.name"),
        description=key_str("cmd.mafia.description"),
        guild_only=True,
    )

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot

    def hooks(self) -> Hooks:
        """The lobby's Join and Leave buttons, and "My status" under each city's welcome."""
        return Hooks(
            components={
                "join": self._join_button,
                "leave": self._leave_button,
                "role": self._role_button,
            }
        )

    async def _may_host(self, interaction: discord.Interaction) -> bool:
        assert interaction.guild_id is not None
        return await may_host(self.bot, interaction.user, interaction.guild_id)

    @mafia.command(
        name=key_str("cmd.mafia.new.name"),
        description=key_str("cmd.mafia.new.description"),
    )
    async def new(self, interaction: discord.Interaction) -> None:
        if interaction.guild_id is None:
            raise UserError("error.guild_only")
        if not await self._may_host(interaction):
            raise UserError("error.not_host")
        permissions = interaction.app_permissions
        if not (permissions.view_channel and permissions.send_messages):
            raise UserError("error.cannot_post_lobby")
        lobby = new_lobby(self.bot, interaction.channel_id)
        try:
            live = await self.bot.service.create(
                interaction.guild_id,
                interaction.user.id,
                lobby,
                interaction_id=interaction.id,
                outbox=lobby_post,
                answer=InteractionAnswer(interaction),
            )
        except GameExists:
            raise UserError("error.game_exists") from None
        log.info(
            "game %s: lobby opened in guild %s by %s",
            live.id,
            interaction.guild_id,
            interaction.user.id,
        )
        await answer(interaction, phrase(seen_by(live, interaction), "lobby.opened", game=live.id))

    @mafia.command(
        name=key_str("cmd.mafia.status.name"),
        description=key_str("cmd.mafia.status.description"),
    )
    async def status(self, interaction: discord.Interaction) -> None:
        if interaction.guild_id is None:
            raise UserError("error.guild_only")
        soon = await next_scheduled(self.bot.storage, interaction.guild_id)
        language = await self.bot.language_for(interaction)
        coming = [scheduled_line(language, soon)] if soon is not None else []
        live = await self.bot.service.open_game(interaction.guild_id)
        if live is None:
            if not coming:
                raise UserError("error.no_game")
            await answer_lines(interaction, [t(language, "error.no_game"), *coming])
            return
        if live.broken is not None:
            raise GameBroken()
        lines = status_lines(seen_by(live, interaction), str(interaction.user.id))
        await answer_lines(interaction, [*lines, *coming])

    @mafia.command(
        name=key_str("cmd.mafia.me.name"),
        description=key_str("cmd.mafia.me.description"),
    )
    async def me(self, interaction: discord.Interaction) -> None:
        await self._send_role(interaction)

    @mafia.command(
        name=key_str("cmd.mafia.notify.name"),
        description=key_str("cmd.mafia.notify.description"),
    )
    @app_commands.rename(state=key_str("opt.notify_state.name"))
    @app_commands.describe(state=key_str("opt.notify_state.description"))
    @app_commands.choices(
        state=[
            app_commands.Choice(name=key_str("choice.on"), value="on"),
            app_commands.Choice(name=key_str("choice.off"), value="off"),
        ]
    )
    async def notify(self, interaction: discord.Interaction, state: str) -> None:
        wants = state == "on"
        user = interaction.user

        def wished(live: LiveGame, quiet: bool) -> list[OutboxItem]:
            wish(live.record.channels, str(user.id), quiet=quiet)
            return []

        live = self.bot.service.game_of_player(user.id)
        if live is not None:
            self.bot.powers.refuse(live)  # his role would change: not while the game stands still
        await self.bot.storage.set_pings(user.id, wants)
        language = await self.bot.language_for(interaction)
        if live is not None and live.game is not None:
            game = live.game
            guild = self.bot.get_guild(live.record.guild_id)
            if no_swap_room(live, str(user.id), guild, wants_pings=wants):
                # make before break: his role stays until the one he would move onto is there
                # (pings off: made once room is freed, bot.footprint.room.RoomWatch)
                await self.bot.service.update(live.id, lambda live: wished(live, not wants))
                text = t(language, f"notify.{state}_no_room", limit=ROLE_CAP)
                await interaction.response.send_message(text, ephemeral=True)
                return
            # while the game's provisioning lane has work (a twin being made), swaps follow it there,
            # so one member's swaps never overtake each other
            busy = bool(await self.bot.storage.pending_outbox(live.id, 1, lane="provision"))

            def change(live: LiveGame) -> list[OutboxItem]:
                wished(live, False)  # what he asks now is done now
                return quiet_items(
                    live,
                    game,
                    str(user.id),
                    wants_pings=wants,
                    lane="provision" if busy else "permissions",
                )

            await self.bot.service.update(live.id, change)
        await interaction.response.send_message(t(language, f"notify.{state}"), ephemeral=True)

    async def _send_role(self, interaction: discord.Interaction) -> None:
        live = await running_game(self.bot, interaction)
        player = player_of(live, interaction)
        await answer_lines(interaction, role_lines(seen_by(live, interaction), player))

    @mafia.command(
        name=key_str("cmd.mafia.join.name"),
        description=key_str("cmd.mafia.join.description"),
    )
    async def join(self, interaction: discord.Interaction) -> None:
        live = await guild_game(self.bot, interaction)
        await self._join(interaction, live)

    @mafia.command(
        name=key_str("cmd.mafia.leave.name"),
        description=key_str("cmd.mafia.leave.description"),
    )
    async def leave(self, interaction: discord.Interaction) -> None:
        if await spectators.is_watching(
            self.bot, interaction
        ):  # a spectator leaves his seat in the stands
            await answer(interaction, await spectators.toggle(self.bot, interaction))
            return
        live = await guild_game(self.bot, interaction)
        await self._leave(interaction, live)

    @mafia.command(
        name=key_str("cmd.mafia.spectate.name"),
        description=key_str("cmd.mafia.spectate.description"),
    )
    async def spectate(self, interaction: discord.Interaction) -> None:
        await answer(interaction, await spectators.toggle(self.bot, interaction))

    async def _join(self, interaction: discord.Interaction, live: LiveGame) -> None:
        user = interaction.user
        if live.broken is not None:
            raise GameBroken()
        if live.record.state == GameState.RUNNING and str(user.id) in live.record.lobby.get(
            "leaving", {}
        ):
            await self._come_back(interaction, live)
            return
        if live.record.state != GameState.LOBBY:
            hosts = user.id == live.record.host_id or user.id in cohosts(live)
            if live.record.state == GameState.RUNNING and not hosts and not plays_in(live, user.id):
                hint = spectators.watch_hint(seen_by(live, interaction), user.id)
                raise UserError("error.join_running", game=live.id, hint=hint)
            raise UserError("error.not_lobby")
        if await self.bot.storage.player_game(user.id) is not None:
            raise UserError("error.in_other_game")  # started here or in another process

        def change(live: LiveGame) -> list[OutboxItem]:
            # under the game's lock: the lobby may have closed while this waited
            if live.record.state != GameState.LOBBY:
                raise UserError("error.not_lobby")
            if user.id == live.record.host_id or user.id in cohosts(live):
                raise UserError(
                    "error.host_cannot_play"
                )  # he would see the log and every mafia room
            if self.bot.service.game_of_player(user.id) is not None:
                raise UserError("error.in_other_game")
            if spectators.is_spectator(live.record, user.id):
                raise UserError("error.spectator_joins")
            players = live.record.lobby["players"]
            if any(p["id"] == user.id for p in players):
                raise UserError("error.already_joined")
            if len(players) >= MAX_PLAYERS:
                raise UserError("error.lobby_full", count=MAX_PLAYERS)
            seen = exposure(user)  # what his server permissions show him of the hidden rooms
            players.append(
                {
                    "id": user.id,
                    "name": getattr(user, "display_name", user.name),
                    **({"exposed": seen} if seen else {}),
                }
            )
            return lobby_edit(live)

        if await self.bot.service.update(
            live.id, change, interaction_id=interaction.id, answer=InteractionAnswer(interaction)
        ):
            await answer(interaction, phrase(seen_by(live, interaction), "lobby.joined"))

    async def _leave(self, interaction: discord.Interaction, live: LiveGame) -> None:
        user = interaction.user
        if live.broken is not None:
            raise GameBroken()
        if live.record.state == GameState.RUNNING:
            await self._leave_game(interaction, live)
            return
        if live.record.state != GameState.LOBBY:
            raise UserError("error.not_lobby")

        def change(live: LiveGame) -> list[OutboxItem]:
            if live.record.state != GameState.LOBBY:
                raise UserError("error.not_lobby")
            players = live.record.lobby["players"]
            if not any(p["id"] == user.id for p in players):
                raise UserError("error.not_joined")
            live.record.lobby["players"] = [p for p in players if p["id"] != user.id]
            return lobby_edit(live)

        if await self.bot.service.update(
            live.id, change, interaction_id=interaction.id, answer=InteractionAnswer(interaction)
        ):
            await answer(interaction, phrase(seen_by(live, interaction), "lobby.left"))

    async def _leave_game(self, interaction: discord.Interaction, live: LiveGame) -> None:
        """``/mafia leave`` during the game: the host is told; with ``leave_strike`` set, the
        Procurator strikes him out after it (``cogs.host.LeaveStrikes``)."""
        player = player_of(live, interaction)
        strike = leave_strike(live, self.bot.config.timers.leave_strike)
        now = self.bot.clock()

        def change(live: LiveGame) -> list[OutboxItem]:
            return mark_leaving(live, player, now=now, strike=strike, reason="left")

        if await self.bot.service.update(
            live.id, change, interaction_id=interaction.id, answer=InteractionAnswer(interaction)
        ):
            log.info(
                "game %s: %s leaves the game (strike in %s s)", live.id, player, strike or "never"
            )
            language = seen_by(live, interaction).language
            join = command(language, "mafia join")
            if strike > 0:
                text = t(
                    language,
                    "lobby.left_game_strike",
                    when=f"<t:{int(now + strike)}:R>",
                    join=join,
                )
            else:
                text = t(language, "lobby.left_game", join=join)
            await answer(interaction, text)

    async def _come_back(self, interaction: discord.Interaction, live: LiveGame) -> None:
        """``/mafia join`` by a player who left the running game: he stays, the strike is off."""
        player = str(interaction.user.id)

        def change(live: LiveGame) -> list[OutboxItem]:
            leaving = live.record.lobby.get("leaving", {})
            if player not in leaving:
                raise UserError("error.not_lobby")
            del leaving[player]
            return log_items(live, phrase(live, "log.back", player=mention(player)))

        if await self.bot.service.update(
            live.id, change, interaction_id=interaction.id, answer=InteractionAnswer(interaction)
        ):
            await answer(interaction, phrase(seen_by(live, interaction), "lobby.back"))

    @commands.Cog.listener()
    async def on_raw_member_remove(self, payload: discord.RawMemberRemoveEvent) -> None:
        """A member left the server (GUILD_MEMBER_REMOVE): out of the lobby he was in, or, a living
        player of the running game, handled as ``/mafia leave``; a spectator no longer watches."""
        try:
            await self._member_gone(payload.guild_id, payload.user.id)
        except UserError as refusal:
            log.info("member %s left guild %s: %s", payload.user.id, payload.guild_id, refusal.key)
        except Exception:
            log.exception("member %s left guild %s: not handled", payload.user.id, payload.guild_id)

    async def _member_gone(self, guild_id: int, user_id: int) -> None:
        live = await self.bot.service.open_game(guild_id)
        if live is None or live.broken is not None:
            return
        player = str(user_id)
        if live.record.state == GameState.LOBBY:

            def drop(live: LiveGame) -> list[OutboxItem]:
                players = live.record.lobby.get("players", [])
                if not any(p["id"] == user_id for p in players):
                    return []
                live.record.lobby["players"] = [p for p in players if p["id"] != user_id]
                return lobby_edit(live)

            await self.bot.service.update(live.id, drop)
            return
        if live.record.state == GameState.RUNNING and spectators.is_spectator(live.record, user_id):

            def unwatch(live: LiveGame) -> list[OutboxItem]:
                record = live.record
                record.channels["watching"] = sorted(spectators.watching(record) - {user_id})
                return []  # his roles left the server with him: nothing to take back

            await self.bot.service.update(live.id, unwatch)
            log.info("game %s: spectator %s left the server", live.id, user_id)
            return
        game = live.game
        if live.record.state != GameState.RUNNING or game is None or player not in game.players:
            return
        if not game.is_alive(player) or player in live.record.lobby.get("leaving", {}):
            return
        strike = leave_strike(live, self.bot.config.timers.leave_strike)
        now = self.bot.clock()
        await self.bot.service.update(
            live.id,
            lambda live: mark_leaving(live, player, now=now, strike=strike, reason="server"),
        )
        log.info("game %s: %s left the server (strike in %s s)", live.id, player, strike or "never")

    async def _game_from_button(
        self, interaction: discord.Interaction, parts: list[str]
    ) -> LiveGame:
        """The guild's open game if the button is one of its own (else it is no longer active)."""
        live = (
            await self.bot.service.open_game(interaction.guild_id) if interaction.guild_id else None
        )
        if live is None or not parts or parts[0] != str(live.id):
            raise UserError("error.stale_button")
        return live

    async def _join_button(self, interaction: discord.Interaction, parts: list[str]) -> None:
        await self._join(interaction, await self._game_from_button(interaction, parts))

    async def _leave_button(self, interaction: discord.Interaction, parts: list[str]) -> None:
        live = await self._game_from_button(interaction, parts)
        if (
            live.record.state != GameState.LOBBY
        ):  # a lobby's button, pressed late: leaving a game takes the command
            raise UserError("error.not_lobby")
        await self._leave(interaction, live)

    async def _role_button(self, interaction: discord.Interaction, parts: list[str]) -> None:
        live = await self._game_from_button(interaction, parts)
        if live.broken is not None:
            raise GameBroken()
        await self._send_role(interaction)


async def setup(bot: ProkuratorBot) -> None:
    """Load the cog."""
    await bot.add_cog(LobbyCog(bot))


__all__ = [
    "LobbyCog",
    "is_host",
    "leave_strike",
    "lobby_cities",
    "lobby_edit",
    "log_items",
    "mark_leaving",
    "may_host",
    "new_lobby",
    "lobby_payload",
    "lobby_post",
    "role_lines",
    "status_lines",
]
