"""The tables of the fake's Discord and the read-only questions asked of them."""

from __future__ import annotations

from .errors import missing_permissions, unknown
from .models import (
    TEXT_LIKE_TYPES,
    VOICE_TYPES,
    ApplicationCommand,
    Attachment,
    Channel,
    ChannelType,
    Guild,
    Member,
    Message,
    Role,
    User,
)
from .permissions import (
    ALL_PERMISSIONS,
    OVERWRITE_MEMBER,
    OVERWRITE_ROLE,
    TIMED_OUT_PERMISSIONS,
    Overwrite,
    Permission,
    apply_overwrites,
    base_permissions,
)
from .snowflake import SnowflakeGenerator


class DiscordState:
    """Everything the fake Discord knows, keyed by snowflake.

    Lookups by id raise :class:`~tests.fakediscord.errors.DiscordError` 404s
    with Discord's codes, so REST handlers can use them directly.
    """

    def __init__(
        self, *, bot_name: str = "Prokurator", application_name: str = "Prokurator"
    ) -> None:
        self.snowflakes = SnowflakeGenerator()
        self.users: dict[int, User] = {}
        self.guilds: dict[int, Guild] = {}
        self.channels: dict[int, Channel] = {}
        self.messages: dict[int, Message] = {}
        self.dm_channels: dict[int, int] = {}
        """user id → id of the bot's DM channel with that user."""
        self.global_commands: dict[int, ApplicationCommand] = {}
        self.guild_commands: dict[int, dict[int, ApplicationCommand]] = {}
        self.attachments: dict[int, Attachment] = {}
        """Every uploaded file by attachment id, as the fake's CDN serves them."""
        self.application_id = self.snowflakes.next()
        self.application_name = application_name
        self.application_flags = 1 << 13 | 1 << 15 | 1 << 23
        """GATEWAY_PRESENCE_LIMITED | GATEWAY_GUILD_MEMBERS_LIMITED | APPLICATION_COMMAND_BADGE:
        an unverified bot with both privileged intents switched on."""
        self.owner = User(id=self.snowflakes.next(), username="app_owner", global_name="App Owner")
        self.users[self.owner.id] = self.owner
        self.bot_user = User(
            id=self.application_id, username=bot_name.lower(), global_name=bot_name, bot=True
        )
        self.users[self.bot_user.id] = self.bot_user

    # lookups -----------------------------------------------------------------

    def new_id(self) -> int:
        """A fresh snowflake."""
        return self.snowflakes.next()

    def guild(self, guild_id: int) -> Guild:
        """The guild, or a 404 10004."""
        try:
            return self.guilds[guild_id]
        except KeyError:
            raise unknown("Guild") from None

    def channel(self, channel_id: int) -> Channel:
        """The channel (not deleted), or a 404 10003."""
        channel = self.channels.get(channel_id)
        if channel is None or channel.deleted:
            raise unknown("Channel")
        return channel

    def user(self, user_id: int) -> User:
        """The user, or a 404 10013."""
        try:
            return self.users[user_id]
        except KeyError:
            raise unknown("User") from None

    def member(self, guild_id: int, user_id: int) -> Member:
        """The member, or a 404 10007."""
        guild = self.guild(guild_id)
        try:
            return guild.members[user_id]
        except KeyError:
            raise unknown("Member") from None

    def role(self, guild_id: int, role_id: int) -> Role:
        """The role, or a 404 10011."""
        guild = self.guild(guild_id)
        try:
            return guild.roles[role_id]
        except KeyError:
            raise unknown("Role") from None

    def message(self, channel_id: int, message_id: int) -> Message:
        """A visible (not deleted, not ephemeral) message of the channel, or a 404 10008."""
        message = self.messages.get(message_id)
        if (
            message is None
            or message.deleted
            or message.channel_id != channel_id
            or message.ephemeral
        ):
            raise unknown("Message")
        return message

    def guild_channels(self, guild_id: int) -> list[Channel]:
        """The guild's live channels, in creation order."""
        guild = self.guild(guild_id)
        return [
            self.channels[channel_id]
            for channel_id in guild.channel_ids
            if not self.channels[channel_id].deleted
        ]

    def find_channel(self, guild_id: int, name: str, type: int | None = None) -> Channel | None:
        """The first live channel of the guild with this name (and type, if given)."""
        for channel in self.guild_channels(guild_id):
            if channel.name == name and (type is None or channel.type == type):
                return channel
        return None

    def find_role(self, guild_id: int, name: str) -> Role | None:
        """The guild's role with this name."""
        for role in self.guild(guild_id).roles.values():
            if role.name == name:
                return role
        return None

    def channel_messages(self, channel_id: int) -> list[Message]:
        """Visible messages of a channel (no ephemeral, no deleted), oldest first."""
        return [
            message
            for message in self.messages.values()
            if message.channel_id == channel_id and not message.deleted and not message.ephemeral
        ]

    # permissions -------------------------------------------------------------

    def guild_permissions(self, guild_id: int, user_id: int) -> int:
        """The member's permissions in the guild, before channel overwrites."""
        guild = self.guild(guild_id)
        member = self.member(guild_id, user_id)
        return base_permissions(
            is_owner=guild.owner_id == user_id,
            everyone_permissions=guild.everyone.permissions,
            role_permissions=[
                guild.roles[role_id].permissions
                for role_id in member.roles
                if role_id in guild.roles
            ],
        )

    def permissions_for(self, guild_id: int, channel_id: int | None, user_id: int) -> int:
        """Discord's computed permissions of a member in a channel (guild-wide if ``channel_id`` is None).

        A timed-out member (not owner, not administrator) keeps only
        VIEW_CHANNEL and READ_MESSAGE_HISTORY.
        """
        base = self.guild_permissions(guild_id, user_id)
        member = self.member(guild_id, user_id)
        timed_out = base != ALL_PERMISSIONS and member.timed_out()
        if channel_id is not None:
            channel = self.channel(channel_id)
            if channel.is_thread and channel.parent_id is not None:
                # "Threads inherit permissions from the parent channel" (topics/permissions.mdx)
                channel = self.channel(channel.parent_id)
            base = apply_overwrites(
                base,
                guild_id=guild_id,
                member_id=user_id,
                member_role_ids=member.roles,
                overwrites=channel.overwrites,
                # a voice or stage channel has a text chat: the same implicit denials hold there
                is_text_channel=channel.type in TEXT_LIKE_TYPES or channel.type in VOICE_TYPES,
                is_voice_channel=channel.type in VOICE_TYPES,
            )
        if timed_out:
            base &= TIMED_OUT_PERMISSIONS
        return base

    def can_view(self, guild_id: int, channel: Channel, user_id: int) -> bool:
        """Whether a member can view a channel, as Discord decides what to obfuscate: VIEW_CHANNEL
        in it, or being connected to it (a voice channel); a category also when he can view
        one of its channels (developers/resources/channel.mdx, Obfuscated Channels)."""
        guild = self.guild(guild_id)
        if user_id not in guild.members:
            return False
        if channel.is_thread:
            return self.can_view_thread(guild_id, channel, user_id)
        if self.permissions_for(guild_id, channel.id, user_id) & Permission.VIEW_CHANNEL:
            return True
        voice = guild.voice_states.get(user_id)
        if voice is not None and voice.channel_id == channel.id:
            return True
        if channel.type == ChannelType.GUILD_CATEGORY:
            return any(
                self.can_view(guild_id, child, user_id)
                for child in self.guild_channels(guild_id)
                if child.parent_id == channel.id and child.type != ChannelType.GUILD_CATEGORY
            )
        return False

    def can_view_thread(self, guild_id: int, thread: Channel, user_id: int) -> bool:
        """A thread is seen by whoever views its parent; a private one only by its members and
        those with Manage Threads (topics/threads.mdx; "Users must have the VIEW_CHANNEL
        permission to view any threads in the channel", topics/permissions.mdx)."""
        if thread.parent_id is None or user_id not in self.guild(guild_id).members:
            return False
        permissions = self.permissions_for(guild_id, thread.parent_id, user_id)
        if not permissions & Permission.VIEW_CHANNEL:
            return False
        if thread.type != ChannelType.PRIVATE_THREAD:
            return True
        return user_id in thread.thread_members or bool(permissions & Permission.MANAGE_THREADS)

    def guild_threads(self, guild_id: int) -> list[Channel]:
        """The guild's live threads, in creation order."""
        guild = self.guild(guild_id)
        return [
            self.channels[thread_id]
            for thread_id in guild.thread_ids
            if not self.channels[thread_id].deleted
        ]

    def check_overwrite_grants(
        self,
        guild_id: int,
        channel: Channel | None,
        changes: list[tuple[Overwrite | None, Overwrite]],
        *,
        creating: bool,
    ) -> None:
        """403 50013 unless the bot may put these overwrites (``(before, after)`` pairs) on a channel.

        Discord's rules: on Create Guild Channel "only permissions your bot has in the
        guild can be allowed/denied. Setting MANAGE_ROLES permission in channels is
        only possible for guild administrators" (resources/guild.mdx); on Modify
        Channel and Edit Channel Permissions "only permissions your bot has in the
        guild or parent channel (if applicable) can be allowed/denied (unless your
        bot has a MANAGE_ROLES overwrite in the channel)" (resources/channel.mdx;
        "channel" there means the parent category, discord-api-docs#3450), and
        MANAGE_ROLES only "for guild administrators or users with MANAGE_ROLES as a
        permission overwrite in the channel" (discord-api-docs#2522). An
        administrator may set anything. On an edit, the bits that change are the
        ones checked (an overwrite sent back as it is changes nothing).
        """
        bot_id = self.bot_user.id
        guild_level = self.guild_permissions(guild_id, bot_id)
        if guild_level == ALL_PERMISSIONS:
            return
        reach = guild_level
        if not creating and channel is not None:
            if self._bot_has_manage_roles_overwrite(guild_id, channel):
                return
            if channel.parent_id is not None and channel.parent_id in self.channels:
                reach = self.permissions_for(guild_id, channel.parent_id, bot_id)
        for before, after in changes:
            if before is None or creating:
                changed = after.allow | after.deny
            else:
                changed = (after.allow ^ before.allow) | (after.deny ^ before.deny)
            if changed & Permission.MANAGE_ROLES:
                raise missing_permissions()
            if changed & ~reach:
                raise missing_permissions()

    def _bot_has_manage_roles_overwrite(self, guild_id: int, channel: Channel) -> bool:
        member = self.member(guild_id, self.bot_user.id)
        targets = {(OVERWRITE_ROLE, guild_id), (OVERWRITE_MEMBER, member.id)}
        targets.update((OVERWRITE_ROLE, role_id) for role_id in member.roles)
        return any(
            (overwrite.type, overwrite.id) in targets and overwrite.allow & Permission.MANAGE_ROLES
            for overwrite in channel.overwrites
        )

    def check_role_grant(self, guild_id: int, before: int, after: int) -> None:
        """403 50013 when a role would get a permission the bot lacks ("it can only grant
        permissions it has to those roles", topics/permissions.mdx, Permission Hierarchy)."""
        held = self.guild_permissions(guild_id, self.bot_user.id)
        if held != ALL_PERMISSIONS and (after & ~before) & ~held:
            raise missing_permissions()

    def highest_role_position(self, guild_id: int, user_id: int) -> int:
        """Position of the member's highest role (0 for @everyone only)."""
        guild = self.guild(guild_id)
        member = self.member(guild_id, user_id)
        positions = [
            guild.roles[role_id].position for role_id in member.roles if role_id in guild.roles
        ]
        return max(positions, default=0)

    def bot_role(self, guild_id: int) -> Role | None:
        """The managed role Discord gives the bot in a guild."""
        for role in self.guild(guild_id).roles.values():
            if role.bot_id == self.bot_user.id:
                return role
        return None

    def dm_channel(self, user_id: int) -> Channel | None:
        """The bot's DM channel with a user, if one was opened."""
        channel_id = self.dm_channels.get(user_id)
        return None if channel_id is None else self.channels[channel_id]

    def is_voice_channel(self, channel: Channel) -> bool:
        """Whether members can connect to the channel."""
        return channel.type in (ChannelType.GUILD_VOICE, ChannelType.GUILD_STAGE_VOICE)
