"""Rule events → what the bot posts and changes on Discord (outbox items).

Where an event goes is decided by its audience, never here: everyone → every
city channel; a city → its channel; a mafia → its hidden channel; a player →
nowhere but the host's log (his own answer is an ephemeral reply); the host →
the log. Private acts are all recorded in the host's log, as in the original
game they are told to the Procurator. One command's lines for one channel go
out as one message.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import fields
from enum import Enum
from typing import Any

from bot.footprint import death_items, quiet_night_items
from bot.i18n import NO_PINGS, mention, phrase
from bot.limits import CONTENT, block_sections
from bot.outbox.intents import Edit, Send
from bot.service import LiveGame
from bot.storage import OutboxItem
from bot.storage.shapes import Channels, CityChannels
from cogs.common import status_text
from cogs.ending import closing_channels, closing_items
from cogs.mentions import command
from cogs.summary import game_over_lines, phase_text, summary_blocks, winner_text
from cogs.votes import (
    ballot_payload,
    ballot_ref,
    deadline_text,
    tally_lines,
    vote_summary_lines,
)
from cogs.will import will_lines
from rules import AudienceKind, Event, Game, Stage, Status, event_from_dict
from rules import events as ev
from rules.roles import ACTS as ROLE_ACTS
from rules.roles import ROLES

#: the roles' own events (:attr:`rules.roles.base.Role.events`)
ROLE_EVENTS = frozenset(event for row in ROLES for event in row.events)


def pings_on(live: LiveGame) -> bool:
    """Whether the game pings its players at all (the host may turn it off in ``/host setup``)."""
    return bool(live.record.lobby.get("pings", True))


def quiet_nights(live: LiveGame) -> bool:
    """Whether city channels are read-only at night (a house rule, off by default: the rules let
    a city talk at any hour)."""
    return bool(live.record.lobby.get("quiet_nights", False))


def living_role(live: LiveGame, city: str) -> str | None:
    """The id of the role of a city's living residents who want pings (None before it is made)."""
    role = live.record.channels.get("roles", {}).get("cities", {}).get(city, {}).get("living")
    return str(role) if role is not None and str(role).isdigit() else None


def with_ping(live: LiveGame, city: str, payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` pinging the city's living role (and nobody else: names never ping), unless
    the game's pings are off. Those who turned pings off hold the quiet twin: not pinged."""
    role = living_role(live, city) if pings_on(live) else None
    if role is None:
        return {**payload, "allowed_mentions": NO_PINGS}
    return {
        **payload,
        "content": f"<@&{role}>\n{payload['content']}",
        "allowed_mentions": {"parse": [], "roles": [role]},
    }


#: characters a role's mention and its line break take before a message
PING_ROOM = 25
#: a line of :class:`Announcer` that is no text: what follows starts a message of its own,
#: unless everything fits in one
SECTION = "\x00section"
#: a channel's lines after it, up to the next, are one block: a message is cut around it
BLOCK = "\x00block"


class Announcer:
    """Collects one command's lines per destination, then makes outbox items."""

    def __init__(self, live: LiveGame) -> None:
        self.live = live
        self.channels: Channels = live.record.channels
        self.lines: dict[int, list[str]] = defaultdict(list)
        self.order: list[int] = []
        self.extra: list[OutboxItem] = []
        self.host_pinged = False
        self.executed: dict[str, str] = {}
        """Who this command's events executed so far, and by which city's decision."""
        self.pinged: dict[int, str] = {}
        """Channels whose first message pings a city's living role: channel → city."""

    def ping_host(self) -> None:
        """Ping the host (him alone) with what this command tells the log: he must act."""
        self.host_pinged = True

    def ping(self, city: str) -> None:
        """Ping the city's living role with what this command tells its channel."""
        channel = self.text_of(city)
        if channel is not None:
            self.pinged[int(channel)] = city

    def say(self, channel_id: int | None, line: str) -> None:
        if channel_id is None:
            return
        if channel_id not in self.lines:
            self.order.append(channel_id)
        self.lines[channel_id].append(line)

    def cities(self) -> dict[str, CityChannels]:
        return self.channels.get("cities", {})

    def text_of(self, city: str) -> int | None:
        """The city's text channel (None: the game has no channels)."""
        places = self.cities().get(city)
        return places["text"] if places is not None else None

    def city(self, name: str, line: str) -> None:
        self.say(self.text_of(name), line)

    def everyone(self, line: str) -> None:
        for name in self.cities():
            self.city(name, line)

    def mafia(self, city: str, line: str) -> None:
        places = self.cities().get(city)
        self.say(places["mafia"] if places is not None else None, line)

    def log(self, line: str) -> None:
        self.say(self.channels.get("log"), line)

    def to_audience(self, event: Event, line: str) -> None:
        audience = event.audience
        if audience.kind is AudienceKind.EVERYONE:
            self.everyone(line)
        elif audience.kind is AudienceKind.CITY and audience.city is not None:
            self.city(audience.city, line)
        elif audience.kind is AudienceKind.MAFIA and audience.city is not None:
            self.mafia(audience.city, line)
            self.log(phrase(self.live, "log.mafia", city=audience.city, line=line))
        else:
            self.log(line)

    def messages(self, channel_id: int) -> list[str]:
        """A channel's lines as messages: its parts (cut at :data:`SECTION`) share a message
        only when all fit in one (room left for a ping)."""
        parts: list[list[list[str]]] = [[]]
        block: list[str] | None = None
        for line in self.lines[channel_id]:
            if line == SECTION:
                parts.append([])
                block = None
            elif line == BLOCK:
                block = []
                parts[-1].append(block)
            elif block is not None:
                block.append(line)
            else:
                parts[-1].append([line])
        return block_sections(parts, CONTENT - PING_ROOM)

    def items(self) -> list[OutboxItem]:
        items: list[OutboxItem] = []
        for channel_id in self.order:
            city = self.pinged.get(int(channel_id))
            # room for the role's mention before the first chunk
            for index, chunk in enumerate(self.messages(channel_id)):
                payload: dict[str, Any] = {"content": chunk, "allowed_mentions": NO_PINGS}
                if city is not None and index == 0:
                    payload = with_ping(self.live, city, payload)
                elif self.host_pinged and index == 0 and channel_id == self.channels.get("log"):
                    host = str(self.live.record.host_id)
                    payload = {
                        **payload,
                        "content": f"<@{host}>\n{chunk}",
                        "allowed_mentions": {"parse": [], "users": [host]},
                    }
                items.append(Send(payload, channel_id).item())
        return items + self.extra


__all__ = [
    "NO_PINGS",
    "Announcer",
    "ballot_payload",
    "ballot_ref",
    "closing_channels",
    "closing_items",
    "deadline_text",
    "moment_text",
    "phase_text",
    "phase_text",
    "render",
    "summary_blocks",
    "winner_text",
]


def cause_text(live: LiveGame, event: ev.PlayerKilled) -> str:
    """How a player died, in words."""
    key = f"cause.{event.cause.value}" + ("_by_chance" if event.by_chance else "")
    return phrase(live, key, city=event.by_city or event.city)


def acting_statuses(game: Game) -> set[Status]:
    """The statuses someone living holds: a phase's text names only the roles that act in it
    (who holds one is secret, that one is dealt is not; the dead's statuses were announced)."""
    return {game.status_of(player) for player in game.alive()}


def render(live: LiveGame, events: list[Event]) -> list[OutboxItem]:
    """Everything the bot posts and changes on Discord for these events."""
    if live.game is None or not live.record.channels:
        return []
    game = live.game
    out = Announcer(live)
    decided = [index for index, event in enumerate(events) if isinstance(event, ev.CityDecided)]
    for index, event in enumerate(events):
        _render_one(live, game, out, event)
        if (
            decided
            and index == decided[-1]
            and len(game.decided) == len(game.cities)
            and not game.over
        ):
            # every city is decided (each said in turn), yet one who plays alone lives: the game
            # goes on, say why
            for side in game.lone_sides_alive():
                out.everyone(phrase(live, f"decided.{side}_goes_on"))
    return out.items()


def _render_one(live: LiveGame, game: Game, out: Announcer, event: Event) -> None:
    draw = _RENDERERS.get(type(event))
    if draw is not None:
        draw(_Scene(live, game, out), event)
        return
    line = _private_line(_Scene(live, game, out), event)
    if line is not None:
        out.to_audience(event, line)
    player = event.audience.player
    if event.unasked and player is not None and player.isdigit():
        out.extra.append(told_item(live, event))


class _Scene:
    """What one event is drawn with: the game, the announcer, and the game's words."""

    def __init__(self, live: LiveGame, game: Game, out: Announcer) -> None:
        self.live, self.game, self.out = live, game, out

    def say(self, key: str, **params: Any) -> str:
        """A catalogue text in the game's language."""
        return phrase(self.live, key, **params)

    def cmd(self, path: str) -> str:
        """A command's clickable mention in the game's language."""
        return command(self.live.language, path)


def _phase_started(scene: _Scene, event: ev.PhaseStarted) -> None:
    game, out = scene.game, scene.out
    for city in game.cities:
        if game.alive(city):
            out.ping(city)
    if event.stage is Stage.DISCUSSION:
        _discussion(scene, event)
    elif event.stage is Stage.VOTING:
        _voting(scene, event)
    elif event.stage is Stage.NIGHT:
        _night(scene, event)


#: the statuses a phase's announcement names while one of them lives, by ``day``/``night``
ANNOUNCED: dict[str, tuple[Status, ...]] = {
    phase: tuple(row.status for row in ROLES if row.announced == phase)
    for phase in ("day", "night")
}


def role_commands(scene: _Scene) -> dict[str, str]:
    """The roles' commands as a phase's texts name them: ``{<verb>}`` → its mention."""
    return {act.verb: scene.cmd(act.slash[0]) for act in ROLE_ACTS}


def role_event_line(live: LiveGame, event: Event, *, book: str = "log") -> str:
    """The line of a role's own event: ``<book>.<stem>`` (its kind, or the text it names;
    ``.<cause>`` after it for one with a cause), its players as mentions (and the
    answer, for an event that carries one). The host's log reads ``log``; the player an unasked
    event is for reads ``told`` (in the second person)."""
    params: dict[str, Any] = {
        f.name: mention(value)
        for f in fields(event)
        if isinstance(value := getattr(event, f.name), str) and not isinstance(value, Enum)
    }
    reply = getattr(event, "reply", None)
    if isinstance(reply, str):
        params["answer"] = phrase(live, f"answer.{reply}")
    cause = getattr(event, "cause", None)
    suffix = f".{cause.value}" if isinstance(cause, Enum) else ""
    return phrase(live, f"{book}.{event.stem()}{suffix}", **params)


def told_item(live: LiveGame, event: Event) -> OutboxItem:
    """An unasked event brought to its player in his DMs (he has no room of his own; closed
    DMs lose nothing: ``/mafia me`` shows it again)."""
    player = event.audience.player
    assert player is not None and player.isdigit()
    message = {"content": role_event_line(live, event, book="told"), "allowed_mentions": NO_PINGS}
    return Send(message, user=int(player)).item()


def note_lines(live: LiveGame, player: str) -> list[str]:
    """What ``player`` was told that he did not ask (his role's ``told``), oldest first."""
    game = live.game
    assert game is not None
    return [
        role_event_line(live, event_from_dict(note), book="told")
        for note in game.notes.get(player, [])
    ]


def _discussion(scene: _Scene, event: ev.PhaseStarted) -> None:
    say, cmd, acting = scene.say, scene.cmd, acting_statuses(scene.game)
    lines = [
        say(
            "phase.day",
            day=event.phase.number,
            nominate=cmd("nominate"),
            lastword=cmd("lastword speak"),
        )
    ]
    lines += [
        say(f"phase.day_{status.value}", **role_commands(scene))
        for status in ANNOUNCED["day"]
        if status in acting
    ]
    scene.out.everyone(" ".join([*lines, deadline_text(scene.live)]))
    scene.out.extra.extend(quiet_night_items(scene.game, scene.live.record.channels, night=False))


def _voting(scene: _Scene, event: ev.PhaseStarted) -> None:
    say, cmd, game, out = scene.say, scene.cmd, scene.game, scene.out
    out.everyone(
        say(
            "phase.voting",
            day=event.phase.number,
            deadline=deadline_text(scene.live),
            vote=cmd("vote"),
            unvote=cmd("unvote"),
            lastword=cmd("lastword speak"),
        )
    )
    for city in game.cities:
        if game.alive(city):
            text = out.text_of(city)
            if text is not None:
                ref = ballot_ref(city, event.phase.number)
                out.extra.append(Send(ballot_payload(scene.live, city), text, ref=ref).item())


def _night(scene: _Scene, event: ev.PhaseStarted) -> None:
    say, cmd, game, out = scene.say, scene.cmd, scene.game, scene.out
    acting = acting_statuses(game)
    lines = [say("phase.night", night=event.phase.number)]
    lines += [
        say(f"phase.night_{status.value}", **role_commands(scene))
        for status in ANNOUNCED["night"]
        if status in acting
    ]
    lines.append(say("phase.night_rest"))
    if len(game.cities) > 1 and event.touring_city is not None:
        lines.append(say("phase.night_touring", city=event.touring_city))
    if quiet_nights(scene.live):
        lines.append(say("phase.night_quiet"))
    out.extra.extend(quiet_night_items(game, scene.live.record.channels, night=True))
    out.everyone(" ".join([*lines, deadline_text(scene.live)]))
    for city in game.cities:  # what the mafia does tonight, in each room with someone in it
        if not game.living_mafiosi(city):
            continue
        out.mafia(
            city,
            say(
                "mafia.night",
                night=event.phase.number,
                kill=cmd("kill"),
                pass_=cmd("pass"),
                elect=cmd("elect"),
            ),
        )
        if len(game.cities) > 1 and city == event.touring_city:
            out.mafia(city, say("mafia.night_touring", tour=cmd("tour")))


def _nominated(scene: _Scene, event: ev.Nominated) -> None:
    channel = scene.out.text_of(event.city)
    if channel is None:
        return
    say = scene.say  # its own message: it carries the nominee's "Last word" button
    scene.out.extra.append(
        Send(
            {
                "content": say(
                    "nominated",
                    nominator=mention(event.nominator),
                    candidate=mention(event.candidate),
                ),
                "allowed_mentions": NO_PINGS,
                "components": [
                    {
                        "type": 1,
                        "components": [
                            {
                                "type": 2,
                                "style": 2,
                                "label": say("lastword.button"),
                                "custom_id": f"mafia:lastword:{scene.live.id}:{event.candidate}",
                            }
                        ],
                    }
                ],
            },
            channel,
        ).item()
    )


def _ballot_changed(scene: _Scene, event: ev.VoteCast | ev.VoteWithdrawn) -> None:
    ref = ballot_ref(event.city, scene.game.phase.number)
    scene.out.extra.append(Edit(ref, ballot_payload(scene.live, event.city)).item())


def _last_word_requested(scene: _Scene, event: ev.LastWordRequested) -> None:
    # the recording itself is posted by the last-word cog, with its own line
    scene.out.log(scene.say("lastword.requested", player=mention(event.player)))


def _judge(scene: _Scene, event: ev.JudgeAppointed) -> None:
    scene.out.everyone(scene.say("judge", city=event.city, player=mention(event.judge)))


def _tallied(scene: _Scene, event: ev.VotesTallied) -> None:
    out = scene.out
    for line in tally_lines(scene.live, event, out.executed):
        out.city(event.city, line)
    ref = ballot_ref(event.city, scene.game.phase.number)
    out.extra.append(Edit(ref, ballot_payload(scene.live, event.city, closed=event)).item())


def _awaiting_host(scene: _Scene, event: ev.ExecutionAwaitingHost) -> None:
    out, say = scene.out, scene.say
    out.city(event.city, say("execution.awaiting"))
    out.ping_host()
    out.log(say("log.awaiting", city=event.city))
    if scene.live.record.deadline is not None:  # an absent host: the city executes by lot then
        out.log(say("log.awaiting_lot", when=f"<t:{int(scene.live.record.deadline)}:R>"))


def _replaced(scene: _Scene, event: ev.PlayerReplaced) -> None:
    scene.out.everyone(
        scene.say("replaced", old=mention(event.old), new=mention(event.new), city=event.city)
    )


def _killed(scene: _Scene, event: ev.PlayerKilled) -> None:
    live, out, say = scene.live, scene.out, scene.say
    if event.by_city is not None:
        out.executed[event.player] = event.by_city
    out.everyone(
        say(
            "death",
            player=mention(event.player),
            city=event.city,
            status=status_text(live, event.status.value),
            cause=cause_text(live, event),
        )
    )
    for line in will_lines(
        live, event.player
    ):  # a house rule: the written will, in the player's city
        out.city(event.city, line)
    out.say(live.record.channels.get("dead"), say("dead.welcome", player=mention(event.player)))
    out.extra.extend(death_items(scene.game, live.record.channels, event.player))


def _decided(scene: _Scene, event: ev.CityDecided) -> None:
    scene.out.everyone(scene.say(f"decided.{event.winner.value}", city=event.city))


def _game_over(scene: _Scene, event: ev.GameOver) -> None:
    live, game, out = scene.live, scene.game, scene.out
    votes = vote_summary_lines(live)
    blocks = summary_blocks(live, game)
    blocks[0][:0] = game_over_lines(live, game, list(event.winners))
    for channel_id in closing_channels(live):
        for block in blocks:
            out.say(channel_id, BLOCK)
            for line in block:
                out.say(channel_id, line)
        if votes:  # the days' votes start a message of their own unless everything fits in one
            out.say(channel_id, SECTION)
            for line in votes:
                out.say(channel_id, line)
    out.extra.extend(closing_items(live, game))


#: the events drawn by a function of their own; the others are one line to their audience
_RENDERERS: dict[type[Event], Callable[[_Scene, Any], None]] = {
    ev.PhaseStarted: _phase_started,
    ev.Nominated: _nominated,
    ev.VoteCast: _ballot_changed,
    ev.VoteWithdrawn: _ballot_changed,
    ev.LastWordRequested: _last_word_requested,
    ev.JudgeAppointed: _judge,
    ev.VotesTallied: _tallied,
    ev.ExecutionAwaitingHost: _awaiting_host,
    ev.PlayerReplaced: _replaced,
    ev.PlayerKilled: _killed,
    ev.CityDecided: _decided,
    ev.GameOver: _game_over,
}


def _private_line(scene: _Scene, event: Event) -> str | None:
    """The one line of a private act or a mafia's deliberation (to the event's audience:
    the mafia's room and the host's log, or the log alone); None for an event with no words."""
    say, cmd = scene.say, scene.cmd
    if isinstance(event, ev.GodfatherVoteCast):
        return say("mafia.elect", voter=mention(event.voter), candidate=mention(event.candidate))
    if isinstance(event, ev.GodfatherChanged):
        if event.godfather is not None:
            return say(f"mafia.godfather_{event.reason.value}", player=mention(event.godfather))
        # nobody left to elect: no notice
        return (
            say("mafia.godfather_none", elect=cmd("elect"))
            if scene.game.living_mafiosi(event.city)
            else None
        )
    if isinstance(event, ev.MafiaKillChoice):
        key = ("mafia.decision" if event.decision else "mafia.proposal") + (
            "_tour" if event.touring else ""
        )
        return say(key, player=mention(event.chooser), target=mention(event.target))
    if isinstance(event, ev.MafiaKillRefused):
        return say("mafia.refused", player=mention(event.godfather))
    if isinstance(event, ev.ConsigliereDecided):
        if event.target is None:
            return say("mafia.consigliere_none")
        key = "mafia.consigliere_tour" if event.touring else "mafia.consigliere"
        return say(key, target=mention(event.target))
    if isinstance(event, ev.KillPrevented):
        return say(f"log.prevented.{event.cause.value}", target=mention(event.target))
    if isinstance(event, ev.MafiaKillBlocked):
        return say("log.blocked", city=event.city)
    if isinstance(event, ev.KillVoided):
        return say(f"log.void.{event.role}", player=mention(event.player), city=event.city)
    if type(event) in ROLE_EVENTS:
        return role_event_line(scene.live, event)
    return None


def moment_text(live: LiveGame) -> str:
    """Where the game is: ``day 2, voting``; at night just ``night 1`` (its only stage)."""
    game = live.game
    assert game is not None
    return moment_of(live, str(game.phase), game.stage.value)


def moment_of(live: LiveGame, phase: str, stage: str) -> str:
    """``day 2, voting`` for a phase (``day 2``) and a stage's value; a night is just ``night 1``."""
    if stage == Stage.NIGHT.value:
        return phase_text(live, phase)
    return phrase(
        live, "moment.day", phase=phase_text(live, phase), stage=phrase(live, f"stage.{stage}")
    )
