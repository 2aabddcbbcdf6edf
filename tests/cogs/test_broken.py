"""A game whose log no longer replays, through the bot: loaded broken, the host told, every
command in it refused with the same localised text, ``/host end`` closes it and the guild
plays again."""

from __future__ import annotations

import sqlite3
import tempfile
from dataclasses import replace
from pathlib import Path

from bot.config import Config
from bot.i18n import t
from tests.cogs.scenes import accepted, quick_edits, run
from tests.fakediscord import FakeDiscord, build_standard_guild
from tests.harness import NO_TIMERS, bot_on


def broken() -> str:
    """The refusal's text, worked out once the bot has installed its command mentions."""
    return t("ru", "error.game_broken")


async def test_a_game_whose_log_no_longer_replays_is_broken_until_the_host_ends_it():
    fake = FakeDiscord()
    world = build_standard_guild(fake, players=[f"p{i}" for i in range(8)])
    with tempfile.TemporaryDirectory() as folder:
        database = Path(folder) / "bot.sqlite3"
        config = replace(Config(timers=NO_TIMERS), database=database)
        await fake.start()
        try:
            async with bot_on(fake, world, config) as first:
                quick_edits(first)
                live = await first.new_game(cities="Верона", maniac=False)
                residents = [first.name(p) for p in first.game.alive("Верона")]
                await accepted(first, residents[0], "nominate", {"player": first.pid(residents[1])})
                await accepted(first, residents[2], "nominate", {"player": first.pid(residents[3])})
                host_log = int(live.record.channels["log"])
                game = live.id

            with sqlite3.connect(database) as db:  # the disk garbles a row of the log
                db.execute(
                    "UPDATE commands SET command = ? WHERE game_id = ? AND seq = 2",
                    ("\x00garbage", game),
                )

            async with bot_on(fake, world, config) as second:
                quick_edits(second)
                await second.drain()
                notice = t(
                    "ru",
                    "broken.notice",
                    game=game,
                    reason=t("ru", "broken.unreadable_command", seq=2),
                )
                assert second.channel_messages(host_log)[-1] == notice

                for who, command, options in [
                    (residents[4], "nominate", {"player": second.pid(residents[5])}),
                    (residents[4], "mafia me", {}),
                    (residents[4], "mafia status", {}),
                    ("host", "host next", {}),
                    ("host", "host kill", {"player": second.pid(residents[5])}),
                    ("host", "host timer", {"stage": "voting", "duration": "60"}),
                    ("host", "host setup", {"mafiosi": 2}),
                    ("host", "host touring", {"order": "Верона"}),
                    (residents[4], "mafia join", {}),
                ]:
                    refused = await run(second, who, command, options)
                    assert refused.ephemeral and refused.content == broken(), (
                        command,
                        refused.content,
                    )
                refused = await run(second, "host", "mafia new")
                assert refused.content == t("ru", "error.game_exists")

                ended = await run(second, "host", "host end")
                assert ended.ephemeral and ended.content == t("ru", "host.ended_reply")
                assert (await second.bot.storage.game(game)).state == "cancelled"
                opened = await run(second, "host", "mafia new")
                assert opened.content == t("ru", "lobby.opened", game=game + 1)

            async with bot_on(fake, world, config) as third:  # the notice is not repeated
                await third.drain()
                assert third.channel_messages(host_log).count(notice) == 1
                assert third.live().id == game + 1 and third.live().broken is None
        finally:
            await fake.close()


async def test_host_end_of_a_broken_game_locks_its_channels_as_a_normal_end_does():
    """A broken game is ended: every one of its channels is read-only to every player, as at a
    normal end (the city channels stay readable, nobody writes, the tribune is silent), and the
    mafia rooms open to the players read-only (the reveal)."""
    from tests.fakediscord import Permission

    fake = FakeDiscord()
    world = build_standard_guild(fake, players=[f"p{i}" for i in range(8)])
    with tempfile.TemporaryDirectory() as folder:
        database = Path(folder) / "bot.sqlite3"
        config = replace(Config(timers=NO_TIMERS), database=database)
        await fake.start()
        try:
            async with bot_on(fake, world, config) as first:
                quick_edits(first)
                live = await first.new_game(cities="Верона", maniac=False)
                residents = [first.name(p) for p in first.game.alive("Верона")]
                await accepted(first, residents[0], "nominate", {"player": first.pid(residents[1])})
                channels = live.record.channels
                game = live.id
                players = [first.member(name).user.id for name in residents]
                city, mafia = (
                    int(channels["cities"]["Верона"]["text"]),
                    int(channels["cities"]["Верона"]["mafia"]),
                )
                every = [
                    city,
                    mafia,
                    int(channels["voice"]),
                    int(channels["dead"]),
                    int(channels["log"]),
                ]
                writes = [
                    p
                    for p in players
                    if fake.permissions_for(world.guild.id, city, p) & Permission.SEND_MESSAGES
                ]
                assert writes == players  # while it runs, the living write in their city

            with sqlite3.connect(database) as db:  # a logged command the rules now refuse
                db.execute(
                    "UPDATE commands SET command = ? WHERE game_id = ? AND seq = 1",
                    ('{"verb": "nominate", "actor": "nobody", "target": "nobody"}', game),
                )

            async with bot_on(fake, world, config) as second:
                quick_edits(second)
                await second.drain()
                assert second.bot.service.find(game).broken is not None
                ended = await run(second, "host", "host end")
                assert ended.content == t("ru", "host.ended_reply")
                await second.drain()
                for channel in every:
                    for player in players:
                        allowed = fake.permissions_for(world.guild.id, channel, player)
                        assert not allowed & (Permission.SEND_MESSAGES | Permission.SPEAK), (
                            channel,
                            player,
                        )
                for (
                    player
                ) in players:  # read-only, not shut: the city and, revealed, the mafia room
                    for channel in (city, mafia):
                        assert (
                            fake.permissions_for(world.guild.id, channel, player)
                            & Permission.VIEW_CHANNEL
                        )
                assert t("ru", "host.ended") in second.channel_messages(city)
        finally:
            await fake.close()
