"""The outbox's rows: items queued with a command, marked sent, retried, failed; message refs."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable

from bot.storage.base import (
    StorageBase,
    _GroupedWrite,
)
from bot.storage.records import (
    OutboxItem,
    _item,
)


class OutboxQueries(StorageBase):
    """The outbox's queries."""

    async def add_outbox(self, game_id: int, items: Iterable[OutboxItem]) -> None:
        """Store outbox items on their own (reminders, results of background work)."""
        async with self.transaction(game_id) as db:
            await self._insert_outbox(db, game_id, None, items, time.time())

    async def pending_outbox(
        self, game_id: int | None = None, limit: int = 100, *, lane: str | None = None
    ) -> list[OutboxItem]:
        """Pending items, oldest first; of one game (and one lane) if given."""
        where: list[str] = ["state = 'pending'"]
        params: list[object] = []
        if game_id is not None:
            where.append("game_id = ?")
            params.append(game_id)
        if lane is not None:
            where.append("lane = ?")
            params.append(lane)
        rows = await self._fetch_quick(
            f"SELECT * FROM outbox WHERE {' AND '.join(where)} ORDER BY id LIMIT ?",
            (*params, limit),
        )
        return [_item(row) for row in rows]

    async def lanes_progress(self, game_id: int, lanes: tuple[str, ...]) -> tuple[int, int]:
        """(items of a game's ``lanes`` in all, of them still pending): two equal readings mean
        nothing was queued or carried out in those lanes between them."""
        marks = ", ".join("?" for _ in lanes)
        row = await self._fetchone(
            f"SELECT COUNT(*), COALESCE(SUM(CASE WHEN state = 'pending' THEN 1 ELSE 0 END), 0) "
            f"FROM outbox WHERE game_id = ? AND lane IN ({marks})",
            (game_id, *lanes),
        )
        return (int(row[0]), int(row[1])) if row is not None else (0, 0)

    async def games_with_pending_outbox(self) -> list[int]:
        """Ids of games (of this process's shards) that have pending outbox items."""
        if self._shard_sql:
            rows = await self._fetchall(
                "SELECT DISTINCT o.game_id FROM outbox o JOIN games g ON g.id = o.game_id "
                f"WHERE o.state = 'pending'{self._owned('g.')} ORDER BY o.game_id"
            )
        else:
            rows = await self._fetchall(
                "SELECT DISTINCT game_id FROM outbox WHERE state = 'pending' ORDER BY game_id"
            )
        return [row[0] for row in rows]

    async def games_in_state(self, state: str) -> list[int]:
        """Ids of the games in one state (``starting`` ones to resume, say)."""
        rows = await self._fetchall(
            f"SELECT id FROM games WHERE state = ?{self._owned()} ORDER BY id", (state,)
        )
        return [row[0] for row in rows]

    async def outbox_sent(
        self, item: OutboxItem, result_id: int | None, ref: tuple[str, int] | None = None
    ) -> None:
        """Mark one item carried out, with the id Discord returned (a message, role or channel),
        remembering a message for later edits under ``ref`` (name, channel id); returns once
        that is committed (in a group commit, see the module docstring)."""
        write = _GroupedWrite(
            [
                (
                    "UPDATE outbox SET state = 'sent', message_id = ?, sent_at = ?, "
                    "attempts = attempts + 1 WHERE id = ?",
                    [(result_id, time.time(), item.id)],
                )
            ]
        )
        if ref is not None and result_id is not None:
            write.statements.append(
                (
                    "INSERT INTO message_refs (game_id, ref, channel_id, message_id) "
                    "VALUES (?, ?, ?, ?) ON CONFLICT (game_id, ref) DO UPDATE SET "
                    "channel_id = excluded.channel_id, message_id = excluded.message_id",
                    [(item.game_id, ref[0], ref[1], result_id)],
                )
            )
        await self._commit(item.game_id, write)

    async def outbox_superseded(self, items: list[OutboxItem]) -> None:
        """Mark edits that a later edit of the same message replaces as done (nothing was sent)."""
        if not items:
            return
        now = time.time()
        async with self.transaction(items[0].game_id) as db:
            await db.executemany(
                "UPDATE outbox SET state = 'sent', sent_at = ? WHERE id = ?",
                [(now, item.id) for item in items],
            )

    async def outbox_retry(self, item: OutboxItem, error: str) -> None:
        """Count a failed attempt that will be tried again."""
        async with self.transaction(item.game_id) as db:
            await db.execute(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ? WHERE id = ? AND state = 'pending'",
                (error[:500], item.id),
            )

    async def outbox_failed(self, item: OutboxItem, error: str) -> None:
        """Give up on an item Discord refuses for good (it stays in the table with its error)."""
        async with self.transaction(item.game_id) as db:
            await db.execute(
                "UPDATE outbox SET state = 'failed', attempts = attempts + 1, last_error = ? "
                "WHERE id = ?",
                (error[:500], item.id),
            )

    async def newer_edit_pending(self, item: OutboxItem) -> bool:
        """Whether a later pending edit of the same message exists (so ``item`` is stale)."""
        rows = await self._fetchall(
            "SELECT target FROM outbox WHERE game_id = ? AND state = 'pending' AND kind = 'edit' "
            "AND id > ?",
            (item.game_id, item.id),
        )
        return any(json.loads(row["target"]).get("ref") == item.target.get("ref") for row in rows)

    async def outbox_counts(self, game_id: int) -> dict[str, int]:
        """How many items of a game are in each state."""
        rows = await self._fetchall(
            "SELECT state, COUNT(*) FROM outbox WHERE game_id = ? GROUP BY state", (game_id,)
        )
        return {row[0]: row[1] for row in rows}

    async def outbox_items(self, game_id: int, lane: str | None = None) -> list[OutboxItem]:
        """Every item of a game (of one lane), in order, whatever its state."""
        if lane is None:
            rows = await self._fetchall(
                "SELECT * FROM outbox WHERE game_id = ? ORDER BY id", (game_id,)
            )
        else:
            rows = await self._fetchall(
                "SELECT * FROM outbox WHERE game_id = ? AND lane = ? ORDER BY id", (game_id, lane)
            )
        return [_item(row) for row in rows]

    async def provisioned(self, game_id: int) -> dict[str, int]:
        """What a game's provisioning made so far: each role's and channel's key → its id."""
        rows = await self._fetchall(
            "SELECT target, message_id FROM outbox WHERE game_id = ? AND lane = 'provision' "
            "AND state = 'sent' AND kind IN ('create_role', 'create_channel') ORDER BY id",
            (game_id,),
        )
        made: dict[str, int] = {}
        for row in rows:
            key = json.loads(row["target"]).get("key")
            if key and row["message_id"] is not None:
                made[str(key)] = int(row["message_id"])
        return made

    async def claimed(self, ids: Iterable[int]) -> set[int]:
        """Which of these Discord ids (messages, roles, channels) an item already carried out
        returned: those are some item's, never to be adopted by another."""
        wanted = list(ids)
        found: set[int] = set()
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = await self._fetchall(
                f"SELECT message_id FROM outbox WHERE state = 'sent' AND message_id IN ({marks}) "
                f"UNION SELECT message_id FROM message_refs WHERE message_id IN ({marks})",
                (*chunk, *chunk),
            )
            found.update(int(row[0]) for row in rows)
        return found

    async def message_ref(self, game_id: int, ref: str) -> tuple[int, int] | None:
        """(channel id, message id) of a message remembered under ``ref``."""
        row = await self._fetchone(
            "SELECT channel_id, message_id FROM message_refs WHERE game_id = ? AND ref = ?",
            (game_id, ref),
        )
        return (row["channel_id"], row["message_id"]) if row else None

    async def ref_of_message(self, game_id: int, message_id: int) -> str | None:
        """The name a message of the game is remembered under, if any."""
        row = await self._fetchone(
            "SELECT ref FROM message_refs WHERE game_id = ? AND message_id = ?",
            (game_id, message_id),
        )
        return str(row["ref"]) if row else None

    async def set_message_ref(
        self, game_id: int, ref: str, channel_id: int, message_id: int
    ) -> None:
        """Remember a message (sent as an interaction answer, say) under ``ref``."""
        async with self.transaction(game_id) as db:
            await db.execute(
                "INSERT INTO message_refs (game_id, ref, channel_id, message_id) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (game_id, ref) DO UPDATE SET "
                "channel_id = excluded.channel_id, message_id = excluded.message_id",
                (game_id, ref, channel_id, message_id),
            )
