"""REST routes of guilds: the guild, its channels (creation), roles and members.

Permission checks follow Discord: MANAGE_CHANNELS to create channels,
MANAGE_ROLES (and only bits the bot has) to put overwrites on them, MANAGE_ROLES
and the role hierarchy for roles, MANAGE_NICKNAMES / MUTE_MEMBERS /
DEAFEN_MEMBERS / MOVE_MEMBERS for members. A refusal is 403 50013.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from . import audit
from .errors import DiscordError, field_error, invalid_form_body, missing_permissions, unknown
from .models import ChannelType
from .permissions import OVERWRITE_MEMBER, OVERWRITE_ROLE, Overwrite, Permission
from .rest_members import MemberRoutes
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


_CREATED_CHANNEL_KEYS = (
    "name",
    "type",
    "topic",
    "nsfw",
    "rate_limit_per_user",
    "bitrate",
    "user_limit",
    "parent_id",
    "permission_overwrites",
)
"""What the audit log's CHANNEL_CREATE entry lists of a new channel (when set)."""


def _new_channel_name_and_type(body: dict[str, Any]) -> tuple[str, int]:
    """A new channel's name (1 to 100 characters, a text channel's normalised) and type."""
    name = str(body.get("name") or "")
    if not 1 <= len(name) <= 100:
        raise invalid_form_body(
            {"name": field_error("BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")}
        )
    channel_type = int(body.get("type") or 0)
    if channel_type not in _CREATABLE_TYPES:
        raise invalid_form_body(
            {"type": field_error("BASE_TYPE_CHOICES", "Value must be one of (0, 2, 4, 5, 13, 15).")}
        )
    if channel_type in (ChannelType.GUILD_TEXT, ChannelType.GUILD_ANNOUNCEMENT):
        name = normalize_text_channel_name(name)
    return name, channel_type


class GuildRoutes(MemberRoutes):
    """``/guilds/...`` routes."""

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

    # overwrites ---------------------------------------------------------------------

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
        name, channel_type = _new_channel_name_and_type(body)
        parent_id = self._new_channel_parent(guild_id, channel_type, body)
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
        self.fake.audit(
            guild_id,
            audit.CHANNEL_CREATE,
            channel.id,
            reason=request.record.audit_reason,
            changes=[
                audit.change(key, None, created[key])
                for key in _CREATED_CHANNEL_KEYS
                if created.get(key) is not None
            ],
        )
        return RestResponse(status=201, body=created)

    def _new_channel_parent(
        self, guild_id: int, channel_type: int, body: dict[str, Any]
    ) -> int | None:
        """A new channel's ``parent_id``: None, or a category of the guild (not for a category)."""
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
        return parent_id

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
