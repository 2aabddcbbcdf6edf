"""The lobby message: one message, posted where ``/mafia new`` was sent and edited in place.

It names the host, the cities, the roles and the house rules, lists the players that fit
(then how many more), and while the lobby is open carries its Join and Leave buttons; once
the game starts it says what became of the lobby.
"""

from __future__ import annotations

from typing import Any

from bot.channels import exposure_lines, lobby_exposure
from bot.i18n import NO_PINGS
from bot.limits import CONTENT, listing
from bot.outbox.intents import Edit, Send
from bot.service import LiveGame
from bot.storage import GameState, OutboxItem
from cogs import presets, spectators
from cogs.common import cohosts, mention, phrase, shown, status_text
from rules.table import SWITCHABLE

#: the button styles of Discord's message components (success: green, danger: red)
JOIN_STYLE, LEAVE_STYLE = 3, 4


def default_cities(live: LiveGame, players: int) -> list[str]:
    """City names for a lobby whose host named none: one city per 8 players, 1 to 6."""
    count = max(1, min(6, players // 8))
    return phrase(live, "lobby.default_cities").split(",")[:count]


def lobby_cities(live: LiveGame) -> list[str]:
    """The cities the game will have."""
    setup = live.record.lobby.get("setup", {})
    cities: list[str] = setup.get("cities") or default_cities(
        live, len(live.record.lobby["players"])
    )
    return cities


def head_lines(live: LiveGame) -> list[str]:
    """The lobby's first lines: its game, its host (and co-hosts), its cities."""
    lines = [
        phrase(live, "lobby.title", game=live.id),
        phrase(live, "lobby.host", host=mention(str(live.record.host_id))),
    ]
    if cohosts(live):
        lines.append(
            phrase(live, "lobby.cohosts", cohosts=", ".join(mention(str(c)) for c in cohosts(live)))
        )
    lines.append(phrase(live, "lobby.cities", cities=", ".join(map(shown, lobby_cities(live)))))
    return lines


def roles_text(live: LiveGame) -> str:
    """The roles the host's setup chose: how many mafiosi, and which statuses are in the game
    (those left out have a line of their own: :func:`left_out_line`)."""
    setup = live.record.lobby.get("setup", {})
    roles = []
    if setup.get("mafiosi"):
        roles.append(phrase(live, "lobby.mafiosi", count=setup["mafiosi"]))
    chosen = [status.value for status in SWITCHABLE if setup.get(status.value)]
    if chosen:
        roles.append(", ".join(status_text(live, status) for status in chosen))
    if roles:
        return "; ".join(roles)
    left_out = any(setup.get(status.value) is False for status in SWITCHABLE)
    return phrase(live, "lobby.roles_rest" if left_out else "lobby.roles_default")


def left_out_line(live: LiveGame) -> str | None:
    """The line naming the statuses the setup leaves out of the game (None: none)."""
    setup = live.record.lobby.get("setup", {})
    left_out = [status.value for status in SWITCHABLE if setup.get(status.value) is False]
    if not left_out:
        return None
    statuses = ", ".join(status_text(live, status) for status in left_out)
    return phrase(live, "lobby.without", statuses=statuses)


def setup_lines(live: LiveGame) -> list[str]:
    """What the game will be: its preset, roles, spectators, house rules and wills."""
    lobby = live.record.lobby
    lines = []
    preset = presets.lobby_line(live)
    if preset is not None:
        lines.append(preset)
    lines.append(phrase(live, "lobby.roles", roles=roles_text(live)))
    left_out = left_out_line(live)
    if left_out is not None:
        lines.append(left_out)
    mode = phrase(live, f"lobby.spectators_{spectators.mode_of(live.record)}")
    lines.append(phrase(live, "lobby.spectators", mode=mode))
    lines += presets.house_lines(live)
    if lobby.get("will"):
        lines.append(phrase(live, "lobby.will", count=int(lobby["will"])))
    return lines


def closing_lines(live: LiveGame) -> list[str]:
    """The lobby's last lines: while open, who will see the hidden rooms anyway (the host should
    know before) and how to join; after, what became of it."""
    if live.record.state == GameState.LOBBY:
        return [
            *exposure_lines(live, lobby_exposure(live), limit=300),
            phrase(live, "lobby.howto"),
        ]
    return [phrase(live, f"lobby.state_{live.record.state}")]


def players_line(live: LiveGame, taken: int) -> str:
    """The players, as many as fit in one message beside ``taken`` characters of other lines,
    then how many more."""
    players = live.record.lobby.get("players", [])
    frame = phrase(live, "lobby.players", count=len(players), players="")
    budget = CONTENT - len(frame) - taken - 1
    listed = listing(live.language, [mention(str(p["id"])) for p in players], budget) or phrase(
        live, "lobby.nobody"
    )
    return phrase(live, "lobby.players", count=len(players), players=listed)


def buttons(live: LiveGame) -> list[dict[str, Any]]:
    """The open lobby's Join and Leave buttons; none once it has closed."""
    if live.record.state != GameState.LOBBY:
        return []
    return [
        {
            "type": 1,
            "components": [
                {
                    "type": 2,
                    "style": JOIN_STYLE,
                    "custom_id": f"mafia:join:{live.id}",
                    "label": phrase(live, "lobby.join"),
                },
                {
                    "type": 2,
                    "style": LEAVE_STYLE,
                    "custom_id": f"mafia:leave:{live.id}",
                    "label": phrase(live, "lobby.leave"),
                },
            ],
        }
    ]


def lobby_payload(live: LiveGame) -> dict[str, Any]:
    """The lobby message: host, cities, roles, players, Join and Leave buttons."""
    lines = head_lines(live) + setup_lines(live)
    after = closing_lines(live)
    lines.append(players_line(live, sum(len(line) + 1 for line in lines + after)))
    lines.extend(after)
    return {"content": "\n".join(lines), "components": buttons(live), "allowed_mentions": NO_PINGS}


def lobby_edit(live: LiveGame) -> list[OutboxItem]:
    """Refresh the lobby message."""
    return [Edit("lobby", lobby_payload(live)).item()]


def lobby_post(live: LiveGame) -> list[OutboxItem]:
    """Post the lobby message in the channel it was opened from, remembered as ``lobby``."""
    return [Send(lobby_payload(live), channel=live.record.lobby["channel_id"], ref="lobby").item()]
