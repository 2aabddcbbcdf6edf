"""The host's settings: the lobby's setup and presets, the touring order, co-hosts, kicks,
and the timers (set, extended, paused, resumed)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands

from bot.errors import UserError
from bot.footprint import (
    cohost_items,
)
from bot.i18n import key_str, mention, phrase
from bot.limits import CITIES, CITY_NAME, clip
from bot.options import duration_text, parse_duration
from bot.service import LiveGame
from bot.storage import GameState, OutboxItem
from cogs import presets
from cogs.common import (
    answer,
    cohosts,
    plays_in,
)
from cogs.idle import MOST_DAYS
from cogs.lobby import lobby_cities, lobby_edit, lobby_payload, log_items
from cogs.mentions import command
from cogs.presets import NAME_LENGTH as PRESET_NAME
from cogs.render import (
    deadline_text,
)
from cogs.spectators import MODES as SPECTATOR_MODES
from cogs.spectators import is_spectator
from cogs.will import LONGEST as WILL_LONGEST
from rules import (
    RuleOptions,
    SetTouringOrder,
)

if TYPE_CHECKING:
    pass

from cogs.host.common import (
    COHOST,
    HOST,
    MAX_COHOSTS,
    MAX_TIMER,
    PRESET,
    TIMED,
    HostBase,
    _choice,
    check_city_names,
    deadline_changed_items,
    duration_or_off,
    split_names,
)

log = logging.getLogger(__name__)


class HostSettings(HostBase):
    """``/host setup``, ``preset``, ``touring``, ``cohost``, ``kick``, ``timer``, ``extend``, ``pause``, ``resume``."""

    @HOST.command(
        name=key_str("setup", "cmd.host.setup.name"),
        description=key_str(
            "Set the cities, roles and rules of the game", "cmd.host.setup.description"
        ),
    )
    @app_commands.rename(
        cities=key_str("cities", "opt.cities.name"),
        mafiosi=key_str("mafiosi", "opt.mafiosi.name"),
        doctor=key_str("doctor", "opt.doctor.name"),
        journalist=key_str("journalist", "opt.journalist.name"),
        maniac=key_str("maniac", "opt.maniac.name"),
        first_phase=key_str("first_phase", "opt.first_phase.name"),
        day_fallback=key_str("day_fallback", "opt.day_fallback.name"),
        doctor_self_protect=key_str("doctor_self_protect", "opt.doctor_self_protect.name"),
        maniac_idle=key_str("maniac_idle", "opt.maniac_idle.name"),
        maniac_wins_if_survives=key_str(
            "maniac_wins_if_survives", "opt.maniac_wins_if_survives.name"
        ),
        last_word_seconds=key_str("last_word_seconds", "opt.last_word_seconds.name"),
        pings=key_str("pings", "opt.pings.name"),
        reveal=key_str("reveal_at_end", "opt.reveal.name"),
        leave_strike=key_str("leave_strike", "opt.leave_strike.name"),
        spectators=key_str("spectators", "opt.spectators.name"),
        archive=key_str("archive_after", "opt.archive.name"),
        idle_strike=key_str("idle_strike", "opt.idle_strike.name"),
        will=key_str("will", "opt.will.name"),
        preset=key_str("preset", "opt.preset.name"),
        quiet_nights=key_str("quiet_nights", "opt.quiet_nights.name"),
    )
    @app_commands.describe(
        cities=key_str("City names, comma separated", "opt.cities.description"),
        mafiosi=key_str("Mafiosi per city (default: a quarter)", "opt.mafiosi.description"),
        doctor=key_str("A doctor in the game", "opt.doctor.description"),
        journalist=key_str("A journalist in the game", "opt.journalist.description"),
        maniac=key_str("A maniac in the game", "opt.maniac.description"),
        first_phase=key_str("The game opens with day or night", "opt.first_phase.description"),
        day_fallback=key_str(
            "Nobody chosen: random or the host names him", "opt.day_fallback.description"
        ),
        doctor_self_protect=key_str(
            "The doctor may protect himself", "opt.doctor_self_protect.description"
        ),
        maniac_idle=key_str(
            "An idle maniac kills at random or nobody", "opt.maniac_idle.description"
        ),
        maniac_wins_if_survives=key_str(
            "A living maniac wins when every city is decided",
            "opt.maniac_wins_if_survives.description",
        ),
        last_word_seconds=key_str(
            "Longest last word, seconds", "opt.last_word_seconds.description"
        ),
        pings=key_str(
            "Ping the living of each city at each phase and reminder (default: yes)",
            "opt.pings.description",
        ),
        reveal=key_str(
            "At the end, every player reads the mafia rooms and the host's log (default: yes)",
            "opt.reveal.description",
        ),
        leave_strike=key_str(
            "Strike out a player who left, after: 10m, 1h... or off (default: off)",
            "opt.leave_strike.description",
        ),
        spectators=key_str(
            "Members who do not play read the city channels: on, off, or after the game "
            "(default: on)",
            "opt.spectators.description",
        ),
        archive=key_str(
            "After the end, the channels become one transcript in the archive channel: 24h... "
            "or off",
            "opt.archive.description",
        ),
        idle_strike=key_str(
            "Days in a row without a public move before a strike-out, with warnings; 0: off "
            "(default)",
            "opt.idle_strike.description",
        ),
        will=key_str(
            "Longest written will, characters, published when its writer dies; 0: off (default)",
            "opt.will.description",
        ),
        preset=key_str(
            "A named set of settings (the other options apply over it)", "opt.preset.description"
        ),
        quiet_nights=key_str(
            "City channels are read-only at night (default: no)", "opt.quiet_nights.description"
        ),
    )
    @app_commands.choices(
        first_phase=[_choice("day", "choice.day"), _choice("night", "choice.night")],
        day_fallback=[_choice("random", "choice.random"), _choice("host", "choice.host")],
        maniac_idle=[_choice("random", "choice.random"), _choice("none", "choice.none")],
        spectators=[
            _choice("on", "choice.on"),
            _choice("off", "choice.off"),
            _choice("after", "choice.after"),
        ],
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
        idle_strike: app_commands.Range[int, 0, MOST_DAYS] | None = None,
        will: app_commands.Range[int, 0, WILL_LONGEST] | None = None,
        preset: app_commands.Range[str, 1, PRESET_NAME] | None = None,
        quiet_nights: bool | None = None,
    ) -> None:
        live = await self._settings_game(interaction)
        chosen = await self._preset(live, preset) if preset is not None else None
        strike = None if leave_strike is None else duration_or_off(leave_strike)
        archive_after = None if archive is None else duration_or_off(archive)
        if live.record.state != GameState.LOBBY:
            raise UserError("error.not_lobby")
        if cities is not None and not 1 <= len(cities) <= CITIES * (CITY_NAME + 2):
            raise UserError("error.bad_cities", count=CITIES)
        names = split_names(cities) if cities is not None else None
        if names is not None:
            check_city_names(names)
        rules = {
            key: value
            for key, value in {
                "first_phase": first_phase,
                "day_fallback": day_fallback,
                "doctor_self_protect": doctor_self_protect,
                "maniac_idle": maniac_idle,
                "maniac_wins_if_survives": maniac_wins_if_survives,
                "last_word_seconds": last_word_seconds,
            }.items()
            if value is not None
        }
        RuleOptions.from_dict(rules)
        if spectators is not None and spectators not in SPECTATOR_MODES:
            raise UserError("error.bad_option", option="spectators", value=repr(spectators)[:40])
        if idle_strike is not None and not 0 <= idle_strike <= MOST_DAYS:
            raise UserError("error.bad_option", option="idle_strike", value=str(idle_strike)[:40])
        if will is not None and not 0 <= will <= WILL_LONGEST:
            raise UserError("error.bad_option", option="will", value=str(will)[:40])

        def change(live: LiveGame) -> list[OutboxItem]:
            if live.record.state != GameState.LOBBY:  # started while this waited for the lock
                raise UserError("error.not_lobby")
            if chosen is not None:
                presets.apply_preset(live.record.lobby, chosen["settings"])
                live.record.lobby["preset"] = chosen
            setup = live.record.lobby.setdefault("setup", {})
            if names is not None:
                setup["cities"] = names
                live.record.lobby.get("rules", {}).pop("touring_order", None)
            for key, value in (
                ("mafiosi", mafiosi),
                ("doctor", doctor),
                ("journalist", journalist),
                ("maniac", maniac),
            ):
                if value is not None:
                    setup[key] = value
            live.record.lobby.setdefault("rules", {}).update(rules)
            for key, value in (
                ("pings", pings),
                ("reveal", reveal),
                ("leave_strike", strike),
                ("spectators", spectators),
                ("archive_after", archive_after),
                ("idle_strike", idle_strike),
                ("will", will),
                ("quiet_nights", quiet_nights),
            ):
                if value is not None:
                    live.record.lobby[key] = value
            return lobby_edit(live)

        if not await self._update(interaction, live, change):
            return  # delivered twice: done and answered the first time
        await answer(interaction, lobby_payload(live)["content"])

    async def _preset(self, live: LiveGame, text: str) -> dict[str, Any]:
        """The preset ``text`` names (built in, or saved by the server), as a lobby stores it.

        Raises:
            UserError: no such preset, or a saved one the rules no longer take.
        """
        key = presets.builtin_key(text)
        if key is not None:
            return presets.chosen_preset(key, key, presets.BUILTIN[key])
        wanted = text.strip().casefold()
        for name, settings in await self.bot.storage.guild_presets(live.record.guild_id):
            if name.casefold() == wanted:
                return presets.chosen_preset(None, name, presets.checked(settings))
        raise UserError("error.no_preset", name=clip(text.strip(), PRESET_NAME) or "—")

    async def _preset_choices(
        self, interaction: discord.Interaction, current: str, *, builtin: bool
    ) -> list[app_commands.Choice[str]]:
        if interaction.guild_id is None:
            return []
        language = await self.bot.language_for(interaction)
        names = [presets.builtin_name(language, key) for key in presets.BUILTIN] if builtin else []
        names += [name for name, _ in await self.bot.storage.guild_presets(interaction.guild_id)]
        wanted = current.strip().casefold()
        return [
            app_commands.Choice(name=name, value=name)
            for name in names
            if wanted in name.casefold()
        ][:25]

    @setup.autocomplete("preset")
    async def _setup_presets(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return await self._preset_choices(interaction, current, builtin=True)

    @PRESET.command(
        name=key_str("save", "cmd.host.preset.save.name"),
        description=key_str(
            "Save this game's roles, rules and house rules under a name",
            "cmd.host.preset.save.description",
        ),
    )
    @app_commands.rename(name=key_str("name", "opt.preset_name.name"))
    @app_commands.describe(name=key_str("The preset's name", "opt.preset_name.description"))
    async def preset_save(
        self, interaction: discord.Interaction, name: app_commands.Range[str, 1, PRESET_NAME]
    ) -> None:
        live = await self._settings_game(interaction)
        name = " ".join(name.split())
        if not 1 <= len(name) <= PRESET_NAME:
            raise UserError("error.bad_preset_name", count=PRESET_NAME)
        if presets.builtin_key(name) is not None:
            raise UserError("error.preset_builtin", name=name)
        settings = presets.settings_of(live.record.lobby)
        saved = await self.bot.storage.save_guild_preset(
            live.record.guild_id,
            name,
            settings,
            saved_by=interaction.user.id,
            now=self.bot.clock(),
            most=presets.MOST_SAVED,
        )
        if not saved:
            raise UserError("error.presets_full", count=presets.MOST_SAVED)
        log.info("guild %s: preset %r saved by %s", live.record.guild_id, name, interaction.user.id)

        def change(live: LiveGame) -> list[OutboxItem]:
            if live.record.state != GameState.LOBBY:
                return []
            live.record.lobby["preset"] = presets.chosen_preset(None, name, settings)
            return lobby_edit(live)

        if not await self._update(interaction, live, change):
            return
        await answer(interaction, phrase(live, "host.preset_saved", name=name))

    @PRESET.command(
        name=key_str("delete", "cmd.host.preset.delete.name"),
        description=key_str(
            "Delete one of this server's presets", "cmd.host.preset.delete.description"
        ),
    )
    @app_commands.rename(name=key_str("name", "opt.preset_name.name"))
    @app_commands.describe(name=key_str("The preset's name", "opt.preset_name.description"))
    async def preset_delete(
        self, interaction: discord.Interaction, name: app_commands.Range[str, 1, PRESET_NAME]
    ) -> None:
        live = await self._settings_game(interaction)
        if not await self.bot.storage.delete_guild_preset(
            live.record.guild_id, " ".join(name.split())
        ):
            raise UserError("error.no_preset", name=clip(name.strip(), PRESET_NAME) or "—")
        log.info(
            "guild %s: preset %r deleted by %s", live.record.guild_id, name, interaction.user.id
        )
        await answer(interaction, phrase(live, "host.preset_deleted", name=" ".join(name.split())))

    @preset_delete.autocomplete("name")
    async def _saved_presets(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return await self._preset_choices(interaction, current, builtin=False)

    @HOST.command(
        name=key_str("touring", "cmd.host.touring.name"),
        description=key_str(
            "Set the touring rotation of the cities", "cmd.host.touring.description"
        ),
    )
    @app_commands.rename(order=key_str("order", "opt.order.name"))
    @app_commands.describe(
        order=key_str("City names in touring order, comma separated", "opt.order.description")
    )
    async def touring(
        self,
        interaction: discord.Interaction,
        order: app_commands.Range[str, 1, CITIES * (CITY_NAME + 2)],
    ) -> None:
        live = await self._settings_game(interaction)
        if not 1 <= len(order) <= CITIES * (CITY_NAME + 2):
            raise UserError("error.unknown_city", city=clip(order, 200) or "—")
        names = split_names(order)
        if live.record.state == GameState.RUNNING:
            await self._apply(interaction, live, SetTouringOrder(tuple(names)))
            return

        def change(live: LiveGame) -> list[OutboxItem]:
            if live.record.state != GameState.LOBBY:  # started while this waited for the lock
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

    @COHOST.command(
        name=key_str("add", "cmd.host.cohost.add.name"),
        description=key_str(
            "Make a member your co-host: he sees the log and the mafia rooms",
            "cmd.host.cohost.add.description",
        ),
    )
    @app_commands.rename(member=key_str("member", "opt.member.name"))
    @app_commands.describe(member=key_str("The member", "opt.member.description"))
    async def cohost_add(self, interaction: discord.Interaction, member: discord.Member) -> None:
        await self._cohost(interaction, member, add=True)

    @COHOST.command(
        name=key_str("remove", "cmd.host.cohost.remove.name"),
        description=key_str("Take a co-host's access back", "cmd.host.cohost.remove.description"),
    )
    @app_commands.rename(member=key_str("member", "opt.member.name"))
    @app_commands.describe(member=key_str("The member", "opt.member.description"))
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
            phrase(live, "host.cohost_added" if add else "host.cohost_removed", member=who),
        )

    @HOST.command(
        name=key_str("kick", "cmd.host.kick.name"),
        description=key_str("Remove a player from the lobby", "cmd.host.kick.description"),
    )
    @app_commands.rename(member=key_str("member", "opt.member.name"))
    @app_commands.describe(member=key_str("The member", "opt.member.description"))
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
                items.append(
                    OutboxItem(
                        "send",
                        {"channel_id": int(channel)},
                        {
                            "content": phrase(
                                live,
                                "lobby.kicked",
                                player=who,
                                join=command(live.language, "mafia join"),
                            ),
                            "allowed_mentions": {"parse": [], "users": [str(member.id)]},
                        },
                    )
                )
            return items

        if not await self._update(interaction, live, change):
            return
        log.info("game %s: %s kicked from the lobby", live.id, member.id)
        await answer(interaction, phrase(live, "host.kicked", player=who))

    @HOST.command(
        name=key_str("timer", "cmd.host.timer.name"),
        description=key_str(
            "Change how long a stage lasts from now on (0: no timer)", "cmd.host.timer.description"
        ),
    )
    @app_commands.rename(
        stage=key_str("stage", "opt.stage.name"), duration=key_str("duration", "opt.duration.name")
    )
    @app_commands.describe(
        stage=key_str("The stage", "opt.stage.description"),
        duration=key_str("90s, 10m, 1h30m or seconds (0: no timer)", "opt.duration.description"),
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
        name=key_str("extend", "cmd.host.extend.name"),
        description=key_str(
            "Give the current stage more time (this stage only)", "cmd.host.extend.description"
        ),
    )
    @app_commands.rename(duration=key_str("duration", "opt.duration.name"))
    @app_commands.describe(
        duration=key_str(
            "How much more: 90s, 10m, 1h30m or seconds", "opt.extend_duration.description"
        )
    )
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
                if paused.get("remaining") is None:
                    raise UserError("error.no_deadline")
                paused["remaining"] = min(MAX_TIMER, float(paused["remaining"]) + seconds)
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
        name=key_str("pause", "cmd.host.pause.name"),
        description=key_str(
            "Stop the clock: the stage waits until you resume", "cmd.host.pause.description"
        ),
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
            interaction, phrase(live, "host.paused", resume=command(live.language, "host resume"))
        )

    @HOST.command(
        name=key_str("resume", "cmd.host.resume.name"),
        description=key_str(
            "Start the clock again where it stopped", "cmd.host.resume.description"
        ),
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
        await answer(interaction, phrase(live, "host.resumed", deadline=deadline_text(live)))
