"""Small value types of the game: statuses, phases, causes, options, the setup."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import Any

from rules.errors import RuleError


class Status(StrEnum):
    """A player's status (статус): it never changes during a game."""

    CITIZEN = "citizen"
    """Гражданин, «чиж»: honest, votes by day."""
    MAFIOSO = "mafioso"
    """Мафиози, «маф»: his city's mafia; kills at night in his own city."""
    COMMISSAR = "commissar"
    """Комиссар, «ком»: honest; checks one resident of his city each night."""
    DOCTOR = "doctor"
    """Врач: honest; protects one player for the coming night."""
    JOURNALIST = "journalist"
    """Журналист: honest; compares two players' statuses once a day."""
    MANIAC = "maniac"
    """Маньяк: plays for himself; must kill each night."""
    BODYGUARD = "bodyguard"
    """Телохранитель: honest; guards one player a night, and dies in his place."""
    SERGEANT = "sergeant"
    """Сержант: honest; told his commissar's answers, checks once the commissar is dead."""
    LOVER = "lover"
    """Любовница: honest; visits one player a night, who survives it and kills nobody."""

    @property
    def honest(self) -> bool:
        """True for the statuses that make an honest resident."""
        return self not in (Status.MAFIOSO, Status.MANIAC)

    @property
    def in_mafia(self) -> bool:
        """True for the statuses of a city's mafia: its members elect its Godfather among
        them, share its room, choose its kills, and are what a commissar's check finds (a
        Godfather too: positions are not statuses)."""
        return self is Status.MAFIOSO


class PhaseKind(StrEnum):
    """Day or night of the shared clock."""

    DAY = "day"
    """Discussion then voting, ending in executions."""
    NIGHT = "night"
    """Kills, checks, touring; ends at dawn."""


class Stage(StrEnum):
    """Where the game is inside its current phase."""

    DISCUSSION = "discussion"
    """Day: candidates are nominated."""
    VOTING = "voting"
    """Day: residents vote for nominees."""
    EXECUTION = "execution"
    """Day, after its end was called: a city waits for the Procurator's choice."""
    NIGHT = "night"
    """The whole night."""


@dataclass(frozen=True, order=True)
class Phase:
    """A phase of the clock, e.g. ``day 1`` or ``night 2``."""

    kind: PhaseKind
    number: int

    def __str__(self) -> str:
        return f"{self.kind.value} {self.number}"

    @classmethod
    def parse(cls, text: str) -> Phase:
        """Parse ``"day 1"``; raises ValueError on anything else."""
        kind, number = text.split()
        return cls(PhaseKind(kind), int(number))


class Cause(StrEnum):
    """Why a player died."""

    EXECUTION = "execution"
    """Executed by a city at the end of a day."""
    MAFIA = "mafia"
    """Killed by his own city's mafia at night."""
    TOURING = "touring"
    """Killed by another city's mafia on tour."""
    MANIAC = "maniac"
    """Killed by the maniac."""
    PROCURATOR = "procurator"
    """Struck out by the Procurator."""


class Winner(StrEnum):
    """Who won a decided city."""

    HONEST = "honest"
    """No living mafioso is left in the city."""
    MAFIA = "mafia"
    """The city's living mafiosi are at least as many as its honest residents."""


class AudienceKind(StrEnum):
    """Who may see an event."""

    EVERYONE = "everyone"
    """Every player and spectator."""
    CITY = "city"
    """The residents of one city (its public channel)."""
    MAFIA = "mafia"
    """One city's mafiosi only."""
    PLAYER = "player"
    """One player only."""
    HOST = "host"
    """Only the Procurator (who sees every event anyway)."""


@dataclass(frozen=True)
class Audience:
    """The audience of an event; the Procurator always sees every event."""

    kind: AudienceKind
    city: str | None = None
    player: str | None = None

    @classmethod
    def everyone(cls) -> Audience:
        """Everyone in the game."""
        return cls(AudienceKind.EVERYONE)

    @classmethod
    def of_city(cls, city: str) -> Audience:
        """One city's residents."""
        return cls(AudienceKind.CITY, city=city)

    @classmethod
    def mafia_of(cls, city: str) -> Audience:
        """One city's mafiosi."""
        return cls(AudienceKind.MAFIA, city=city)

    @classmethod
    def only(cls, player: str) -> Audience:
        """One player."""
        return cls(AudienceKind.PLAYER, player=player)

    @classmethod
    def host(cls) -> Audience:
        """The Procurator alone."""
        return cls(AudienceKind.HOST)


class FirstPhase(StrEnum):
    """Option ``first_phase``."""

    DAY = "day"
    """Day 1, Night 1, Day 2, ..."""
    NIGHT = "night"
    """Night 1, Day 1, Night 2, ..."""


class DayFallback(StrEnum):
    """Option ``day_fallback``: what happens when no candidate is chosen."""

    RANDOM = "random"
    """Pick at random among the city's own nominees, else its residents."""
    HOST = "host"
    """Keep the day open until the Procurator names the one to execute."""


class ManiacIdle(StrEnum):
    """Option ``maniac_idle``: a maniac who chose nobody by dawn."""

    RANDOM = "random"
    """A random living player other than himself is his victim."""
    NONE = "none"
    """Nobody dies by his hand that night."""


MAX_LAST_WORD_SECONDS = 180

_BOOL_OPTIONS = ("doctor_self_protect", "maniac_wins_if_survives")


@dataclass(frozen=True)
class RuleOptions:
    """The rule options of RULES.md with their defaults."""

    first_phase: FirstPhase = FirstPhase.DAY
    day_fallback: DayFallback = DayFallback.RANDOM
    doctor_self_protect: bool = True
    maniac_idle: ManiacIdle = ManiacIdle.RANDOM
    maniac_wins_if_survives: bool = False
    touring_order: tuple[str, ...] | None = None
    last_word_seconds: int = MAX_LAST_WORD_SECONDS

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> RuleOptions:
        """Build options from plain data, refusing unknown keys and bad values.

        Raises:
            RuleError: ``bad_option`` naming the option and the value.
        """
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise RuleError("bad_option", option="rules", value=repr(data))
        values: dict[str, Any] = {}
        for key, value in data.items():
            values[str(key)] = _option_value(str(key), value)
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """The options as plain data (the inverse of :meth:`from_dict`)."""
        return {
            "first_phase": self.first_phase.value,
            "day_fallback": self.day_fallback.value,
            "doctor_self_protect": self.doctor_self_protect,
            "maniac_idle": self.maniac_idle.value,
            "maniac_wins_if_survives": self.maniac_wins_if_survives,
            "touring_order": None if self.touring_order is None else list(self.touring_order),
            "last_word_seconds": self.last_word_seconds,
        }


def _option_value(key: str, value: Any) -> Any:
    enums: dict[str, type[Enum]] = {
        "first_phase": FirstPhase,
        "day_fallback": DayFallback,
        "maniac_idle": ManiacIdle,
    }
    if key in enums:
        try:
            return enums[key](value)
        except ValueError:
            raise RuleError("bad_option", option=key, value=repr(value)) from None
    if key in _BOOL_OPTIONS:
        if not isinstance(value, bool):
            raise RuleError("bad_option", option=key, value=repr(value))
        return value
    if key == "touring_order":
        if value is None:
            return None
        if (
            isinstance(value, str)
            or not isinstance(value, Sequence)
            or not value
            or not all(isinstance(name, str) for name in value)
        ):
            raise RuleError("bad_option", option=key, value=repr(value))
        return tuple(value)
    if key == "last_word_seconds":
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 180:
            raise RuleError("bad_option", option=key, value=repr(value))
        return value
    raise RuleError("bad_option", option=key, value=repr(value))


@dataclass(frozen=True)
class CitySetup:
    """One city as dealt: its name and its residents in order."""

    name: str
    residents: tuple[tuple[str, Status], ...]


@dataclass(frozen=True)
class Setup:
    """Everything a game starts from (with the seed): cities, residents, options."""

    cities: tuple[CitySetup, ...]
    options: RuleOptions = field(default_factory=RuleOptions)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Setup:
        """Build a setup from plain data.

        ``data`` is ``{"cities": {city: {player: status}}, "rules": {...}}``
        (``cities`` may also be a list of ``{"name", "residents"}``), with an
        optional top-level ``touring_order``. The setup is not validated here;
        :func:`rules.setup.validate_setup` does that.

        Raises:
            RuleError: ``bad_status``, ``bad_option`` or ``bad_command`` for
                malformed data.
        """
        raw_cities = data.get("cities")
        cities: list[CitySetup] = []
        if isinstance(raw_cities, Mapping):
            items = [(name, residents) for name, residents in raw_cities.items()]
        elif isinstance(raw_cities, list):
            items = []
            for entry in raw_cities:
                if not isinstance(entry, Mapping):
                    raise RuleError("bad_command", field="cities")
                items.append((entry.get("name"), entry.get("residents")))
        else:
            raise RuleError("no_cities")
        for name, residents in items:
            if not isinstance(name, str):
                raise RuleError("bad_command", field="city name", value=repr(name))
            if residents is None:
                residents = {}
            if not isinstance(residents, Mapping):
                raise RuleError("bad_command", field=f"city {name}", value=repr(residents))
            people: list[tuple[str, Status]] = []
            for player, status in residents.items():
                try:
                    people.append((str(player), Status(status)))
                except ValueError:
                    raise RuleError("bad_status", player=str(player), status=repr(status)) from None
            cities.append(CitySetup(name, tuple(people)))
        rules_data = dict(data.get("rules") or {})
        if "touring_order" in data and data["touring_order"] is not None:
            rules_data["touring_order"] = data["touring_order"]
        return cls(tuple(cities), RuleOptions.from_dict(rules_data))

    def to_dict(self) -> dict[str, Any]:
        """The setup as plain data, keeping the order of cities and residents."""
        return {
            "cities": [
                {"name": city.name, "residents": {p: s.value for p, s in city.residents}}
                for city in self.cities
            ],
            "rules": self.options.to_dict(),
        }

    @property
    def city_names(self) -> tuple[str, ...]:
        """The cities in their listed order."""
        return tuple(city.name for city in self.cities)
