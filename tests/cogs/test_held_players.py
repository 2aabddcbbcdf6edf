"""While the bot lacks a power its game needs, players cannot move the game either: end to end.

An admin takes Manage Roles from the bot's role mid-game. The game stands still
(:mod:`bot.powers`): a player's ``/nominate``, ``/vote``, ``/kill`` and ``/lastword speak``,
``/mafia notify`` and ``/mafia spectate`` are refused with the reason, in the reader's own
language (Russian and English on the same server), the game and its record are as they
were, and the bot asks Discord for nothing. What only reads (``/help``, ``/mafia me``) keeps
working. Given back, the same acts are taken.
"""

from __future__ import annotations

from typing import Any

from bot.channels import permission_names
from bot.i18n import t
from tests.cogs.scenes import (
    accepted,
    assert_unchanged,
    ballot_message,
    quick_edits,
    run,
    snapshot,
)
from tests.cogs.test_bot_powers import MANAGE_ROLES, bot_role, citizens, lose, regain, said
from tests.harness import Table, bot_table

LANGUAGES = ("ru", "en")


def reason(table: Table, language: str) -> str:
    """The refusal a reader of ``language`` gets while the bot lacks Manage Roles."""
    return t(
        language,
        "error.powers_lacking",
        permissions=permission_names(language, ["manage_roles"]),
        role=bot_role(table),
    )


async def refused(
    table: Table, who: str, command: str, options: dict[str, Any] | None = None
) -> None:
    """The command is refused with the reason in each reader's language, and nothing moved:
    the rules' state, the record, the command log, the guild's posts, and no REST call but
    the answers."""
    before = await snapshot(table)
    for language in LANGUAGES:
        answer = await run(table, who, command, options, locale=language)
        assert answer.ephemeral, (command, answer.content)
        assert answer.content == reason(table, language), (command, language, answer.content)
    await assert_unchanged(table, before)


async def held(table: Table) -> None:
    """The bot loses Manage Roles once what the game asked for is carried out; the host's log
    said so."""
    await table.drain()
    await lose(table, MANAGE_ROLES)
    lost = t(
        "ru", "powers.lost", permissions=t("ru", "permission.manage_roles"), role=bot_role(table)
    )
    await said(table, lost)


async def given_back(table: Table) -> None:
    await regain(table)
    await table.fake.wait_until(
        lambda: table.bot.powers.refusal(table.live()) is None or None, 30, "never back"
    )


async def test_players_acts_are_refused_with_the_reason_while_held_and_taken_once_back() -> None:
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.new_game(cities="Верона", maniac=False)
        nominator, nominee = citizens(table)[:2]
        await held(table)
        await refused(table, nominator, "nominate", {"player": nominee})
        # what only reads still answers
        assert (await run(table, nominator, "mafia me")).content != reason(table, "ru")
        assert (await run(table, nominator, "help")).content != reason(table, "ru")
        await given_back(table)
        await accepted(table, nominator, "nominate", {"player": nominee})
        assert list(table.game.nominations["Верона"]) == [nominee]

        await held(table)
        await refused(table, nominee, "lastword speak")
        await given_back(table)
        await accepted(table, "host", "host next")
        assert table.game.stage.value == "voting"

        await held(table)
        await refused(table, nominator, "vote", {"player": nominee})
        # the ballot's menu goes the same way: refused, nothing moved
        before = await snapshot(table)
        ballot = ballot_message(table, "Верона")
        menu = f"mafia:vote:{table.live().id}:0"
        voter = table.member(nominator).user.id
        picked = await table.fake.select(ballot, menu, [nominee], voter)
        await picked.wait_final()
        assert picked.ephemeral and picked.content == reason(table, "ru"), picked.content
        await assert_unchanged(table, before)
        await given_back(table)
        await accepted(table, nominator, "vote", {"player": nominee})
        assert table.game.votes["Верона"][nominator][0] == nominee

        while table.game.stage.value != "night":
            await accepted(table, "host", "host next")
        mafioso = next(p for p in table.game.alive() if table.game.status_of(p).value == "mafioso")
        victim = citizens(table)[-1]
        await held(table)
        await refused(table, mafioso, "kill", {"player": victim})
        await given_back(table)
        await accepted(table, mafioso, "kill", {"player": victim})
        assert table.fake.invalid.total == 0, table.fake.invalid.summary()


async def test_notify_and_spectate_are_refused_while_held_and_work_once_back() -> None:
    async with bot_table(players=10) as table:
        quick_edits(table)
        await table.new_game(players=[f"p{i}" for i in range(8)], cities="Верона", maniac=False)
        player = citizens(table)[0]
        await held(table)
        await refused(table, player, "mafia notify", {"state": "off"})
        assert await table.bot.service.wants_pings(table.member(player).user.id)
        await refused(table, "p9", "mafia spectate")
        assert table.live().record.channels.get("watching", []) == []
        await given_back(table)
        answer = await run(table, player, "mafia notify", {"state": "off"})
        assert answer.content == t("ru", "notify.off")
        assert not await table.bot.service.wants_pings(table.member(player).user.id)
        answer = await run(table, "p9", "mafia spectate")
        assert answer.content == t("ru", "spectate.started", game=table.live().id)
        await table.drain()
        assert table.member("p9").user.id in table.live().record.channels["watching"]


async def test_the_host_cannot_hand_over_nor_add_a_cohost_while_held_and_can_once_back() -> None:
    """A new host or co-host gets the host's overwrite on every game channel: while the bot
    cannot put it, the game's hosting does not change either."""
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.new_game(cities="Верона", maniac=False)
        newcomer = table.fake.add_member(table.guild_id, "newcomer").user.id
        await held(table)
        await refused(table, "host", "host hand", {"member": newcomer})
        await refused(table, "host", "host cohost add", {"member": newcomer})
        assert table.live().record.host_id != newcomer
        await given_back(table)
        await run(table, "host", "host cohost add", {"member": newcomer})
        assert newcomer in table.live().record.lobby["cohosts"]
        await run(table, "host", "host hand", {"member": newcomer})
        assert table.live().record.host_id == newcomer
        await table.drain()
        text = table.city_channel("Верона")
        assert table.fake.permissions_for(table.guild_id, text, newcomer) & (1 << 10)  # he sees
        assert table.fake.invalid.total == 0, table.fake.invalid.summary()
