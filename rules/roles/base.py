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
from rules.events import Event, PhaseStarted
from rules.model import Cause, RuleOptions, Stage, Status
from rules.state import DAY_STAGES, Kept

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
Deed = Callable[[Any, str, Any, bool], list[Event]]
"""An act once its sender's right to it is settled: ``(game, actor, command, dry)``, as a
:data:`Handler` does the rest."""

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
    deed: Deed | None = None
    """The act with its sender's right settled (by the role's rules): what an heir does when
    he takes the act over (``Role.succeeds``)."""


@dataclass(frozen=True)
class RoleOption:
    """A rule option of a role's: its field of :class:`~rules.model.RuleOptions` (and the name
    of ``/host setup``'s option, its texts ``opt.<name>.*``), and its values: on or off, or one
    of ``choices`` (each's text ``choice.<value>``)."""

    name: str
    choices: tuple[str, ...] = ()


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
    """It plays and wins alone, not with a city: the game goes on while one lives (unless
    ``survives``), he wins when he alone is left alive, and the winners name his side without a
    city."""
    survives: Callable[[RuleOptions], bool] | None = None
    """Playing alone: whether, as the game's options say, one alive when every city is decided
    wins too (and the game ends then); None: never."""
    won_alone_key: str | None = None
    """Playing alone: the key the stored game keeps ``GameState.won_alone`` under, for the role
    whose win it stored first (the first role declaring one names it; none: ``won_alone``)."""
    state: Mapping[str, Kept] = field(default_factory=dict)
    """What it keeps in the game's state (``GameState.role_state``), by its stored key (unique
    among the roles): its value as the game starts, when it is put back, whether it names a
    player. The stored game has each key; one stored before the role kept it reads its initial
    value."""
    succeeds: str | None = None
    """The verb of another role's act (one with a ``deed``) that he takes over: the registry
    gives him that act, which he does by its rules as its holder of his city, from the first
    phase of its stage that begins after the holder's death (a city without one: at once);
    before, it is refused with ``<holder's status>_alive`` (see :func:`succeed`)."""
    hears: Callable[[str, Any], Event] | None = None
    """Succeeding: ``(heir, event)`` → what a living heir is told of each of the holder's own
    events (his role's ``events``) that his city's holder is told (see :func:`tell_heirs`)."""
    took_over: Callable[[str, str], Event] | None = None
    """Succeeding: ``(heir, city)`` → what a living heir is told, once, as the first phase of
    the act's stage begins with his city's holder dead."""
    options: tuple[RoleOption, ...] = ()
    """Its rule options (fields of :class:`~rules.model.RuleOptions`), which ``/host setup``
    offers in this order after the rules' own."""
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


def holder_of(game: Any, city: str, holder: Status) -> str | None:
    """The city's first resident of status ``holder`` (dead or alive), or None."""
    return next((n for n in game.residents[city] if game.players[n].status is holder), None)


def succeed(
    heir: Status, holder: Status, stage: str, deed: Deed, game: Any, command: Any, dry: bool
) -> list[Event]:
    """An heir's act (:attr:`Role.succeeds`): ``holder``'s act, done by its rules (``deed``),
    once his city's holder is dead and a phase has begun since.

    Raises:
        RuleError: ``not_alive``, ``wrong_role``, ``wrong_phase``, ``<holder>_alive`` (naming
            the holder), or any refusal of the deed.
    """
    actor = game._living_actor(command.actor, heir)
    game._require_stage(*_stages(stage))
    held = holder_of(game, actor.city, holder)
    if held is not None:
        now = any(d.player == held and d.phase == game.phase for d in game.deaths)
        if game.players[held].alive or now:
            raise RuleError(f"{holder.value}_alive", player=actor.name, **{holder.value: held})
    return deed(game, actor.name, command, dry)


def _stages(stage: str) -> tuple[Stage, ...]:
    """The stages of ``/help``'s stage of an act (every one for :data:`ANY`)."""
    if stage == ANY:
        return tuple(Stage)
    return DAY_STAGES if stage == DAY else (Stage(stage),)


def heirs_of(game: Any, city: str, heir: Status) -> list[str]:
    """The city's living residents of status ``heir``."""
    return [
        n for n in game.residents[city] if game.players[n].status is heir and game.players[n].alive
    ]


def tell_heirs(heir: Role, holder: Role, stage: str, game: Any, events: list[Event]) -> list[Event]:
    """What heirs are told (:attr:`Role.hears`, :attr:`Role.took_over`): every living heir of
    a city hears each of the holder's own events its holder is told; when a phase of the
    act's stage begins, one whose holder is dead hears, once, that the act is his."""
    told: list[Event] = []
    for event in events:
        if isinstance(event, holder.events) and heir.hears is not None:
            teller = game.players.get(event.audience.player)
            if teller is not None and teller.status is holder.status:
                told.extend(heir.hears(n, event) for n in heirs_of(game, teller.city, heir.status))
        elif isinstance(event, PhaseStarted) and event.stage in _stages(stage) and heir.took_over:
            for city in game.cities:
                held = holder_of(game, city, holder.status)
                if held is not None and game.players[held].alive:
                    continue
                for name in heirs_of(game, city, heir.status):
                    news = heir.took_over(name, city)
                    if not any(n["kind"] == news.kind for n in game.notes.get(name, [])):
                        told.append(news)
    return told
