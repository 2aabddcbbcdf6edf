"""Autocomplete offers the legal targets only, for whoever types, at the moment he types."""

from __future__ import annotations

from tests.cogs.scenes import accepted, quick_edits
from tests.harness import Table, bot_table


async def offered(
    table: Table, who: str, command: str, typed: str = "", option: str = "player"
) -> list[str]:
    result = await table.fake.autocomplete(
        table.guild_id, table.member(who).user.id, command, option, typed
    )
    assert result.callback_type == 8, result.describe()
    return [choice["value"] for choice in result.choices]


def pids(table: Table, names: list[str]) -> set[str]:
    return {table.pid(name) for name in names}


async def test_autocomplete_offers_only_legal_targets_through_a_day_and_a_night():
    async with bot_table(players=16) as table:
        quick_edits(table)
        await table.new_game(
            cities="Верона, Падуя",
            mafiosi=2,
            doctor=True,
            journalist=True,
            maniac=True,
            day_fallback="host",
        )
        game = table.game
        a, b = game.cities
        status = {p: game.status_of(p).value for p in game.players}
        in_a = [table.name(p) for p in game.residents[a]]
        in_b = [table.name(p) for p in game.residents[b]]
        plain_a = [n for n in in_a if status[table.pid(n)] == "citizen"]
        plain_b = [n for n in in_b if status[table.pid(n)] == "citizen"]
        mafia_a = [n for n in in_a if status[table.pid(n)] == "mafioso"]
        mafia_b = [n for n in in_b if status[table.pid(n)] == "mafioso"]
        commissar_a = next(n for n in in_a if status[table.pid(n)] == "commissar")
        maniac = table.name(next(p for p in game.players if status[p] == "maniac"))

        # day 1, discussion: anyone living may be nominated; the host has nobody to execute
        assert set(await offered(table, plain_a[0], "nominate")) == set(game.players)
        p1 = table.world.player("p1").user.global_name
        assert set(await offered(table, plain_a[0], "nominate", "1")) == {
            table.pid(m.user.username) for m in table.world.players if "1" in m.user.global_name
        }
        assert table.pid("p1") in await offered(table, plain_a[0], "nominate", p1.upper())
        assert await offered(table, "host", "host execute") == []
        assert set(await offered(table, "host", "host kill")) == set(game.players)

        judge = plain_b[0]
        await accepted(table, "host", "host judge", {"player": table.pid(judge)})
        x, y = plain_a[0], plain_a[1]
        z = next(n for n in in_b if n not in (judge,) and status[table.pid(n)] != "maniac")
        await accepted(table, mafia_a[0], "nominate", {"player": table.pid(x)})
        await accepted(table, mafia_a[1], "nominate", {"player": table.pid(y)})
        await accepted(table, commissar_a, "nominate", {"player": table.pid(z)})
        await accepted(table, mafia_b[0], "nominate", {"player": table.pid(mafia_b[1])})
        await accepted(table, "host", "host kill", {"player": table.pid(y)})
        assert table.pid(y) not in await offered(table, x, "nominate")
        assert await offered(table, y, "nominate") == [], "the dead are offered nothing"

        # voting: a voter is offered the living nominees of his own city only
        await accepted(table, "host", "host next")
        assert set(await offered(table, x, "vote")) == pids(table, [x, z])
        assert set(await offered(table, judge, "vote")) == pids(table, [mafia_b[1]])
        assert await offered(table, x, "nominate") == []

        # nobody voted and the host decides: /host execute offers the living, to the host only
        await accepted(table, "host", "host next")
        assert table.game.stage.value == "execution"
        assert set(await offered(table, "host", "host execute")) == set(table.game.alive())
        assert await offered(table, x, "host execute") == []
        assert await offered(table, x, "host godfather") == [], (
            "a player learnt who the mafiosi are"
        )
        await accepted(table, "host", "host execute", {"player": table.pid(x)})
        await accepted(table, "host", "host execute", {"player": table.pid(mafia_b[1])})
        game = table.game
        assert game.stage.value == "night" and game.touring_city() == a
        alive = set(game.alive())

        # night 1: the commissar checks his own city, the touring mafia tours the others but the Judge
        assert set(await offered(table, commissar_a, "check")) == set(game.alive(a)) - {
            table.pid(commissar_a)
        }
        assert set(await offered(table, mafia_a[0], "tour")) == set(game.alive(b)) - {
            table.pid(judge)
        }
        assert await offered(table, mafia_b[0], "tour") == [], "B does not tour tonight"
        assert set(await offered(table, mafia_a[0], "kill")) == set(game.alive(a)) - pids(
            table, mafia_a
        )
        assert set(await offered(table, maniac, "kill")) == alive - {table.pid(maniac)}
        assert await offered(table, plain_a[2] if len(plain_a) > 2 else commissar_a, "kill") == []
        assert set(await offered(table, "host", "host godfather")) == (
            pids(table, mafia_a) | {table.pid(mafia_b[0])}
        )
        assert await offered(table, commissar_a, "host godfather") == []
