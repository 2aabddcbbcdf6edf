"""Every ``mafia:`` component is answered, through discord.py's DynamicItem router.

Buttons posted before a restart, in every form the bot has ever posted
(``mafia:join:{game}``, ``mafia:vote:{game}:{city}``, ``mafia:lastword:{game}:{player}``
...), reach their handler after it; a retired or malformed ``mafia:`` id, any
id not starting with ``mafia:``, or one of a game that is over, gets "this
button is no longer active", privately, and changes nothing; a crafted "No"
pressed by a non-host edits nothing.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from bot.config import Config
from bot.i18n import t
from tests.cogs.scenes import accepted, assert_unchanged, lobby_message, quick_edits, run, snapshot
from tests.fakediscord import FakeDiscord, Message, build_standard_guild
from tests.harness import NO_TIMERS, Table, bot_on, bot_table


def stale() -> str:
    """The refusal's text, worked out once the bot has installed its command mentions."""
    return t("ru", "error.stale_button")


def bot_message(
    table: Table,
    custom_ids: list[str],
    *,
    select: str | None = None,
    options: list[str] | None = None,
) -> Message:
    """A message the bot posted (in the guild's general channel) with these buttons."""
    fake = table.fake
    buttons = [
        {"type": 2, "style": 2, "custom_id": custom_id, "label": custom_id[:80] or "—"}
        for custom_id in custom_ids
    ]
    rows: list[dict[str, Any]] = [
        {"type": 1, "components": buttons[i : i + 5]} for i in range(0, len(buttons), 5)
    ]
    if select is not None:
        rows.append(
            {
                "type": 1,
                "components": [
                    {
                        "type": 3,
                        "custom_id": select,
                        "min_values": 1,
                        "max_values": 1,
                        "options": [{"label": value, "value": value} for value in options or []],
                    }
                ],
            }
        )
    message = Message(
        id=fake.state.new_id(),
        channel_id=table.world.text_channel.id,
        guild_id=table.guild_id,
        author=fake.bot_user,
        kind="channel",
        content="…",
        components=rows,
    )
    return fake.add_message(message)


async def test_a_retired_malformed_or_finished_games_button_is_answered_no_longer_active():
    async with bot_table(players=4) as table:
        quick_edits(table)
        await table.open_lobby(["p0"])
        game = table.live().id
        ids = [
            "mafia:frobnicate:1",
            f"mafia:join:{game}x",
            f"mafia:join:{game}:7",
            "mafia:",
            "mafia:vote:1",
            f"mafia:join:{game + 41}",
            f"mafia:role:{game + 41}",
            f"mafia:unvote:{game}",
        ]
        message = bot_message(table, ids)
        for custom_id in ids:
            before = await snapshot(table)
            # a member whose client speaks English, on a Russian server: his answer in English
            clicked = await table.fake.click(
                message, custom_id, table.member("p1").user.id, locale="en-US"
            )
            assert clicked.callback_type == 4, (custom_id, clicked.describe())
            assert clicked.ephemeral, custom_id
            expected = t(
                "en",
                "error.not_started"
                if custom_id.startswith("mafia:unvote")
                else "error.stale_button",
            )
            assert clicked.content == expected, custom_id
            assert clicked.followups == []
            await assert_unchanged(table, before)


async def test_buttons_of_every_form_posted_before_a_restart_reach_their_handlers_after_it():
    fake = FakeDiscord()
    world = build_standard_guild(fake, players=[f"p{i}" for i in range(8)])
    with tempfile.TemporaryDirectory() as folder:
        config = replace(Config(timers=NO_TIMERS), database=Path(folder) / "bot.sqlite3")
        await fake.start()
        try:
            async with bot_on(fake, world, config) as first:
                quick_edits(first)
                live = await first.new_game(
                    cities="Верона", maniac=False, doctor=False, journalist=False
                )
                residents = [first.name(p) for p in first.game.alive("Верона")]
                nominee = first.pid(residents[1])
                await accepted(first, residents[0], "nominate", {"player": nominee})
                await accepted(first, "host", "host next")
                await first.drain()
                # the forms of ids the bot posts, as a message kept from before the restart
                old = bot_message(
                    first,
                    [
                        f"mafia:role:{live.id}",
                        f"mafia:unvote:{live.id}",
                        f"mafia:lastword:{live.id}:{nominee}",
                        f"mafia:stop:{live.id}:{nominee}",
                        f"mafia:join:{live.id}",
                        f"mafia:leave:{live.id}",
                    ],
                    select=f"mafia:vote:{live.id}:0",
                    options=[nominee],
                )

            async with bot_on(fake, world, config) as second:
                quick_edits(second)
                voter = second.member(residents[2]).user.id

                async def click(custom_id: str, user: int) -> str:
                    result = await fake.click(old, custom_id, user)
                    await result.wait_callback()
                    if result.deferred:
                        await result.wait_original()
                    assert result.ephemeral, custom_id
                    return result.content

                status = second.game.status_of(str(voter)).value
                assert (await click(f"mafia:role:{live.id}", voter)).splitlines()[0] == t(
                    "ru", "role.status", status=t("ru", f"status.{status}"), city="Верона"
                )
                picked = await fake.select(old, f"mafia:vote:{live.id}:0", [nominee], voter)
                assert picked.content == t("ru", "reply.vote", target=f"<@{nominee}>")
                assert await click(f"mafia:unvote:{live.id}", voter) == t("ru", "reply.unvote")
                # the last word's buttons reach cogs/lastword.py's handlers
                assert await click(f"mafia:lastword:{live.id}:{nominee}", voter) == t(
                    "ru", "error.not_your_button"
                )
                assert await click(f"mafia:stop:{live.id}:{nominee}", voter) == t(
                    "ru", "error.no_recording"
                )
                # the lobby's, once the game runs
                assert await click(f"mafia:join:{live.id}", voter) == t("ru", "error.not_lobby")
                assert await click(f"mafia:leave:{live.id}", voter) == t("ru", "error.not_lobby")
                assert second.game.voter_of(str(voter)) is None
                assert len(await second.bot.storage.commands(live.id)) == 4
                # a lobby posted before the restart joins after it (the lobby message as posted)
                lobby = await lobby_message(second)
                assert (
                    f"mafia:join:{live.id}" not in lobby.custom_ids()
                )  # started: the buttons are gone
        finally:
            await fake.close()


async def test_every_mafia_dynamic_item_of_the_bot_is_left_to_its_own_callback():
    """Retired answers only the ids no other registered DynamicItem takes: each registered
    ``mafia:`` template's form is among those it leaves alone."""
    from cogs.components import RETIRED, Retired

    async with bot_table(players=4) as table:
        registered = table.bot._connection._view_store._dynamic_items  # discord.py's router
        forms = [
            re.sub(r"\(\?P<\w+>", "(", pattern.pattern.removeprefix("mafia:"))
            for pattern, item in registered.items()
            if item is not Retired and pattern.pattern.startswith("mafia:")
        ]
        assert len(forms) >= 8, forms
        for form in forms:
            assert form in RETIRED, f"{form} is answered twice: add it to cogs.components.ELSEWHERE"


async def test_ids_not_starting_with_mafia_are_answered_too_in_the_members_language():
    """Discord sends a component's press only to the application whose message carries it, so
    an id the bot does not know is one of its own messages' (crafted, or of a retired
    feature): it is answered, never left to fail, in the language of the member's client."""
    async with bot_table(players=4, guild_locale="en-US") as table:
        quick_edits(table)
        assert (await run(table, "host", "admin language", {"language": "en"})).ephemeral
        await table.open_lobby(["p0"])
        ids = ["foo", "other-bot:vote:1", "join:1", " mafia:join:1"]
        message = bot_message(table, ids)
        for custom_id in ids:
            before = await snapshot(table)
            clicked = await table.fake.click(message, custom_id, table.member("p1").user.id)
            assert clicked.callback_type == 4 and clicked.ephemeral, (custom_id, clicked.describe())
            assert clicked.content == t("en", "error.stale_button"), custom_id
            await assert_unchanged(table, before)


async def test_a_crafted_cancel_pressed_by_a_non_host_edits_nothing_and_is_refused():
    async with bot_table(players=8) as table:
        quick_edits(table)
        live = await table.new_game(cities="Верона")
        cancel = f"mafia:cancel:{live.id}"
        # the id copied onto a message everyone sees (a bot message with that button)
        message = bot_message(table, [cancel])
        for who in ("p1", "p2"):
            before = await snapshot(table)
            pressed = await table.fake.click(message, cancel, table.member(who).user.id)
            assert pressed.callback_type == 4 and pressed.ephemeral, (
                pressed.describe()
            )  # not 7: no edit
            assert pressed.content == t("ru", "error.not_host")
            assert message.content == "…" and message.edits == [] and message.components
            await assert_unchanged(table, before)
        # another game's id is stale, even for the host
        other = bot_message(table, [f"mafia:cancel:{live.id + 7}"])
        pressed = await table.fake.click(other, f"mafia:cancel:{live.id + 7}", table.host.user.id)
        assert pressed.callback_type == 4 and pressed.content == stale() and other.edits == []
