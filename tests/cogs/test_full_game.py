"""A whole game of 2 cities × 8 players, played only through interactions on the fake Discord.

Statuses are dealt at random by the bot; the test reads the deal from the
bot's game to decide its moves, and asserts only on what Discord saw: the
channels and their overwrites, the announcements, the private answers, and
(in the secrecy test) every recorded REST call.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import pytest

from bot.permissions import INVITE
from tests.cogs.scenes import confirmation
from tests.fakediscord import ChannelType
from tests.harness import Table, bot_table

SEND = 1 << 11
VIEW = 1 << 10
SPEAK = 1 << 21
CONNECT = 1 << 20

TEXTS = {
    "ru": {
        "cities": ("Верона", "Падуя"),
        "same": "одинаковы",
        "mafia": "мафия",
        "not_mafia": "не мафия",
        "executed": "казнь",
        "touring": "на гастролях",
        "procurator": "Прокуратором",
        "over": "Игра окончена",
        "decided": "выиграли его честные жители",
        "statuses": ("гражданин", "мафиози", "комиссар", "врач", "журналист", "маньяк"),
        "night": "Ночь 1",
        "day2": "День 2",
    },
    "en": {
        "cities": ("Verona", "Padua"),
        "same": "the same",
        "mafia": "mafia",
        "not_mafia": "not mafia",
        "executed": "executed",
        "touring": "mafia on tour",
        "procurator": "Procurator",
        "over": "The game is over",
        "decided": "honest residents win",
        "statuses": ("citizen", "mafioso", "commissar", "doctor", "journalist", "maniac"),
        "night": "Night 1",
        "day2": "Day 2",
    },
}


@dataclass
class Deal:
    """Who is who, by username, as the bot dealt it."""

    city_a: str
    city_b: str
    mafia_a: list[str]
    mafia_b: list[str]
    commissar_a: str
    commissar_b: str
    doctor: str
    journalist: str
    honest_a: list[str]
    honest_b: list[str]


def read_deal(table: Table, city_a: str, city_b: str) -> Deal:
    def one(status: str) -> str:
        found = table.players_of(status)
        assert len(found) == 1, (status, found)
        return found[0]

    def plain(city: str) -> list[str]:
        return table.players_of("citizen", city)

    return Deal(
        city_a,
        city_b,
        table.players_of("mafioso", city_a),
        table.players_of("mafioso", city_b),
        table.players_of("commissar", city_a)[0],
        table.players_of("commissar", city_b)[0],
        one("doctor"),
        one("journalist"),
        plain(city_a),
        plain(city_b),
    )


async def say(
    table: Table,
    who: str,
    command: str,
    options: dict | None = None,
    *,
    expect: str | None = None,
    ephemeral: bool = True,
) -> str:
    result = await table.slash(who, command, options)
    await result.wait_final()  # a deferred command is applied after its "thinking…"
    button = confirmation(result)
    if button is not None:  # /host kill asks first: the host says yes
        result = await table.fake.click(result.original, button, table.member(who).user.id)
        await result.wait_final()
    assert result.ephemeral == ephemeral, (command, result.content)
    if expect is not None:
        assert expect in result.content, (command, result.content)
    return result.content


async def vote_all(table: Table, city: str, candidate: str) -> None:
    for voter in [table.name(p) for p in table.game.alive(city)]:
        await say(table, voter, "vote", {"player": table.pid(candidate)})


def perms(table: Table, channel_id: int, who: str) -> int:
    return table.fake.permissions_for(table.guild_id, channel_id, table.member(who).user.id)


async def play_whole_game(table: Table, language: str) -> Deal:
    words = TEXTS[language]
    city_a, city_b = words["cities"]
    if language == "en":
        await say(table, "host", "admin language", {"language": "en"})
    live = await table.new_game(
        cities=f"{city_a}, {city_b}", mafiosi=2, doctor=True, journalist=True, maniac=False
    )
    deal = read_deal(table, city_a, city_b)
    channels = live.record.channels

    # --- the channels and their overwrites
    guild_channels = {
        c.id: c for c in table.fake.state.channels.values() if c.guild_id == table.guild_id
    }
    category = guild_channels[channels["category"]]
    assert category.type == ChannelType.GUILD_CATEGORY
    for key in ("voice", "dead", "log"):
        assert guild_channels[channels[key]].parent_id == category.id
    resident_a, resident_b = deal.honest_a[0], deal.honest_b[0]
    text_a, text_b = table.city_channel(city_a), table.city_channel(city_b)
    assert perms(table, text_a, resident_a) & SEND and perms(table, text_a, resident_b) & VIEW
    assert not perms(table, text_a, resident_b) & SEND
    mafia_a = table.mafia_channel(city_a)
    for name in deal.mafia_a:
        assert perms(table, mafia_a, name) & VIEW
    for name in deal.honest_a + deal.mafia_b:
        assert not perms(table, mafia_a, name) & VIEW
    assert perms(table, mafia_a, "host") & VIEW and perms(table, channels["log"], "host") & VIEW
    assert not perms(table, channels["log"], resident_a) & VIEW
    assert not perms(table, channels["dead"], resident_a) & VIEW
    assert perms(table, channels["voice"], resident_a) & SPEAK

    # --- day 1: the journalist, the doctor, a nomination at home and one across cities
    answer = await say(
        table,
        deal.journalist,
        "compare",
        {"first": table.pid(deal.mafia_a[0]), "second": table.pid(deal.mafia_a[1])},
    )
    assert words["same"] in answer
    protected = next(n for n in deal.honest_b if n not in (deal.doctor, deal.journalist))
    await say(table, deal.doctor, "protect", {"player": table.pid(protected)})
    await say(table, "host", "host touring", {"order": f"{city_b}, {city_a}"})
    nominator_a = next(n for n in deal.honest_a if n not in (deal.doctor, deal.journalist))
    await say(table, nominator_a, "nominate", {"player": table.pid(deal.mafia_a[0])})
    await say(table, resident_b, "nominate", {"player": table.pid(deal.mafia_a[1])})
    await say(table, "host", "host next")
    await table.drain()
    # the ballot of city B: one vote through the select menu, then unvote and vote again
    ballot = next(m for m in table.fake.messages(text_b) if "mafia:vote:" in str(m.components))
    picked = await table.fake.select(
        ballot,
        f"mafia:vote:{live.id}:{table.game.cities.index(city_b)}",
        [table.pid(deal.mafia_a[1])],
        table.member(resident_b).user.id,
    )
    assert picked.ephemeral
    unvoted = await table.fake.click(
        ballot, f"mafia:unvote:{live.id}", table.member(resident_b).user.id
    )
    assert unvoted.ephemeral
    await vote_all(table, city_a, deal.mafia_a[0])
    await vote_all(table, city_b, deal.mafia_a[1])
    await table.drain()
    ballot = table.fake.message(ballot.id)
    assert f"— {len(table.game.alive(city_b))}" in ballot.content  # the live tally
    await say(table, "host", "host next")
    await table.drain()
    day_a = table.channel_messages(text_a)
    executions = [line for line in day_a if "💀" in line and words["executed"] in line]
    assert any(
        table.pid(deal.mafia_a[0]) in line and words["statuses"][1] in line for line in executions
    )
    assert any(table.pid(deal.mafia_a[1]) in line and city_b in line for line in executions)
    assert any(words["decided"] in line for line in day_a)
    assert any(words["night"] in line and city_b in line for line in day_a)

    # --- night 1: the mafia of B elects and decides, tours into A; the commissars check
    gf, other = deal.mafia_b
    await say(table, gf, "elect", {"player": table.pid(gf)})
    await say(table, other, "elect", {"player": table.pid(gf)})
    victim_a = next(n for n in deal.honest_a if n != nominator_a)
    await say(table, gf, "kill", {"player": table.pid(protected)})
    await say(table, gf, "tour", {"player": table.pid(victim_a)})
    assert words["mafia"] in await say(
        table, deal.commissar_b, "check", {"player": table.pid(other)}
    )
    check_target = next(n for n in deal.honest_a if n != deal.commissar_a)
    assert words["not_mafia"] in await say(
        table, deal.commissar_a, "check", {"player": table.pid(check_target)}
    )
    await say(table, "host", "host next")
    await table.drain()
    dawn = table.channel_messages(text_a)
    assert any(table.pid(victim_a) in line and words["touring"] in line for line in dawn)
    assert table.game.is_alive(table.pid(protected))
    assert any(words["day2"] in line for line in dawn)
    log_lines = "\n".join(table.channel_messages(channels["log"]))
    assert table.pid(protected) in log_lines  # the doctor's save is told to the host

    # --- day 2: the host strikes out a mafioso; the last mafioso is executed: game over
    await say(table, "host", "host kill", {"player": table.pid(other)})
    candidate_a = next(n for n in deal.honest_a if table.game.is_alive(table.pid(n)))
    await say(
        table,
        [n for n in deal.honest_a if table.game.is_alive(table.pid(n)) and n != candidate_a][0],
        "nominate",
        {"player": table.pid(candidate_a)},
    )
    await say(table, resident_b, "nominate", {"player": table.pid(gf)})
    await say(table, "host", "host next")
    await vote_all(table, city_a, candidate_a)
    await vote_all(table, city_b, gf)
    await say(table, "host", "host next")
    await table.drain()
    end = table.channel_messages(text_b)
    assert any(table.pid(other) in line and words["procurator"] in line for line in end)
    assert any(words["over"] in line for line in end)
    assert table.live().record.state == "over" if table.bot.service.games() else True
    return deal


def secret_leaks(table: Table, language: str, channels: dict | None = None) -> list[str]:
    """Lines that show a living player's status, or a check answer, to someone not allowed.

    Over every message the bot posted in the guild (not ephemeral answers, which
    only their asker sees): before the game is over, a line naming a player and
    a status must announce a death (💀), unless only that city's mafia and the
    host can read the channel; the commissar's and journalist's answers appear
    only where the host alone can read. At the end the mafia rooms and the host's log open to every
    player (``channels``, the game's record, names them): a line posted there before the end is
    judged by who could read it then, the host alone in the log, the city's mafia in its room.
    """
    hidden = {int(channels["log"])} if channels else set()
    rooms = {int(ids["mafia"]) for ids in channels["cities"].values()} if channels else set()
    words = TEXTS[language]
    checks = ("проверил", "checked", "📰")  # the commissar's and the journalist's answers
    leaks: list[str] = []
    over = False
    host_id = table.host.user.id
    for message in table.fake.messages(include_deleted=True):
        channel = table.fake.state.channels.get(message.channel_id) if message.channel_id else None
        if message.ephemeral or channel is None or channel.guild_id != table.guild_id:
            continue
        readers = {
            m.user.id
            for m in table.world.guild.members.values()
            if not m.user.bot
            and m.user.id != host_id
            and table.fake.permissions_for(table.guild_id, channel.id, m.user.id) & VIEW
        }
        mafia_only = readers and all(table.game_status(uid) == "mafioso" for uid in readers)
        for line in (message.content or "").splitlines():
            if words["over"] in line:
                over = True
            if not over and message.channel_id in hidden:
                continue  # the host's alone until the end
            if not over and message.channel_id in rooms:
                mafia_only = True
            if not readers:
                continue
            if any(word in line for word in checks):
                leaks.append(f"check answer in #{channel.name}: {line}")
            names_status = any(re.search(rf"\b{w}\b", line) for w in words["statuses"])
            if names_status and "<@" in line and "💀" not in line and not over and not mafia_only:
                leaks.append(f"status in #{channel.name}: {line}")
    return leaks


@pytest.mark.parametrize("language", ["ru", "en"])
async def test_a_whole_game_through_interactions(
    language: str, database, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.ERROR, logger="bot.i18n")
    # an English server: its members' clients speak English too (their answers follow them)
    locale = "en-US" if language == "en" else "ru"
    async with bot_table(players=16, database=database, guild_locale=locale) as table:
        await play_whole_game(table, language)
        game = table.bot.service  # the game left memory when it ended
        assert not [g for g in game.games() if g.record.guild_id == table.guild_id]
        assert not [r for r in caplog.records if "missing text" in r.getMessage()]
        everything = "\n".join(m.content or "" for m in table.fake.messages(include_deleted=True))
        assert not re.search(r"\{[a-z_]+\}", everything), "an unfilled placeholder reached Discord"
        assert "error." not in everything and "cmd." not in everything
        record = await table.bot.storage.latest_game(table.guild_id)
        assert secret_leaks(table, language, record.channels) == []


async def test_the_dead_lose_their_voice_and_pen():
    async with bot_table(players=16) as table:
        live = await table.new_game(cities="Верона, Падуя", maniac=False)
        channels = live.record.channels
        city = table.game.cities[0]
        victim = table.name(table.game.alive(city)[0])
        text = table.city_channel(city)
        assert perms(table, text, victim) & SEND
        await say(table, "host", "host kill", {"player": table.pid(victim)})
        await table.drain()
        assert perms(table, text, victim) & VIEW and not perms(table, text, victim) & SEND
        assert not perms(table, table.city_channel(table.game.cities[1]), victim) & SEND
        assert not perms(table, channels["voice"], victim) & SPEAK
        assert perms(table, channels["dead"], victim) & SEND
        refused = await say(
            table, victim, "nominate", {"player": table.pid(table.name(table.game.alive(city)[0]))}
        )
        assert "выбыли из игры" in refused


async def test_a_whole_game_on_a_locked_down_server():
    """@everyone may do nothing at all and the bot holds exactly its invite: the game's roles and
    overwrites alone let every player see, write and speak where he may, and no further."""
    async with bot_table(players=16, everyone_permissions=0) as table:
        guild = table.fake.state.guild(table.guild_id)
        assert guild.roles[table.guild_id].permissions == 0
        assert (
            table.fake.state.guild_permissions(table.guild_id, table.fake.bot_user.id)
            == INVITE.value
        )
        await play_whole_game(table, "ru")
        record = await table.bot.storage.latest_game(table.guild_id)
        assert secret_leaks(table, "ru", record.channels) == []
