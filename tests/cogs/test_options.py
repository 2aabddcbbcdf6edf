"""Every slash option is checked by the bot, not only by Discord's client.

A crafted interaction (Discord's client would never send it) with a value out
of an option's range, outside its choices or too long is refused with the
catalogue's text, privately, and stores nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from bot.i18n import t
from bot.limits import CITIES, CITY_NAME
from tests.cogs.scenes import another_guild, assert_unchanged, snapshot
from tests.fakediscord import InteractionResult
from tests.fakediscord.interactions import INTERACTION_APPLICATION_COMMAND
from tests.harness import Table, bot_table


async def crafted(
    table: Table, who: str, command: str, valid: dict[str, Any], **values: Any
) -> InteractionResult:
    """``command`` with ``valid`` options as the client would send them, then ``values`` put in
    their place in the payload, past the client's checks."""
    fake = table.fake
    payload = fake.builder.envelope(
        INTERACTION_APPLICATION_COMMAND,
        guild_id=table.guild_id,
        channel_id=table.world.text_channel.id,
        user_id=table.member(who).user.id,
        locale="ru",
        guild_locale=None,
        interaction_id=None,
    )
    payload["data"] = fake.builder.command_data(payload, command, valid)
    options = payload["data"]["options"]
    while options and options[0].get("type") in (1, 2):  # into the subcommand
        options = options[0]["options"]
    for option in options:
        if option["name"] in values:
            option["value"] = values[option["name"]]
    result = await fake.send_interaction(payload)
    await result.wait_callback()
    return result


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def tables() -> AsyncIterator[tuple[Table, Table]]:
    async with bot_table(players=8) as lobby:
        running = await another_guild(lobby, "r", 8)
        await lobby.open_lobby(["p0", "p1"])
        await running.new_game(cities="Верона", maniac=False)
        yield lobby, running


def text(key: str, option: str, **params: Any) -> str:
    return t("ru", key, option=t("ru", option), **params)


CASES = [
    (
        "lobby",
        "host timer",
        {"stage": "voting", "duration": "60"},
        {"duration": "-5"},
        t("ru", "error.bad_duration", value="-5", limit=7),
    ),
    (
        "lobby",
        "host timer",
        {"stage": "voting", "duration": "60"},
        {"stage": "sunrise"},
        text("error.option_choice", "opt.stage.name"),
    ),
    (
        "running",
        "host timer",
        {"stage": "discussion", "duration": "60"},
        {"duration": "9" * 41},
        text("error.option_length", "opt.duration.name", low=1, high=40),
    ),
    (
        "running",
        "host timer",
        {"stage": "discussion", "duration": "60"},
        {"duration": "8d"},
        t("ru", "error.bad_duration", value="8d", limit=7),
    ),
    (
        "running",
        "host timer",
        {"stage": "discussion", "duration": "60"},
        {"stage": "dawn"},
        text("error.option_choice", "opt.stage.name"),
    ),
    (
        "lobby",
        "host setup",
        {"mafiosi": 2},
        {"mafiosi": 0},
        text("error.option_range", "opt.mafiosi.name", low=1, high=50),
    ),
    (
        "lobby",
        "host setup",
        {"last_word_seconds": 60},
        {"last_word_seconds": 100000},
        text("error.option_range", "opt.last_word_seconds.name", low=1, high=180),
    ),
    (
        "lobby",
        "host setup",
        {"first_phase": "day"},
        {"first_phase": "dusk"},
        text("error.option_choice", "opt.first_phase.name"),
    ),
    (
        "lobby",
        "host setup",
        {"doctor": True},
        {"doctor": "yes"},
        text("error.option_type", "opt.doctor.name"),
    ),
    (
        "lobby",
        "host setup",
        {"cities": "Рим"},
        {"cities": "Рим," * 200},
        text("error.option_length", "opt.cities.name", low=1, high=CITIES * (CITY_NAME + 2)),
    ),
    (
        "running",
        "host next",
        {"from": "day 1 discussion"},
        {"from": "d" * 41},
        text("error.option_length", "opt.from_stage.name", low=1, high=40),
    ),
    (
        "running",
        "host timer",
        {"stage": "voting", "duration": "60"},
        {"duration": 60},
        text("error.option_type", "opt.duration.name"),
    ),
    (
        "running",
        "host extend",
        {"duration": "10m"},
        {"duration": "10 parsecs"},
        t("ru", "error.bad_duration", value="10 parsecs", limit=7),
    ),
    (
        "lobby",
        "admin language",
        {"language": "en"},
        {"language": "xx"},
        text("error.option_choice", "opt.language.name"),
    ),
]


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize(
    ("scene", "command", "valid", "values", "expected"),
    CASES,
    ids=[f"{c[0]}-{c[1]}-{'-'.join(c[3])}" for c in CASES],
)
async def test_a_crafted_option_is_refused_and_stores_nothing(
    tables: tuple[Table, Table],
    scene: str,
    command: str,
    valid: dict[str, Any],
    values: dict[str, Any],
    expected: str,
) -> None:
    table = tables[0] if scene == "lobby" else tables[1]
    before = await snapshot(table)
    language = await table.bot.storage.guild_language(table.guild_id)
    result = await crafted(table, "host", command, valid, **values)
    assert result.ephemeral and result.content == expected
    await assert_unchanged(table, before)
    assert await table.bot.storage.guild_language(table.guild_id) == language
    assert "sunrise" not in repr(table.live().record.lobby)


@pytest.mark.asyncio(loop_scope="module")
async def test_the_same_options_within_their_limits_are_taken(tables: tuple[Table, Table]) -> None:
    lobby, _ = tables
    result = await crafted(
        lobby, "host", "host timer", {"stage": "voting", "duration": "60"}, duration="0"
    )
    assert result.content == t("ru", "host.timer_off", stage=t("ru", "stage.voting"))
    assert lobby.live().record.lobby["timers"] == {"voting": 0}
