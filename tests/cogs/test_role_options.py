"""The roles' rule options (``Role.options``) in ``/host setup``: read from the declarations,
after the rules' own, in the roles' order, on/off or a choice of the declared values."""

from __future__ import annotations

from discord import AppCommandOptionType

from cogs.host.game_setup import HostSetup
from rules.table import ROLE_OPTIONS
from tests.harness import bot_table


def test_host_setup_offers_each_roles_option_after_the_rules_own():
    options = {p.name: p for p in HostSetup.setup.parameters}
    names = list(options)
    at = names.index("day_fallback") + 1
    assert names[at : at + len(ROLE_OPTIONS)] == [option.name for option in ROLE_OPTIONS]
    assert [o.name for o in ROLE_OPTIONS] == [
        "doctor_self_protect",
        "maniac_idle",
        "maniac_wins_if_survives",
    ]
    for option in ROLE_OPTIONS:
        offered = options[option.name]
        assert [choice.value for choice in offered.choices] == list(option.choices)
        kind = AppCommandOptionType.string if option.choices else AppCommandOptionType.boolean
        assert offered.type is kind and not offered.required


async def test_a_roles_option_given_to_host_setup_is_kept_with_the_rules_own_in_order():
    async with bot_table(players=4) as table:
        await table.open_lobby()
        given = {
            "maniac_wins_if_survives": True,
            "last_word_seconds": 30,
            "maniac_idle": "none",
            "first_phase": "night",
            "doctor_self_protect": False,
        }
        configured = await table.slash("host", "host setup", given)
        assert configured.ephemeral, configured.describe()
        assert list(table.live().record.lobby["rules"].items()) == [
            ("first_phase", "night"),
            ("doctor_self_protect", False),
            ("maniac_idle", "none"),
            ("maniac_wins_if_survives", True),
            ("last_word_seconds", 30),
        ]
