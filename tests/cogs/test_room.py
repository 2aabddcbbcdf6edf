"""A game in a full guild: the start counts its room first, and whatever Discord refuses later is
told to the host in the server's language, never in Discord's English.

Discord's caps (the fake enforces them): 500 channels per guild, categories included; 50 per
category; 250 roles per guild, @everyone included.
"""

from __future__ import annotations

import re
from typing import Any

import discord
import pytest

from bot.i18n import has, t
from cogs.failures import (
    MAX_CATEGORY_CHANNELS,
    MAX_CHANNELS,
    MAX_ROLES,
    Failure,
    failure_of,
    failure_text,
    reason_failure,
    start_refused_text,
)
from cogs.room import Footprint, footprint, shortfall
from tests.cogs.scenes import assert_unchanged, quick_edits, run, snapshot
from tests.fakediscord import ChannelType
from tests.harness import Table, bot_table
from tests.rules.helpers import make_game

CHANNELS_ROUTE = r"/guilds/\d+/channels"
MEMBER_ROLE_ROUTE = r"/guilds/\d+/members/\d+/roles/\d+"
#: what Discord says in English, which no host text may carry
DISCORD_ENGLISH = (
    "Maximum number",
    "Missing Permissions",
    "Invalid Form Body",
    "error code",
    "Bad Request",
)


def channel_count(table: Table) -> int:
    return len([c for c in table.fake.state.guild_channels(table.guild_id) if not c.is_thread])


async def fill_channels(table: Table, total: int) -> list[int]:
    """Channels made by a human until the guild holds ``total``; the bot has seen them."""
    made = []
    while channel_count(table) < total:
        made.append(table.fake.create_channel(table.guild_id, f"chat {channel_count(table)}").id)
    await table.fake.wait_until(
        lambda: len(table.bot.get_guild(table.guild_id).channels) == total or None,
        10.0,
        "the bot never saw the channels",
    )
    return made


async def fill_roles(table: Table, total: int) -> list[int]:
    guild = table.fake.state.guild(table.guild_id)
    made = []
    while len(guild.roles) < total:
        made.append(table.fake.create_role(table.guild_id, f"role {len(guild.roles)}").id)
    await table.fake.wait_until(
        lambda: len(table.bot.get_guild(table.guild_id).roles) == total or None,
        10.0,
        "the bot never saw the roles",
    )
    return made


async def start_held_at(
    table: Table, method: str, route: str, *, locale: str = "ru"
) -> tuple[Any, Any]:
    """``/host start``, its first call matching ``route`` held at the fake (a human acts
    meanwhile, then the test releases it): the fault and the interaction."""
    held = table.fake.hang(method, route, count=1)
    started = await table.slash("host", "host start", locale=locale)
    await table.fake.wait_until(lambda: held.hits or None, 20.0, f"no {method} {route} was made")
    return held, started


def untouched_by_discord_english(text: str) -> None:
    for words in DISCORD_ENGLISH:
        assert words not in text, text


async def test_a_start_without_room_for_its_channels_says_how_many_to_free_and_makes_nothing():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.open_lobby()
        await run(table, "host", "host setup", {"cities": "Верона, Падуя"})
        needed = 2 * 2 + 4  # a category; per city a channel and a mafia room; tribune, dead, log
        fillers = await fill_channels(table, MAX_CHANNELS - 5)
        before = await snapshot(table)
        started = await run(table, "host", "host start")
        assert started.ephemeral
        assert started.content == t(
            "ru", "error.no_room.channels", needed=needed, free=5, limit=MAX_CHANNELS, count=3
        )
        assert "Удалите хотя бы 3 ненужных канала или категории" in started.content
        untouched_by_discord_english(started.content)
        await assert_unchanged(table, before)
        assert table.fake.calls("POST", "/guilds/{guild_id}/channels") == []
        assert table.fake.calls("POST", "/guilds/{guild_id}/roles") == []

        for channel in fillers[:3]:  # freed as the answer says: the same lobby starts
            table.fake.delete_channel(channel)
        await table.fake.wait_until(
            lambda: len(table.bot.get_guild(table.guild_id).channels) == MAX_CHANNELS - 8 or None
        )
        again = await run(table, "host", "host start")
        assert again.content == t("ru", "host.started")
        assert channel_count(table) == MAX_CHANNELS


async def test_a_start_without_room_for_its_roles_is_refused_in_english_on_an_english_server():
    async with bot_table(players=8) as table:
        quick_edits(table)
        await run(table, "host", "admin language", {"language": "en"})
        await table.open_lobby()
        await run(table, "host", "host setup", {"cities": "Verona, Padua"})
        await fill_roles(table, MAX_ROLES - 2)
        before = await snapshot(table)
        started = await run(table, "host", "host start", locale="en-US")
        # two cities' living roles, the dead's, the spectators' (spectators are on by default)
        expected = t("en", "error.no_room.roles", needed=4, free=2, limit=MAX_ROLES, count=2)
        assert started.content == expected
        assert "Delete at least 2 roles you no longer need" in started.content
        await assert_unchanged(table, before)

        # without spectators the game needs one role fewer: it still does not fit
        await run(table, "host", "host setup", {"spectators": "off"})
        refused = await run(table, "host", "host start", locale="en-US")
        assert refused.content == t(
            "en", "error.no_room.roles", needed=3, free=2, limit=MAX_ROLES, count=1
        )
        assert "Delete at least 1 role you no longer need" in refused.content


@pytest.mark.parametrize(
    ("language", "what", "code", "key", "limit", "said"),
    [
        (
            "ru",
            "channels",
            30013,
            "failure.max_channels",
            MAX_CHANNELS,
            "на сервере уже 500 каналов вместе с категориями",
        ),
        ("en", "roles", 30005, "failure.max_roles", MAX_ROLES, "the server already has 250 roles"),
    ],
)
async def test_a_cap_reached_during_a_start_is_told_in_the_servers_language(
    language: str, what: str, code: int, key: str, limit: int, said: str
):
    """A human fills the guild while the start is under way: Discord refuses the game's first
    role or channel (30005, 30013); the bot rolls back and tells the host in the server's
    language what to do."""
    async with bot_table(players=8, refusals=True) as table:
        quick_edits(table)
        await run(table, "host", "admin language", {"language": language})
        await table.open_lobby()
        held, started = await start_held_at(
            table, "POST", rf"/guilds/\d+/{what}", locale="ru" if language == "ru" else "en-US"
        )
        await (
            fill_channels(table, MAX_CHANNELS)
            if what == "channels"
            else fill_roles(table, MAX_ROLES)
        )
        held.release()
        await started.wait_original(30.0)
        refused = [
            c for c in table.fake.calls("POST", f"/guilds/{{guild_id}}/{what}") if c.status == 400
        ]
        assert refused and refused[0].response["code"] == code
        assert started.content == t(
            language, "error.provision_refused", reason=t(language, key, limit=limit)
        )
        assert said in started.content
        untouched_by_discord_english(started.content)
        await table.drain()
        assert table.live().record.state == "lobby"
        held_now = (
            channel_count(table)
            if what == "channels"
            else len(table.fake.state.guild(table.guild_id).roles)
        )
        assert held_now == limit, "nothing of the game is left"


async def test_a_full_category_is_told_in_russian():
    """A human moves 50 channels into the game's fresh category before its cities' channels are
    made: Discord refuses the next one with 50035 CHANNEL_PARENT_MAX_CHANNELS."""
    async with bot_table(players=8, refusals=True) as table:
        quick_edits(table)
        await table.open_lobby()
        category, started = await start_held_at(table, "POST", CHANNELS_ROUTE)
        city = table.fake.hang("POST", CHANNELS_ROUTE, count=1)
        category.release()
        await table.fake.wait_until(
            lambda: city.hits or None, 10.0, "no city channel was asked for"
        )
        made = next(c for c in table.fake.calls("POST", "/guilds/{guild_id}/channels") if c.ok)
        assert int(made.response["type"]) == ChannelType.GUILD_CATEGORY
        for index in range(MAX_CATEGORY_CHANNELS):
            table.fake.create_channel(
                table.guild_id, f"moved {index}", parent_id=int(made.response["id"])
            )
        city.release()
        await started.wait_original(30.0)
        refused = [
            c for c in table.fake.calls("POST", "/guilds/{guild_id}/channels") if c.status == 400
        ]
        assert (
            refused
            and refused[0].response["errors"]["parent_id"]["_errors"][0]["code"]
            == "CHANNEL_PARENT_MAX_CHANNELS"
        )
        assert started.content == t(
            "ru",
            "error.provision_refused",
            reason=t("ru", "failure.category_full", limit=MAX_CATEGORY_CHANNELS),
        )
        untouched_by_discord_english(started.content)
        await table.drain()
        assert table.live().record.state == "lobby"


async def test_a_game_role_dragged_above_the_bot_mid_start_tells_the_host_what_to_drag():
    async with bot_table(players=8, refusals=True) as table:
        quick_edits(table)
        await table.open_lobby()
        held, started = await start_held_at(table, "PUT", MEMBER_ROLE_ROUTE)
        guild = table.fake.state.guild(table.guild_id)
        game_roles = [
            int(c.response["id"])
            for c in table.fake.calls("POST", "/guilds/{guild_id}/roles")
            if c.ok
        ]
        top = max(role.position for role in guild.roles.values())
        for role in game_roles:  # an admin drags the game's roles to the top
            table.fake.update_role(table.guild_id, role, position=top + 1)
        held.release()
        await started.wait_original(30.0)
        assert started.content == t(
            "ru", "error.provision_refused", reason=t("ru", "failure.hierarchy")
        )
        assert "перетащите роль бота выше ролей игры" in started.content
        untouched_by_discord_english(started.content)


class _Response:
    """What discord.py reads of an HTTP answer to build its exception."""

    def __init__(self, status: int) -> None:
        self.status = status
        self.reason = {
            400: "Bad Request",
            403: "Forbidden",
            404: "Not Found",
            429: "Too Many Requests",
            502: "Bad Gateway",
        }.get(status, "Error")


def refusal(
    status: int, code: int, message: str, errors: dict | None = None
) -> discord.HTTPException:
    body: dict = {"code": code, "message": message, **({"errors": errors} if errors else {})}
    kind = {403: discord.Forbidden, 404: discord.NotFound}.get(status, discord.HTTPException)
    if status >= 500:
        kind = discord.DiscordServerError
    return kind(_Response(status), body)


FULL_CATEGORY = {
    "parent_id": {
        "_errors": [
            {
                "code": "CHANNEL_PARENT_MAX_CHANNELS",
                "message": "Maximum number of channels in category reached (50)",
            }
        ]
    }
}


@pytest.mark.parametrize(
    ("error", "options", "key", "params"),
    [
        (
            refusal(400, 30013, "Maximum number of guild channels reached (500)"),
            {},
            "failure.max_channels",
            {"limit": 500},
        ),
        (
            refusal(400, 30005, "Maximum number of guild roles reached (250)"),
            {},
            "failure.max_roles",
            {"limit": 250},
        ),
        (
            refusal(400, 50035, "Invalid Form Body", FULL_CATEGORY),
            {},
            "failure.category_full",
            {"limit": 50},
        ),
        (
            refusal(403, 50013, "Missing Permissions"),
            {"lacking": ["manage_roles"]},
            "failure.missing_permissions",
            {"permissions": ["manage_roles"]},
        ),
        (
            refusal(403, 50013, "Missing Permissions"),
            {"kind": "member_role"},
            "failure.hierarchy",
            {},
        ),
        (
            refusal(403, 50013, "Missing Permissions"),
            {"kind": "create_channel", "needs": ["manage_channels"]},
            "failure.missing_permissions",
            {"permissions": ["manage_channels"]},
        ),
        (
            refusal(403, 50013, "Missing Permissions"),
            {"kind": "send"},
            "failure.channel_permissions",
            {},
        ),
        (refusal(403, 50001, "Missing Access"), {}, "failure.missing_access", {}),
        (refusal(404, 10003, "Unknown Channel"), {}, "failure.unknown_channel", {}),
        (refusal(404, 10011, "Unknown Role"), {}, "failure.unknown_role", {}),
        (refusal(404, 10007, "Unknown Member"), {}, "failure.unknown_member", {}),
        (refusal(404, 10008, "Unknown Message"), {}, "failure.unknown_message", {}),
        (refusal(404, 0, "404: Not Found"), {}, "failure.not_found", {"status": 404, "code": 0}),
        (refusal(429, 0, "You are being rate limited."), {}, "failure.rate_limited", {}),
        (refusal(502, 0, "Bad Gateway"), {}, "failure.discord_down", {"status": 502}),
        (
            refusal(
                400,
                50035,
                "Invalid Form Body",
                {
                    "name": {
                        "_errors": [
                            {"code": "BASE_TYPE_BAD_LENGTH", "message": "Must be between 1 and 100"}
                        ]
                    }
                },
            ),
            {},
            "failure.other",
            {"status": 400, "code": 50035},
        ),
        (TimeoutError(), {}, "failure.timeout", {}),
    ],
)
@pytest.mark.parametrize("language", ["ru", "en"])
def test_every_refusal_has_a_text_in_both_languages_without_discords_english(
    error: BaseException, options: dict, key: str, params: dict, language: str
) -> None:
    failure = failure_of(error, **options)
    assert (failure.key, failure.params) == (key, params)
    assert Failure.from_dict(failure.to_dict()) == failure, "stored and read back the same"
    text = failure_text(language, failure)
    assert has(key) and "{" not in text, text
    untouched_by_discord_english(text)
    if isinstance(error, discord.HTTPException):
        assert error.text not in text
    whole = start_refused_text(language, failure)
    assert text in whole or key == "failure.missing_permissions"
    if key == "failure.missing_permissions":
        assert t(language, f"permission.{params['permissions'][0]}") in whole
    if language == "ru":
        assert not re.search(r"[A-Za-z]{4,}", text.replace("Discord", "")), (
            f"English in Russian: {text}"
        )


def test_a_reason_stored_by_an_earlier_version_is_told_without_its_english() -> None:
    old = {
        "refused": "400 Bad Request (error code: 30013): Maximum number of guild channels reached (500)"
    }
    text = start_refused_text("ru", reason_failure(old))
    assert text == t(
        "ru", "error.provision_refused", reason=t("ru", "failure.other", status="—", code="—")
    )
    untouched_by_discord_english(text)
    permissions = start_refused_text("en", reason_failure({"missing": ["manage_channels"]}))
    assert permissions == t(
        "en", "error.missing_permissions", permissions=t("en", "permission.manage_channels")
    )


def test_the_room_a_game_needs_and_the_caps_it_would_pass() -> None:
    game = make_game()  # Verona and Padua, 7 residents each
    need = footprint(game, {"romeo"}, spectators=True)
    assert need == Footprint(
        channels=8, in_category=7, roles=5
    )  # Verona's quiet twin, the watchers
    assert footprint(game, set(), spectators=False) == Footprint(channels=8, in_category=7, roles=3)
    assert shortfall(need, channels=MAX_CHANNELS - 8, roles=MAX_ROLES - 5) == []
    [channels] = shortfall(need, channels=MAX_CHANNELS - 7, roles=0)
    assert (channels.what, channels.needed, channels.free, channels.missing) == (
        "channels",
        8,
        7,
        1,
    )
    over = shortfall(need, channels=MAX_CHANNELS + 3, roles=MAX_ROLES)
    assert [(s.what, s.free, s.missing) for s in over] == [("channels", 0, 8), ("roles", 0, 5)]
    # ten cities (the most a game has) fill 23 places of a category; the cap is checked all the same
    [category] = shortfall(Footprint(channels=52, in_category=51, roles=3), channels=0, roles=0)
    assert (category.what, category.needed, category.limit) == (
        "category",
        51,
        MAX_CATEGORY_CHANNELS,
    )
