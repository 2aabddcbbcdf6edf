"""A guild's settings, members' pings, the season's archive channel and its transcripts,
presets and scheduled games."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable
from typing import Any

from bot.storage.base import (
    StorageBase,
)
from bot.storage.records import (
    FINISHED,
    OutboxItem,
    _dumps,
    sql_states,
)

log = logging.getLogger(__name__)


class GuildQueries(StorageBase):
    """The guilds' queries."""

    async def meta(self, key: str) -> str | None:
        """A stored fact about the process."""
        row = await self._fetchone("SELECT value FROM meta WHERE key = ?", (key,))
        return row["value"] if row else None

    async def set_meta(self, key: str, value: str) -> None:
        """Store a fact about the process."""
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    async def meta_keys(self, prefix: str) -> list[str]:
        """The stored facts' keys that begin with ``prefix``."""
        rows = await self._fetchall(
            "SELECT key FROM meta WHERE substr(key, 1, ?) = ?", (len(prefix), prefix)
        )
        return [str(row["key"]) for row in rows]

    async def delete_meta(self, key: str) -> None:
        """Forget a stored fact."""
        async with self.transaction() as db:
            await db.execute("DELETE FROM meta WHERE key = ?", (key,))

    async def _guild(self, guild_id: int) -> tuple[str | None, int | None]:
        cached = self._guilds.get(guild_id)
        if cached is None:
            row = await self._fetchone(
                "SELECT language, host_role_id FROM guild_settings WHERE guild_id = ?", (guild_id,)
            )
            cached = (row["language"], row["host_role_id"]) if row else (None, None)
            self._guilds[guild_id] = cached
        return cached

    async def guild_language(self, guild_id: int) -> str | None:
        """The guild's language, or None when it was never set (kept in memory once read)."""
        return (await self._guild(guild_id))[0]

    async def guild_host_role(self, guild_id: int) -> int | None:
        """The id of the guild's host role, if set (kept in memory once read)."""
        return (await self._guild(guild_id))[1]

    async def set_guild_language(self, guild_id: int, language: str) -> None:
        """Store the guild's language, leaving its host role as it is."""
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO guild_settings (guild_id, language) VALUES (?, ?) "
                "ON CONFLICT (guild_id) DO UPDATE SET language = excluded.language",
                (guild_id, language),
            )
        self._guilds.pop(guild_id, None)  # read again: the other column may be newer than memory

    async def set_guild_host_role(
        self, guild_id: int, host_role_id: int | None, *, language: str
    ) -> None:
        """Store the guild's host role, leaving its language as it is (``language`` only
        fills a guild never set)."""
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO guild_settings (guild_id, language, host_role_id) VALUES (?, ?, ?) "
                "ON CONFLICT (guild_id) DO UPDATE SET host_role_id = excluded.host_role_id",
                (guild_id, language, host_role_id),
            )
        self._guilds.pop(guild_id, None)

    async def set_guild_settings(
        self, guild_id: int, *, language: str, host_role_id: int | None
    ) -> None:
        """Store the guild's language and host role."""
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO guild_settings (guild_id, language, host_role_id) VALUES (?, ?, ?) "
                "ON CONFLICT (guild_id) DO UPDATE SET language = excluded.language, "
                "host_role_id = excluded.host_role_id",
                (guild_id, language, host_role_id),
            )
        self._guilds[guild_id] = (language, host_role_id)

    async def quiet_users(self, user_ids: Iterable[int]) -> set[int]:
        """Which of these users turned pings off (everyone else wants them: the default)."""
        wanted = list(user_ids)
        quiet: set[int] = set()
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = await self._fetchall(
                f"SELECT user_id FROM user_settings WHERE pings = 0 AND user_id IN "
                f"({','.join('?' * len(chunk))})",
                chunk,
            )
            quiet.update(int(row[0]) for row in rows)
        return quiet

    async def set_pings(self, user_id: int, wanted: bool) -> None:
        """Store whether a user wants the game's roles to ping him."""
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO user_settings (user_id, pings) VALUES (?, ?) "
                "ON CONFLICT (user_id) DO UPDATE SET pings = excluded.pings",
                (user_id, int(wanted)),
            )

    async def season_channel(self, guild_id: int) -> int | None:
        """The guild's archive channel, if the bot made one."""
        row = await self._fetchone(
            "SELECT channel_id FROM season_channels WHERE guild_id = ?", (guild_id,)
        )
        return int(row[0]) if row else None

    async def set_season_channel(self, guild_id: int, channel_id: int) -> None:
        """Store (or replace) the guild's archive channel."""
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO season_channels (guild_id, channel_id) VALUES (?, ?) "
                "ON CONFLICT (guild_id) DO UPDATE SET channel_id = excluded.channel_id",
                (guild_id, channel_id),
            )

    async def schedule_transcript(self, game_id: int, guild_id: int, due: float) -> None:
        """Archive a finished game's channels at ``due`` (nothing if it is scheduled already)."""
        async with self.transaction(game_id) as db:
            await db.execute(
                "INSERT INTO transcripts (game_id, guild_id, due) VALUES (?, ?, ?) ON CONFLICT (game_id) DO NOTHING",
                (game_id, guild_id, due),
            )

    async def unscheduled_finished(self) -> list[int]:
        """Finished games (of this process's shards) that made channels and have no transcript row:
        ended while no process scheduled them (a crash after the end, or before this version)."""
        rows = await self._fetchall(
            "SELECT g.id FROM games g LEFT JOIN transcripts s ON s.game_id = g.id "
            f"WHERE g.state IN ({sql_states(FINISHED)}) AND g.channels LIKE '%\"roles\"%' "
            f"AND s.game_id IS NULL{self._owned('g.')} ORDER BY g.id"
        )
        return [int(row[0]) for row in rows]

    async def kept_finished(self, guild_id: int) -> list[int]:
        """A guild's finished games that made channels not (yet) replaced by a transcript: none
        posted or being posted (a game whose channels were deleted at its end is among them)."""
        rows = await self._fetchall(
            "SELECT g.id FROM games g LEFT JOIN transcripts s ON s.game_id = g.id "
            f"WHERE g.guild_id = ? AND g.state IN ({sql_states(FINISHED)}) "
            "AND g.channels LIKE '%\"roles\"%' "
            "AND (s.state IS NULL OR s.state NOT IN ('posting', 'done')) ORDER BY g.id",
            (guild_id,),
        )
        return [int(row[0]) for row in rows]

    async def transcripts_due(self, state: str = "due") -> list[tuple[int, float]]:
        """(game id, when) of every transcript waiting for its time (or in another ``state``), of
        this process's shards."""
        rows = await self._fetchall(
            "SELECT s.game_id, s.due FROM transcripts s JOIN games g ON g.id = s.game_id "
            f"WHERE s.state = ?{self._owned('g.')} ORDER BY s.due",
            (state,),
        )
        return [(int(row[0]), float(row[1])) for row in rows]

    async def transcript(self, game_id: int) -> dict[str, Any] | None:
        """A game's transcript row: state, due, channel_id, message_id, failure (a dict)."""
        row = await self._fetchone("SELECT * FROM transcripts WHERE game_id = ?", (game_id,))
        if row is None:
            return None
        return {
            "state": row["state"],
            "due": row["due"],
            "guild_id": row["guild_id"],
            "channel_id": row["channel_id"],
            "message_id": row["message_id"],
            "failure": json.loads(row["failure"]) if row["failure"] else None,
        }

    async def begin_transcript(self, game_id: int, items: Iterable[OutboxItem]) -> bool:
        """Due → posting, with the outbox items that post the transcript, in one transaction
        (False: it was not due any more)."""
        async with self.transaction(game_id) as db:
            async with db.execute(
                "UPDATE transcripts SET state = 'posting' WHERE game_id = ? AND state = 'due' RETURNING game_id",
                (game_id,),
            ) as cursor:
                if await cursor.fetchone() is None:
                    return False
            await self._insert_outbox(db, game_id, None, items, time.time())
        return True

    async def transcript_posted(self, game_id: int) -> tuple[str, int | None]:
        """The state of a game's latest transcript item (pending, sent, failed) and the id of the
        first message it posted."""
        row = await self._fetchone(
            "SELECT state, message_id FROM outbox WHERE game_id = ? AND kind = 'transcript' ORDER BY id DESC LIMIT 1",
            (game_id,),
        )
        return (
            (str(row[0]), int(row[1]) if row[1] is not None else None) if row else ("pending", None)
        )

    async def finish_transcript(
        self, game_id: int, channel_id: int, message_id: int, items: Iterable[OutboxItem]
    ) -> bool:
        """Posting → done: where the transcript is, with the items deleting the game's channels and
        roles, in one transaction (False: it was not posting)."""
        async with self.transaction(game_id) as db:
            async with db.execute(
                "UPDATE transcripts SET state = 'done', channel_id = ?, message_id = ? "
                "WHERE game_id = ? AND state = 'posting' RETURNING game_id",
                (channel_id, message_id, game_id),
            ) as cursor:
                if await cursor.fetchone() is None:
                    return False
            await self._insert_outbox(db, game_id, None, items, time.time())
        return True

    async def transcript_failed(
        self, game_id: int, failure: dict[str, Any], items: Iterable[OutboxItem]
    ) -> None:
        """Posting → failed: Discord refused the transcript (the channels stay); ``items`` tell the
        host, in the same transaction."""
        async with self.transaction(game_id) as db:
            await db.execute(
                "UPDATE transcripts SET state = 'failed', failure = ? WHERE game_id = ?",
                (_dumps(failure), game_id),
            )
            await self._insert_outbox(db, game_id, None, items, time.time())

    async def guild_presets(self, guild_id: int) -> list[tuple[str, dict[str, Any]]]:
        """A guild's saved presets, by name: (name as saved, settings). A row whose settings no
        longer parse is left out (logged)."""
        rows = await self._fetchall(
            "SELECT name, settings FROM guild_presets WHERE guild_id = ? ORDER BY name_key",
            (guild_id,),
        )
        presets = []
        for row in rows:
            try:
                settings = json.loads(row["settings"])
                if not isinstance(settings, dict):
                    raise ValueError("not an object")
            except ValueError as error:
                log.error(
                    "guild %s: preset %r is unreadable (%s); left out", guild_id, row["name"], error
                )
                continue
            presets.append((str(row["name"]), settings))
        return presets

    async def save_guild_preset(
        self,
        guild_id: int,
        name: str,
        settings: dict[str, Any],
        *,
        saved_by: int,
        now: float,
        most: int,
    ) -> bool:
        """Store (or replace) a guild's preset; False if it is new and the guild has ``most``."""
        key = name.casefold()
        async with self.transaction() as db:
            async with db.execute(
                "SELECT name_key FROM guild_presets WHERE guild_id = ?", (guild_id,)
            ) as cursor:
                keys = {row[0] for row in await cursor.fetchall()}
            if key not in keys and len(keys) >= most:
                return False
            await db.execute(
                "INSERT INTO guild_presets (guild_id, name_key, name, settings, saved_by, saved_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (guild_id, name_key) DO UPDATE SET "
                "name = excluded.name, settings = excluded.settings, saved_by = excluded.saved_by, "
                "saved_at = excluded.saved_at",
                (
                    guild_id,
                    key,
                    name,
                    json.dumps(settings, ensure_ascii=False, sort_keys=True),
                    saved_by,
                    now,
                ),
            )
        return True

    async def delete_guild_preset(self, guild_id: int, name: str) -> bool:
        """Remove a guild's preset; False if it had none by that name."""
        async with (
            self.transaction() as db,
            db.execute(
                "DELETE FROM guild_presets WHERE guild_id = ? AND name_key = ? RETURNING name",
                (guild_id, name.casefold()),
            ) as cursor,
        ):
            return bool(await cursor.fetchall())

    async def add_schedule(
        self,
        guild_id: int,
        host_id: int,
        channel_id: int,
        title: str,
        starts_at: float,
        *,
        now: float,
        most: int,
    ) -> int | None:
        """Store a game to open at ``starts_at`` (state ``creating``); None if the guild has
        ``most`` scheduled already."""
        async with self.transaction() as db:
            async with db.execute(
                "SELECT COUNT(*) FROM scheduled_games WHERE guild_id = ? AND state IN ('creating', 'scheduled')",
                (guild_id,),
            ) as cursor:
                row = await cursor.fetchone()
            if row is not None and int(row[0]) >= most:
                return None
            async with db.execute(
                "INSERT INTO scheduled_games (guild_id, host_id, channel_id, title, starts_at, state, created_at) "
                "VALUES (?, ?, ?, ?, ?, 'creating', ?) RETURNING id",
                (guild_id, host_id, channel_id, title, starts_at, now),
            ) as cursor:
                made = await cursor.fetchone()
        assert made is not None
        return int(made[0])

    async def set_schedule(
        self,
        schedule_id: int,
        state: str,
        *,
        event_id: int | None = None,
        game_id: int | None = None,
    ) -> None:
        """Move a scheduled game on (its event or its game, once known)."""
        async with self.transaction() as db:
            await db.execute(
                "UPDATE scheduled_games SET state = ?, event_id = COALESCE(?, event_id), "
                "game_id = COALESCE(?, game_id) WHERE id = ?",
                (state, event_id, game_id, schedule_id),
            )

    async def drop_schedule(self, schedule_id: int) -> None:
        """Forget a scheduled game whose event could not be made."""
        async with self.transaction() as db:
            await db.execute("DELETE FROM scheduled_games WHERE id = ?", (schedule_id,))

    async def next_schedule(self, guild_id: int) -> dict[str, Any] | None:
        """A guild's earliest game still to open (``scheduled``), or None."""
        rows = await self._fetch_quick(
            "SELECT * FROM scheduled_games WHERE guild_id = ? AND state = 'scheduled' "
            "ORDER BY starts_at, id LIMIT 1",
            (guild_id,),
        )
        return dict(rows[0]) if rows else None

    async def schedules(self, *states: str) -> list[dict[str, Any]]:
        """This process's scheduled games in these states, the earliest first."""
        marks = ", ".join("?" * len(states))
        rows = await self._fetchall(
            f"SELECT * FROM scheduled_games WHERE state IN ({marks}){self._owned()} ORDER BY starts_at, id",
            states,
        )
        return [dict(row) for row in rows]
