"""The outbox's calls on Discord, one per kind of item, and the adoption of what a call that
may have landed made (a message by its content, a role or channel by its name)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import time
from collections.abc import Coroutine, Iterable
from typing import TYPE_CHECKING, Any, TypeVar, cast

import discord
from discord.http import Route
from discord.utils import time_snowflake

from bot.outbox.intents import DeleteChannel, DeleteRole, EditChannel, MemberRole, Overwrite
from bot.storage import OutboxItem, Storage

if TYPE_CHECKING:
    from discord.types.channel import ChannelType

log = logging.getLogger(__name__)

T = TypeVar("T")

#: the clocks of the bot and Discord may differ: history is read from this much before an item
CLOCK_MARGIN = 120.0

#: pages of 100 messages read at most when looking for a message already posted
HISTORY_PAGES = 20

#: kinds that create something on Discord without a nonce: after a lost answer, look first
CREATES = frozenset({"create_role", "create_channel"})

#: Discord's flag of a voice message
VOICE_MESSAGE_FLAG = 1 << 13


class PermanentFailure(Exception):
    """Discord refused an item for good (403, 404, a bad request)."""


class NotMadeYet(Exception):
    """An item names a role or channel whose making is still pending in the provisioning lane
    (a spectators' role asked for just before the end locks the channels): tried again later."""


def custom_ids(components: Iterable[Any]) -> list[str]:
    """The custom ids of a message's components, rows flattened, in order."""
    found: list[str] = []
    for row in components or []:
        for component in row.get("components", []) if isinstance(row, dict) else []:
            if component.get("custom_id"):
                found.append(str(component["custom_id"]))
    return found


#: Discord's codes for a member or role that is not there (nothing to change then)
UNKNOWN_MEMBER, UNKNOWN_ROLE = 10007, 10011


class DiscordCalls:
    """The calls each kind of item makes on Discord, and the adoption of what an earlier call may
    have made (:class:`bot.outbox.Outbox` carries them out, in its lanes)."""

    storage: Storage
    http: discord.http.HTTPClient
    call_timeout: float
    nonce_trust: float
    self_id: int | None
    _started: float
    _refs: dict[tuple[int, str], tuple[int, int]]
    _ids: dict[int, dict[str, int]]
    _history: dict[int, tuple[int, list[dict[str, Any]]]]
    _last_edit: dict[tuple[int, str], float]
    edit_interval: float

    async def _timed(self, call: Coroutine[Any, Any, T], seconds: float | None = None) -> T:
        """One call, given up (as a transient fault) after ``seconds`` (the call timeout)."""
        return await asyncio.wait_for(call, self.call_timeout if seconds is None else seconds)

    async def ids(self, game_id: int) -> dict[str, int]:
        """What the game's provisioning made: the key of each role and channel → its id."""
        known = self._ids.get(game_id)
        if known is None:
            known = await self.storage.provisioned(game_id)
            self._ids[game_id] = known
        return known

    def forget(self, game_id: int) -> None:
        """Drop what is remembered of a game's provisioning (it was rolled back)."""
        self._ids.pop(game_id, None)

    async def _being_made(self, game_id: int, key: Any) -> bool:
        """Whether the provisioning lane still has the making of ``key`` pending (or has just made
        it: its mark may have been stored after the look that missed it). Pending first: an item
        goes from pending to sent, so one no longer pending is made by the second look."""
        if any(
            item.kind in CREATES and item.target.get("key") == key
            for item in await self.storage.pending_outbox(game_id, 1000, lane="provision")
        ):
            return True
        return key in await self.storage.provisioned(game_id)

    async def _resolve(self, game_id: int, value: Any) -> int:
        """An id given as is, or the key of something the game's provisioning made."""
        if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
            return int(value)
        known = await self.ids(game_id)
        if value not in known:
            self._ids.pop(game_id, None)
            known = await self.ids(game_id)
        if value not in known:
            raise PermanentFailure(f"game {game_id}: {value!r} was never made")
        return known[value]

    async def _channel_for(self, target: dict[str, Any]) -> int:
        if "channel_id" in target:
            return int(target["channel_id"])
        data = await self._timed(self.http.start_private_message(int(target["user_id"])))
        return int(data["id"])

    async def _send(self, item: OutboxItem) -> int | None:
        channel_id = await self._channel_for(item.target)
        payload = dict(item.payload)
        payload["nonce"] = f"ob{item.id}"
        payload["enforce_nonce"] = True
        route = Route("POST", "/channels/{channel_id}/messages", channel_id=channel_id)
        data = await self._timed(self.http.request(route, json=payload))
        return int(data["id"])

    async def _edit(self, item: OutboxItem) -> int | None:
        ref = self._refs.get((item.game_id, item.target["ref"]))
        if ref is None:
            ref = await self.storage.message_ref(item.game_id, item.target["ref"])
        if ref is None:
            log.warning(
                "edit of unknown message %r in game %s skipped", item.target["ref"], item.game_id
            )
            return None
        key = (item.game_id, item.target["ref"])
        wait = self._last_edit.get(key, 0.0) + self.edit_interval - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
            if await self.storage.newer_edit_pending(item):
                return ref[1]  # the newer edit carries the newer content
        channel_id, message_id = ref
        route = Route(
            "PATCH",
            "/channels/{channel_id}/messages/{message_id}",
            channel_id=channel_id,
            message_id=message_id,
        )
        try:
            await self._timed(self.http.request(route, json=item.payload))
        finally:
            self._last_edit[key] = time.monotonic()
        return message_id

    async def _adopt_message(self, item: OutboxItem) -> int | None:
        """The bot's message already posted for this item, if any (see the module docstring)."""
        if self.self_id is None:
            return None
        channel_id = await self._channel_for(item.target)
        after = time_snowflake(_utc(item.created_at - CLOCK_MARGIN))
        messages = await self._recent(channel_id, after)
        matching = [m for m in messages if self._is_posted(item, m)]
        if not matching:
            return None
        taken = await self.storage.claimed(int(m["id"]) for m in matching)
        for message in matching:
            if int(message["id"]) not in taken:
                return int(message["id"])
        return None

    async def _recent(self, channel_id: int, after: int) -> list[dict[str, Any]]:
        """The channel's messages after ``after``, oldest first (kept for the items that follow)."""
        cached = self._history.get(channel_id)
        if cached is not None and cached[0] <= after:
            return [m for m in cached[1] if int(m["id"]) > after]
        found: dict[int, dict[str, Any]] = {}
        cursor = after
        for _ in range(HISTORY_PAGES):
            page = await self._timed(self.http.logs_from(channel_id, 100, after=cursor))
            for message in page:
                # discord.py types the page as its Message TypedDict; it is read as plain JSON
                found[int(message["id"])] = cast("dict[str, Any]", message)
            if len(page) < 100:
                break
            cursor = max(int(message["id"]) for message in page)
        messages = [found[key] for key in sorted(found)]
        self._history[channel_id] = (after, messages)
        return messages

    def _is_posted(self, item: OutboxItem, message: dict[str, Any]) -> bool:
        """Whether ``message`` is what ``item`` posts: the bot's own, no interaction's answer, the
        same content and components (a voice item: an audio attachment)."""
        author = message.get("author") or {}
        if str(author.get("id")) != str(self.self_id):
            return False
        if (
            message.get("interaction_metadata")
            or message.get("interaction")
            or message.get("webhook_id")
        ):
            return False
        if item.kind == "voice":
            attachments = message.get("attachments") or []
            return bool(attachments) and (
                bool(int(message.get("flags") or 0) & VOICE_MESSAGE_FLAG)
                or message.get("content", "") == str(item.payload.get("fallback") or "")
            )
        payload = item.payload
        return (
            # Discord trims a message's content: compare what it keeps
            str(message.get("content") or "").strip() == str(payload.get("content") or "").strip()
            and custom_ids(message.get("components") or [])
            == custom_ids(payload.get("components") or [])
            and len(message.get("embeds") or []) == len(payload.get("embeds") or [])
        )

    async def _overwrite(self, item: OutboxItem) -> int | None:
        overwrite = Overwrite.read(item)
        channel_id = await self._resolve(item.game_id, overwrite.channel)
        target_id = await self._resolve(item.game_id, overwrite.who)
        if overwrite.delete:
            # an overwrite already gone is what was asked for
            with contextlib.suppress(discord.NotFound):
                await self._timed(self.http.delete_channel_permissions(channel_id, target_id))
        else:
            await self._timed(
                self.http.edit_channel_permissions(
                    channel_id,
                    target_id,
                    str(overwrite.allow),
                    str(overwrite.deny),
                    1 if overwrite.member else 0,
                )
            )
        return None

    async def _member_role(self, item: OutboxItem) -> int | None:
        change = MemberRole.read(item)
        guild_id, user_id = int(change.guild), int(change.user)
        role_id = await self._resolve(item.game_id, change.role)
        call = self.http.add_role if change.add else self.http.remove_role
        try:
            await self._timed(call(guild_id, user_id, role_id))
        except discord.NotFound as error:
            # a member who left the server has no roles to change; a role gone was removed
            if error.code not in (UNKNOWN_MEMBER, UNKNOWN_ROLE):
                raise
            log.info(
                "game %s: role %s of member %s not changed: %s",
                item.game_id,
                role_id,
                user_id,
                error,
            )
        return None

    async def _create_role(self, item: OutboxItem) -> int | None:
        payload = item.payload
        data = await self._timed(
            self.http.create_role(
                int(item.target["guild_id"]),
                reason=payload.get("reason"),
                name=payload["name"],
                permissions=str(payload.get("permissions", "0")),
                mentionable=bool(payload.get("mentionable", False)),
                hoist=bool(payload.get("hoist", False)),
            )
        )
        return int(data["id"])

    async def _adopt_role(self, item: OutboxItem) -> int | None:
        """The game's role made before its answer was heard: the same name, not another item's."""
        roles = await self._timed(self.http.get_roles(int(item.target["guild_id"])))
        matching = [int(role["id"]) for role in roles if role.get("name") == item.payload["name"]]
        taken = await self.storage.claimed(matching)
        return next((role_id for role_id in matching if role_id not in taken), None)

    async def _create_channel(self, item: OutboxItem) -> int | None:
        payload = item.payload
        options: dict[str, Any] = {"name": payload["name"]}
        if payload.get("parent") is not None:
            options["parent_id"] = str(await self._resolve(item.game_id, payload["parent"]))
        if payload.get("topic"):
            options["topic"] = payload["topic"]
        options["permission_overwrites"] = [
            {
                "id": str(await self._resolve(item.game_id, overwrite["target"])),
                "type": overwrite["type"],
                "allow": str(overwrite["allow"]),
                "deny": str(overwrite["deny"]),
            }
            for overwrite in payload.get("overwrites", [])
        ]
        data = await self._timed(
            self.http.create_channel(
                int(item.target["guild_id"]),
                # Discord's channel types as discord.py spells them (Literals); stored as an int
                cast("ChannelType", int(payload["type"])),
                reason=payload.get("reason"),
                **options,
            )
        )
        return int(data["id"])

    async def _adopt_channel(self, item: OutboxItem) -> int | None:
        """The game's channel made before its answer was heard: the same type and parent, and the
        same topic (a text channel: Discord rewrites their names) or name, not another item's."""
        payload = item.payload
        parent = None
        if payload.get("parent") is not None:
            parent = await self._resolve(item.game_id, payload["parent"])
        channels = await self._timed(self.http.get_all_guild_channels(int(item.target["guild_id"])))
        matching = []
        for channel in channels:
            found_parent = channel.get("parent_id")
            if int(channel.get("type", -1)) != int(payload["type"]):
                continue
            if (int(found_parent) if found_parent else None) != parent:
                continue
            if payload.get("topic"):
                if channel.get("topic") != payload["topic"]:
                    continue
            elif channel.get("name") != payload["name"]:
                continue
            matching.append(int(channel["id"]))
        taken = await self.storage.claimed(matching)
        return next((channel_id for channel_id in matching if channel_id not in taken), None)

    async def _delete_channel(self, item: OutboxItem) -> int | None:
        channel_id = await self._resolve(item.game_id, DeleteChannel.read(item).channel)
        # a channel already gone is what was asked for
        with contextlib.suppress(discord.NotFound):
            await self._timed(self.http.delete_channel(channel_id))
        return None

    async def _delete_role(self, item: OutboxItem) -> int | None:
        deletion = DeleteRole.read(item)
        role_id = await self._resolve(item.game_id, deletion.role)
        with contextlib.suppress(discord.NotFound):
            await self._timed(self.http.delete_role(int(deletion.guild), role_id))
        return None

    async def _sweep(self, item: OutboxItem) -> int | None:
        """Remove duplicates of what a provisioning made: a create whose answer was lost and that
        was made again, yet reached Discord later after all. They bear the plan's names (channels
        in the game's category, or a second category of its name) but no item has their id.

        With ``rollback`` in the payload (the last step of a start called off) everything bearing
        the plan's names goes that no item has made: a create that was under way when the start
        was called off and whose answer was lost (the process died) made something no item knows.
        What an item made is removed by the rollback's own deletes (one made since the rollback
        was planned too: ``cogs.host``), so it is not removed twice (a 404 from Discord)."""
        guild_id = int(item.target["guild_id"])
        payload = item.payload
        channels = await self._timed(self.http.get_all_guild_channels(guild_id))
        roles = await self._timed(self.http.get_roles(guild_id))
        names = set(payload.get("roles", []))
        doubles = [int(role["id"]) for role in roles if role.get("name") in names]
        categories = {
            int(c["id"])
            for c in channels
            if int(c.get("type", -1)) == 4 and c.get("name") == payload["category_name"]
        }
        parents = set(categories)
        if payload.get("category") is not None:
            parents.add(await self._resolve(item.game_id, payload["category"]))
        marks = set(payload.get("topics", [])) | set(payload.get("names", []))
        found = [
            int(c["id"])
            for c in channels
            if c.get("parent_id")
            and int(c["parent_id"]) in parents
            and (c.get("topic") in marks or c.get("name") in marks)
        ]
        taken = await self.storage.claimed([*doubles, *categories, *found])
        for role_id in (role for role in doubles if role not in taken):
            log.warning("game %s: removing a duplicate role %s", item.game_id, role_id)
            with contextlib.suppress(discord.NotFound):
                await self._timed(self.http.delete_role(guild_id, role_id))
        for channel_id in [c for c in found if c not in taken] + [
            c for c in categories if c not in taken
        ]:
            log.warning("game %s: removing a duplicate channel %s", item.game_id, channel_id)
            with contextlib.suppress(discord.NotFound):
                await self._timed(self.http.delete_channel(channel_id))
        return None

    async def _edit_channel(self, item: OutboxItem) -> int | None:
        edit = EditChannel.read(item)
        channel_id = await self._resolve(item.game_id, edit.channel)
        payload = dict(edit.body)
        if "permission_overwrites" in payload:
            # a role made mid-game (a quiet twin, the spectators') is named by its key until made
            overwrites = []
            for overwrite in payload["permission_overwrites"]:
                try:
                    target = await self._resolve(item.game_id, overwrite["id"])
                except PermanentFailure:
                    if await self._being_made(item.game_id, overwrite["id"]):
                        raise NotMadeYet(
                            f"game {item.game_id}: {overwrite['id']!r} is being made"
                        ) from None
                    raise
                overwrites.append({**overwrite, "id": str(target)})
            payload["permission_overwrites"] = overwrites
        try:
            await self._timed(self.http.edit_channel(channel_id, **payload))
        except discord.NotFound as error:
            # a member named by an overwrite left the server (a host, a mafia member): Discord
            # refuses the whole list, so his overwrite goes (he has no access to keep) and the
            # rest stands
            if error.code != UNKNOWN_MEMBER or "permission_overwrites" not in payload:
                raise
            payload["permission_overwrites"] = await self._members_present(
                channel_id, payload["permission_overwrites"]
            )
            await self._timed(self.http.edit_channel(channel_id, **payload))
        return None

    async def _members_present(
        self, channel_id: int, overwrites: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """The overwrites without those of members who are no longer on the channel's server."""
        channel: dict[str, Any] = dict(await self._timed(self.http.get_channel(channel_id)))
        guild_id = int(channel["guild_id"])
        kept = []
        for overwrite in overwrites:
            if int(overwrite.get("type", 0)) == 1:
                try:
                    await self._timed(self.http.get_member(guild_id, int(overwrite["id"])))
                except discord.NotFound:
                    log.info(
                        "channel %s: overwrite of member %s dropped: he left the server",
                        channel_id,
                        overwrite["id"],
                    )
                    continue
            kept.append(overwrite)
        return kept


def _utc(seconds: float) -> datetime.datetime:
    """A unix time as an aware datetime (never before Discord's epoch)."""
    return datetime.datetime.fromtimestamp(max(seconds, 1_420_070_400.0), tz=datetime.UTC)
