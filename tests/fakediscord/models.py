"""The fake's model of Discord: users, guilds, roles, members, channels, messages.

Objects are plain mutable dataclasses that the fake changes as REST calls and
test helpers act on them; ``to_payload()`` gives the JSON Discord would send.
Tests read them freely (``fake.state.channels[...]``) but should change them
only through :class:`~tests.fakediscord.world.World` methods, which also tell
the connected bot through the gateway.
"""

from __future__ import annotations

import datetime
import enum
from dataclasses import dataclass, field
from typing import Any

from .models_messages import (
    MESSAGE_FLAG_COMPONENTS_V2,
    MESSAGE_FLAG_EPHEMERAL,
    MESSAGE_FLAG_LOADING,
    MESSAGE_FLAG_VOICE_MESSAGE,
    Attachment,
    Message,
    walk_components,
)
from .permissions import Overwrite
from .snowflake import iso_timestamp

__all__ = [
    "ApplicationCommand",
    "Attachment",
    "CHANNEL_FLAG_OBFUSCATED",
    "Channel",
    "ChannelType",
    "Guild",
    "HIDDEN_CHANNEL_NAME",
    "MESSAGEABLE_TYPES",
    "MESSAGE_FLAG_COMPONENTS_V2",
    "MESSAGE_FLAG_EPHEMERAL",
    "MESSAGE_FLAG_LOADING",
    "MESSAGE_FLAG_VOICE_MESSAGE",
    "Member",
    "Message",
    "Role",
    "TEXT_LIKE_TYPES",
    "THREAD_TYPES",
    "User",
    "VOICE_TYPES",
    "VoiceState",
    "obfuscate_channel",
    "walk_components",
]


class ChannelType(enum.IntEnum):
    """Discord channel types the fake knows."""

    GUILD_TEXT = 0
    """A guild text channel."""
    DM = 1
    """A direct-message channel between the bot and one user."""
    GUILD_VOICE = 2
    """A guild voice channel (it also has a text chat)."""
    GUILD_CATEGORY = 4
    """A category holding other channels."""
    GUILD_ANNOUNCEMENT = 5
    """An announcement channel."""
    GUILD_STAGE_VOICE = 13
    """A stage channel."""
    GUILD_FORUM = 15
    """A forum channel."""
    ANNOUNCEMENT_THREAD = 10
    """A thread in an announcement channel."""
    PUBLIC_THREAD = 11
    """A thread everyone who views its parent sees."""
    PRIVATE_THREAD = 12
    """A thread only its members (and those with Manage Threads) see."""


TEXT_LIKE_TYPES = frozenset({ChannelType.GUILD_TEXT, ChannelType.GUILD_ANNOUNCEMENT})
"""Guild channels whose main purpose is text."""
MESSAGEABLE_TYPES = frozenset(
    {
        ChannelType.GUILD_TEXT,
        ChannelType.DM,
        ChannelType.GUILD_VOICE,
        ChannelType.GUILD_ANNOUNCEMENT,
        ChannelType.GUILD_STAGE_VOICE,
        ChannelType.ANNOUNCEMENT_THREAD,
        ChannelType.PUBLIC_THREAD,
        ChannelType.PRIVATE_THREAD,
    }
)
"""Channels that accept ``POST /channels/{id}/messages``."""
VOICE_TYPES = frozenset({ChannelType.GUILD_VOICE, ChannelType.GUILD_STAGE_VOICE})
"""Channels a member can be connected to."""
THREAD_TYPES = frozenset(
    {ChannelType.ANNOUNCEMENT_THREAD, ChannelType.PUBLIC_THREAD, ChannelType.PRIVATE_THREAD}
)
"""Threads: they live in a parent channel and take its permissions."""


@dataclass
class User:
    """A Discord user (a person or the bot)."""

    id: int
    username: str
    global_name: str | None = None
    bot: bool = False
    avatar: str | None = None
    accepts_dms: bool = True
    """False makes the fake answer 403 50007 when the bot DMs this user."""

    @property
    def display_name(self) -> str:
        """The global name if set, else the username."""
        return self.global_name or self.username

    @property
    def mention(self) -> str:
        """``<@id>``."""
        return f"<@{self.id}>"

    def to_payload(self) -> dict[str, Any]:
        """Discord's user object."""
        return {
            "id": str(self.id),
            "username": self.username,
            "discriminator": "0",
            "global_name": self.global_name,
            "avatar": self.avatar,
            "bot": self.bot,
            "system": False,
            "public_flags": 0,
            "flags": 0,
            "banner": None,
            "accent_color": None,
            "avatar_decoration_data": None,
            "collectibles": None,
            "primary_guild": None,
        }


@dataclass
class Role:
    """A guild role. The @everyone role's id is the guild id."""

    id: int
    guild_id: int
    name: str
    permissions: int = 0
    position: int = 0
    color: int = 0
    hoist: bool = False
    mentionable: bool = False
    managed: bool = False
    bot_id: int | None = None

    @property
    def is_everyone(self) -> bool:
        """Whether this is the guild's @everyone role."""
        return self.id == self.guild_id

    def to_payload(self) -> dict[str, Any]:
        """Discord's role object."""
        payload: dict[str, Any] = {
            "id": str(self.id),
            "name": self.name,
            "color": self.color,
            "colors": {
                "primary_color": self.color,
                "secondary_color": None,
                "tertiary_color": None,
            },
            "hoist": self.hoist,
            "icon": None,
            "unicode_emoji": None,
            "position": self.position,
            "permissions": str(self.permissions),
            "managed": self.managed,
            "mentionable": self.mentionable,
            "flags": 0,
        }
        if self.bot_id is not None:
            payload["tags"] = {"bot_id": str(self.bot_id)}
        return payload


@dataclass
class Member:
    """A user's membership of a guild."""

    user: User
    guild_id: int
    roles: list[int] = field(default_factory=list)
    nick: str | None = None
    joined_at: str = field(default_factory=iso_timestamp)
    mute: bool = False
    deaf: bool = False
    communication_disabled_until: str | None = None
    """ISO time until which the member is timed out."""

    @property
    def id(self) -> int:
        """The user's id."""
        return self.user.id

    def timed_out(self, now: datetime.datetime | None = None) -> bool:
        """Whether a timeout is running."""
        if self.communication_disabled_until is None:
            return False
        until = datetime.datetime.fromisoformat(self.communication_disabled_until)
        return until > (now or datetime.datetime.now(tz=datetime.UTC))

    @property
    def display_name(self) -> str:
        """Nick, else global name, else username."""
        return self.nick or self.user.display_name

    def to_payload(
        self, *, with_user: bool = True, permissions: int | None = None
    ) -> dict[str, Any]:
        """Discord's guild member object (``permissions`` only inside interactions)."""
        payload: dict[str, Any] = {
            "nick": self.nick,
            "avatar": None,
            "banner": None,
            "roles": [str(role_id) for role_id in self.roles],
            "joined_at": self.joined_at,
            "premium_since": None,
            "deaf": self.deaf,
            "mute": self.mute,
            "flags": 0,
            "pending": False,
            "communication_disabled_until": self.communication_disabled_until,
        }
        if with_user:
            payload["user"] = self.user.to_payload()
        if permissions is not None:
            payload["permissions"] = str(permissions)
        return payload


@dataclass
class Channel:
    """A guild channel, category or DM channel."""

    id: int
    type: int
    name: str | None
    guild_id: int | None = None
    position: int = 0
    parent_id: int | None = None
    topic: str | None = None
    overwrites: list[Overwrite] = field(default_factory=list)
    nsfw: bool = False
    bitrate: int = 64000
    user_limit: int = 0
    rate_limit_per_user: int = 0
    recipients: list[User] = field(default_factory=list)
    last_message_id: int | None = None
    deleted: bool = False
    owner_id: int | None = None
    """A thread's creator."""
    thread_members: list[int] = field(default_factory=list)
    """A thread's members (user ids), in the order they joined."""
    archived: bool = False
    created_at: str = field(default_factory=iso_timestamp)
    message_count: int = 0

    @property
    def is_thread(self) -> bool:
        """Whether this is a thread (its permissions are its parent's)."""
        return self.type in THREAD_TYPES

    @property
    def is_dm(self) -> bool:
        """Whether this is a DM channel."""
        return self.type == ChannelType.DM

    def overwrite_for(self, target_id: int) -> Overwrite | None:
        """The overwrite for a role or member id, if the channel has one."""
        for overwrite in self.overwrites:
            if overwrite.id == target_id:
                return overwrite
        return None

    def to_payload(self, *, obfuscated: bool = False) -> dict[str, Any]:
        """Discord's channel object; ``obfuscated`` gives what a member who cannot view it
        receives over the gateway (see :func:`obfuscate_channel`)."""
        if obfuscated and self.guild_id is not None:
            return obfuscate_channel(self.to_payload(), self.guild_id)
        if self.type == ChannelType.DM:
            return {
                "id": str(self.id),
                "type": self.type,
                "last_message_id": _opt_str(self.last_message_id),
                "recipients": [user.to_payload() for user in self.recipients],
                "flags": 0,
            }
        if self.is_thread:
            return {
                "id": str(self.id),
                "type": self.type,
                "guild_id": _opt_str(self.guild_id),
                "parent_id": _opt_str(self.parent_id),
                "owner_id": _opt_str(self.owner_id),
                "name": self.name,
                "last_message_id": _opt_str(self.last_message_id),
                "rate_limit_per_user": self.rate_limit_per_user,
                "flags": 0,
                "message_count": self.message_count,
                "total_message_sent": self.message_count,
                "member_count": min(len(self.thread_members), 50),
                "thread_metadata": {
                    "archived": self.archived,
                    "auto_archive_duration": 1440,
                    "archive_timestamp": self.created_at,
                    "locked": False,
                    "invitable": self.type == ChannelType.PRIVATE_THREAD,
                    "create_timestamp": self.created_at,
                },
            }
        payload: dict[str, Any] = {
            "id": str(self.id),
            "type": self.type,
            "guild_id": _opt_str(self.guild_id),
            "name": self.name,
            "position": self.position,
            "parent_id": _opt_str(self.parent_id),
            "permission_overwrites": [overwrite.to_payload() for overwrite in self.overwrites],
            "nsfw": self.nsfw,
            "flags": 0,
        }
        if self.type != ChannelType.GUILD_CATEGORY:
            payload["last_message_id"] = _opt_str(self.last_message_id)
            payload["rate_limit_per_user"] = self.rate_limit_per_user
        if self.type in TEXT_LIKE_TYPES or self.type == ChannelType.GUILD_FORUM:
            payload["topic"] = self.topic
        if self.type in VOICE_TYPES:
            payload["bitrate"] = self.bitrate
            payload["user_limit"] = self.user_limit
            payload["rtc_region"] = None
            payload["video_quality_mode"] = 1
        return payload


CHANNEL_FLAG_OBFUSCATED = 1 << 17
"""Channel flag: the channel's metadata was obfuscated because the receiver cannot view it."""
HIDDEN_CHANNEL_NAME = "___hidden___"

_VIEW_CHANNEL = 1 << 10


def obfuscate_channel(payload: dict[str, Any], guild_id: int) -> dict[str, Any]:
    """A channel object as Discord sends it over the gateway to someone who cannot view it.

    Documented (developers/resources/channel.mdx, Obfuscated Channels, and the change log
    "Channel Obfuscation for Users and Bots", 2026; for bots from 16 November 2026): the name
    becomes ``___hidden___``, the CHANNEL_OBFUSCATED flag (1 << 17) is set, the overwrites are
    one @everyone overwrite denying VIEW_CHANNEL, and ``id``, ``type``, ``position`` and
    ``parent_id`` stay. "Other sensitive fields are nulled or reduced" without a list: the fake
    nulls the topic and the last message id and reduces nsfw, slowmode, bitrate and user limit
    to their defaults, so nothing of the channel but its place in the list comes through.
    """
    hidden = dict(payload)
    hidden["name"] = HIDDEN_CHANNEL_NAME
    hidden["flags"] = int(payload.get("flags") or 0) | CHANNEL_FLAG_OBFUSCATED
    hidden["permission_overwrites"] = [
        {"id": str(guild_id), "type": 0, "allow": "0", "deny": str(_VIEW_CHANNEL)}
    ]
    reduced = {
        "topic": None,
        "last_message_id": None,
        "nsfw": False,
        "rate_limit_per_user": 0,
        "bitrate": 64000,
        "user_limit": 0,
        "rtc_region": None,
    }
    for key, value in reduced.items():
        if key in hidden:
            hidden[key] = value
    return hidden


@dataclass
class VoiceState:
    """A user connected to a voice channel of a guild."""

    guild_id: int
    user_id: int
    channel_id: int
    session_id: str
    self_mute: bool = False
    self_deaf: bool = False
    self_video: bool = False
    suppress: bool = False

    def to_payload(self, *, member: Member | None, in_guild_create: bool = False) -> dict[str, Any]:
        """Discord's voice state object (no guild id or member inside GUILD_CREATE)."""
        payload: dict[str, Any] = {
            "user_id": str(self.user_id),
            "channel_id": str(self.channel_id),
            "session_id": self.session_id,
            "deaf": member.deaf if member is not None else False,
            "mute": member.mute if member is not None else False,
            "self_deaf": self.self_deaf,
            "self_mute": self.self_mute,
            "self_video": self.self_video,
            "self_stream": False,
            "suppress": self.suppress,
            "request_to_speak_timestamp": None,
        }
        if not in_guild_create:
            payload["guild_id"] = str(self.guild_id)
            if member is not None:
                payload["member"] = member.to_payload()
        return payload


@dataclass
class Guild:
    """A guild and everything in it (channels are kept in the state's channel table)."""

    id: int
    name: str
    owner_id: int
    preferred_locale: str = "en-US"
    roles: dict[int, Role] = field(default_factory=dict)
    members: dict[int, Member] = field(default_factory=dict)
    channel_ids: list[int] = field(default_factory=list)
    thread_ids: list[int] = field(default_factory=list)
    """Threads are channels too, but not in the guild's channel list."""
    voice_states: dict[int, VoiceState] = field(default_factory=dict)
    joined_at: str = field(default_factory=iso_timestamp)
    system_channel_id: int | None = None
    premium_tier: int = 0

    @property
    def everyone(self) -> Role:
        """The @everyone role."""
        return self.roles[self.id]

    def to_payload(self) -> dict[str, Any]:
        """Discord's guild object as ``GET /guilds/{id}`` answers it (no channels, no members)."""
        return {
            "id": str(self.id),
            "name": self.name,
            "icon": None,
            "splash": None,
            "discovery_splash": None,
            "banner": None,
            "description": None,
            "owner_id": str(self.owner_id),
            "afk_channel_id": None,
            "afk_timeout": 300,
            "widget_enabled": False,
            "verification_level": 0,
            "default_message_notifications": 1,
            "explicit_content_filter": 0,
            "roles": [
                role.to_payload() for role in sorted(self.roles.values(), key=lambda r: r.position)
            ],
            "emojis": [],
            "stickers": [],
            "features": [],
            "mfa_level": 0,
            "system_channel_id": _opt_str(self.system_channel_id),
            "system_channel_flags": 0,
            "rules_channel_id": None,
            "public_updates_channel_id": None,
            "safety_alerts_channel_id": None,
            "vanity_url_code": None,
            "premium_tier": self.premium_tier,
            "premium_subscription_count": 0,
            "preferred_locale": self.preferred_locale,
            "nsfw_level": 0,
            "premium_progress_bar_enabled": False,
            "max_members": 500000,
            "max_video_channel_users": 25,
        }


@dataclass
class ApplicationCommand:
    """An application command as the bot registered it, with the ids Discord gave it."""

    id: int
    application_id: int
    guild_id: int | None
    data: dict[str, Any]
    version: int

    @property
    def name(self) -> str:
        """The command's default (untranslated) name."""
        return str(self.data["name"])

    @property
    def type(self) -> int:
        """1 slash command, 2 user context menu, 3 message context menu."""
        return int(self.data.get("type", 1))

    def localized_name(self, locale: str) -> str:
        """The name a user with ``locale`` sees."""
        localizations = self.data.get("name_localizations") or {}
        return str(localizations.get(locale, self.name))

    def to_payload(self) -> dict[str, Any]:
        """The command as Discord echoes it, ids included."""
        payload: dict[str, Any] = {
            "type": 1,
            "description": "",
            "options": [],
            "default_member_permissions": None,
            "nsfw": False,
            "name_localizations": None,
            "description_localizations": None,
            "contexts": None,
            "integration_types": [0],
        }
        # Discord echoes the command in its own normalised form: absent lists get their defaults,
        # a permission set comes back as a string.
        payload.update(
            {
                key: value
                for key, value in self.data.items()
                if value is not None or key in _NULLABLE_COMMAND_FIELDS
            }
        )
        if payload.get("default_member_permissions") is not None:
            payload["default_member_permissions"] = str(payload["default_member_permissions"])
        payload["id"] = str(self.id)
        payload["application_id"] = str(self.application_id)
        payload["version"] = str(self.version)
        if self.guild_id is not None:
            payload["guild_id"] = str(self.guild_id)
        return payload


_NULLABLE_COMMAND_FIELDS = frozenset(
    {"default_member_permissions", "name_localizations", "description_localizations", "contexts"}
)


def _opt_str(value: int | None) -> str | None:
    return None if value is None else str(value)
