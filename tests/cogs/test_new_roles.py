"""The bodyguard, the sergeant and the lover through the fake Discord, on a Russian and on an
English server: their commands, what they are told, and that it reaches them (and the host's
log) only."""

from __future__ import annotations

from typing import Any

import pytest

from bot.i18n import mention, t
from tests.cogs.scenes import accepted, guild_channel_ids, run
from tests.harness import Table, bot_table

LOCALES = {"ru": "ru", "en": "en-US"}
ONLY = {"maniac": False, "doctor": False, "journalist": False}


async def start(table: Table, **roles: Any) -> None:
    await table.new_game(cities="Верона", first_phase="night", **ONLY, **roles)


def everywhere_but_the_log(table: Table) -> list[str]:
    """Every line the bot posted in the guild's channels but the host's log (before the end)."""
    log = int(table.live().record.channels["log"])
    channels = guild_channel_ids(table) - {log}
    return [
        line
        for message in table.fake.messages(include_deleted=True)
        if message.channel_id in channels and message.kind == "channel"
        for line in (message.content or "").splitlines()
    ]


def log_lines(table: Table) -> list[str]:
    return table.channel_messages(int(table.live().record.channels["log"]))


def dms(table: Table, who: str) -> list[str]:
    """What the bot wrote to a player in private messages."""
    channel = table.fake.state.dm_channel(table.member(who).user.id)
    return [] if channel is None else table.channel_messages(channel.id)


async def me(table: Table, who: str) -> str:
    result = await run(table, who, "mafia me")
    assert result.ephemeral
    return result.content


@pytest.mark.parametrize("language", ["ru", "en"])
async def test_the_bodyguard_guards_in_secret_and_dies_in_the_guarded_players_place(language):
    async with bot_table(players=8, guild_locale=LOCALES[language]) as table:
        await start(table, bodyguard=True)
        bodyguard = table.players_of("bodyguard")[0]
        guarded = table.players_of("citizen")[0]
        killer = table.players_of("mafioso")[0]
        answer = await accepted(table, bodyguard, "guard", {"player": table.pid(guarded)})
        assert answer == t(language, "reply.guard", target=mention(table.pid(guarded)))
        await accepted(table, killer, "kill", {"player": table.pid(guarded)})
        await accepted(table, "host", "host next")
        await table.drain()
        assert table.game.is_alive(table.pid(guarded))
        assert not table.game.is_alive(table.pid(bodyguard))
        chosen = t(
            language,
            "log.guard_chosen",
            bodyguard=mention(table.pid(bodyguard)),
            target=mention(table.pid(guarded)),
        )
        taken = t(
            language,
            "log.guarded.mafia",
            bodyguard=mention(table.pid(bodyguard)),
            target=mention(table.pid(guarded)),
        )
        logged = "\n".join(log_lines(table))
        assert chosen in logged and taken in logged
        public = everywhere_but_the_log(table)
        assert chosen not in public and taken not in public
        # his death is public, as every death is
        assert any("💀" in line and table.pid(bodyguard) in line for line in public)


@pytest.mark.parametrize("language", ["ru", "en"])
async def test_the_lovers_visit_is_known_to_her_and_the_host_only_and_saves_the_visited(
    language,
):
    async with bot_table(players=8, guild_locale=LOCALES[language]) as table:
        await start(table, lover=True)
        lover = table.players_of("lover")[0]
        visited = table.players_of("citizen")[0]
        killer = table.players_of("mafioso")[0]
        answer = await accepted(table, lover, "visit", {"player": table.pid(visited)})
        assert answer == t(language, "reply.visit", target=mention(table.pid(visited)))
        await accepted(table, killer, "kill", {"player": table.pid(visited)})
        await accepted(table, "host", "host next")
        await table.drain()
        assert table.game.is_alive(table.pid(visited)) and len(table.game.deaths) == 0
        chosen = t(
            language,
            "log.visit_chosen",
            lover=mention(table.pid(lover)),
            target=mention(table.pid(visited)),
        )
        saved = t(language, "log.visited_saved.mafia", target=mention(table.pid(visited)))
        logged = "\n".join(log_lines(table))
        assert chosen in logged and saved in logged
        public = "\n".join(everywhere_but_the_log(table))
        assert chosen not in public and saved not in public
        assert chosen not in await me(table, visited)  # the visited is not told


@pytest.mark.parametrize("language", ["ru", "en"])
async def test_the_sergeant_hears_his_commissar_alone_and_checks_once_the_commissar_is_dead(
    language,
):
    async with bot_table(players=8, guild_locale=LOCALES[language]) as table:
        await start(table, sergeant=True)
        sergeant = table.players_of("sergeant")[0]
        commissar = table.players_of("commissar")[0]
        mafioso = table.players_of("mafioso")[0]
        citizen = table.players_of("citizen")[0]
        refused = await run(table, sergeant, "check", {"player": table.pid(mafioso)})
        assert refused.content == t(language, "error.commissar_alive")
        await accepted(table, commissar, "check", {"player": table.pid(mafioso)})
        await table.drain()
        logged = t(
            language,
            "log.sergeant_told",
            sergeant=mention(table.pid(sergeant)),
            checker=mention(table.pid(commissar)),
            target=mention(table.pid(mafioso)),
            answer=t(language, "answer.mafia"),
        )
        told = t(
            language,
            "told.sergeant_told",
            sergeant=mention(table.pid(sergeant)),
            checker=mention(table.pid(commissar)),
            target=mention(table.pid(mafioso)),
            answer=t(language, "answer.mafia"),
        )
        assert told != logged
        # he is brought it at once, in his DMs, and reads it again in /mafia me
        await table.fake.wait_until(
            lambda: told in dms(table, sergeant) or None, 10.0, "the sergeant was never told"
        )
        assert told in await me(table, sergeant)
        assert told not in await me(table, citizen)
        assert logged in "\n".join(log_lines(table))
        assert all(told not in dms(table, other) for other in (commissar, mafioso, citizen))
        public = "\n".join(everywhere_but_the_log(table))
        assert told not in public and logged not in public
        # the commissar struck out tonight: the sergeant checks from the next night
        await accepted(table, "host", "host kill", {"player": table.pid(commissar)})
        refused = await run(table, sergeant, "check", {"player": table.pid(mafioso)})
        assert refused.content == t(language, "error.commissar_alive")
        await accepted(table, "host", "host next")
        await accepted(table, citizen, "nominate", {"player": table.pid(citizen)})
        await accepted(table, "host", "host next")
        await accepted(table, sergeant, "vote", {"player": table.pid(citizen)})
        await accepted(table, "host", "host next")
        took_over = t(language, "told.sergeant_took_over")
        await table.fake.wait_until(
            lambda: took_over in dms(table, sergeant) or None, 10.0, "never told he checks now"
        )
        assert took_over in await me(table, sergeant)
        assert took_over not in "\n".join(everywhere_but_the_log(table))
        assert t(
            language,
            "log.sergeant_took_over",
            sergeant=mention(table.pid(sergeant)),
            city=table.game.city_of(table.pid(sergeant)),
        ) in "\n".join(log_lines(table))
        checked = await accepted(table, sergeant, "check", {"player": table.pid(mafioso)})
        answer = t(language, "answer.mafia")
        assert checked == t(
            language, "reply.check", target=mention(table.pid(mafioso)), answer=answer
        )


@pytest.mark.parametrize("language", ["ru", "en"])
async def test_a_saved_preset_holds_the_three_switches_and_the_lobby_and_deal_follow_it(language):
    async with bot_table(players=8, guild_locale=LOCALES[language]) as table:
        await table.open_lobby()
        switches = {"bodyguard": True, "sergeant": True, "lover": True}
        await run(table, "host", "host setup", {"cities": "Верона", **switches})
        saved = await run(table, "host", "host preset save", {"name": "three"})
        assert saved.ephemeral
        await run(
            table,
            "host",
            "host setup",
            {"preset": "three", "maniac": False, "first_phase": "night"},
        )
        lobby = (await table.lobby_message()).content
        for status in switches:
            assert t(language, f"status.{status}") in lobby, status
        started = await table.slash("host", "host start")
        await started.wait_original(60.0)
        await table.drain()
        dealt = [table.game.status_of(p).value for p in table.game.players]
        assert sorted(s for s in dealt if s in switches) == ["bodyguard", "lover", "sergeant"]
        # /help tells the bodyguard what he may do at night
        helped = await run(table, table.players_of("bodyguard")[0], "help")
        marker = "\x00"
        what = t(language, "help.verb.guard", command=marker).split(marker)[1]
        assert what in helped.content
