"""Shared pieces of the cog tests: more guilds on one fake, who is who, "nothing changed".

A fake Discord points the whole process's discord.py at itself, so a test
module that needs several games at once runs one bot against one fake with
several guilds (one game per guild), each with its own members.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from bot.i18n import t
from tests.fakediscord import InteractionResult, Message, build_standard_guild
from tests.harness import Table

VIEW = 1 << 10
SEND = 1 << 11
CONNECT = 1 << 20
SPEAK = 1 << 21
MANAGE_CHANNELS = 1 << 4

#: the error keys of the catalogue, to tell a refusal from an accepted command
ERROR_PREFIX = "error."


async def another_guild(table: Table, prefix: str, players: int, *, locale: str = "ru") -> Table:
    """A new guild on the table's fake, with members ``{prefix}0``..., served by the same bot."""
    world = build_standard_guild(
        table.fake, players=[f"{prefix}{i}" for i in range(players)], preferred_locale=locale
    )

    def known() -> bool:
        return table.bot.get_guild(world.guild.id) is not None

    await table.fake.wait_until(known, 5.0, f"the bot never saw guild {world.guild.name}")
    return Table(table.fake, world, table.bot, table.config)


async def run(
    table: Table,
    who: Any,
    command: str,
    options: dict[str, Any] | None = None,
    *,
    confirm: bool = True,
    **kwargs: Any,
) -> InteractionResult:
    """A slash command, waited for until its answer is final. A host's command that asks for
    confirmation (``/host end``, ``/host kill``) is confirmed by pressing its "Yes" (unless
    ``confirm`` is false): the press's answer is returned."""
    result = await table.slash(who, command, options, **kwargs)
    await result.wait_final()
    button = confirmation(result)
    if confirm and button is not None:
        assert result.ephemeral, result.describe()
        pressed = await table.fake.click(result.original, button, table.member(who).user.id)
        await pressed.wait_final()
        return pressed
    return result


def confirmation(result: InteractionResult) -> str | None:
    """The custom id of the "Yes" of a host's confirmation in an answer, if it asks one."""
    for row in result.components:
        for component in row.get("components", []):
            if str(component.get("custom_id", "")).startswith("mafia:confirm:"):
                return str(component["custom_id"])
    return None


async def accepted(
    table: Table, who: Any, command: str, options: dict[str, Any] | None = None
) -> str:
    """A command that must be accepted: it adds one row to the command log (player and host acts)."""
    game = table.live().id
    before = len(await table.bot.storage.commands(game))
    result = await run(table, who, command, options)
    assert result.ephemeral, (command, result.content)
    after = len(await table.bot.storage.commands(game))
    assert after == before + 1, f"/{command} {options} by {who} was refused: {result.content}"
    return result.content


def guild_channel_ids(table: Table) -> set[int]:
    """Every channel of the table's guild (deleted ones too)."""
    return {c.id for c in table.fake.state.channels.values() if c.guild_id == table.guild_id}


def posted(table: Table) -> dict[int, tuple[str, int, bool]]:
    """What the bot posted in the guild's channels: message id → (content, edits, deleted)."""
    channels = guild_channel_ids(table)
    return {
        m.id: (m.content, len(m.edits), m.deleted)
        for m in table.fake.messages(include_deleted=True)
        if m.channel_id in channels and m.kind == "channel"
    }


@dataclass
class Snapshot:
    """Everything a refused command must leave as it was."""

    state: dict[str, Any] | None
    record: dict[str, Any]
    commands: int
    calls: int
    messages: dict[int, tuple[str, int, bool]] = field(default_factory=dict)
    lobby: tuple[str, int] | None = None


async def snapshot(table: Table) -> Snapshot:
    """The game, its record, its log, the REST calls so far and the guild's bot posts (after a drain)."""
    await table.drain()
    live = table.live()
    record = live.record
    lobby_message = await table.bot.storage.message_ref(live.id, "lobby")
    lobby = None
    messages = posted(table)
    if lobby_message is not None:
        message = table.fake.message(lobby_message[1])
        lobby = (message.content, len(message.edits))
        messages.pop(message.id, None)  # the lobby is its own field
    return Snapshot(
        state=live.game.to_dict() if live.game is not None else None,
        record={
            "state": record.state,
            "lobby": repr(record.lobby),
            # the reconciler's own notes (``footprint``: who holds powers, stuck roles) are
            # written by its passes whenever they run, whatever the command did
            "channels": repr(
                {key: value for key, value in record.channels.items() if key != "footprint"}
            ),
            "deadline": record.deadline,
            "count": record.command_count,
        },
        commands=len(await table.bot.storage.commands(live.id)),
        calls=len(table.fake.calls()),
        messages=messages,
        lobby=lobby,
    )


async def assert_unchanged(table: Table, before: Snapshot) -> None:
    """Nothing moved: rules state, record, command log, guild posts; the only REST call was the answer."""
    await table.drain()
    after = await snapshot(table)
    assert after.state == before.state, "the rules state changed"
    changed = sorted(key for key in before.record if before.record[key] != after.record.get(key))
    assert after.record == before.record, f"the game's record changed: {changed}"
    assert after.commands == before.commands, "a command row was added"
    assert after.messages == before.messages, (
        "something was posted or edited in the guild's channels"
    )
    assert after.lobby == before.lobby, "the lobby message changed"
    extra = [
        f"{c.method} {c.path}"
        for c in table.fake.calls()[before.calls : after.calls]
        if not c.path.startswith(("/interactions/", "/webhooks/"))
    ]  # the answer, deferred or not
    assert extra == [], f"REST calls besides the interaction answer: {extra}"


def announcement(language: str, key: str, **params: Any) -> str:
    """A phase's announcement as the bot words it: with its commands as clickable mentions."""
    from cogs.mentions import command

    commands = {
        "nominate": "nominate",
        "lastword": "lastword speak",
        "protect": "protect",
        "compare": "compare",
        "vote": "vote",
        "unvote": "unvote",
        "kill": "kill",
        "check": "check",
    }
    return t(
        language,
        key,
        **{name: command(language, path) for name, path in commands.items()},
        **params,
    )


def refusal_text(language: str, key: str, **params: Any) -> str:
    """The catalogue's text of a refusal."""
    assert key.startswith(ERROR_PREFIX), key
    return t(language, key, **params)


def ballot_message(table: Table, city: str) -> Message:
    """The city's newest ballot message."""
    channel = table.city_channel(city)
    ballots = [
        m
        for m in table.fake.messages(channel)
        if "mafia:unvote:" in str(m.components) or "🗳️" in m.content
    ]
    assert ballots, f"no ballot in {city}"
    return ballots[-1]


def quick_edits(table: Table, interval: float = 0.02) -> None:
    """Edits of one message go out ``interval`` apart instead of 1.5 s (for tests not about coalescing)."""
    table.bot.outbox.edit_interval = interval


async def lobby_message(table: Table, timeout: float = 5.0) -> Message:
    """The lobby message of the guild's game, as Discord has it now.

    The outbox posts it after ``/mafia new`` and stores which message it is
    once Discord accepted it, so this waits for that.
    """
    latest = await table.bot.storage.latest_game(table.guild_id)
    assert latest is not None, "no game in the guild"
    game = latest.id
    deadline = asyncio.get_running_loop().time() + timeout
    while (reference := await table.bot.storage.message_ref(game, "lobby")) is None:
        assert asyncio.get_running_loop().time() < deadline, "the lobby message was never stored"
        await asyncio.sleep(0.005)
    return table.fake.message(reference[1])


def patches(table: Table, message_id: int) -> list[Any]:
    """The bot's PATCHes of one message through the channel route, oldest first."""
    return [
        call
        for call in table.fake.calls("PATCH", "/channels/{channel_id}/messages/{message_id}")
        if call.params.get("message_id") == str(message_id)
    ]


async def deliver_again(table: Table, result: InteractionResult, timeout: float = 5.0) -> None:
    """Discord delivers an interaction a second time; returns once the bot has handled it (a
    duplicate gets no answer, so this waits for discord.py's command task instead)."""
    seen = asyncio.ensure_future(
        table.bot.wait_for("interaction", check=lambda i: i.id == result.id, timeout=timeout)
    )
    await table.fake.resend(result)
    await seen
    running = [
        t for t in asyncio.all_tasks() if t.get_name() == "CommandTree-invoker" and not t.done()
    ]
    if running:
        await asyncio.wait(running, timeout=timeout)
