"""Discord permission bits and Discord's algorithm for a member's permissions.

The algorithm follows Discord's documentation ("Permission Hierarchy"):
the guild owner and holders of ADMINISTRATOR get everything; otherwise the
base is the @everyone role's permissions OR-ed with every role of the member;
then, in a channel, the @everyone overwrite applies, then all of the member's
role overwrites together (denies before allows), then the member's own
overwrite. Two implicit rules are applied afterwards, as Discord does: without
VIEW_CHANNEL a member has none of the channel permissions (only guild-wide ones
like CHANGE_NICKNAME remain), and in a channel with a text chat (text,
announcement, and the chat of voice and stage channels) without SEND_MESSAGES
the permissions that only make sense when sending (mention everyone, TTS,
embeds, attachments) are dropped too; in a voice or stage channel without
CONNECT, MANAGE_CHANNELS is dropped (topics/permissions.mdx, "Implicit
Permissions"). (discord.py's ``permissions_for`` also hides voice permissions
in text channels; Discord's algorithm does not.)
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass


class Permission(enum.IntFlag):
    """One bit of a Discord permission integer."""

    CREATE_INSTANT_INVITE = 1 << 0
    """Create invites."""
    KICK_MEMBERS = 1 << 1
    """Kick members."""
    BAN_MEMBERS = 1 << 2
    """Ban members."""
    ADMINISTRATOR = 1 << 3
    """Every permission, bypassing channel overwrites."""
    MANAGE_CHANNELS = 1 << 4
    """Create, edit and delete channels."""
    MANAGE_GUILD = 1 << 5
    """Edit the guild itself."""
    ADD_REACTIONS = 1 << 6
    """Add reactions."""
    VIEW_AUDIT_LOG = 1 << 7
    """Read the audit log."""
    PRIORITY_SPEAKER = 1 << 8
    """Priority speaker in voice."""
    STREAM = 1 << 9
    """Go live in voice."""
    VIEW_CHANNEL = 1 << 10
    """See a channel (and read a text channel)."""
    SEND_MESSAGES = 1 << 11
    """Post messages."""
    SEND_TTS_MESSAGES = 1 << 12
    """Post text-to-speech messages."""
    MANAGE_MESSAGES = 1 << 13
    """Delete others' messages, pin messages."""
    EMBED_LINKS = 1 << 14
    """Links are embedded."""
    ATTACH_FILES = 1 << 15
    """Upload files."""
    READ_MESSAGE_HISTORY = 1 << 16
    """Read messages posted before one looked."""
    MENTION_EVERYONE = 1 << 17
    """Mention @everyone and @here."""
    USE_EXTERNAL_EMOJIS = 1 << 18
    """Use other guilds' emojis."""
    VIEW_GUILD_INSIGHTS = 1 << 19
    """See guild insights."""
    CONNECT = 1 << 20
    """Join a voice channel."""
    SPEAK = 1 << 21
    """Speak in a voice channel."""
    MUTE_MEMBERS = 1 << 22
    """Server-mute others in voice."""
    DEAFEN_MEMBERS = 1 << 23
    """Server-deafen others in voice."""
    MOVE_MEMBERS = 1 << 24
    """Move others between voice channels."""
    USE_VAD = 1 << 25
    """Speak by voice activity."""
    CHANGE_NICKNAME = 1 << 26
    """Change one's own nickname."""
    MANAGE_NICKNAMES = 1 << 27
    """Change others' nicknames."""
    MANAGE_ROLES = 1 << 28
    """Create and edit roles and channel overwrites."""
    MANAGE_WEBHOOKS = 1 << 29
    """Manage webhooks."""
    MANAGE_GUILD_EXPRESSIONS = 1 << 30
    """Manage emojis, stickers and sounds."""
    USE_APPLICATION_COMMANDS = 1 << 31
    """Use slash commands."""
    REQUEST_TO_SPEAK = 1 << 32
    """Request to speak in stage channels."""
    MANAGE_EVENTS = 1 << 33
    """Manage scheduled events."""
    MANAGE_THREADS = 1 << 34
    """Manage threads."""
    CREATE_PUBLIC_THREADS = 1 << 35
    """Create public threads."""
    CREATE_PRIVATE_THREADS = 1 << 36
    """Create private threads."""
    USE_EXTERNAL_STICKERS = 1 << 37
    """Use other guilds' stickers."""
    SEND_MESSAGES_IN_THREADS = 1 << 38
    """Post in threads."""
    USE_EMBEDDED_ACTIVITIES = 1 << 39
    """Start activities."""
    MODERATE_MEMBERS = 1 << 40
    """Time members out."""
    VIEW_CREATOR_MONETIZATION_ANALYTICS = 1 << 41
    """See monetization analytics."""
    USE_SOUNDBOARD = 1 << 42
    """Use the soundboard."""
    CREATE_GUILD_EXPRESSIONS = 1 << 43
    """Create emojis, stickers and sounds."""
    CREATE_EVENTS = 1 << 44
    """Create scheduled events."""
    USE_EXTERNAL_SOUNDS = 1 << 45
    """Use other guilds' sounds."""
    SEND_VOICE_MESSAGES = 1 << 46
    """Post native voice messages."""
    SET_VOICE_CHANNEL_STATUS = 1 << 48
    """Set a voice channel's status."""
    SEND_POLLS = 1 << 49
    """Post polls."""
    USE_EXTERNAL_APPS = 1 << 50
    """Use user-installed apps."""
    PIN_MESSAGES = 1 << 51
    """Pin messages."""
    BYPASS_SLOWMODE = 1 << 52
    """Post regardless of slowmode."""


ALL_PERMISSIONS = sum(int(bit) for bit in Permission)
"""Every known permission bit: what owners and administrators get."""

DEFAULT_EVERYONE_PERMISSIONS = int(
    Permission.CREATE_INSTANT_INVITE
    | Permission.ADD_REACTIONS
    | Permission.STREAM
    | Permission.VIEW_CHANNEL
    | Permission.SEND_MESSAGES
    | Permission.EMBED_LINKS
    | Permission.ATTACH_FILES
    | Permission.READ_MESSAGE_HISTORY
    | Permission.USE_EXTERNAL_EMOJIS
    | Permission.CONNECT
    | Permission.SPEAK
    | Permission.USE_VAD
    | Permission.CHANGE_NICKNAME
    | Permission.USE_APPLICATION_COMMANDS
    | Permission.REQUEST_TO_SPEAK
    | Permission.CREATE_PUBLIC_THREADS
    | Permission.CREATE_PRIVATE_THREADS
    | Permission.USE_EXTERNAL_STICKERS
    | Permission.SEND_MESSAGES_IN_THREADS
    | Permission.USE_EMBEDDED_ACTIVITIES
    | Permission.USE_SOUNDBOARD
    | Permission.USE_EXTERNAL_SOUNDS
    | Permission.SEND_VOICE_MESSAGES
    | Permission.SEND_POLLS
    | Permission.USE_EXTERNAL_APPS
)
"""What a new guild's @everyone role may do, close to Discord's defaults."""

DEFAULT_BOT_PERMISSIONS = int(
    Permission.MANAGE_CHANNELS
    | Permission.ADD_REACTIONS
    | Permission.STREAM
    | Permission.VIEW_CHANNEL
    | Permission.SEND_MESSAGES
    | Permission.EMBED_LINKS
    | Permission.ATTACH_FILES
    | Permission.READ_MESSAGE_HISTORY
    | Permission.MENTION_EVERYONE
    | Permission.USE_EXTERNAL_EMOJIS
    | Permission.CONNECT
    | Permission.SPEAK
    | Permission.USE_VAD
    | Permission.MANAGE_ROLES
    | Permission.USE_APPLICATION_COMMANDS
    | Permission.CREATE_PUBLIC_THREADS
    | Permission.CREATE_PRIVATE_THREADS
    | Permission.SEND_MESSAGES_IN_THREADS
    | Permission.USE_EMBEDDED_ACTIVITIES
    | Permission.USE_SOUNDBOARD
    | Permission.CREATE_EVENTS
    | Permission.USE_EXTERNAL_SOUNDS
    | Permission.SEND_VOICE_MESSAGES
    | Permission.SET_VOICE_CHANNEL_STATUS
    | Permission.SEND_POLLS
    | Permission.USE_EXTERNAL_APPS
)
"""What the fake gives the bot's managed role unless told otherwise: the bits a server grants
when it accepts the bot's invite link, no ADMINISTRATOR. Written out here, not read from the
product (the fake imports no product code); tests/bot/test_permissions.py checks that the
product's invite asks for exactly these."""

GUILD_ONLY_PERMISSIONS = int(
    Permission.KICK_MEMBERS
    | Permission.BAN_MEMBERS
    | Permission.ADMINISTRATOR
    | Permission.MANAGE_GUILD
    | Permission.VIEW_AUDIT_LOG
    | Permission.VIEW_GUILD_INSIGHTS
    | Permission.CHANGE_NICKNAME
    | Permission.MANAGE_NICKNAMES
    | Permission.MANAGE_GUILD_EXPRESSIONS
    | Permission.MANAGE_EVENTS
    | Permission.MODERATE_MEMBERS
    | Permission.VIEW_CREATOR_MONETIZATION_ANALYTICS
    | Permission.CREATE_GUILD_EXPRESSIONS
    | Permission.CREATE_EVENTS
)
"""Permissions that do not apply to channels (no channel type in Discord's permission table)."""

TIMED_OUT_PERMISSIONS = int(Permission.VIEW_CHANNEL | Permission.READ_MESSAGE_HISTORY)
"""All a timed-out member keeps."""

_NEEDS_SEND_MESSAGES = int(
    Permission.MENTION_EVERYONE
    | Permission.SEND_TTS_MESSAGES
    | Permission.ATTACH_FILES
    | Permission.EMBED_LINKS
)

OVERWRITE_ROLE = 0
"""``type`` of a permission overwrite for a role."""
OVERWRITE_MEMBER = 1
"""``type`` of a permission overwrite for a member."""


@dataclass
class Overwrite:
    """A channel permission overwrite: ``type`` 0 is a role, 1 a member."""

    id: int
    type: int
    allow: int = 0
    deny: int = 0

    def to_payload(self) -> dict[str, object]:
        """Discord's JSON form: ids and bit sets as strings."""
        return {
            "id": str(self.id),
            "type": self.type,
            "allow": str(self.allow),
            "deny": str(self.deny),
        }

    @classmethod
    def from_payload(cls, data: dict[str, object]) -> Overwrite:
        """Parses an overwrite as a client sends it (ints or strings accepted)."""
        raw_type = data.get("type", OVERWRITE_ROLE)
        if raw_type in ("role", "member"):
            kind = OVERWRITE_ROLE if raw_type == "role" else OVERWRITE_MEMBER
        else:
            kind = int(str(raw_type))
        return cls(
            id=int(str(data["id"])),
            type=kind,
            allow=int(str(data.get("allow", 0) or 0)),
            deny=int(str(data.get("deny", 0) or 0)),
        )


def base_permissions(
    *,
    is_owner: bool,
    everyone_permissions: int,
    role_permissions: Iterable[int],
) -> int:
    """A member's guild-wide permissions, before any channel overwrite."""
    if is_owner:
        return ALL_PERMISSIONS
    permissions = everyone_permissions
    for value in role_permissions:
        permissions |= value
    if permissions & Permission.ADMINISTRATOR:
        return ALL_PERMISSIONS
    return permissions


def apply_overwrites(
    base: int,
    *,
    guild_id: int,
    member_id: int,
    member_role_ids: Iterable[int],
    overwrites: Iterable[Overwrite],
    is_text_channel: bool,
    is_voice_channel: bool = False,
) -> int:
    """A member's permissions in a channel, given its guild-wide ``base``.

    ``guild_id`` is also the id of the @everyone role. ``is_text_channel`` says
    the channel has a text chat (voice and stage channels have one too), where
    no SEND_MESSAGES drops what only sending needs; in a voice channel
    (``is_voice_channel``) no CONNECT drops MANAGE_CHANNELS ("Implicit
    Permissions", topics/permissions.mdx).
    """
    if base & Permission.ADMINISTRATOR:
        return ALL_PERMISSIONS
    by_target = {(ow.type, ow.id): ow for ow in overwrites}
    permissions = base
    everyone = by_target.get((OVERWRITE_ROLE, guild_id))
    if everyone is not None:
        permissions &= ~everyone.deny
        permissions |= everyone.allow
    allow = deny = 0
    for role_id in member_role_ids:
        role_overwrite = by_target.get((OVERWRITE_ROLE, role_id))
        if role_overwrite is not None:
            allow |= role_overwrite.allow
            deny |= role_overwrite.deny
    permissions &= ~deny
    permissions |= allow
    own = by_target.get((OVERWRITE_MEMBER, member_id))
    if own is not None:
        permissions &= ~own.deny
        permissions |= own.allow
    if not permissions & Permission.VIEW_CHANNEL:
        return permissions & GUILD_ONLY_PERMISSIONS
    if is_text_channel and not permissions & Permission.SEND_MESSAGES:
        permissions &= ~_NEEDS_SEND_MESSAGES
    if is_voice_channel and not permissions & Permission.CONNECT:
        permissions &= ~int(Permission.MANAGE_CHANNELS)
    return permissions


def permission_names(value: int) -> list[str]:
    """The names of the bits set in ``value``, for readable assertion messages."""
    return [bit.name or str(int(bit)) for bit in Permission if value & bit]
