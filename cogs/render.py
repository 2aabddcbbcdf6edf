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
from typing import Any

from bot.service import LiveGame
from bot.storage import OutboxItem
from cogs.channels import death_overwrites, end_of_game_items
from cogs.common import mention, phrase, status_text
from cogs.limits import chunks
from cogs.votes import (
    NO_PINGS,
    ballot_payload,
    ballot_ref,
    deadline_text,
    tally_lines,
    vote_summary_lines,
)
from rules import AudienceKind, Event, Game, Stage
from rules import events as ev


class Announcer:
    """Collects one command's lines per destination, then makes outbox items."""

    def __init__(self, live: LiveGame) -> None:
        self.live = live
        self.channels: dict[str, Any] = live.record.channels
        self.lines: dict[int, list[str]] = defaultdict(list)
        self.order: list[int] = []
        self.extra: list[OutboxItem] = []

    def say(self, channel_id: int | None, line: str) -> None:
        if channel_id is None:
            return
        if channel_id not in self.lines:
            self.order.append(channel_id)
        self.lines[channel_id].append(line)

    def cities(self) -> dict[str, dict[str, int]]:
        cities: dict[str, dict[str, int]] = self.channels.get("cities", {})
        return cities

    def city(self, name: str, line: str) -> None:
        self.say(self.cities().get(name, {}).get("text"), line)

    def everyone(self, line: str) -> None:
        for name in self.cities():
            self.city(name, line)

    def mafia(self, city: str, line: str) -> None:
        self.say(self.cities().get(city, {}).get("mafia"), line)

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

    def items(self) -> list[OutboxItem]:
        items: list[OutboxItem] = []
        for channel_id in self.order:
            for chunk in chunks(self.lines[channel_id]):
                items.append(OutboxItem(
                    "send", {"channel_id": channel_id},
                    {"content": chunk, "allowed_mentions": NO_PINGS},
                ))
        return items + self.extra


__all__ = ["NO_PINGS", "Announcer", "ballot_payload", "ballot_ref", "closing_channels", "deadline_text",
           "phase_text", "render", "summary_lines", "winner_text"]


def cause_text(live: LiveGame, event: ev.PlayerKilled) -> str:
    """How a player died, in words."""
    key = f"cause.{event.cause.value}"
    text = phrase(live, key, city=event.by_city or event.city)
    if event.by_chance:
        text += phrase(live, "cause.by_chance")
    return text


def render(live: LiveGame, events: list[Event]) -> list[OutboxItem]:
    """Everything the bot posts and changes on Discord for these events."""
    if live.game is None or not live.record.channels:
        return []
    game = live.game
    out = Announcer(live)
    for event in events:
        _render_one(live, game, out, event)
    return out.items()


def _render_one(live: LiveGame, game: Game, out: Announcer, event: Event) -> None:
    say = lambda key, **params: phrase(live, key, **params)  # noqa: E731
    if isinstance(event, ev.PhaseStarted):
        if event.stage is Stage.DISCUSSION:
            out.everyone(say("phase.day", day=event.phase.number, deadline=deadline_text(live)))
        elif event.stage is Stage.VOTING:
            out.everyone(say("phase.voting", day=event.phase.number, deadline=deadline_text(live)))
            for city in game.cities:
                if game.alive(city):
                    text = out.cities().get(city, {}).get("text")
                    if text is not None:
                        out.extra.append(OutboxItem(
                            "send", {"channel_id": text, "ref": ballot_ref(city, event.phase.number)},
                            ballot_payload(live, city),
                        ))
        elif event.stage is Stage.NIGHT:
            out.everyone(say("phase.night", night=event.phase.number, touring=event.touring_city,
                             deadline=deadline_text(live)))
    elif isinstance(event, ev.Nominated):
        channel = out.cities().get(event.city, {}).get("text")
        if channel is not None:  # its own message: it carries the nominee's "Last word" button
            out.extra.append(OutboxItem("send", {"channel_id": channel}, {
                "content": say("nominated", nominator=mention(event.nominator),
                               candidate=mention(event.candidate)),
                "allowed_mentions": NO_PINGS,
                "components": [{"type": 1, "components": [{
                    "type": 2, "style": 2, "label": say("lastword.button"),
                    "custom_id": f"mafia:lastword:{live.id}:{event.candidate}",
                }]}],
            }))
    elif isinstance(event, ev.VoteCast | ev.VoteWithdrawn):
        out.extra.append(OutboxItem(
            "edit", {"ref": ballot_ref(event.city, game.phase.number)}, ballot_payload(live, event.city)
        ))
    elif isinstance(event, ev.LastWordRequested):
        # the recording itself is posted by the last-word cog, with its own line
        out.log(say("lastword.requested", player=mention(event.player)))
    elif isinstance(event, ev.ProtectionChosen):
        out.to_audience(event, say("log.protect", doctor=mention(event.doctor), target=mention(event.target)))
    elif isinstance(event, ev.StatusesCompared):
        out.to_audience(event, say("log.compare", journalist=mention(event.journalist),
                                   first=mention(event.first), second=mention(event.second),
                                   answer=say(f"answer.{event.reply}")))
    elif isinstance(event, ev.PlayerChecked):
        out.to_audience(event, say("log.check", commissar=mention(event.commissar),
                                   target=mention(event.target), answer=say(f"answer.{event.reply}")))
    elif isinstance(event, ev.GodfatherVoteCast):
        out.to_audience(event, say("mafia.elect", voter=mention(event.voter), candidate=mention(event.candidate)))
    elif isinstance(event, ev.GodfatherChanged):
        if event.godfather is None:
            out.to_audience(event, say("mafia.godfather_none"))
        else:
            out.to_audience(event, say(f"mafia.godfather_{event.reason.value}",
                                       player=mention(event.godfather)))
    elif isinstance(event, ev.MafiaKillChosen):
        key = "mafia.decision" if event.decision else "mafia.proposal"
        if event.touring:
            key += "_tour"
        out.to_audience(event, say(key, player=mention(event.mafioso), target=mention(event.target)))
    elif isinstance(event, ev.MafiaKillRefused):
        out.to_audience(event, say("mafia.refused", player=mention(event.godfather)))
    elif isinstance(event, ev.ConsigliereDecided):
        if event.target is None:
            line = say("mafia.consigliere_none")
        else:
            key = "mafia.consigliere_tour" if event.touring else "mafia.consigliere"
            line = say(key, target=mention(event.target))
        out.to_audience(event, line)
    elif isinstance(event, ev.ManiacChose):
        key = "log.maniac_random" if event.by_chance else "log.maniac"
        out.to_audience(event, say(key, maniac=mention(event.maniac), target=mention(event.target)))
    elif isinstance(event, ev.KillPrevented):
        out.to_audience(event, say("log.prevented", target=mention(event.target),
                                   cause=say(f"cause_short.{event.cause.value}")))
    elif isinstance(event, ev.MafiaKillBlocked):
        out.to_audience(event, say("log.blocked", city=event.city))
    elif isinstance(event, ev.JudgeAppointed):
        out.everyone(say("judge", city=event.city, player=mention(event.judge)))
    elif isinstance(event, ev.VotesTallied):
        for line in tally_lines(live, event):
            out.city(event.city, line)
        out.extra.append(OutboxItem(
            "edit", {"ref": ballot_ref(event.city, game.phase.number)},
            ballot_payload(live, event.city, closed=True),
        ))
    elif isinstance(event, ev.ExecutionAwaitingHost):
        out.city(event.city, say("execution.awaiting"))
        out.log(say("log.awaiting", city=event.city))
    elif isinstance(event, ev.PlayerKilled):
        out.everyone(say("death", player=mention(event.player), city=event.city,
                         status=status_text(live, event.status.value), cause=cause_text(live, event)))
        out.say(live.record.channels.get("dead"), say("dead.welcome", player=mention(event.player)))
        out.extra.extend(death_overwrites(game, live.record.channels, event.player))
    elif isinstance(event, ev.CityDecided):
        out.everyone(say(f"decided.{event.winner.value}", city=event.city))
    elif isinstance(event, ev.GameOver):
        winners = ", ".join(winner_text(live, w) for w in event.winners) or say("winners.none")
        for channel_id in closing_channels(live):
            for line in [say("game_over", winners=winners), *summary_lines(live, game)]:
                out.say(channel_id, line)
        out.extra.extend(end_of_game_items(live.record.channels, game, live.record.lobby.get(
            "at_end", "keep")))


def closing_channels(live: LiveGame) -> list[int]:
    """Where a game's end and summary are told: its city channels, or, when they are deleted at the
    end, the channel where its lobby was opened."""
    if live.record.lobby.get("at_end", "keep") == "delete":
        channel = live.record.lobby.get("channel_id")
        return [int(channel)] if channel else []
    return [int(ids["text"]) for ids in live.record.channels.get("cities", {}).values()]


def winner_text(live: LiveGame, winner: str) -> str:
    """``Verona:honest`` → words."""
    if winner == "maniac":
        return phrase(live, "winner.maniac")
    city, side = winner.split(":", 1)
    return phrase(live, f"winner.{side}", city=city)


def summary_lines(live: LiveGame, game: Game) -> list[str]:
    """The whole game: every player's status and how and when he died, by city."""
    deaths = {death.player: death for death in game.deaths}
    lines = [phrase(live, "summary.title")]
    for city in game.cities:
        lines.append(phrase(live, "summary.city", city=city))
        for player in game.residents[city]:
            status = status_text(live, game.status_of(player).value)
            death = deaths.get(player)
            if death is None:
                fate = phrase(live, "summary.alive")
            else:
                fate = phrase(live, "summary.died", cause=phrase(live, f"cause_short.{death.cause.value}"),
                              phase=phase_text(live, str(death.phase)))
            lines.append(phrase(live, "summary.row", player=mention(player), status=status, fate=fate))
    return lines + vote_summary_lines(live)


def phase_text(live: LiveGame, phase: str) -> str:
    """``day 2`` in words."""
    kind, number = phase.split()
    return phrase(live, f"phase_name.{kind}", number=number)
