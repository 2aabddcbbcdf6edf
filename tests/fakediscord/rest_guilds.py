"""REST routes of guilds: the guild, its channels (creation), roles and members.

Permission checks follow Discord: MANAGE_CHANNELS to create channels,
MANAGE_ROLES (and only bits the bot has) to put overwrites on them, MANAGE_ROLES
and the role hierarchy for roles, MANAGE_NICKNAMES / MUTE_MEMBERS /
DEAFEN_MEMBERS / MOVE_MEMBERS for members. A refusal is 403 50013.
"""

from __future__ import annotations

import datetime
import re
from typing import TYPE_CHECKING, Any

from . import audit
from .errors import DiscordError, field_error, invalid_form_body, missing_permissions, unknown
from .models import VOICE_TYPES, ChannelType
from .permissions import OVERWRITE_MEMBER, OVERWRITE_ROLE, Overwrite, Permission
from .routing import RestRequest, RestResponse, Router
from .world import UNSET

if TYPE_CHECKING:
    from .server import FakeDiscord

_ROLE_KEYS = ("name", "permissions", "color", "hoist", "mentionable")

MAX_ROLES = 250
"""Roles a guild may have, @everyone included (error 30005, topics/opcodes-and-status-codes.mdx)."""
MAX_CHANNELS = 500
"""Channels a guild may have, categories included, threads not (error 30013 "Maximum number of
guild channels reached (500)", topics/opcodes-and-status-codes.mdx; the 500 of resources/guild.mdx)."""
MAX_CATEGORY_CHANNELS = 50
"""Channels one category may hold. Discord has no code of its own for it: 400 / 50035 with
``CHANNEL_PARENT_MAX_CHANNELS`` on ``parent_id`` (discord-api-docs pull request #1289, which
documents the limit in resources/channel.mdx)."""

_CREATABLE_TYPES = {
    ChannelType.GUILD_TEXT,
    ChannelType.GUILD_VOICE,
    ChannelType.GUILD_CATEGORY,
    ChannelType.GUILD_ANNOUNCEMENT,
    ChannelType.GUILD_STAGE_VOICE,
    ChannelType.GUILD_FORUM,
}


def normalize_text_channel_name(name: str) -> str:
    """What Discord makes of a text channel name: lowercase, whitespace runs become one dash."""
    collapsed = re.sub(r"\s+", "-", name.strip().lower())
    return re.sub(r"-{2,}", "-", collapsed)


def check_room(
    fake: FakeDiscord,
    guild_id: int,
    parent_id: int | None,
    *,
    new_channel: bool,
    moving: int | None = None,
) -> None:
    """Refuse a channel the guild (or its category) has no room for, as Discord does: a new one
    past :data:`MAX_CHANNELS` (threads are not counted), one more in a full category (a new
    channel, or ``moving`` one from elsewhere) past :data:`MAX_CATEGORY_CHANNELS`."""
    channels = [c for c in fake.state.guild_channels(guild_id) if not c.is_thread]
    if new_channel and len(channels) >= MAX_CHANNELS:
        raise DiscordError(400, 30013, f"Maximum number of guild channels reached ({MAX_CHANNELS})")
    if parent_id is None:
        return
    inside = [c for c in channels if c.parent_id == parent_id and c.id != moving]
    if len(inside) >= MAX_CATEGORY_CHANNELS:
        raise invalid_form_body(
            {
                "parent_id": field_error(
                    "CHANNEL_PARENT_MAX_CHANNELS",
                    f"Maximum number of channels in category reached ({MAX_CATEGORY_CHANNELS})",
                )
            }
        )


class GuildRoutes:
    """``/guilds/...`` routes."""

    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake

    def register(self, router: Router) -> None:
        """Adds these routes to the router."""
        router.add("GET", "/guilds/{guild_id}", self.get_guild)
        router.add("GET", "/guilds/{guild_id}/audit-logs", self.get_audit_log)
        router.add("GET", "/guilds/{guild_id}/channels", self.get_channels)
        router.add("POST", "/guilds/{guild_id}/channels", self.create_channel)
        router.add("PATCH", "/guilds/{guild_id}/channels", self.move_channels)
        router.add("GET", "/guilds/{guild_id}/roles", self.get_roles)
        router.add("GET", "/guilds/{guild_id}/roles/{role_id}", self.get_role)
        router.add("POST", "/guilds/{guild_id}/roles", self.create_role)
        router.add("PATCH", "/guilds/{guild_id}/roles", self.move_roles)
        router.add("PATCH", "/guilds/{guild_id}/roles/{role_id}", self.edit_role)
        router.add("DELETE", "/guilds/{guild_id}/roles/{role_id}", self.delete_role)
        router.add("GET", "/guilds/{guild_id}/members", self.list_members)
        router.add("GET", "/guilds/{guild_id}/members/search", self.search_members)
        router.add("GET", "/guilds/{guild_id}/members/{user_id}", self.get_member)
        router.add("PATCH", "/guilds/{guild_id}/members/@me", self.edit_own_member)
        router.add("PATCH", "/guilds/{guild_id}/members/{user_id}", self.edit_member)
        router.add("DELETE", "/guilds/{guild_id}/members/{user_id}", self.kick_member)
        router.add(
            "PUT", "/guilds/{guild_id}/members/{user_id}/roles/{role_id}", self.add_member_role
        )
        router.add(
            "DELETE",
            "/guilds/{guild_id}/members/{user_id}/roles/{role_id}",
            self.remove_member_role,
        )

    # helpers ------------------------------------------------------------------------

    def _bot_can(self, guild_id: int, permission: int, channel_id: int | None = None) -> None:
        bot_id = self.fake.bot_user.id
        if not self.fake.state.permissions_for(guild_id, channel_id, bot_id) & permission:
            raise missing_permissions()

    def _check_role_below_bot(self, guild_id: int, role_id: int) -> None:
        state = self.fake.state
        guild = state.guild(guild_id)
        if guild.owner_id == self.fake.bot_user.id:
            return
        role = state.role(guild_id, role_id)
        if role.position >= state.highest_role_position(guild_id, self.fake.bot_user.id):
            raise missing_permissions()

    def _outranks_bot(self, guild_id: int, user_id: int) -> bool:
        """Whether the member is the owner or has a role at least as high as the bot's highest."""
        state = self.fake.state
        if state.guild(guild_id).owner_id == user_id:
            return True
        bot_top = state.highest_role_position(guild_id, self.fake.bot_user.id)
        return state.highest_role_position(guild_id, user_id) >= bot_top

    def parse_overwrites(self, guild_id: int, raw: Any) -> list[Overwrite]:
        """Checks a ``permission_overwrites`` list: targets must exist, types must be 0 or 1."""
        if not isinstance(raw, list):
            raise invalid_form_body(
                {
                    "permission_overwrites": field_error(
                        "LIST_TYPE_CONVERT", "Only iterables may be used in a ListType"
                    )
                }
            )
        guild = self.fake.state.guild(guild_id)
        overwrites: list[Overwrite] = []
        for index, entry in enumerate(raw):
            try:
                overwrite = Overwrite.from_payload(entry)
            except (KeyError, TypeError, ValueError):
                raise invalid_form_body(
                    {
                        "permission_overwrites": {
                            str(index): field_error("BASE_TYPE_REQUIRED", "This field is required")
                        }
                    }
                ) from None
            if overwrite.type == OVERWRITE_ROLE and overwrite.id not in guild.roles:
                raise unknown("Role")
            if overwrite.type == OVERWRITE_MEMBER and overwrite.id not in guild.members:
                raise unknown("Member")
            if overwrite.type not in (OVERWRITE_ROLE, OVERWRITE_MEMBER):
                raise invalid_form_body(
                    {
                        "permission_overwrites": {
                            str(index): {
                                "type": field_error(
                                    "BASE_TYPE_CHOICES", "Value must be one of (0, 1)."
                                )
                            }
                        }
                    }
                )
            overwrites.append(overwrite)
        return overwrites

    # guild --------------------------------------------------------------------------

    async def get_guild(self, request: RestRequest) -> Any:
        """GET /guilds/{guild_id}."""
        guild = self.fake.state.guild(request.snowflake("guild_id"))
        payload = guild.to_payload()
        if request.flag("with_counts"):
            payload["approximate_member_count"] = len(guild.members)
            payload["approximate_presence_count"] = len(guild.members)
        return payload

    async def get_audit_log(self, request: RestRequest) -> Any:
        """GET /guilds/{guild_id}/audit-logs?user_id&action_type&before&after&limit (View Audit Log)."""
        guild_id = request.snowflake("guild_id")
        self.fake.state.guild(guild_id)
        self._bot_can(guild_id, Permission.VIEW_AUDIT_LOG)
        query = request.query
        entries = self.fake.audit_log.of_guild(guild_id)
        if "user_id" in query:
            entries = [e for e in entries if str(e.user_id) == query["user_id"]]
        if "target_id" in query:
            entries = [e for e in entries if str(e.target_id) == query["target_id"]]
        if "action_type" in query:
            entries = [e for e in entries if str(e.action_type) == query["action_type"]]
        if "before" in query:
            entries = [e for e in entries if e.id < int(query["before"])]
        if "after" in query:
            entries = sorted((e for e in entries if e.id > int(query["after"])), key=lambda e: e.id)
        entries = entries[: int(query.get("limit", "50"))]
        user_ids = {e.user_id for e in entries if e.user_id is not None}
        return {
            "audit_log_entries": [entry.to_payload() for entry in entries],
            "users": [
                self.fake.state.users[user_id].to_payload()
                for user_id in sorted(user_ids)
                if user_id in self.fake.state.users
            ],
            "integrations": [],
            "webhooks": [],
            "guild_scheduled_events": [],
            "threads": [],
            "application_commands": [],
            "auto_moderation_rules": [],
        }

    async def get_channels(self, request: RestRequest) -> Any:
        """GET /guilds/{guild_id}/channels: only the channels the bot can view ("this endpoint will
        omit any channel your bot doesn't have permissions to view", resources/guild.mdx)."""
        guild_id = request.snowflake("guild_id")
        state = self.fake.state
        return [
            channel.to_payload()
            for channel in state.guild_channels(guild_id)
            if state.can_view(guild_id, channel, self.fake.bot_user.id)
        ]

    async def create_channel(self, request: RestRequest) -> Any:
        """POST /guilds/{guild_id}/channels."""
        guild_id = request.snowflake("guild_id")
        self.fake.state.guild(guild_id)
        body = request.body()
        self._bot_can(guild_id, Permission.MANAGE_CHANNELS)
        name = str(body.get("name") or "")
        if not 1 <= len(name) <= 100:
            raise invalid_form_body(
                {
                    "name": field_error(
                        "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
                    )
                }
            )
        channel_type = int(body.get("type") or 0)
        if channel_type not in _CREATABLE_TYPES:
            raise invalid_form_body(
                {
                    "type": field_error(
                        "BASE_TYPE_CHOICES", "Value must be one of (0, 2, 4, 5, 13, 15)."
                    )
                }
            )
        if channel_type in (ChannelType.GUILD_TEXT, ChannelType.GUILD_ANNOUNCEMENT):
            name = normalize_text_channel_name(name)
        parent_id = int(str(body["parent_id"])) if body.get("parent_id") is not None else None
        if parent_id is not None:
            parent = self.fake.state.channels.get(parent_id)
            if (
                parent is None
                or parent.deleted
                or parent.guild_id != guild_id
                or parent.type != ChannelType.GUILD_CATEGORY
            ):
                raise invalid_form_body(
                    {"parent_id": field_error("CHANNEL_PARENT_INVALID_TYPE", "Not a category")}
                )
            if channel_type == ChannelType.GUILD_CATEGORY:
                raise invalid_form_body(
                    {
                        "parent_id": field_error(
                            "CHANNEL_PARENT_INVALID_TYPE", "Categories cannot have subcategories"
                        )
                    }
                )
        check_room(self.fake, guild_id, parent_id, new_channel=True)
        overwrites = self.parse_overwrites(guild_id, body.get("permission_overwrites") or [])
        if overwrites:
            self._bot_can(guild_id, Permission.MANAGE_ROLES)
            self.fake.state.check_overwrite_grants(
                guild_id, None, [(None, overwrite) for overwrite in overwrites], creating=True
            )
        topic = body.get("topic")
        if topic is not None and len(str(topic)) > 1024:
            raise invalid_form_body(
                {"topic": field_error("BASE_TYPE_MAX_LENGTH", "Must be 1024 or fewer in length.")}
            )
        channel = self.fake.create_channel(
            guild_id,
            name,
            channel_type,
            parent_id=parent_id,
            overwrites=overwrites or None,
            topic=topic,
            position=body.get("position"),
            bitrate=int(body.get("bitrate") or 64000),
            user_limit=int(body.get("user_limit") or 0),
            nsfw=bool(body.get("nsfw", False)),
            rate_limit_per_user=int(body.get("rate_limit_per_user") or 0),
        )
        created = channel.to_payload()
        keys = [
            "name",
            "type",
            "topic",
            "nsfw",
            "rate_limit_per_user",
            "bitrate",
            "user_limit",
            "parent_id",
            "permission_overwrites",
        ]
        self.fake.audit(
            guild_id,
            audit.CHANNEL_CREATE,
            channel.id,
            reason=request.record.audit_reason,
            changes=[
                audit.change(key, None, created[key])
                for key in keys
                if created.get(key) is not None
            ],
        )
        return RestResponse(status=201, body=created)

    async def move_channels(self, request: RestRequest) -> Any:
        """PATCH /guilds/{guild_id}/channels [{id, position, parent_id, lock_permissions}]."""
        guild_id = request.snowflake("guild_id")
        self._bot_can(guild_id, Permission.MANAGE_CHANNELS)
        entries = request.json if isinstance(request.json, list) else []
        for entry in entries:
            channel = self.fake.state.channel(int(str(entry["id"])))
            if channel.guild_id != guild_id:
                raise unknown("Channel")
            parent_id: Any = UNSET
            if "parent_id" in entry:
                parent_id = int(str(entry["parent_id"])) if entry["parent_id"] is not None else None
                if parent_id is not None and parent_id != channel.parent_id:
                    check_room(self.fake, guild_id, parent_id, new_channel=False, moving=channel.id)
            overwrites = None
            if entry.get("lock_permissions") and parent_id not in (UNSET, None):
                parent = self.fake.state.channel(int(parent_id))
                overwrites = [Overwrite(o.id, o.type, o.allow, o.deny) for o in parent.overwrites]
            before = channel.to_payload()
            self.fake.update_channel(
                channel.id,
                position=entry.get("position"),
                parent_id=parent_id,
                overwrites=overwrites,
            )
            moved = audit.changes_between(before, channel.to_payload(), ("position", "parent_id"))
            if moved:
                self.fake.audit(
                    guild_id,
                    audit.CHANNEL_UPDATE,
                    channel.id,
                    reason=request.record.audit_reason,
                    changes=moved,
                )
        return None

    # roles --------------------------------------------------------------------------

    async def get_roles(self, request: RestRequest) -> Any:
        """GET /guilds/{guild_id}/roles."""
        guild = self.fake.state.guild(request.snowflake("guild_id"))
        return [
            role.to_payload() for role in sorted(guild.roles.values(), key=lambda r: r.position)
        ]

    async def get_role(self, request: RestRequest) -> Any:
        """GET /guilds/{guild_id}/roles/{role_id}."""
        return self.fake.state.role(
            request.snowflake("guild_id"), request.snowflake("role_id")
        ).to_payload()

    async def create_role(self, request: RestRequest) -> Any:
        """POST /guilds/{guild_id}/roles."""
        guild_id = request.snowflake("guild_id")
        self.fake.state.guild(guild_id)
        self._bot_can(guild_id, Permission.MANAGE_ROLES)
        body = request.body()
        if len(self.fake.state.guild(guild_id).roles) >= MAX_ROLES:
            raise DiscordError(400, 30005, f"Maximum number of guild roles reached ({MAX_ROLES})")
        permissions = int(str(body.get("permissions") or 0))
        self.fake.state.check_role_grant(guild_id, 0, permissions)
        colors = body.get("colors") or {}
        role = self.fake.create_role(
            guild_id,
            str(body.get("name") or "new role"),
            permissions=permissions,
            color=int(body.get("color") or colors.get("primary_color") or 0),
            hoist=bool(body.get("hoist", False)),
            mentionable=bool(body.get("mentionable", False)),
        )
        created = role.to_payload()
        self.fake.audit(
            guild_id,
            audit.ROLE_CREATE,
            role.id,
            reason=request.record.audit_reason,
            changes=[audit.change(key, None, created[key]) for key in _ROLE_KEYS],
        )
        return created

    async def move_roles(self, request: RestRequest) -> Any:
        """PATCH /guilds/{guild_id}/roles [{id, position}]."""
        guild_id = request.snowflake("guild_id")
        self._bot_can(guild_id, Permission.MANAGE_ROLES)
        entries = request.json if isinstance(request.json, list) else []
        bot_top = self.fake.state.highest_role_position(guild_id, self.fake.bot_user.id)
        for entry in entries:
            role_id = int(str(entry["id"]))
            self._check_role_below_bot(guild_id, role_id)
            position = int(entry.get("position") or 0)
            if position >= bot_top:
                raise missing_permissions()
            self.fake.update_role(guild_id, role_id, position=position)
        guild = self.fake.state.guild(guild_id)
        return [
            role.to_payload() for role in sorted(guild.roles.values(), key=lambda r: r.position)
        ]

    async def edit_role(self, request: RestRequest) -> Any:
        """PATCH /guilds/{guild_id}/roles/{role_id}: the role must be below the bot's highest role."""
        guild_id = request.snowflake("guild_id")
        role_id = request.snowflake("role_id")
        self.fake.state.role(guild_id, role_id)
        self._bot_can(guild_id, Permission.MANAGE_ROLES)
        self._check_role_below_bot(guild_id, role_id)
        body = request.body()
        permissions = int(str(body["permissions"])) if body.get("permissions") is not None else None
        if permissions is not None:
            self.fake.state.check_role_grant(
                guild_id, self.fake.state.role(guild_id, role_id).permissions, permissions
            )
        colors = body.get("colors") or {}
        color = body.get("color", colors.get("primary_color"))
        before = self.fake.state.role(guild_id, role_id).to_payload()
        role = self.fake.update_role(
            guild_id,
            role_id,
            name=body.get("name"),
            permissions=permissions,
            color=int(color) if color is not None else None,
            hoist=body.get("hoist"),
            mentionable=body.get("mentionable"),
        )
        after = role.to_payload()
        changed = audit.changes_between(before, after, _ROLE_KEYS)
        if changed:
            self.fake.audit(
                guild_id,
                audit.ROLE_UPDATE,
                role_id,
                reason=request.record.audit_reason,
                changes=changed,
            )
        return after

    async def delete_role(self, request: RestRequest) -> Any:
        """DELETE /guilds/{guild_id}/roles/{role_id}."""
        guild_id = request.snowflake("guild_id")
        role_id = request.snowflake("role_id")
        role = self.fake.state.role(guild_id, role_id)
        self._bot_can(guild_id, Permission.MANAGE_ROLES)
        self._check_role_below_bot(guild_id, role_id)
        if role.managed or role.is_everyone:
            raise DiscordError(400, 50028, "Invalid Role")
        before = role.to_payload()
        self.fake.delete_role(guild_id, role_id)
        self.fake.audit(
            guild_id,
            audit.ROLE_DELETE,
            role_id,
            reason=request.record.audit_reason,
            changes=[audit.change(key, before[key]) for key in _ROLE_KEYS],
        )
        return None

    # members ------------------------------------------------------------------------

    async def list_members(self, request: RestRequest) -> Any:
        """GET /guilds/{guild_id}/members?limit&after (sorted by user id)."""
        guild = self.fake.state.guild(request.snowflake("guild_id"))
        limit = max(1, min(int(request.query.get("limit", "1")), 1000))
        after = int(request.query.get("after", "0"))
        members = sorted((m for m in guild.members.values() if m.id > after), key=lambda m: m.id)
        return [member.to_payload() for member in members[:limit]]

    async def search_members(self, request: RestRequest) -> Any:
        """GET /guilds/{guild_id}/members/search?query&limit (prefix of username, global name or nick)."""
        guild = self.fake.state.guild(request.snowflake("guild_id"))
        if "query" not in request.query:
            raise invalid_form_body(
                {"query": field_error("BASE_TYPE_REQUIRED", "This field is required")}
            )
        query = request.query["query"].lower()
        limit = max(1, min(int(request.query.get("limit", "1")), 1000))
        found = [
            member
            for member in guild.members.values()
            if member.user.username.lower().startswith(query)
            or (member.user.global_name or "").lower().startswith(query)
            or (member.nick or "").lower().startswith(query)
        ]
        return [member.to_payload() for member in found[:limit]]

    async def get_member(self, request: RestRequest) -> Any:
        """GET /guilds/{guild_id}/members/{user_id}."""
        return self.fake.state.member(
            request.snowflake("guild_id"), request.snowflake("user_id")
        ).to_payload()

    async def edit_own_member(self, request: RestRequest) -> Any:
        """PATCH /guilds/{guild_id}/members/@me {nick}."""
        guild_id = request.snowflake("guild_id")
        self._bot_can(guild_id, Permission.CHANGE_NICKNAME | Permission.MANAGE_NICKNAMES)
        body = request.body()
        before = self.fake.state.member(guild_id, self.fake.bot_user.id).nick
        member = self.fake.update_member(guild_id, self.fake.bot_user.id, nick=body.get("nick"))
        if before != member.nick:
            self.fake.audit(
                guild_id,
                audit.MEMBER_UPDATE,
                member.id,
                reason=request.record.audit_reason,
                changes=[audit.change("nick", before, member.nick)],
            )
        return member.to_payload()

    async def edit_member(self, request: RestRequest) -> Any:
        """PATCH /guilds/{guild_id}/members/{user_id}: nick, roles, mute, deaf, channel_id."""
        state = self.fake.state
        guild_id = request.snowflake("guild_id")
        user_id = request.snowflake("user_id")
        guild = state.guild(guild_id)
        member = state.member(guild_id, user_id)
        body = request.body()
        bot_id = self.fake.bot_user.id
        in_voice = guild.voice_states.get(user_id)
        if "nick" in body:
            self._bot_can(guild_id, Permission.MANAGE_NICKNAMES)
            if user_id != bot_id and self._outranks_bot(guild_id, user_id):
                raise missing_permissions()
            nick = body.get("nick")
            if nick is not None and len(str(nick)) > 32:
                raise invalid_form_body(
                    {"nick": field_error("BASE_TYPE_MAX_LENGTH", "Must be 32 or fewer in length.")}
                )
        roles = None
        if "roles" in body:
            self._bot_can(guild_id, Permission.MANAGE_ROLES)
            roles = [int(str(role_id)) for role_id in body.get("roles") or []]
            for role_id in set(roles) ^ set(member.roles):
                role = state.role(guild_id, role_id)
                if role.managed:
                    raise DiscordError(400, 50028, "Invalid Role")
                self._check_role_below_bot(guild_id, role_id)
        for key, permission in (
            ("mute", Permission.MUTE_MEMBERS),
            ("deaf", Permission.DEAFEN_MEMBERS),
        ):
            if body.get(key) is not None:
                self._bot_can(guild_id, permission)
                if in_voice is None:
                    raise DiscordError(400, 40032, "Target user is not connected to voice.")
        timeout: Any = UNSET
        if "communication_disabled_until" in body:
            self._bot_can(guild_id, Permission.MODERATE_MEMBERS)
            if user_id == bot_id or self._outranks_bot(guild_id, user_id):
                raise missing_permissions()
            timeout = body.get("communication_disabled_until")
            if timeout is not None:
                try:
                    until = datetime.datetime.fromisoformat(str(timeout))
                except ValueError:
                    raise invalid_form_body(
                        {
                            "communication_disabled_until": field_error(
                                "DATE_TIME_TYPE_PARSE", "Could not parse the time."
                            )
                        }
                    ) from None
                if until - datetime.datetime.now(tz=datetime.UTC) > datetime.timedelta(days=28):
                    raise invalid_form_body(
                        {
                            "communication_disabled_until": field_error(
                                "COMMUNICATION_DISABLED_UNTIL_TOO_LONG",
                                "Timeouts can last 28 days at most.",
                            )
                        }
                    )
        move_to: Any = UNSET
        if "channel_id" in body:
            self._bot_can(guild_id, Permission.MOVE_MEMBERS)
            if in_voice is None:
                raise DiscordError(400, 40032, "Target user is not connected to voice.")
            raw = body.get("channel_id")
            move_to = int(str(raw)) if raw is not None else None
            if move_to is not None:
                target = state.channel(move_to)
                if target.type not in VOICE_TYPES or target.guild_id != guild_id:
                    raise invalid_form_body(
                        {"channel_id": field_error("CHANNEL_TYPE_INVALID", "Not a voice channel")}
                    )
                self._bot_can(guild_id, Permission.CONNECT, move_to)
        before = member.to_payload(with_user=False)
        roles_before = list(member.roles)
        updated = self.fake.update_member(
            guild_id,
            user_id,
            nick=body.get("nick", UNSET),
            roles=roles,
            mute=body.get("mute"),
            deaf=body.get("deaf"),
            timed_out_until=timeout,
        )
        reason = request.record.audit_reason
        changed = audit.changes_between(
            before,
            updated.to_payload(with_user=False),
            ("nick", "mute", "deaf", "communication_disabled_until"),
        )
        if changed:
            self.fake.audit(guild_id, audit.MEMBER_UPDATE, user_id, reason=reason, changes=changed)
        if roles is not None:
            self._audit_roles(guild_id, user_id, roles_before, updated.roles, reason)
        if move_to is not UNSET and in_voice is not None:
            self.fake.set_voice_state(
                guild_id,
                user_id,
                move_to,
                self_mute=in_voice.self_mute,
                self_deaf=in_voice.self_deaf,
            )
            if move_to is None:
                self.fake.audit(
                    guild_id, audit.MEMBER_DISCONNECT, None, reason=reason, options={"count": "1"}
                )
            else:
                self.fake.audit(
                    guild_id,
                    audit.MEMBER_MOVE,
                    None,
                    reason=reason,
                    options={"channel_id": str(move_to), "count": "1"},
                )
        return updated.to_payload()

    def _audit_roles(
        self, guild_id: int, user_id: int, before: list[int], after: list[int], reason: str | None
    ) -> None:
        guild = self.fake.state.guild(guild_id)

        def named(role_ids: list[int]) -> list[dict[str, str]]:
            return [
                {"id": str(role_id), "name": guild.roles[role_id].name}
                for role_id in role_ids
                if role_id in guild.roles
            ]

        added = [role_id for role_id in after if role_id not in before]
        removed = [role_id for role_id in before if role_id not in after]
        changes = []
        if added:
            changes.append(audit.change("$add", None, named(added)))
        if removed:
            changes.append(audit.change("$remove", None, named(removed)))
        if changes:
            self.fake.audit(
                guild_id, audit.MEMBER_ROLE_UPDATE, user_id, reason=reason, changes=changes
            )

    async def kick_member(self, request: RestRequest) -> Any:
        """DELETE /guilds/{guild_id}/members/{user_id}."""
        state = self.fake.state
        guild_id = request.snowflake("guild_id")
        user_id = request.snowflake("user_id")
        state.guild(guild_id)
        state.member(guild_id, user_id)
        self._bot_can(guild_id, Permission.KICK_MEMBERS)
        if self._outranks_bot(guild_id, user_id):
            raise missing_permissions()
        self.fake.remove_member(guild_id, user_id)
        self.fake.audit(guild_id, audit.MEMBER_KICK, user_id, reason=request.record.audit_reason)
        return None

    async def add_member_role(self, request: RestRequest) -> Any:
        """PUT /guilds/{guild_id}/members/{user_id}/roles/{role_id}."""
        return self._change_member_role(request, add=True)

    async def remove_member_role(self, request: RestRequest) -> Any:
        """DELETE /guilds/{guild_id}/members/{user_id}/roles/{role_id}."""
        return self._change_member_role(request, add=False)

    def _change_member_role(self, request: RestRequest, *, add: bool) -> None:
        guild_id = request.snowflake("guild_id")
        user_id = request.snowflake("user_id")
        role_id = request.snowflake("role_id")
        role = self.fake.state.role(guild_id, role_id)
        self.fake.state.member(guild_id, user_id)
        self._bot_can(guild_id, Permission.MANAGE_ROLES)
        if role.managed or role.is_everyone:
            raise DiscordError(400, 50028, "Invalid Role")
        self._check_role_below_bot(guild_id, role_id)
        before = list(self.fake.state.member(guild_id, user_id).roles)
        if add:
            self.fake.add_member_role(guild_id, user_id, role_id)
        else:
            self.fake.remove_member_role(guild_id, user_id, role_id)
        after = self.fake.state.member(guild_id, user_id).roles
        self._audit_roles(guild_id, user_id, before, after, request.record.audit_reason)
