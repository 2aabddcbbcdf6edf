"""``/host``: the Procurator's tools: set up, start, move the game on, act, end.

Only the game's host, or a member with the host role, may use them.
"""

from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands
from discord.ext import commands

from bot.errors import UserError
from bot.i18n import key_str
from bot.service import LiveGame, command_for_deadline
from bot.storage import OutboxItem
from cogs.channels import (
    city_overwrites,
    dead_overwrites,
    end_of_game_items,
    log_overwrites,
    mafia_overwrites,
    missing_permissions,
    voice_overwrites,
)
from cogs.common import (
    answer_lines,
    guild_game,
    host_choices,
    is_host,
    mention,
    name_of,
    phrase,
    require_host,
    resolve_player,
    running_game,
    status_text,
)
from cogs.limits import CITIES, CITY_NAME, clip
from cogs.lobby import lobby_cities, lobby_edit, lobby_payload
from cogs.render import (
    NO_PINGS,
    ballot_payload,
    ballot_ref,
    chunks,
    closing_channels,
    deadline_text,
    summary_lines,
)
from rules import (
    AppointGodfather,
    AppointJudge,
    Command,
    Execute,
    Game,
    ProcuratorKill,
    RoleCounts,
    RuleError,
    RuleOptions,
    SetTouringOrder,
    Setup,
    Stage,
    command_from_dict,
    deal,
)
from rules.events import PhaseStarted

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

log = logging.getLogger(__name__)

TEXT, VOICE, CATEGORY = 0, 2, 4
PLAYER = key_str("player", "opt.player.name")
PLAYER_DESCRIPTION = key_str("The player", "opt.player.description")


def _choice(value: str, key: str) -> app_commands.Choice[str]:
    return app_commands.Choice(name=key_str(value, key), value=value)


def split_names(text: str) -> list[str]:
    """``"Верона, Падуя"`` → the names, stripped (inner runs of white space and control
    characters become one space), empty ones dropped."""
    names = (" ".join("".join(c if c.isprintable() else " " for c in part).split())
             for part in text.replace(";", ",").split(","))
    return [name for name in names if name]


def check_city_names(names: list[str]) -> None:
    """Refuse a list of cities the game cannot have: none, too many, twice the same, too long.

    Raises:
        UserError: ``error.bad_cities`` or ``error.city_name_too_long`` naming the city.
    """
    if not names or len(names) > CITIES or len({n.casefold() for n in names}) != len(names):
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


def deadline_changed_items(live: LiveGame) -> list[OutboxItem]:
    """The current stage's new end in every living city's channel, and on its ballot while voting."""
    game = live.game
    if game is None or not live.record.channels:
        return []
    line = phrase(live, "host.timer_changed", deadline=deadline_text(live))
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


class HostCog(commands.Cog):
    """The Procurator's commands."""

    host = app_commands.Group(
        name=key_str("host", "cmd.host.name"),
        description=key_str("The Procurator's tools", "cmd.host.description"),
        guild_only=True,
    )

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot

    async def _host_game(self, interaction: discord.Interaction, *, running: bool = True) -> LiveGame:
        live = await (running_game if running else guild_game)(self.bot, interaction)
        await require_host(self.bot, interaction, live)
        return live

    async def _apply(self, interaction: discord.Interaction, live: LiveGame, command: Command) -> None:
        applied = await self.bot.service.apply(
            live.id, command, source="host", interaction_id=interaction.id
        )
        if applied.duplicate:
            return
        key = "host.deferred" if applied.deferred else "host.done"
        await interaction.response.send_message(phrase(live, key), ephemeral=True)

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
    )
    @app_commands.choices(
        first_phase=[_choice("day", "choice.day"), _choice("night", "choice.night")],
        day_fallback=[_choice("random", "choice.random"), _choice("host", "choice.host")],
        maniac_idle=[_choice("random", "choice.random"), _choice("none", "choice.none")],
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
    ) -> None:
        live = await self._host_game(interaction, running=False)
        if live.record.state != "lobby":
            raise UserError("error.not_lobby")
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

        def change(live: LiveGame) -> list[OutboxItem]:
            setup = live.record.lobby.setdefault("setup", {})
            if names is not None:
                setup["cities"] = names
                live.record.lobby.get("rules", {}).pop("touring_order", None)
            for key, value in (("mafiosi", mafiosi), ("doctor", doctor), ("journalist", journalist),
                               ("maniac", maniac)):
                if value is not None:
                    setup[key] = value
            live.record.lobby.setdefault("rules", {}).update(rules)
            return lobby_edit(live)

        if not await self.bot.service.update(live.id, change, interaction_id=interaction.id):
            return  # delivered twice: done and answered the first time
        await interaction.response.send_message(
            lobby_payload(live)["content"], ephemeral=True, allowed_mentions=discord.AllowedMentions.none()
        )

    @host.command(name=key_str("touring", "cmd.host.touring.name"),
                  description=key_str("Set the touring rotation of the cities", "cmd.host.touring.description"))
    @app_commands.rename(order=key_str("order", "opt.order.name"))
    @app_commands.describe(order=key_str("City names in touring order, comma separated", "opt.order.description"))
    async def touring(self, interaction: discord.Interaction,
                      order: app_commands.Range[str, 1, CITIES * (CITY_NAME + 2)]) -> None:
        live = await self._host_game(interaction, running=False)
        names = split_names(order)
        if live.record.state == "running":
            await self._apply(interaction, live, SetTouringOrder(tuple(names)))
            return
        known = lobby_cities(live)
        unknown = [name for name in names if name not in known]
        if not names or unknown:
            raise UserError("error.unknown_city", city=clip(", ".join(unknown), 200) or "—")

        def change(live: LiveGame) -> list[OutboxItem]:
            live.record.lobby.setdefault("rules", {})["touring_order"] = names
            return []

        if not await self.bot.service.update(live.id, change, interaction_id=interaction.id):
            return  # delivered twice: done and answered the first time
        await interaction.response.send_message(phrase(live, "host.touring", order=", ".join(names)), ephemeral=True)

    @host.command(name=key_str("timer", "cmd.host.timer.name"),
                  description=key_str("Change how long a stage lasts (0: no timer)", "cmd.host.timer.description"))
    @app_commands.rename(stage=key_str("stage", "opt.stage.name"), seconds=key_str("seconds", "opt.seconds.name"))
    @app_commands.describe(stage=key_str("The stage", "opt.stage.description"),
                           seconds=key_str("Its length in seconds (0: no timer)", "opt.seconds.description"))
    @app_commands.choices(stage=[_choice("discussion", "choice.discussion"),
                                 _choice("voting", "choice.voting"), _choice("night", "choice.night")])
    async def timer(self, interaction: discord.Interaction, stage: str,
                    seconds: app_commands.Range[int, 0, 604800]) -> None:
        live = await self._host_game(interaction, running=False)

        def change(live: LiveGame) -> list[OutboxItem]:
            live.record.lobby.setdefault("timers", {})[stage] = seconds
            return []

        if not await self.bot.service.update(live.id, change, interaction_id=interaction.id):
            return  # delivered twice: done and answered the first time
        game = live.game
        if game is not None and not game.over and game.stage.value == stage:
            deadline = self.bot.clock() + seconds if seconds > 0 else None
            await self.bot.service.set_deadline(live.id, deadline)
            # the stage's announcement (and ballot) showed the old end: tell the cities the new one
            await self.bot.service.update(live.id, deadline_changed_items)
        await interaction.response.send_message(
            phrase(live, "host.timer", stage=phrase(live, f"stage.{stage}"), seconds=seconds), ephemeral=True
        )

    @host.command(name=key_str("start", "cmd.host.start.name"),
                  description=key_str("Deal the statuses, create the channels, start", "cmd.host.start.description"))
    async def start(self, interaction: discord.Interaction) -> None:
        live = await self._host_game(interaction, running=False)
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
        missing = missing_permissions(guild.me.guild_permissions)
        if missing:
            raise UserError("error.missing_permissions", permissions=", ".join(missing))
        await interaction.response.defer(ephemeral=True, thinking=True)
        game = Game.create(setup, seed)
        try:
            channels = await self._provision(guild, live, game)
        except discord.Forbidden:
            await interaction.followup.send(
                phrase(live, "error.missing_permissions", permissions=", ".join(
                    missing_permissions(guild.me.guild_permissions)) or "Manage Channels"), ephemeral=True)
            return

        def prepare(live: LiveGame) -> list[OutboxItem]:
            live.record.channels = channels
            return self._welcome(live)

        await self.bot.service.start(live.id, setup, seed, prepare=prepare, interaction_id=interaction.id)
        log.info("game %s started: %d players in %s", live.id, len(players), cities)
        await interaction.followup.send(phrase(live, "host.started"), ephemeral=True)

    async def _provision(self, guild: discord.Guild, live: LiveGame, game: Game) -> dict[str, Any]:
        """Create the category and channels with their overwrites; undo all on failure."""
        http = self.bot.http
        ids = {"host_id": live.record.host_id, "bot_id": self.bot.user.id if self.bot.user else 0,
               "guild_id": guild.id}
        everyone_reads = bool(live.record.lobby.get("everyone_reads", True))
        created: list[int] = []

        async def make(kind: int, name: str, overwrites: list[Any], parent: int | None = None) -> int:
            fields: dict[str, Any] = {"permission_overwrites": [o.to_dict() for o in overwrites]}
            if parent is not None:
                fields["parent_id"] = str(parent)
            data = await http.create_channel(guild.id, kind, name=name[:100],
                                             reason=f"Mafia game {live.id}", **fields)
            created.append(int(data["id"]))
            return int(data["id"])

        try:
            category = await make(CATEGORY, phrase(live, "channel.category", game=live.id),
                                  log_overwrites(**ids))
            cities: dict[str, dict[str, int]] = {}
            for city in game.cities:
                text = await make(TEXT, phrase(live, "channel.city", city=city),
                                  city_overwrites(game, city, everyone_reads=everyone_reads, **ids), category)
                mafia = await make(TEXT, phrase(live, "channel.mafia", city=city),
                                   mafia_overwrites(game, city, **ids), category)
                cities[city] = {"text": text, "mafia": mafia}
            voice = await make(VOICE, phrase(live, "channel.voice"), voice_overwrites(game, **ids), category)
            dead = await make(TEXT, phrase(live, "channel.dead"), dead_overwrites(game, **ids), category)
            host_log = await make(TEXT, phrase(live, "channel.log"), log_overwrites(**ids), category)
        except discord.HTTPException:
            log.warning("game %s: channel provisioning failed; removing %d created channel(s)", live.id, len(created))
            for channel_id in reversed(created):
                try:
                    await http.delete_channel(channel_id)
                except discord.HTTPException:
                    log.warning("could not delete channel %s", channel_id)
            raise
        return {"category": category, "cities": cities, "voice": voice, "dead": dead, "log": host_log,
                "everyone_reads": everyone_reads}

    def _welcome(self, live: LiveGame) -> list[OutboxItem]:
        """The first messages: residents per city with a "my status" button, the deal in the log."""
        game = live.game
        assert game is not None
        channels = live.record.channels
        items: list[OutboxItem] = []
        role_button = [{"type": 1, "components": [{
            "type": 2, "style": 1, "custom_id": f"mafia:role:{live.id}", "label": phrase(live, "welcome.role"),
        }]}]
        for city in game.cities:
            residents = ", ".join(mention(p) for p in game.residents[city])
            text = phrase(live, "welcome.city", city=city, players=residents,
                          touring=", ".join(game.touring_order))
            for index, part in enumerate(chunks([text])):  # the button goes with the first part
                payload: dict[str, Any] = {"content": part, "allowed_mentions": NO_PINGS}
                if index == 0:
                    payload["components"] = role_button
                items.append(OutboxItem("send", {"channel_id": channels["cities"][city]["text"]}, payload))
            mafia = ", ".join(mention(p) for p in game.living_mafiosi(city))
            for part in chunks([phrase(live, "welcome.mafia", city=city, players=mafia)]):
                items.append(OutboxItem("send", {"channel_id": channels["cities"][city]["mafia"]},
                                        {"content": part, "allowed_mentions": NO_PINGS}))
        deal_lines = [phrase(live, "log.deal", seed=game.seed)]
        for city in game.cities:
            deal_lines.append(phrase(live, "summary.city", city=city))
            for player in game.residents[city]:
                deal_lines.append(f"• {mention(player)} ({name_of(live, player)}) — "
                                  f"{status_text(live, game.status_of(player).value)}")
        for chunk in chunks(deal_lines):
            items.append(OutboxItem("send", {"channel_id": channels["log"]},
                                    {"content": chunk, "allowed_mentions": NO_PINGS}))
        items.extend(lobby_edit(live))
        return items

    # ------------------------------------------------------------------ running

    @host.command(name=key_str("next", "cmd.host.next.name"),
                  description=key_str("Move to the next stage now", "cmd.host.next.description"))
    async def next(self, interaction: discord.Interaction) -> None:
        live = await self._host_game(interaction)
        assert live.game is not None
        if live.game.stage is Stage.EXECUTION:
            raise UserError("error.use_execute")
        command = command_for_deadline(live.game.stage)
        assert command is not None
        await self._apply(interaction, live, command)

    @host.command(name=key_str("kill", "cmd.host.kill.name"),
                  description=key_str("Strike out a player: he dies at once", "cmd.host.kill.description"))
    @app_commands.rename(player=PLAYER)
    @app_commands.describe(player=PLAYER_DESCRIPTION)
    async def kill(self, interaction: discord.Interaction, player: str) -> None:
        live = await self._host_game(interaction)
        await self._apply(interaction, live, ProcuratorKill(resolve_player(live, player)))

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
        await self._apply(interaction, live, Execute(resolve_player(live, player)))

    @execute.autocomplete("player")
    async def _execute_targets(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return await self._host_targets(interaction, "execute", current)

    @host.command(name=key_str("idle", "cmd.host.idle.name"),
                  description=key_str("Who has not acted for how many phases", "cmd.host.idle.description"))
    async def idle(self, interaction: discord.Interaction) -> None:
        live = await self._host_game(interaction)
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
            actor = getattr(command, "actor", None)
            if actor is not None:
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

        def change(live: LiveGame) -> list[OutboxItem]:
            items: list[OutboxItem] = []
            game = live.game
            live.record.state = "cancelled"
            live.record.deadline = None
            if game is not None and live.record.channels:
                lines = [phrase(live, "host.ended")] + summary_lines(live, game)
                for channel_id in closing_channels(live):
                    for chunk in chunks(lines):
                        items.append(OutboxItem("send", {"channel_id": channel_id},
                                                {"content": chunk, "allowed_mentions": NO_PINGS}))
                items.extend(end_of_game_items(live.record.channels, game,
                                               live.record.lobby.get("at_end", "keep")))
            items.extend(lobby_edit(live))
            return items

        if not await self.bot.service.update(live.id, change, interaction_id=interaction.id):
            return  # delivered twice: done and answered the first time
        await interaction.response.send_message(phrase(live, "host.ended_reply"), ephemeral=True)


async def setup(bot: ProkuratorBot) -> None:
    """Load the cog."""
    await bot.add_cog(HostCog(bot))
