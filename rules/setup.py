"""The sound-setup check and the random deal."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence

from rules.errors import RuleError
from rules.model import CitySetup, RuleOptions, Setup, Status
from rules.roles import FILLER, MAFIA, ROLES, SWITCHABLE, role

#: the roles the game may have a limited number of, with the limit
PER_GAME = tuple((row.status, row.per_game) for row in ROLES if row.per_game is not None)
#: the roles every city has exactly one of
EVERY_CITY = tuple(row.status for row in ROLES if row.every_city)
#: the roles a city may have a limited number of, with the limit
PER_CITY = tuple((row.status, row.per_city) for row in ROLES if row.per_city is not None)
#: the status the deal gives the members of a city's mafia (its mafiosi)


def validate_setup(setup: Setup) -> None:
    """Refuse a setup that is not sound (RULES.md, "People").

    Sound: at least one city, unique city and player names, in every city at
    least one member of the mafia, exactly one of each role every city has (its
    declaration's ``every_city``) and more honest residents than mafiosi; no
    more of a role than a city or the game may have (its declaration's
    ``per_city`` and ``per_game``); a touring order that names only known
    cities.

    Raises:
        RuleError: ``no_cities``, ``duplicate_city``, ``empty_city``,
            ``duplicate_player``, ``no_<the mafia's status>``, ``<status>_count``,
            ``mafia_majority``, ``too_many`` or ``unknown_city``, naming the
            city or player.
    """
    if not setup.cities:
        raise RuleError("no_cities")
    seen_cities: set[str] = set()
    seen_players: set[str] = set()
    totals: Counter[Status] = Counter()
    for city in setup.cities:
        if not city.name or city.name in seen_cities:
            raise RuleError("duplicate_city", city=city.name)
        seen_cities.add(city.name)
        if not city.residents:
            raise RuleError("empty_city", city=city.name)
        counts: Counter[Status] = Counter()
        for player, status in city.residents:
            if not player or player in seen_players:
                raise RuleError("duplicate_player", player=player)
            seen_players.add(player)
            counts[status] += 1
        totals.update(counts)
        mafiosi = sum(n for status, n in counts.items() if status.in_mafia)
        honest = sum(n for status, n in counts.items() if status.honest)
        if mafiosi < 1:
            raise RuleError(f"no_{MAFIA.value}", city=city.name)
        for status in EVERY_CITY:
            if counts[status] != 1:
                found = {f"{status.value}s": counts[status]}
                raise RuleError(f"{status.value}_count", city=city.name, **found)
        if honest <= mafiosi:
            raise RuleError("mafia_majority", city=city.name, honest=honest, mafiosi=mafiosi)
        for status, most in PER_CITY:
            if counts[status] > most:
                raise RuleError(
                    "too_many_in_city", status=status.value, count=counts[status], city=city.name
                )
    for status, most in PER_GAME:
        if totals[status] > most:
            raise RuleError("too_many", status=status.value, count=totals[status])
    order = setup.options.touring_order
    if order is not None:
        for name in order:
            if name not in seen_cities:
                raise RuleError("unknown_city", city=name)


class RoleCounts:
    """What a random deal should contain; ``None`` means the default.

    ``mafiosi`` is one number for every city or a number per city name. ``switches`` holds
    whether each switchable role is dealt, by status; a switch may also be given as a keyword
    named after the status (``switches`` wins).

    Raises:
        TypeError: for a keyword that names no switchable role.
    """

    def __init__(
        self,
        mafiosi: int | Mapping[str, int] | None = None,
        switches: Mapping[str, bool | None] | None = None,
        **switched: bool | None,
    ) -> None:
        unknown = sorted(set(switched) - {status.value for status in SWITCHABLE})
        if unknown:
            raise TypeError(f"RoleCounts: no switchable role {', '.join(unknown)}")
        self.mafiosi = mafiosi
        self.switches: dict[str, bool | None] = {**switched, **(switches or {})}

    def chosen(self, status: Status) -> bool | None:
        """Whether the deal is asked to give ``status`` (None: its default)."""
        return self.switches.get(status.value)


def default_mafiosi(residents: int) -> int:
    """The default number of mafiosi for a city of ``residents`` players: a quarter, at least one."""
    return max(1, residents // 4)


def deal(
    cities: Mapping[str, Sequence[str]],
    seed: int,
    roles: RoleCounts | None = None,
    options: RuleOptions | None = None,
) -> Setup:
    """Deal statuses at random (seeded) so that the setup is sound.

    By default each city gets a quarter of its players as mafiosi (at least
    one) and one of each role every city has; the game gets each switchable
    role its declaration deals by default (from its ``dealt_from`` players in
    the game), in a random city where it keeps the setup sound, or in every
    city (``dealt_per_city``). The same arguments always
    give the same setup.

    Raises:
        RuleError: ``too_few_players`` if a city cannot be sound with the
            counts asked for, ``unknown_city`` for a count naming no city,
            or any code of :func:`validate_setup`.
    """
    roles = roles or RoleCounts()
    options = options or RuleOptions()
    rng = random.Random(f"{seed}:deal")
    total = sum(len(players) for players in cities.values())
    plans = _city_plans(cities, roles.mafiosi)
    for status in SWITCHABLE:
        declared = role(status)
        wanted = roles.chosen(status)
        if wanted is None:
            wanted = declared.dealt_from is not None and total >= declared.dealt_from
        if not wanted:
            continue
        eligible = [name for name, plan in plans.items() if _can_take(plan, status)]
        if declared.dealt_per_city:
            if len(eligible) < len(plans):
                raise RuleError("too_few_players", status=status.value)
            for plan in plans.values():
                plan[plan.index(FILLER)] = status
            continue
        if not eligible:
            raise RuleError("too_few_players", status=status.value)
        plan = plans[rng.choice(eligible)]
        plan[plan.index(FILLER)] = status
    dealt: list[CitySetup] = []
    for name, players in cities.items():
        statuses = list(plans[name])
        rng.shuffle(statuses)
        dealt.append(CitySetup(name, tuple(zip(players, statuses, strict=True))))
    setup = Setup(tuple(dealt), options)
    validate_setup(setup)
    return setup


def _city_plans(
    cities: Mapping[str, Sequence[str]], counts: int | Mapping[str, int] | None
) -> dict[str, list[Status]]:
    """Each city's statuses before the one-per-game roles and the shuffle: its mafiosi
    (``counts``, see :class:`RoleCounts`), one of each role every city has, and the role that
    fills the seats left.

    Raises:
        RuleError: ``unknown_city`` for a count naming no city, ``too_few_players`` for a
            city that cannot be sound with its count.
    """
    if isinstance(counts, Mapping):
        for name in counts:
            if name not in cities:
                raise RuleError("unknown_city", city=name)
    plans: dict[str, list[Status]] = {}
    for name, players in cities.items():
        if isinstance(counts, Mapping):
            mafiosi = counts.get(name, default_mafiosi(len(players)))
        elif counts is not None:
            mafiosi = counts
        else:
            mafiosi = default_mafiosi(len(players))
        honest = len(players) - mafiosi
        if mafiosi < 1 or honest <= mafiosi or honest < len(EVERY_CITY):
            raise RuleError("too_few_players", city=name, players=len(players), mafiosi=mafiosi)
        plans[name] = [MAFIA] * mafiosi + list(EVERY_CITY) + [FILLER] * (honest - len(EVERY_CITY))
    return plans


def _can_take(plan: list[Status], status: Status) -> bool:
    if FILLER not in plan:
        return False
    if status.honest:
        return True
    mafiosi = sum(1 for s in plan if s.in_mafia)
    honest = sum(1 for s in plan if s.honest)
    return honest - 1 > mafiosi
