"""What the players are told when they take their seats: a game's first messages (each city's
residents with "My status", the mafia rooms, the deal in the log) and a newcomer's after
``/host replace``."""

from __future__ import annotations

from typing import Any

from bot.channels import (
    exposure_lines,
)
from bot.footprint import (
    replacement_items,
)
from bot.limits import chunks
from bot.outbox.intents import Send
from bot.service import LiveGame
from bot.storage import OutboxItem
from cogs.common import (
    mention,
    phrase,
    shown_name,
    status_text,
)
from cogs.lobby import lobby_edit, log_items
from cogs.mentions import command
from cogs.render import (
    NO_PINGS,
    pings_on,
)
from rules import Game

#: characters of residents' mentions in one welcome message
RESIDENTS_LIMIT = 1500


def welcome_items(live: LiveGame) -> list[OutboxItem]:
    """The first messages: residents per city (pinging the city's role) with a "my status"
    button, the mafia its own, the deal in the log."""
    game = live.game
    assert game is not None
    items: list[OutboxItem] = []
    for city in game.cities:
        items += _city_welcome(live, game, city)
        items += _mafia_welcome(live, game, city)
    for chunk in chunks(_deal_lines(live, game)):
        message = {"content": chunk, "allowed_mentions": NO_PINGS}
        items.append(Send(message, channel=live.record.channels["log"]).item())
    items.extend(lobby_edit(live))
    return items


def _city_welcome(live: LiveGame, game: Game, city: str) -> list[OutboxItem]:
    """A city's welcome: its residents (those that fit beside the text, the rest in messages of
    their own), the touring order, a ping of its living role, "My status" under the last."""
    channels = live.record.channels
    residents = chunks([", ".join(mention(p) for p in game.residents[city])], RESIDENTS_LIMIT)
    text = phrase(
        live,
        "welcome.city",
        city=city,
        players=residents[0] if residents else "—",
        me=command(live.language, "mafia me"),
        help=command(live.language, "help"),
        rules=command(live.language, "rules"),
    )
    if len(game.cities) > 1:
        text += "\n" + phrase(live, "welcome.touring", touring=", ".join(game.touring_order))
    living = channels.get("roles", {}).get("cities", {}).get(city, {}).get("living")
    mentions: dict[str, Any] = NO_PINGS
    if living is not None and pings_on(live):
        text = f"<@&{living}>\n{text}"
        mentions = {"parse": [], "roles": [str(living)]}
    parts = [text, *residents[1:]]
    items: list[OutboxItem] = []
    for index, part in enumerate(parts):
        payload: dict[str, Any] = {
            "content": part,
            "allowed_mentions": mentions if index == 0 else NO_PINGS,
        }
        if index == len(parts) - 1:
            payload["components"] = role_button(live)
        items.append(Send(payload, channel=channels["cities"][city]["text"]).item())
    return items


def _mafia_welcome(live: LiveGame, game: Game, city: str) -> list[OutboxItem]:
    """A city's mafia room greeting its mafiosi."""
    room = live.record.channels["cities"][city]["mafia"]
    return [
        Send(
            {
                "content": phrase(live, "welcome.mafia", city=city, players=part),
                "allowed_mentions": NO_PINGS,
            },
            channel=room,
        ).item()
        for part in chunks(
            [", ".join(mention(p) for p in game.living_mafiosi(city))], RESIDENTS_LIMIT
        )
    ]


def _deal_lines(live: LiveGame, game: Game) -> list[str]:
    """The deal as the host's log gives it: the seed, then each city's residents and statuses."""
    lines = [phrase(live, "log.deal", seed=game.seed)]
    for city in game.cities:
        lines.append(phrase(live, "summary.city", city=city))
        for player in game.residents[city]:
            lines.append(
                f"• {mention(player)} ({shown_name(live, player)}) — "
                f"{status_text(live, game.status_of(player).value)}"
            )
    return lines


def role_button(live: LiveGame) -> list[dict[str, Any]]:
    """The "My status" button under a welcome, as the message's component rows."""
    return [
        {
            "type": 1,
            "components": [
                {
                    "type": 2,
                    "style": 1,
                    "custom_id": f"mafia:role:{live.id}",
                    "label": phrase(live, "welcome.role"),
                }
            ],
        }
    ]


#: the lane of the newcomer's pings: after his roles and overwrites (that lane's items go in
#: order), so that he can see the channels when he is pinged in them (Discord pings only those
#: who can)
AFTER_ACCESS = "permissions"


def replaced_items(
    live: LiveGame, old: str, new: str, *, name: str, quiet: bool, exposed: list[str] | None = None
) -> list[OutboxItem]:
    """After ``/host replace``: the lobby knows the newcomer (and that the old player left), the
    roles and the mafia room's overwrite move to him, and he is told where to look, pinged alone:
    his status behind "My status" (privately), for a member of the mafia its room greeting him.
    The host's log names the status; nobody else learns it."""
    game = live.game
    assert game is not None
    _seat_newcomer(live, old, new, name, exposed)
    items = replacement_items(live, game, old, new, quiet=quiet)
    items += _newcomer_greetings(live, game, old, new)
    items += log_items(
        live,
        phrase(
            live,
            "log.replaced",
            old=mention(old),
            new=mention(new),
            city=game.city_of(new),
            status=status_text(live, game.status_of(new).value),
        ),
    )
    for line in exposure_lines(
        live, {new: exposed} if exposed else {}
    ):  # he sees more than his seat
        items += log_items(live, line)
    return items


def _seat_newcomer(
    live: LiveGame, old: str, new: str, name: str, exposed: list[str] | None
) -> None:
    """The lobby's players after a replacement: the old one replaced by the newcomer, who is
    added (with what his permissions show him); the old one's pending strike is dropped."""
    record = live.record
    players = record.lobby.setdefault("players", [])
    for entry in players:
        if str(entry["id"]) == old:
            entry["replaced_by"] = int(new)
    players.append(
        {
            "id": int(new),
            "name": name,
            "replaces": int(old),
            **({"exposed": exposed} if exposed else {}),
        }
    )
    record.lobby.get("leaving", {}).pop(old, None)


def _newcomer_greetings(live: LiveGame, game: Game, old: str, new: str) -> list[OutboxItem]:
    """The newcomer pinged alone where he now sits: his city's channel (with "My status") and,
    for a member of the mafia, its room, naming its Godfather."""
    city = game.city_of(new)
    ids = live.record.channels.get("cities", {}).get(city)
    only_him = {"parse": [], "users": [new]}
    items: list[OutboxItem] = []
    if ids is not None:
        welcome = phrase(
            live,
            "replace.welcome",
            player=mention(new),
            old=mention(old),
            me=command(live.language, "mafia me"),
        )
        message = {
            "content": welcome,
            "allowed_mentions": only_him,
            "components": role_button(live),
        }
        items.append(Send(message, channel=ids["text"], lane=AFTER_ACCESS).item())
    if game.status_of(new).in_mafia and ids is not None:
        godfather = game.godfather_of(city)
        greeting = phrase(
            live,
            "replace.mafia",
            player=mention(new),
            old=mention(old),
            godfather=mention(godfather) if godfather else phrase(live, "role.no_godfather"),
        )
        message = {"content": greeting, "allowed_mentions": only_him}
        items.append(Send(message, channel=ids["mafia"], lane=AFTER_ACCESS).item())
    return items
