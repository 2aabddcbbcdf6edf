"""The outbox worker and a full disk: marks that cannot be stored are retried, nothing is lost,
and a new item wakes a worker that is backing off."""

from __future__ import annotations

import logging
import sqlite3

import pytest

import bot.outbox
from bot.storage import OutboxItem
from tests.harness import bot_table


class FullDisk:
    """Makes chosen storage calls raise SQLITE_FULL (what SQLite says when the disk is full)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, storage, *names: str) -> None:
        self.full = True
        self.refused = 0
        for name in names:
            real = getattr(storage, name)

            async def refusing(*args, _real=real, **kwargs):
                if self.full:
                    self.refused += 1
                    raise sqlite3.OperationalError("database or disk is full")
                return await _real(*args, **kwargs)

            monkeypatch.setattr(storage, name, refusing)


async def post(table, live, content: str) -> None:
    general = table.world.text_channel.id
    await table.bot.service.update(
        live.id, lambda live: [OutboxItem("send", {"channel_id": general}, {"content": content})]
    )


async def rows(table, live) -> list[tuple[str, str]]:
    async with (
        table.bot.storage.transaction() as db,
        db.execute(
            "SELECT payload, state FROM outbox WHERE game_id = ? AND kind = 'send' ORDER BY id",
            (live.id,),
        ) as cursor,
    ):
        return [(payload, state) async for payload, state in cursor]


async def test_a_refusal_that_cannot_be_marked_failed_is_retried_and_a_new_item_wakes_the_worker(
    monkeypatch, caplog
):
    """Discord refuses an item for good while the disk is full: marking it failed raises. The
    worker logs and backs off (here 30 s at first); room comes back and a new item is stored:
    the worker wakes at once, stores the failure (reported once) and posts the new item."""
    monkeypatch.setattr(bot.outbox, "BACKOFF_START", 30.0)
    async with bot_table(players=4, refusals=True) as table:
        await table.open_lobby()
        live = table.live()
        fake, general = table.fake, table.world.text_channel.id
        failures: list[int] = []

        async def reported(item, error):
            failures.append(item.id)

        table.bot.outbox.failure_hooks.append(reported)
        disk = FullDisk(monkeypatch, table.bot.storage, "outbox_failed")
        refused = fake.fail(
            "POST", rf"/channels/{general}/messages", status=403, code=50013, count=1
        )
        with caplog.at_level(logging.ERROR, logger="bot.outbox"):
            await post(table, live, "refused by Discord")
            await fake.wait_until(
                lambda: disk.refused >= 1 or None, 10.0, "the failure was never stored"
            )
            assert refused.hits == 1
            assert any("could not mark it failed" in r.getMessage() for r in caplog.records)
        assert failures == []  # not reported while it is not stored
        disk.full = False
        await post(table, live, "after the disk has room")
        await fake.wait_until(
            lambda: (
                any(m.content == "after the disk has room" for m in fake.messages(general)) or None
            ),
            10.0,
            "the new item waited out the backoff",
        )
        await table.drain()
        assert [state for _, state in await rows(table, live)][-2:] == ["failed", "sent"]
        assert len(failures) == 1
        assert [m.content for m in fake.messages(general)].count("refused by Discord") == 0


async def test_a_lane_whose_database_fails_backs_off_and_is_woken_by_a_new_item(
    monkeypatch, caplog
):
    """Reading the pending items fails (a full disk that also fails reads): the lane backs off,
    and the next stored item wakes it rather than the end of the backoff; both are posted once."""
    monkeypatch.setattr(bot.outbox, "BACKOFF_START", 30.0)
    async with bot_table(players=4) as table:
        await table.open_lobby()
        live = table.live()
        fake, general = table.fake, table.world.text_channel.id
        disk = FullDisk(monkeypatch, table.bot.storage, "pending_outbox")
        with caplog.at_level(logging.ERROR, logger="bot.outbox"):
            await post(table, live, "first")
            await fake.wait_until(lambda: disk.refused >= 1 or None, 10.0, "the lane never looked")
        assert any("trying again in 30.0 s" in r.getMessage() for r in caplog.records)
        disk.full = False
        await post(table, live, "second")
        await fake.wait_until(
            lambda: [m.content for m in fake.messages(general)][-2:] == ["first", "second"] or None,
            10.0,
            "the lane waited out its backoff",
        )
        assert [m.content for m in fake.messages(general)].count("first") == 1
