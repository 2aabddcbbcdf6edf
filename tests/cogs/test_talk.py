"""Play it the way Mafia communities play (issue 10), end to end through the strict fake, in both
languages: public votes on the ballot and the tally, pings with their ``allowed_mentions``,
``/help`` that follows the stage and the asker's status, ``/rules``, ``/mafia notify``.

The evidence is the fake's REST record (what the bot sent) and what the fake says Discord did
with it (:attr:`Message.pinged`: who was notified).
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

from bot.i18n import t
from cogs.help import rule_sections, rules_text
from cogs.mentions import command
from rules import Status
from tests.cogs.scenes import accepted, ballot_message, quick_edits, run
from tests.harness import Table, bot_table

ROOT = Path(__file__).resolve().parents[2]


def posts(table: Table, channel_id: int) -> list:
    """The bot's POSTs of new messages to a channel, oldest first (the REST record)."""
    return [
        c
        for c in table.fake.calls("POST", "/channels/{channel_id}/messages")
        if c.params.get("channel_id") == str(channel_id) and c.status < 300
    ]


def message_of(table: Table, call) -> object:
    return table.fake.message(int(call.response["id"]))


async def answer(table: Table, who: str, path: str, options: dict | None = None) -> str:
    result = await run(table, who, path, options)
    assert result.ephemeral, (path, result.content)
    return "\n".join([result.content, *[f.content for f in result.followups]])


@pytest.mark.parametrize("language", ["ru", "en"])
async def test_a_game_the_way_communities_play_it(language: str) -> None:
    # an English server: its members' clients speak English too (their answers follow them)
    locale = "en-US" if language == "en" else "ru"
    async with bot_table(players=16, guild_locale=locale) as table:
        quick_edits(table)
        say = lambda key, **params: t(language, key, **params)  # noqa: E731
        cmd = lambda path: command(language, path)  # noqa: E731
        if language == "en":
            await accepted_setting(table)
        live = await table.new_game(
            cities="Верона, Падуя" if language == "ru" else "Verona, Padua", maniac=False
        )
        game = table.game
        home, other = game.cities
        roles = live.record.channels["roles"]["cities"]

        # the day opens pinging each city's living role in its own channel, and nobody else
        for city in (home, other):
            opening = [
                c for c in posts(table, table.city_channel(city)) if "☀️" in c.json["content"]
            ][-1]
            role = str(roles[city]["living"])
            assert opening.json["allowed_mentions"] == {"parse": [], "roles": [role]}
            assert opening.json["content"].startswith(f"<@&{role}>")
            assert cmd("nominate") in opening.json["content"]  # what to do, as a clickable mention
            assert message_of(table, opening).pinged == {int(p) for p in game.alive(city)}

        # /help follows the asker: a citizen now may nominate; the host gets his tools
        residents = [table.name(p) for p in game.alive(home)]
        citizens = [n for n in residents if game.status_of(table.pid(n)) is Status.CITIZEN]
        voter = citizens[0]
        told = await answer(table, voter, "help")
        assert say("status.citizen") in told and cmd("nominate") in told and cmd("vote") not in told
        assert say("stage.discussion") in told
        hosting = await answer(table, "host", "help")
        assert say("help.host", game=live.id) in hosting and cmd("host next") in hosting

        # nominations: a resident of the other city and two of this one
        foreign = table.name(game.alive(other)[0])
        # citizens: the one executed below must not take the night's roles with him
        locals_ = [n for n in citizens if n != voter][:2]
        nominators = [n for n in residents if n not in locals_ and n != voter][:3]
        for nominator, nominee in zip(nominators, [foreign, *locals_], strict=True):
            await accepted(table, nominator, "nominate", {"player": table.pid(nominee)})
        await accepted(table, "host", "host next")
        await table.drain()

        told = await answer(table, voter, "help")
        assert cmd("vote") in told and cmd("nominate") not in told and say("stage.voting") in told

        # votes: two for the foreigner, one for each local; the ballot shows who, in vote order
        for who, whom in zip(
            nominators[:2] + [voter, nominators[2]], [foreign, foreign, *locals_], strict=True
        ):
            await accepted(table, who, "vote", {"player": table.pid(whom)})
        await table.drain()
        ballot = ballot_message(table, home).content
        assert len(ballot) <= 2000
        pair = ", ".join(f"<@{table.pid(n)}>" for n in nominators[:2])
        assert pair in ballot and re.search(r"<t:\d+:T>", ballot)
        assert say("ballot.foreign", row="").strip() in ballot

        # the day ends: the foreigner led with 2 of 4, not more than half, and the tally says so
        await accepted(table, "host", "host next")
        await table.drain()
        text = "\n".join(table.channel_messages(table.city_channel(home)))
        assert (
            say("tally.skipped", player=f"<@{table.pid(foreign)}>", votes=2, total=4, voters=pair)
            in text
        )
        assert (
            say(
                "tally.row",
                player=f"<@{table.pid(locals_[0])}>",
                votes=1,
                voters=f"<@{table.pid(voter)}>",
            )
            in text
        )
        assert not table.game.is_alive(table.pid(locals_[0]))  # the earliest last vote of the tie
        dead = await answer(table, locals_[0], "help")
        assert say("help.dead") in dead

        # the night's announcement says what each side does, pings again; a mafia room is told its job
        night = [c for c in posts(table, table.city_channel(home)) if "🌙" in c.json["content"]][-1]
        assert cmd("kill") in night.json["content"] and cmd("check") in night.json["content"]
        assert night.json["allowed_mentions"]["roles"] == [str(roles[home]["living"])]
        room = [m for m in table.channel_messages(table.mafia_channel(home))]
        assert any(cmd("kill") in m and cmd("pass") in m for m in room)
        mafioso = [p for p in table.game.alive(home) if table.game.status_of(p) is Status.MAFIOSO][
            0
        ]
        told = await answer(table, table.name(mafioso), "help")
        assert cmd("kill") in told and say("status.mafioso") in told

        # /mafia notify off mid-game: the quiet twin is made and he holds it; the next ping skips him
        quiet = table.name([p for p in table.game.alive(home) if p != mafioso][0])
        assert say("notify.off") in await answer(table, quiet, "mafia notify", {"state": "off"})
        await table.drain()
        twin = table.live().record.channels["roles"]["cities"][home]["quiet"]
        made = [
            c
            for c in table.fake.calls("POST", "/guilds/{guild_id}/roles")
            if c.json.get("name") == say("game_role.quiet", game=live.id, city=home)
        ]
        assert len(made) == 1 and not made[0].json["mentionable"]
        member = table.fake.state.member(table.guild_id, int(table.pid(quiet)))
        twin_id = int(made[0].response["id"])
        assert twin_id in member.roles and int(roles[home]["living"]) not in member.roles
        assert isinstance(twin, str)  # the provisioning key, resolved by the outbox
        assert table.fake.permissions_for(
            table.guild_id, table.city_channel(home), int(table.pid(quiet))
        ) & (1 << 11)
        await accepted(table, "host", "host next")
        await table.drain()
        morning = [c for c in posts(table, table.city_channel(home)) if "☀️" in c.json["content"]][
            -1
        ]
        assert int(table.pid(quiet)) not in message_of(table, morning).pinged
        assert message_of(table, morning).pinged  # the others still are

        # /rules in the guild's language: the contents, then a section
        contents = await answer(table, voter, "rules")
        sections = rule_sections(language)
        assert sections[0][0] in contents and all(title in contents for title, _ in sections[1:])
        third = await answer(table, voter, "rules", {"section": 3})
        assert third.startswith(f"## {sections[3][0]}")


async def accepted_setting(table: Table) -> None:
    assert (await run(table, "host", "admin language", {"language": "en"})).ephemeral


async def test_the_host_can_turn_the_games_pings_off() -> None:
    async with bot_table(players=8) as table:
        quick_edits(table)
        await table.new_game(cities="Верона", pings=False)
        city = table.game.cities[0]
        messages = posts(table, table.city_channel(city))
        assert messages and all(c.json["allowed_mentions"] == {"parse": []} for c in messages)
        assert not any(message_of(table, c).pinged for c in messages)
        assert not any("<@&" in c.json["content"] for c in messages)


async def test_a_one_city_game_says_nothing_of_touring() -> None:
    async with bot_table(players=8) as table:
        await table.new_game(cities="Верона", maniac=False)
        await accepted(
            table, table.name(table.game.alive()[0]), "nominate", {"player": table.game.alive()[1]}
        )
        await accepted(table, "host", "host next")
        await accepted(table, "host", "host next")
        await table.drain()
        said = "\n".join(
            table.channel_messages(table.city_channel("Верона"))
            + table.channel_messages(table.mafia_channel("Верона"))
        )
        assert "гастрол" not in said.casefold()


@pytest.mark.parametrize("language", ["ru", "en"])
def test_the_rules_are_discord_sized_sections_and_use_the_new_command_names(language: str) -> None:
    sections = rule_sections(language)
    assert len(sections) > 10
    assert all(len(f"## {title}\n{text}") <= 2000 for title, text in sections)
    text = rules_text(language)
    assert ("/мафия я" if language == "ru" else "/mafia me") in text
    assert "/мафия роль" not in text and "/mafia role" not in text
    # the package's copy is the repository's docs/ file
    assert text == (ROOT / "docs" / f"rules.{language}.md").read_text(encoding="utf-8")


def test_the_rules_ship_in_the_wheel(tmp_path: Path) -> None:
    """Built as users install it, the wheel holds the rules where the bot reads them."""
    import subprocess
    import sys

    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next(tmp_path.glob("prokurator-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp_path / "site")
    for language in ("ru", "en"):
        shipped = (tmp_path / "site" / "bot" / "texts" / f"rules.{language}.md").read_text(
            encoding="utf-8"
        )
        assert shipped == rules_text(language)
    # the bot's own code path, run from the installed copy
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import cogs.help as h, bot; print(bot.__file__); print(len(h.rule_sections('en')))",
        ],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert probe.returncode == 0, probe.stderr[-2000:]
    where, count = probe.stdout.split()
    assert where.startswith(str(tmp_path / "site")) and int(count) == len(rule_sections("en"))


async def test_a_reminder_pings_the_living_of_each_city_in_its_own_channel() -> None:
    from bot.config import Config, Timers

    now = [1_800_000_000.0]
    config = Config(timers=Timers(discussion=600, voting=300, night=600, reminders=(120,)))
    async with bot_table(players=16, config=config, clock=lambda: now[0]) as table:
        quick_edits(table)
        live = await table.new_game(cities="Верона, Падуя", maniac=False)
        now[0] += 600 - 120  # two minutes before the end of the discussion
        table.bot.timers.arm(table.live())
        roles = live.record.channels["roles"]["cities"]

        def reminded() -> bool:
            return all(
                any("⏳" in c.json["content"] for c in posts(table, table.city_channel(city)))
                for city in table.game.cities
            )

        await table.fake.wait_until(reminded, 10.0, "no reminder was posted")
        await table.drain()
        for city in table.game.cities:
            reminder = [
                c for c in posts(table, table.city_channel(city)) if "⏳" in c.json["content"]
            ]
            assert len(reminder) == 1
            role = str(roles[city]["living"])
            assert reminder[0].json["allowed_mentions"] == {"parse": [], "roles": [role]}
            assert message_of(table, reminder[0]).pinged == {int(p) for p in table.game.alive(city)}
