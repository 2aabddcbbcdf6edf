"""Where the bot's parts are put together: what each cog plugs into the service, the outbox,
the timers, the texts and the bot, installed in one place.

A cog never reaches into a ``bot/`` object: it declares what it adds as a :class:`Hooks`
(its method ``hooks()``), and :meth:`bot.bot.ProkuratorBot.setup_hook` joins what the bot and
every loaded cog declared (:func:`declared`, :meth:`Hooks.joined`) and hands it to
:func:`wire`. So the whole wiring of a process is read in one place, in one order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from bot import i18n

if TYPE_CHECKING:
    import discord

    from bot.bot import ProkuratorBot
    from bot.outbox import FailureHook, Handler, IdleHook
    from bot.service import Listener, LiveGame, Observer, Renderer
    from bot.timers import ReminderRenderer
    from rules import RuleError

#: handles a persistent component (``mafia:<action>:...``) with its custom id's fields
ComponentHandler = Callable[["discord.Interaction", list[str]], Awaitable[None]]
#: words a refusal of the rules better than its catalogue entry (None: the entry it is)
Explainer = Callable[["discord.Interaction", "RuleError"], Awaitable[str | None]]
#: fills a text's field no caller gave, from the language and the field's name (None: left)
TextFallback = Callable[[str, str], str | None]
#: told the ids Discord gave the synced commands (their name → id)
CommandIds = Callable[[dict[str, int]], None]
#: ``/host skip``: stops the last word being recorded in the interaction's game
SkipLastWord = Callable[["discord.Interaction"], Awaitable[None]]
#: a gateway event's listener (``bot.add_listener``)
GatewayListener = Callable[..., Coroutine[Any, Any, None]]


@dataclass
class Hooks:
    """What a part of the bot plugs in. Lists keep their order; a single hook (``render``,
    ``render_reminder``, ``explain_refusal``, ``text_fallback``, ``skip_last_word``) comes from
    one part at most."""

    render: Renderer | None = None
    """Turns a command's events into outbox items (``GameService.render``)."""
    observers: list[Observer] = field(default_factory=list)
    """See each command's events before they are rendered (``GameService.observers``)."""
    restorers: list[Callable[[LiveGame], Awaitable[None]]] = field(default_factory=list)
    """Run when a running game is loaded (``GameService.restorers``)."""
    after_commit: list[Callable[[LiveGame], None]] = field(default_factory=list)
    """Run after every commit of a game (``GameService.after_commit``)."""
    listeners: list[Listener] = field(default_factory=list)
    """Awaited with a command's events once its lock is released (``GameService.listeners``)."""
    outbox_handlers: dict[str, Handler] = field(default_factory=dict)
    """Carry out the outbox items of a kind the outbox has no call of its own for."""
    idle_hooks: list[IdleHook] = field(default_factory=list)
    """Called when a lane of a game has nothing left pending (``Outbox.idle_hooks``)."""
    failure_hooks: list[FailureHook] = field(default_factory=list)
    """Called when Discord refused an item for good (``Outbox.failure_hooks``)."""
    components: dict[str, ComponentHandler] = field(default_factory=dict)
    """The handler of each persistent component's action (:mod:`cogs.components`)."""
    render_reminder: ReminderRenderer | None = None
    """A stage's "N minutes left" (``PhaseTimers.render_reminder``)."""
    explain_refusal: Explainer | None = None
    """Words a rules' refusal better than its catalogue entry (the bot's error handler)."""
    text_fallback: TextFallback | None = None
    """Fills the ``{cmd_...}`` fields of any text (:func:`bot.i18n.use_fallback`)."""
    skip_last_word: SkipLastWord | None = None
    """``/host skip``: stops the last word being recorded (:mod:`cogs.lastword`)."""
    command_ids: list[CommandIds] = field(default_factory=list)
    """Told the synced commands' ids (:meth:`bot.bot.ProkuratorBot.sync_commands`)."""
    gateway: list[tuple[str, GatewayListener]] = field(default_factory=list)
    """Gateway events' listeners: (event name, listener)."""

    @classmethod
    def joined(cls, parts: Iterable[Hooks]) -> Hooks:
        """Every part's hooks, each list in the parts' order.

        Raises:
            ValueError: two parts declare the same single hook, outbox kind or component action.
        """
        whole = cls()
        for part in parts:
            for name in (
                "render",
                "render_reminder",
                "explain_refusal",
                "text_fallback",
                "skip_last_word",
            ):
                if getattr(part, name) is not None:
                    if getattr(whole, name) is not None:
                        raise ValueError(f"two parts declare {name}")
                    setattr(whole, name, getattr(part, name))
            for name in ("outbox_handlers", "components"):
                mine: dict[str, Any] = getattr(whole, name)
                theirs: dict[str, Any] = getattr(part, name)
                if mine.keys() & theirs.keys():
                    raise ValueError(f"two parts declare {name} {sorted(mine.keys() & theirs)}")
                mine.update(theirs)
            for name in (
                "observers",
                "restorers",
                "after_commit",
                "listeners",
                "idle_hooks",
                "failure_hooks",
                "command_ids",
                "gateway",
            ):
                getattr(whole, name).extend(getattr(part, name))
        return whole


@runtime_checkable
class Declares(Protocol):
    """A cog that plugs something in."""

    def hooks(self) -> Hooks:
        """What it plugs in."""
        ...


def declared(cogs: Iterable[object]) -> list[Hooks]:
    """The hooks of every cog that declares some, in the cogs' order."""
    return [cog.hooks() for cog in cogs if isinstance(cog, Declares)]


def wire(bot: ProkuratorBot, hooks: Hooks) -> None:
    """Install ``hooks`` (see :meth:`bot.bot.ProkuratorBot.setup_hook`) in the game service,
    the outbox, the timers, the texts and the bot.

    Order: each list is run in the order it has in ``hooks``, which
    :meth:`Hooks.joined` keeps: the bot's own first (after every commit: kick the outbox, then
    arm the timers), then each cog's in the order the cogs were loaded (``bot.bot.EXTENSIONS``),
    then the order within each cog's ``hooks()``. After a commit that is: the outbox, the
    timers, the bot's powers, the host's leave strikes, the lobbies whose host left, the
    footprint's reconciler, the attendance check, the last word's (a speaker the game let go is
    cut short), the archiver, the season's transcripts; an idle lane: the start's provisioning,
    the reconciler, the season. Call it once, before any game is loaded: loading the cogs does
    not yield to the event loop, so nothing they start runs before their hooks are in.

    Raises:
        ValueError: a hook would replace one the outbox has (an outbox kind it handles).
    """
    service, outbox = bot.service, bot.outbox
    if hooks.render is not None:
        service.render = hooks.render
    service.observers.extend(hooks.observers)
    service.restorers.extend(hooks.restorers)
    service.after_commit.extend(hooks.after_commit)
    service.listeners.extend(hooks.listeners)
    taken = outbox.handlers.keys() & hooks.outbox_handlers.keys()
    if taken:
        raise ValueError(f"the outbox handles {sorted(taken)} itself")
    outbox.handlers.update(hooks.outbox_handlers)
    outbox.idle_hooks.extend(hooks.idle_hooks)
    outbox.failure_hooks.extend(hooks.failure_hooks)
    if hooks.render_reminder is not None:
        bot.timers.render_reminder = hooks.render_reminder
    if hooks.text_fallback is not None:
        i18n.use_fallback(hooks.text_fallback)
    for event, listener in hooks.gateway:
        bot.add_listener(listener, event)
    bot.wired = hooks
