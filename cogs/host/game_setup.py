"""The lobby's setup: ``/host setup`` (cities, roles, rules, house rules), the server's presets
of settings, and the touring order."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import discord
from discord import app_commands

from bot.errors import UserError
from bot.i18n import key_str
from bot.limits import CITIES, CITY_NAME, clip
from bot.service import LiveGame
from bot.storage import GameRecord, GameState, OutboxItem
from bot.storage.shapes import as_json
from cogs import presets
from cogs.common import (
    answer,
    phrase,
    seen_by,
)
from cogs.host.common import (
    HOST,
    PRESET,
    HostBase,
    _choice,
    check_city_names,
    duration_or_off,
    split_names,
)
from cogs.idle import MOST_DAYS
from cogs.lobby import lobby_cities, lobby_edit, lobby_payload
from cogs.presets import NAME_LENGTH as PRESET_NAME
from cogs.spectators import MODES as SPECTATOR_MODES
from cogs.will import LONGEST as WILL_LONGEST
from rules import (
    RuleOptions,
    SetTouringOrder,
)
from rules.table import ROLE_OPTIONS, SWITCHABLE

log = logging.getLogger(__name__)
Callback = TypeVar("Callback", bound=Callable[..., Any])


def role_switches(setup: Callback) -> Callback:
    """``/host setup`` with an on/off option for each switchable role (named after its status,
    after ``mafiosi``), which its callback takes as keyword arguments: discord.py reads the
    options from the callback's signature, so the roles' are put in it."""
    signature = inspect.signature(setup)
    params = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    at = [p.name for p in params].index("mafiosi") + 1
    switches = [
        inspect.Parameter(
            status.value,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=None,
            annotation=bool | None,
        )
        for status in SWITCHABLE
    ]
    setup.__signature__ = signature.replace(parameters=[*params[:at], *switches, *params[at:]])  # type: ignore[attr-defined]
    return setup


def role_options(setup: Callback) -> Callback:
    """``/host setup`` with the roles' rule options (:data:`rules.table.ROLE_OPTIONS`, after
    ``day_fallback``, in the roles' order): on/off, or a choice of values; its callback takes
    them as keyword arguments, as :func:`role_switches` puts the roles' switches."""
    signature = inspect.signature(setup)
    params = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    at = [p.name for p in params].index("day_fallback") + 1
    options = [
        inspect.Parameter(
            option.name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=None,
            annotation=str | None if option.choices else bool | None,
        )
        for option in ROLE_OPTIONS
    ]
    setup.__signature__ = signature.replace(parameters=[*params[:at], *options, *params[at:]])  # type: ignore[attr-defined]
    return setup


class HostSetup(HostBase):
    """``/host setup``, ``preset``, ``touring``."""

    # mypy matches no ParamSpec to a callback with ``**roles`` (the roles' switches and options)
    @HOST.command(  # type: ignore[arg-type]
        name=key_str("cmd.host.setup.name"),
        description=key_str("cmd.host.setup.description"),
    )
    @app_commands.rename(
        cities=key_str("opt.cities.name"),
        mafiosi=key_str("opt.mafiosi.name"),
        **{status.value: key_str(f"opt.{status.value}.name") for status in SWITCHABLE},
        first_phase=key_str("opt.first_phase.name"),
        day_fallback=key_str("opt.day_fallback.name"),
        **{option.name: key_str(f"opt.{option.name}.name") for option in ROLE_OPTIONS},
        last_word_seconds=key_str("opt.last_word_seconds.name"),
        pings=key_str("opt.pings.name"),
        reveal=key_str("opt.reveal.name"),
        leave_strike=key_str("opt.leave_strike.name"),
        spectators=key_str("opt.spectators.name"),
        archive=key_str("opt.archive.name"),
        idle_strike=key_str("opt.idle_strike.name"),
        will=key_str("opt.will.name"),
        preset=key_str("opt.preset.name"),
        quiet_nights=key_str("opt.quiet_nights.name"),
    )
    @app_commands.describe(
        cities=key_str("opt.cities.description"),
        mafiosi=key_str("opt.mafiosi.description"),
        **{status.value: key_str(f"opt.{status.value}.description") for status in SWITCHABLE},
        first_phase=key_str("opt.first_phase.description"),
        day_fallback=key_str("opt.day_fallback.description"),
        **{option.name: key_str(f"opt.{option.name}.description") for option in ROLE_OPTIONS},
        last_word_seconds=key_str("opt.last_word_seconds.description"),
        pings=key_str("opt.pings.description"),
        reveal=key_str("opt.reveal.description"),
        leave_strike=key_str("opt.leave_strike.description"),
        spectators=key_str("opt.spectators.description"),
        archive=key_str("opt.archive.description"),
        idle_strike=key_str("opt.idle_strike.description"),
        will=key_str("opt.will.description"),
        preset=key_str("opt.preset.description"),
        quiet_nights=key_str("opt.quiet_nights.description"),
    )
    @app_commands.choices(
        first_phase=[_choice("day", "choice.day"), _choice("night", "choice.night")],
        day_fallback=[_choice("random", "choice.random"), _choice("host", "choice.host")],
        **{
            option.name: [_choice(value, f"choice.{value}") for value in option.choices]
            for option in ROLE_OPTIONS
            if option.choices
        },
        spectators=[
            _choice("on", "choice.on"),
            _choice("off", "choice.off"),
            _choice("after", "choice.after"),
        ],
    )
    @role_options
    @role_switches
    async def setup(
        self,
        interaction: discord.Interaction,
        cities: app_commands.Range[str, 1, CITIES * (CITY_NAME + 2)] | None = None,
        mafiosi: app_commands.Range[int, 1, 50] | None = None,
        first_phase: str | None = None,
        day_fallback: str | None = None,
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
        **roles: bool | str | None,
    ) -> None:
        options = {option.name: roles.pop(option.name, None) for option in ROLE_OPTIONS}
        live = await self._settings_game(interaction)
        chosen = await self._preset(live, preset) if preset is not None else None
        strike = None if leave_strike is None else duration_or_off(leave_strike)
        archive_after = None if archive is None else duration_or_off(archive)
        lobby_only(live.record)
        wanted = SetupChange(
            chosen,
            checked_cities(cities),
            given(mafiosi=mafiosi, **roles),
            checked_rules(
                given(
                    first_phase=first_phase,
                    day_fallback=day_fallback,
                    **options,
                    last_word_seconds=last_word_seconds,
                )
            ),
            checked_house(
                given(
                    pings=pings,
                    reveal=reveal,
                    leave_strike=strike,
                    spectators=spectators,
                    archive_after=archive_after,
                    idle_strike=idle_strike,
                    will=will,
                    quiet_nights=quiet_nights,
                )
            ),
        )
        if not await self._update(interaction, live, wanted.apply):
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
        name=key_str("cmd.host.preset.save.name"),
        description=key_str("cmd.host.preset.save.description"),
    )
    @app_commands.rename(name=key_str("opt.preset_name.name"))
    @app_commands.describe(name=key_str("opt.preset_name.description"))
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
        await answer(
            interaction, phrase(seen_by(live, interaction), "host.preset_saved", name=name)
        )

    @PRESET.command(
        name=key_str("cmd.host.preset.delete.name"),
        description=key_str("cmd.host.preset.delete.description"),
    )
    @app_commands.rename(name=key_str("opt.preset_name.name"))
    @app_commands.describe(name=key_str("opt.preset_name.description"))
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
        await answer(
            interaction,
            phrase(seen_by(live, interaction), "host.preset_deleted", name=" ".join(name.split())),
        )

    @preset_delete.autocomplete("name")
    async def _saved_presets(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return await self._preset_choices(interaction, current, builtin=False)

    @HOST.command(
        name=key_str("cmd.host.touring.name"),
        description=key_str("cmd.host.touring.description"),
    )
    @app_commands.rename(order=key_str("opt.order.name"))
    @app_commands.describe(order=key_str("opt.order.description"))
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
            lobby_only(live.record)  # it may have started while this waited for the lock
            known = lobby_cities(live)
            unknown = [name for name in names if name not in known]
            if not names or unknown:
                raise UserError("error.unknown_city", city=clip(", ".join(unknown), 200) or "—")
            live.record.lobby.setdefault("rules", {})["touring_order"] = names
            return []

        if not await self._update(interaction, live, change):
            return  # delivered twice: done and answered the first time
        await answer(
            interaction, phrase(seen_by(live, interaction), "host.touring", order=", ".join(names))
        )


def lobby_only(record: GameRecord) -> None:
    """Refuse to set up a game that is no longer a lobby.

    Raises:
        UserError: ``error.not_lobby``.
    """
    if record.state != GameState.LOBBY:
        raise UserError("error.not_lobby")


def given(**options: Any) -> dict[str, Any]:
    """The options a command was given, in their order (one left out is None)."""
    return {key: value for key, value in options.items() if value is not None}


def checked_cities(text: str | None) -> list[str] | None:
    """The city names ``/host setup`` was given (None: left out).

    Raises:
        UserError: ``error.bad_cities`` or ``error.city_name_too_long``.
    """
    if text is None:
        return None
    if not 1 <= len(text) <= CITIES * (CITY_NAME + 2):
        raise UserError("error.bad_cities", count=CITIES)
    names = split_names(text)
    check_city_names(names)
    return names


def checked_rules(rules: dict[str, Any]) -> dict[str, Any]:
    """The rule options ``/host setup`` was given, once the rules take them.

    Raises:
        RuleError: an option the rules refuse.
    """
    RuleOptions.from_dict(rules)
    return rules


def checked_house(house: dict[str, Any]) -> dict[str, Any]:
    """The house rules ``/host setup`` was given, once each is one the game has.

    Raises:
        UserError: ``error.bad_option`` naming the option.
    """
    spectators, idle_strike, will = (
        house.get("spectators"),
        house.get("idle_strike"),
        house.get("will"),
    )
    if spectators is not None and spectators not in SPECTATOR_MODES:
        raise UserError("error.bad_option", option="spectators", value=repr(spectators)[:40])
    if idle_strike is not None and not 0 <= idle_strike <= MOST_DAYS:
        raise UserError("error.bad_option", option="idle_strike", value=str(idle_strike)[:40])
    if will is not None and not 0 <= will <= WILL_LONGEST:
        raise UserError("error.bad_option", option="will", value=str(will)[:40])
    return house


@dataclass(frozen=True)
class SetupChange:
    """What one ``/host setup`` changes in the lobby, checked before the game's lock and
    stored under it by :meth:`apply`: a preset first, then what the command names."""

    preset: dict[str, Any] | None
    cities: list[str] | None
    roles: dict[str, Any]
    rules: dict[str, Any]
    house: dict[str, Any]

    def apply(self, live: LiveGame) -> list[OutboxItem]:
        """Store the change in the lobby (refused if the game started meanwhile)."""
        lobby = live.record.lobby
        lobby_only(live.record)  # it may have started while this waited for the lock
        if self.preset is not None:
            presets.apply_preset(lobby, self.preset["settings"])
            lobby["preset"] = self.preset
        setup = lobby.setdefault("setup", {})
        if self.cities is not None:
            setup["cities"] = self.cities
            lobby.get("rules", {}).pop("touring_order", None)
        setup.update(self.roles)
        lobby.setdefault("rules", {}).update(self.rules)
        as_json(lobby).update(self.house)
        return lobby_edit(live)
