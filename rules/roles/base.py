"""What a role module declares: :class:`Role`, its :class:`Act` s, and the hooks by which a role
takes part in the night's dawn and in what players are told.

A role is one declaration (one module of :mod:`rules.roles`, listed in its registry). The
engine, the setup's checks, the deal and everything the bot lists about roles read the
registry; nothing else names the role.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from rules.commands import Command, HostCommand
from rules.errors import RuleError
from rules.events import Event
from rules.model import Cause, Stage, Status

Handler = Callable[[Any, Any, bool], list[Event]]
"""A command's handler: ``(game, command, dry)``; it validates completely before it changes
anything, and changes nothing when ``dry``."""
Saver = Callable[[Any, str, Cause], "list[Event] | None"]
"""At dawn, before a night kill lands on a living player no protection spares:
``(game, target, cause)`` → the events of the kill taken elsewhere, or None to let it land."""
Voider = Callable[[Any], "set[str]"]
"""At dawn, before the night's decisions: the players whose own kill counts for nothing."""
Teller = Callable[[Any, list[Event]], list[Event]]
"""After an accepted command: what the role is told of its events (new events)."""
Stands = Callable[[Any, Command], bool]
"""``(game, command)``: whether an accepted command is the sender's standing choice already."""
Killer = Callable[[Any, list[Event], set[str]], "tuple[str, Cause] | None"]
"""At dawn, before the mafia's decisions: ``(game, events, voided)`` → the role's own night
kill (its target and cause), carried out first; it may add the events of its decision."""
Nightfall = Callable[[Any], None]
"""At nightfall, before the night's choices are cleared: what the role carries into it."""

#: ``/help``'s stage of a command of any stage of a day
DAY = "day"
#: ``/help``'s stage of a command of any moment
ANY = "any"


@dataclass(frozen=True)
class Act:
    """A command of the rules and the slash commands that send it."""

    command: type[Command]
    slash: tuple[str, ...]
    """The slash commands (default names) that send it, the main one first."""
    stage: str
    """Where ``/help`` files it: a :class:`~rules.model.Stage`'s value, :data:`DAY` or :data:`ANY`."""
    actors: tuple[Status, ...] = ()
    """The statuses that may send it; none: every living player (the host, for his acts)."""

    @property
    def verb(self) -> str:
        """The command's verb, as ``legal_actions`` and the scenarios name it."""
        return self.command.verb

    @property
    def by_host(self) -> bool:
        """Whether the host sends it."""
        return issubclass(self.command, HostCommand)

    @property
    def targets(self) -> tuple[str, ...]:
        """The command's fields after its actor: whom it is sent about, in order."""
        return tuple(f.name for f in fields(self.command) if f.name != "actor")


@dataclass(frozen=True)
class RoleAct:
    """A role's act: its command, the stage ``/help`` files it under, and its handler. Several
    roles may declare one command (``kill``, ``check``); the engine gives
    the command to the handler of its sender's status."""

    command: type[Command]
    stage: str
    handler: Handler
    slash: tuple[str, ...] = ()
    """The slash commands that send it; none: one of its own, named after the verb."""
    reply: bool = False
    """Whether its sender's answer is ``reply.<verb>`` (naming the target)."""
    stands: Stands | None = None
    """Whether the command repeats a standing choice (``Game.repeats``); None: a choice the
    handler keeps in ``GameState.choices`` by its verb."""


@dataclass(frozen=True)
class Role:
    """A status as the game deals it, and all it does."""

    status: Status
    side: str
    """Whom the role plays for: ``honest``, ``mafia``, or a side of its own for a role that
    plays alone (named in the winners and the archive as it is written here)."""
    switchable: bool = False
    """Whether the host's setup deals it or leaves it out (an option of ``/host setup`` named
    after the status); otherwise every game has it."""
    per_game: int | None = None
    """The most the game may have (``too_many`` past it); None: no limit of the game's."""
    per_city: int | None = None
    """The most a city may have (``too_many`` past it); None: no limit of a city's."""
    fills: bool = False
    """It fills a city's seats no other role takes: the deal gives it every seat left, and a
    role dealt later takes one of its seats (exactly one role fills)."""
    every_city: bool = False
    """Every city has exactly one: the setup refuses a city without (``<status>_count``, the
    count as ``<status>s``), the deal gives one to every city."""
    dealt_from: int | None = None
    """Switchable: dealt by default from this many players in the game; None: only when the
    host switches it on."""
    dealt_per_city: bool = False
    """Switched on, the deal gives one in every city (else one in the game)."""
    acts: tuple[RoleAct, ...] = ()
    announced: str | None = None
    """``day`` or ``night``: the phase's announcement names the role while one lives
    (``phase.<day|night>_<status>``)."""
    presets: Mapping[str, bool] = field(default_factory=dict)
    """The built-in presets that set its switch: preset → on or off."""
    events: tuple[type[Event], ...] = ()
    """Its own events (plain data knows them by kind; the bot writes ``log.<kind>`` for each,
    to the event's audience, but the mafia's choice of a kill, a
    :class:`~rules.events.MafiaKillChoice`, in the mafia's own words)."""
    saves: tuple[int, Saver] | None = None
    """Its place in the dawn's saves (lower first), and the save."""
    voids: Voider | None = None
    """What voids players' own kills at dawn (the players)."""
    told: Teller | None = None
    """What players are told of an accepted command (kept in their notes)."""
    kills: Killer | None = None
    """Its own night kill, decided and carried out at dawn before the mafia's."""
    nightfall: Nightfall | None = None
    """What the role carries into the night as it falls."""
    alone: bool = False
    """It plays and wins alone, not with a city: the game goes on while one lives (see
    ``maniac_wins_if_survives``), he wins when he alone is left alive, and the winners name his
    side without a city."""
    cause: Cause | None = None
    """The cause of death its own night kill (``kills``) gives."""
    codes: Mapping[str, str] = field(default_factory=dict)
    """Its own refusal codes, with their short English explanations (added to
    :data:`rules.errors.CODES`)."""


def choose_another(
    game: Any, actor: str, status: Status, verb: str, target: str, dry: bool
) -> str | None:
    """A night's choice of one living player other than oneself, of any city, held until dawn
    in ``game.choices[verb]`` (the last one counts): the chooser's name, or None when ``dry``.

    Raises:
        RuleError: ``not_alive``, ``wrong_role``, ``wrong_phase``, ``unknown_player``,
            ``target_not_alive`` or ``self_target``.
    """
    chooser = game._living_actor(actor, status)
    game._require_stage(Stage.NIGHT)
    chosen = game._living_target(target)
    if chosen.name == chooser.name:
        raise RuleError("self_target", player=chooser.name)
    if dry:
        return None
    game.choices.setdefault(verb, {})[chooser.name] = chosen.name
    return str(chooser.name)
