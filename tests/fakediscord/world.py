"""Changes to the fake's Discord, each told to the bot over the gateway as Discord would.

Tests use these methods to build a world (users, a guild, members, roles,
channels), to make members act (post a message, join a voice channel) and to
read what the bot did; the REST handlers use the same methods after their
checks, so the state and the bot's cache never drift apart.
"""

from __future__ import annotations

import mimetypes
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .audit import AuditEntry, AuditLog
from .client_view import ClientView, build_client_view
from .gateway import (
    INTENT_DIRECT_MESSAGES,
    INTENT_GUILD_MEMBERS,
    INTENT_GUILD_MESSAGES,
    INTENT_GUILD_PRESENCES,
    INTENT_GUILD_VOICE_STATES,
    INTENT_GUILDS,
    Gateway,
    GatewaySession,
)
from .models import (
    VOICE_TYPES,
    Attachment,
    Channel,
    ChannelType,
    Guild,
    Member,
    Message,
    Role,
    User,
    VoiceState,
)
from .permissions import (
    DEFAULT_BOT_PERMISSIONS,
    DEFAULT_EVERYONE_PERMISSIONS,
    Overwrite,
)
from .snowflake import iso_timestamp
from .state import DiscordState


class VoiceServerLike(Protocol):
    """What the fake needs from a fake voice server to answer a bot's op 4."""

    endpoint: str
    """``"127.0.0.1:PORT"``."""

    def expect(self, guild_id: int, channel_id: int, user_id: int, session_id: str) -> str:
        """Prepares for the user's voice connection; returns the token to hand out."""
        ...


@dataclass
class Upload:
    """A file a test hands to the fake: an attachment option or a member's message file."""

    filename: str
    data: bytes
    content_type: str | None = None


class _Unset:
    """Marks a keyword argument that was not given (None has a meaning of its own)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


class World:
    """The state of the fake Discord plus every operation that changes it."""

    def __init__(self, state: DiscordState, gateway: Gateway) -> None:
        self.state = state
        self.gateway = gateway
        self.voice_server: VoiceServerLike | None = None
        """Set to a fake voice server so that a bot's op 4 gets VOICE_SERVER_UPDATE."""
        self.voice_requests: list[dict[str, Any]] = []
        """Every op 4 payload the bot sent, in order."""
        self.base_url = ""
        """``http://127.0.0.1:PORT`` once the server runs (used for attachment URLs)."""
        self.audit_log = AuditLog()
        """Every guild's audit log (entries for the changes the bot made by REST)."""
        self._bot_sees: dict[int, bool] = {}
        """Channel id → whether the bot was last sent it in full (False: obfuscated)."""

    def audit(
        self,
        guild_id: int,
        action_type: int,
        target_id: int | None,
        *,
        reason: str | None,
        changes: list[dict[str, Any]] | None = None,
        options: dict[str, str] | None = None,
    ) -> AuditEntry:
        """Writes an audit log entry for a change the bot made (``reason``: its X-Audit-Log-Reason)."""
        return self.audit_log.add(
            AuditEntry(
                id=self.state.new_id(),
                guild_id=guild_id,
                action_type=action_type,
                user_id=self.bot_user.id,
                target_id=target_id,
                changes=list(changes or []),
                options=dict(options or {}),
                reason=reason,
            )
        )

    # users and guilds ------------------------------------------------------------------

    @property
    def bot_user(self) -> User:
        """The bot's user (its id is the application id)."""
        return self.state.bot_user

    @property
    def application_id(self) -> int:
        """The application's id."""
        return self.state.application_id

    def create_user(
        self,
        username: str,
        *,
        global_name: str | None = None,
        bot: bool = False,
        accepts_dms: bool = True,
    ) -> User:
        """Creates a Discord user (not yet in any guild)."""
        user = User(
            id=self.state.new_id(),
            username=username,
            global_name=global_name,
            bot=bot,
            accepts_dms=accepts_dms,
        )
        self.state.users[user.id] = user
        return user

    def create_guild(
        self,
        name: str = "Test Guild",
        *,
        owner: User | None = None,
        preferred_locale: str = "en-US",
        bot_permissions: int = DEFAULT_BOT_PERMISSIONS,
        everyone_permissions: int = DEFAULT_EVERYONE_PERMISSIONS,
        premium_tier: int = 0,
    ) -> Guild:
        """Creates a guild with @everyone, an owner, and the bot with its managed role.

        If a bot is already connected it gets GUILD_CREATE, as when a bot is
        added to a guild.
        """
        owner = owner or self.create_user(
            f"owner_{len(self.state.guilds) + 1}", global_name="Owner"
        )
        guild_id = self.state.new_id()
        guild = Guild(
            id=guild_id,
            name=name,
            owner_id=owner.id,
            preferred_locale=preferred_locale,
            premium_tier=premium_tier,
        )
        guild.roles[guild_id] = Role(
            id=guild_id,
            guild_id=guild_id,
            name="@everyone",
            permissions=everyone_permissions,
            position=0,
        )
        bot_role = Role(
            id=self.state.new_id(),
            guild_id=guild_id,
            name=self.bot_user.global_name or self.bot_user.username,
            permissions=bot_permissions,
            position=1,
            managed=True,
            bot_id=self.bot_user.id,
        )
        guild.roles[bot_role.id] = bot_role
        guild.members[owner.id] = Member(user=owner, guild_id=guild_id)
        guild.members[self.bot_user.id] = Member(
            user=self.bot_user, guild_id=guild_id, roles=[bot_role.id]
        )
        self.state.guilds[guild_id] = guild
        self.gateway.dispatch(
            "GUILD_CREATE",
            lambda session: self.guild_create_payload(guild_id, session, joined=True),
            guild_id=guild_id,
        )
        return guild

    def add_member(
        self,
        guild_id: int,
        user: User | str,
        *,
        roles: Iterable[int] = (),
        nick: str | None = None,
    ) -> Member:
        """Adds a user (or a new user with this username) to the guild: GUILD_MEMBER_ADD."""
        guild = self.state.guild(guild_id)
        if isinstance(user, str):
            user = self.create_user(user, global_name=user.capitalize())
        member = Member(user=user, guild_id=guild_id, roles=list(roles), nick=nick)
        guild.members[user.id] = member
        self.gateway.dispatch(
            "GUILD_MEMBER_ADD",
            {**member.to_payload(), "guild_id": str(guild_id)},
            guild_id=guild_id,
            intent=INTENT_GUILD_MEMBERS,
        )
        return member

    def remove_member(self, guild_id: int, user_id: int) -> None:
        """The user leaves the guild (and its voice channel): GUILD_MEMBER_REMOVE."""
        guild = self.state.guild(guild_id)
        if user_id in guild.voice_states:
            self.set_voice_state(guild_id, user_id, None)
        member = guild.members.pop(user_id)
        self.gateway.dispatch(
            "GUILD_MEMBER_REMOVE",
            {"guild_id": str(guild_id), "user": member.user.to_payload()},
            guild_id=guild_id,
            intent=INTENT_GUILD_MEMBERS,
        )

    # roles -------------------------------------------------------------------------

    def create_role(
        self,
        guild_id: int,
        name: str,
        *,
        permissions: int = 0,
        color: int = 0,
        hoist: bool = False,
        mentionable: bool = False,
    ) -> Role:
        """Creates a role at the bottom of the hierarchy (position 1), like Discord: GUILD_ROLE_CREATE."""
        guild = self.state.guild(guild_id)
        shifted = [
            role for role in guild.roles.values() if not role.is_everyone and role.position >= 1
        ]
        for role in shifted:
            role.position += 1
        role = Role(
            id=self.state.new_id(),
            guild_id=guild_id,
            name=name,
            permissions=permissions,
            position=1,
            color=color,
            hoist=hoist,
            mentionable=mentionable,
        )
        guild.roles[role.id] = role
        self.gateway.dispatch(
            "GUILD_ROLE_CREATE",
            {"guild_id": str(guild_id), "role": role.to_payload()},
            guild_id=guild_id,
            intent=INTENT_GUILDS,
        )
        for other in shifted:
            self._dispatch_role_update(other)
        return role

    def update_role(
        self,
        guild_id: int,
        role_id: int,
        *,
        name: str | None = None,
        permissions: int | None = None,
        color: int | None = None,
        hoist: bool | None = None,
        mentionable: bool | None = None,
        position: int | None = None,
    ) -> Role:
        """Changes a role: GUILD_ROLE_UPDATE."""
        role = self.state.role(guild_id, role_id)
        if name is not None:
            role.name = name
        if permissions is not None:
            role.permissions = permissions
        if color is not None:
            role.color = color
        if hoist is not None:
            role.hoist = hoist
        if mentionable is not None:
            role.mentionable = mentionable
        if position is not None and not role.is_everyone:
            role.position = position
        self._dispatch_role_update(role)
        return role

    def move_role(self, guild_id: int, role_id: int, position: int) -> Role:
        """A person drags a role to ``position`` in Server Settings → Roles (1 is just above
        @everyone): the roles in between shift by one, as on Discord, and each role whose
        position changed gets a GUILD_ROLE_UPDATE."""
        guild = self.state.guild(guild_id)
        moved = self.state.role(guild_id, role_id)
        ladder = sorted(
            (r for r in guild.roles.values() if not r.is_everyone and r.id != role_id),
            key=lambda r: (r.position, r.id),
        )
        ladder.insert(max(0, min(position - 1, len(ladder))), moved)
        changed = []
        for index, role in enumerate(ladder, start=1):
            if role.position != index:
                role.position = index
                changed.append(role)
        for role in changed:
            self._dispatch_role_update(role)
        return moved

    def delete_role(self, guild_id: int, role_id: int) -> None:
        """Deletes a role and takes it from every member: GUILD_ROLE_DELETE."""
        guild = self.state.guild(guild_id)
        self.state.role(guild_id, role_id)
        del guild.roles[role_id]
        for member in guild.members.values():
            if role_id in member.roles:
                member.roles.remove(role_id)
        self.gateway.dispatch(
            "GUILD_ROLE_DELETE",
            {"guild_id": str(guild_id), "role_id": str(role_id)},
            guild_id=guild_id,
            intent=INTENT_GUILDS,
        )
        self.refresh_bot_view(guild_id)

    def set_bot_permissions(self, guild_id: int, permissions: int) -> Role:
        """Changes the permissions of the bot's managed role (e.g. to test 403 answers)."""
        role = self.state.bot_role(guild_id)
        if role is None:
            raise LookupError(f"the bot has no managed role in guild {guild_id}")
        return self.update_role(guild_id, role.id, permissions=permissions)

    def _dispatch_role_update(self, role: Role) -> None:
        self.gateway.dispatch(
            "GUILD_ROLE_UPDATE",
            {"guild_id": str(role.guild_id), "role": role.to_payload()},
            guild_id=role.guild_id,
            intent=INTENT_GUILDS,
        )
        self.refresh_bot_view(role.guild_id)

    # members -----------------------------------------------------------------------

    def update_member(
        self,
        guild_id: int,
        user_id: int,
        *,
        nick: str | None = UNSET,
        roles: Iterable[int] | None = None,
        mute: bool | None = None,
        deaf: bool | None = None,
        timed_out_until: str | None = UNSET,
    ) -> Member:
        """Changes a member's nick, roles, server mute/deafen or timeout (ISO time, None ends it):
        GUILD_MEMBER_UPDATE (and VOICE_STATE_UPDATE when mute/deafen change while in voice)."""
        guild = self.state.guild(guild_id)
        member = self.state.member(guild_id, user_id)
        if nick is not UNSET:
            member.nick = nick or None
        if roles is not None:
            member.roles = list(
                dict.fromkeys(int(role_id) for role_id in roles if int(role_id) != guild_id)
            )
        if timed_out_until is not UNSET:
            member.communication_disabled_until = timed_out_until
        voice_changed = False
        if mute is not None and mute != member.mute:
            member.mute = mute
            voice_changed = True
        if deaf is not None and deaf != member.deaf:
            member.deaf = deaf
            voice_changed = True
        self.gateway.dispatch(
            "GUILD_MEMBER_UPDATE",
            {**member.to_payload(), "guild_id": str(guild_id)},
            guild_id=guild_id,
            intent=INTENT_GUILD_MEMBERS,
        )
        voice_state = guild.voice_states.get(user_id)
        if voice_changed and voice_state is not None:
            self._dispatch_voice_state(guild, voice_state.session_id, user_id, voice_state)
        if user_id == self.bot_user.id:
            self.refresh_bot_view(guild_id)
        return member

    def add_member_role(self, guild_id: int, user_id: int, role_id: int) -> Member:
        """Gives a member a role."""
        member = self.state.member(guild_id, user_id)
        self.state.role(guild_id, role_id)
        return self.update_member(guild_id, user_id, roles=[*member.roles, role_id])

    def remove_member_role(self, guild_id: int, user_id: int, role_id: int) -> Member:
        """Takes a role from a member."""
        member = self.state.member(guild_id, user_id)
        return self.update_member(
            guild_id, user_id, roles=[rid for rid in member.roles if rid != role_id]
        )

    # channels ----------------------------------------------------------------------

    def create_channel(
        self,
        guild_id: int,
        name: str,
        type: int = ChannelType.GUILD_TEXT,
        *,
        parent_id: int | None = None,
        overwrites: Sequence[Overwrite] | None = None,
        topic: str | None = None,
        position: int | None = None,
        bitrate: int = 64000,
        user_limit: int = 0,
        nsfw: bool = False,
        rate_limit_per_user: int = 0,
    ) -> Channel:
        """Creates a guild channel: CHANNEL_CREATE.

        Without ``overwrites`` (None or empty) a channel inside a category
        copies the category's overwrites, as Discord syncs them.
        """
        guild = self.state.guild(guild_id)
        if parent_id is not None:
            parent = self.state.channel(parent_id)
            if not overwrites:
                overwrites = [Overwrite(o.id, o.type, o.allow, o.deny) for o in parent.overwrites]
        if position is None:
            siblings = [c for c in self.state.guild_channels(guild_id) if c.parent_id == parent_id]
            position = max((c.position for c in siblings), default=-1) + 1
        channel = Channel(
            id=self.state.new_id(),
            type=int(type),
            name=name,
            guild_id=guild_id,
            position=position,
            parent_id=parent_id,
            topic=topic,
            overwrites=list(overwrites or []),
            nsfw=nsfw,
            bitrate=bitrate,
            user_limit=user_limit,
            rate_limit_per_user=rate_limit_per_user,
        )
        self.state.channels[channel.id] = channel
        guild.channel_ids.append(channel.id)
        if guild.system_channel_id is None and channel.type == ChannelType.GUILD_TEXT:
            guild.system_channel_id = channel.id
        self._dispatch_channel("CHANNEL_CREATE", channel)
        return channel

    def update_channel(
        self,
        channel_id: int,
        *,
        name: str | None = None,
        topic: str | None = UNSET,
        position: int | None = None,
        parent_id: int | None = UNSET,
        overwrites: Sequence[Overwrite] | None = None,
        nsfw: bool | None = None,
        bitrate: int | None = None,
        user_limit: int | None = None,
        rate_limit_per_user: int | None = None,
    ) -> Channel:
        """Changes a channel: CHANNEL_UPDATE."""
        channel = self.state.channel(channel_id)
        if name is not None:
            channel.name = name
        if topic is not UNSET:
            channel.topic = topic
        if position is not None:
            channel.position = position
        if parent_id is not UNSET:
            channel.parent_id = parent_id
        if overwrites is not None:
            channel.overwrites = list(overwrites)
        if nsfw is not None:
            channel.nsfw = nsfw
        if bitrate is not None:
            channel.bitrate = bitrate
        if user_limit is not None:
            channel.user_limit = user_limit
        if rate_limit_per_user is not None:
            channel.rate_limit_per_user = rate_limit_per_user
        self._dispatch_channel("CHANNEL_UPDATE", channel)
        return channel

    def delete_channel(self, channel_id: int) -> Channel:
        """Deletes a channel: members in it leave voice, children of a category lose their parent."""
        channel = self.state.channel(channel_id)
        if channel.guild_id is not None:
            guild = self.state.guild(channel.guild_id)
            for voice_state in list(guild.voice_states.values()):
                if voice_state.channel_id == channel_id:
                    self.set_voice_state(guild.id, voice_state.user_id, None)
        if channel.is_thread:
            channel.deleted = True
            self._dispatch_thread_delete(channel)
            return channel
        channel.deleted = True
        self._dispatch_channel("CHANNEL_DELETE", channel)
        if channel.guild_id is not None:
            for thread in self.state.guild_threads(channel.guild_id):
                if thread.parent_id == channel_id:
                    thread.deleted = True
                    self._dispatch_thread_delete(thread)
        if channel.guild_id is not None and channel.type == ChannelType.GUILD_CATEGORY:
            for child in self.state.guild_channels(channel.guild_id):
                if child.parent_id == channel_id:
                    self.update_channel(child.id, parent_id=None)
        return channel

    # threads ------------------------------------------------------------------------

    def create_thread(
        self,
        parent_id: int,
        name: str,
        *,
        owner_id: int,
        private: bool = False,
        members: Iterable[int] = (),
        thread_id: int | None = None,
    ) -> Channel:
        """A member (or the bot) opens a thread in a channel: THREAD_CREATE to those who see it.

        ``thread_id`` is given for a thread started from a message (it takes the message's id).
        """
        parent = self.state.channel(parent_id)
        if parent.guild_id is None:
            raise ValueError("threads live in guild channels")
        kind = (
            ChannelType.PRIVATE_THREAD
            if private
            else (
                ChannelType.ANNOUNCEMENT_THREAD
                if parent.type == ChannelType.GUILD_ANNOUNCEMENT
                else ChannelType.PUBLIC_THREAD
            )
        )
        thread = Channel(
            id=thread_id if thread_id is not None else self.state.new_id(),
            type=int(kind),
            name=name,
            guild_id=parent.guild_id,
            parent_id=parent_id,
            owner_id=owner_id,
            thread_members=list(dict.fromkeys([owner_id, *members])),
        )
        self.state.channels[thread.id] = thread
        self.state.guild(parent.guild_id).thread_ids.append(thread.id)
        if self.state.can_view(parent.guild_id, thread, self.bot_user.id):
            self.gateway.dispatch(
                "THREAD_CREATE",
                {**thread.to_payload(), "newly_created": True},
                guild_id=parent.guild_id,
                intent=INTENT_GUILDS,
            )
        return thread

    def add_thread_member(self, thread_id: int, user_id: int) -> None:
        """Someone joins a thread (or is added): THREAD_MEMBERS_UPDATE, and THREAD_CREATE to the
        bot when it is the one added to a thread it could not see."""
        thread = self.state.channel(thread_id)
        assert thread.guild_id is not None
        if user_id in thread.thread_members:
            return
        saw = self.state.can_view(thread.guild_id, thread, self.bot_user.id)
        thread.thread_members.append(user_id)
        if user_id == self.bot_user.id and not saw:
            self.gateway.dispatch(
                "THREAD_CREATE", thread.to_payload(), guild_id=thread.guild_id, intent=INTENT_GUILDS
            )
        self._dispatch_thread_members(thread, added=[user_id], removed=[])

    def remove_thread_member(self, thread_id: int, user_id: int) -> None:
        """Someone leaves a thread (or is removed): THREAD_MEMBERS_UPDATE."""
        thread = self.state.channel(thread_id)
        if user_id not in thread.thread_members:
            return
        thread.thread_members.remove(user_id)
        self._dispatch_thread_members(thread, added=[], removed=[user_id])

    def thread_member_payload(self, thread: Channel, user_id: int) -> dict[str, Any]:
        """Discord's thread member object."""
        return {
            "id": str(thread.id),
            "user_id": str(user_id),
            "join_timestamp": thread.created_at,
            "flags": 0,
        }

    def _dispatch_thread_members(
        self, thread: Channel, *, added: list[int], removed: list[int]
    ) -> None:
        assert thread.guild_id is not None
        payload: dict[str, Any] = {
            "id": str(thread.id),
            "guild_id": str(thread.guild_id),
            "member_count": min(len(thread.thread_members), 50),
        }
        if added:
            payload["added_members"] = [
                self.thread_member_payload(thread, user_id) for user_id in added
            ]
        if removed:
            payload["removed_member_ids"] = [str(user_id) for user_id in removed]
        if self.state.can_view(thread.guild_id, thread, self.bot_user.id) or removed == [
            self.bot_user.id
        ]:
            self.gateway.dispatch(
                "THREAD_MEMBERS_UPDATE",
                payload,
                guild_id=thread.guild_id,
                intent=INTENT_GUILD_MEMBERS,
            )

    def _dispatch_thread_delete(self, thread: Channel) -> None:
        assert thread.guild_id is not None
        self.gateway.dispatch(
            "THREAD_DELETE",
            {
                "id": str(thread.id),
                "guild_id": str(thread.guild_id),
                "parent_id": str(thread.parent_id),
                "type": thread.type,
            },
            guild_id=thread.guild_id,
            intent=INTENT_GUILDS,
        )

    def set_overwrite(self, channel_id: int, overwrite: Overwrite) -> Channel:
        """Adds or replaces the overwrite for one role or member: CHANNEL_UPDATE."""
        channel = self.state.channel(channel_id)
        others = [
            o for o in channel.overwrites if not (o.id == overwrite.id and o.type == overwrite.type)
        ]
        channel.overwrites = [*others, overwrite]
        self._dispatch_channel("CHANNEL_UPDATE", channel)
        return channel

    def delete_overwrite(self, channel_id: int, target_id: int) -> Channel:
        """Removes the overwrite for a role or member: CHANNEL_UPDATE."""
        channel = self.state.channel(channel_id)
        channel.overwrites = [o for o in channel.overwrites if o.id != target_id]
        self._dispatch_channel("CHANNEL_UPDATE", channel)
        return channel

    def channel_seen_by(self, channel: Channel, user_id: int) -> dict[str, Any]:
        """The channel object a member's gateway gets: in full, or obfuscated when he cannot view it."""
        if channel.guild_id is None:
            return channel.to_payload()
        return channel.to_payload(
            obfuscated=not self.state.can_view(channel.guild_id, channel, user_id)
        )

    def _dispatch_channel(self, name: str, channel: Channel) -> None:
        if channel.guild_id is None:
            self.gateway.dispatch(name, channel.to_payload(), intent=INTENT_GUILDS)
            return
        if name == "CHANNEL_DELETE":  # as the bot saw it until now (a deleted channel has no view)
            visible = self._bot_sees.pop(channel.id, True)
        else:
            visible = self.state.can_view(channel.guild_id, channel, self.bot_user.id)
            self._bot_sees[channel.id] = visible
        self.gateway.dispatch(
            name,
            channel.to_payload(obfuscated=not visible),
            guild_id=channel.guild_id,
            intent=INTENT_GUILDS,
        )
        if name != "CHANNEL_DELETE":
            self.refresh_bot_view(channel.guild_id)

    def refresh_bot_view(self, guild_id: int) -> None:
        """CHANNEL_UPDATE for every channel the bot now sees differently (it gained or lost
        View Channel through a role, an overwrite or voice), as Discord sends one when a channel
        stops (or starts) being obfuscated for it."""
        if guild_id not in self.state.guilds:
            return
        for channel in self.state.guild_channels(guild_id):
            before = self._bot_sees.get(channel.id)
            if before is None:
                continue
            visible = self.state.can_view(guild_id, channel, self.bot_user.id)
            if visible != before:
                self._bot_sees[channel.id] = visible
                self.gateway.dispatch(
                    "CHANNEL_UPDATE",
                    channel.to_payload(obfuscated=not visible),
                    guild_id=guild_id,
                    intent=INTENT_GUILDS,
                )

    def _bot_channel(self, channel: Channel) -> dict[str, Any]:
        visible = channel.guild_id is None or self.state.can_view(
            channel.guild_id, channel, self.bot_user.id
        )
        self._bot_sees[channel.id] = visible
        return channel.to_payload(obfuscated=not visible)

    def open_dm(self, user_id: int) -> Channel:
        """The bot's DM channel with the user, created on first use."""
        existing = self.state.dm_channel(user_id)
        if existing is not None:
            return existing
        user = self.state.user(user_id)
        channel = Channel(id=self.state.new_id(), type=ChannelType.DM, name=None, recipients=[user])
        self.state.channels[channel.id] = channel
        self.state.dm_channels[user_id] = channel.id
        return channel

    # messages ----------------------------------------------------------------------

    def make_attachment(
        self,
        channel_id: int,
        filename: str,
        data: bytes,
        *,
        content_type: str | None = None,
        upload_content_type: str | None = None,
        description: str | None = None,
        title: str | None = None,
        duration_secs: float | None = None,
        waveform: str | None = None,
        flags: int = 0,
        ephemeral: bool = False,
    ) -> Attachment:
        """Stores a file on the fake CDN and returns its attachment."""
        if not self.base_url:
            raise RuntimeError(
                "start the fake before creating attachments (their URLs need its port)"
            )
        attachment_id = self.state.new_id()
        effective_type = content_type
        if effective_type is None or effective_type == "application/octet-stream":
            guessed, _ = mimetypes.guess_type(filename)
            effective_type = guessed or effective_type
        attachment = Attachment(
            id=attachment_id,
            filename=filename,
            data=data,
            url=f"{self.base_url}/attachments/{channel_id}/{attachment_id}/{filename}",
            content_type=effective_type,
            upload_content_type=upload_content_type,
            description=description,
            title=title,
            duration_secs=duration_secs,
            waveform=waveform,
            flags=flags,
            ephemeral=ephemeral,
        )
        self.state.attachments[attachment_id] = attachment
        return attachment

    def message_payload(self, message: Message) -> dict[str, Any]:
        """The message as Discord would send it, with the author's member and mentions."""
        member = None
        if message.guild_id is not None:
            guild = self.state.guilds.get(message.guild_id)
            member = guild.members.get(message.author.id) if guild else None
        return message.to_payload(member=member, users=self.state.users)

    def _bot_reads(self, message: Message) -> bool:
        """Whether the bot's gateway gets events about this message (it must view the channel)."""
        if message.ephemeral:
            return False
        channel = self.state.channels.get(message.channel_id)
        if channel is None or channel.guild_id is None:
            return True
        return self.state.can_view(channel.guild_id, channel, self.bot_user.id)

    def add_message(self, message: Message) -> Message:
        """Stores a new message; MESSAGE_CREATE unless it is ephemeral (or the bot cannot view it)."""
        self.state.messages[message.id] = message
        if not message.ephemeral:
            channel = self.state.channels.get(message.channel_id)
            if channel is not None:
                channel.last_message_id = message.id
                if channel.is_thread:
                    channel.message_count += 1
        if self._bot_reads(message):
            self.gateway.dispatch_message(
                "MESSAGE_CREATE",
                self.message_payload(message),
                guild_id=message.guild_id,
                author_id=message.author.id,
            )
        return message

    def post_message(
        self,
        channel_id: int,
        author_id: int,
        content: str = "",
        *,
        embeds: list[dict[str, Any]] | None = None,
        files: Sequence[Upload] = (),
    ) -> Message:
        """A member (or DM partner) posts a message: MESSAGE_CREATE."""
        channel = self.state.channel(channel_id)
        author = self.state.user(author_id)
        attachments = [
            self.make_attachment(
                channel_id, upload.filename, upload.data, content_type=upload.content_type
            )
            for upload in files
        ]
        message = Message(
            id=self.state.new_id(),
            channel_id=channel_id,
            guild_id=channel.guild_id,
            author=author,
            kind="user",
            content=content,
            embeds=list(embeds or []),
            attachments=attachments,
        )
        return self.add_message(message)

    def edit_message(
        self,
        message: Message,
        *,
        content: str | None = UNSET,
        embeds: list[dict[str, Any]] | None = UNSET,
        components: list[dict[str, Any]] | None = UNSET,
        flags: int | None = UNSET,
        attachments: list[Attachment] | None = UNSET,
    ) -> Message:
        """Edits a message, keeping the previous version in ``message.edits``: MESSAGE_UPDATE."""
        message.edits.append(message.snapshot())
        if content is not UNSET:
            message.content = content or ""
        if embeds is not UNSET:
            message.embeds = list(embeds or [])
        if components is not UNSET:
            message.components = list(components or [])
        if flags is not UNSET and flags is not None:
            message.flags = flags
        if attachments is not UNSET:
            message.attachments = list(attachments or [])
        message.edited_timestamp = iso_timestamp()
        if self._bot_reads(message):
            self.gateway.dispatch_message(
                "MESSAGE_UPDATE",
                self.message_payload(message),
                guild_id=message.guild_id,
                author_id=message.author.id,
            )
        return message

    def delete_message(self, message: Message) -> None:
        """Marks a message deleted (it stays findable for tests): MESSAGE_DELETE."""
        message.deleted = True
        if not self._bot_reads(message):
            return
        payload: dict[str, Any] = {"id": str(message.id), "channel_id": str(message.channel_id)}
        if message.guild_id is not None:
            payload["guild_id"] = str(message.guild_id)
        intent = INTENT_GUILD_MESSAGES if message.guild_id is not None else INTENT_DIRECT_MESSAGES
        self.gateway.dispatch("MESSAGE_DELETE", payload, guild_id=message.guild_id, intent=intent)

    def set_pinned(self, message: Message, pinned: bool) -> None:
        """Pins or unpins a message: CHANNEL_PINS_UPDATE."""
        message.pinned = pinned
        payload: dict[str, Any] = {
            "channel_id": str(message.channel_id),
            "last_pin_timestamp": iso_timestamp(),
        }
        if message.guild_id is not None:
            payload["guild_id"] = str(message.guild_id)
        self.gateway.dispatch(
            "CHANNEL_PINS_UPDATE", payload, guild_id=message.guild_id, intent=INTENT_GUILDS
        )

    def messages(
        self,
        channel_id: int | None = None,
        *,
        dm_user_id: int | None = None,
        kind: str | None = None,
        ephemeral: bool | None = None,
        author_id: int | None = None,
        interaction_id: int | None = None,
        include_deleted: bool = False,
    ) -> list[Message]:
        """Every message matching the filters, oldest first: channel posts, DMs,
        interaction answers and followups alike (``dm_user_id`` picks the bot's DMs with a user)."""
        if dm_user_id is not None:
            dm = self.state.dm_channel(dm_user_id)
            if dm is None:
                return []
            channel_id = dm.id
        found: list[Message] = []
        for message in self.state.messages.values():
            if channel_id is not None and message.channel_id != channel_id:
                continue
            if kind is not None and message.kind != kind:
                continue
            if ephemeral is not None and message.ephemeral != ephemeral:
                continue
            if author_id is not None and message.author.id != author_id:
                continue
            if interaction_id is not None and message.interaction_id != interaction_id:
                continue
            if message.deleted and not include_deleted:
                continue
            found.append(message)
        return found

    # voice -------------------------------------------------------------------------

    def set_voice_state(
        self,
        guild_id: int,
        user_id: int,
        channel_id: int | None,
        *,
        self_mute: bool = False,
        self_deaf: bool = False,
    ) -> VoiceState | None:
        """A member joins, moves between or (``channel_id=None``) leaves voice channels: VOICE_STATE_UPDATE."""
        guild = self.state.guild(guild_id)
        self.state.member(guild_id, user_id)
        current = guild.voice_states.get(user_id)
        session_id = current.session_id if current is not None else secrets.token_hex(16)
        return self._apply_voice_state(guild, user_id, channel_id, session_id, self_mute, self_deaf)

    def _apply_voice_state(
        self,
        guild: Guild,
        user_id: int,
        channel_id: int | None,
        session_id: str,
        self_mute: bool,
        self_deaf: bool,
        only: GatewaySession | None = None,
    ) -> VoiceState | None:
        if channel_id is None:
            guild.voice_states.pop(user_id, None)
            self._dispatch_voice_state(guild, session_id, user_id, None)
            return None
        channel = self.state.channel(channel_id)
        if channel.type not in VOICE_TYPES or channel.guild_id != guild.id:
            raise ValueError(f"channel {channel_id} is not a voice channel of guild {guild.id}")
        voice_state = VoiceState(
            guild_id=guild.id,
            user_id=user_id,
            channel_id=channel_id,
            session_id=session_id,
            self_mute=self_mute,
            self_deaf=self_deaf,
        )
        guild.voice_states[user_id] = voice_state
        self._dispatch_voice_state(guild, session_id, user_id, voice_state)
        return voice_state

    def _dispatch_voice_state(
        self, guild: Guild, session_id: str, user_id: int, voice_state: VoiceState | None
    ) -> None:
        member = guild.members.get(user_id)
        if voice_state is not None:
            payload = voice_state.to_payload(member=member)
        else:
            payload = {
                "guild_id": str(guild.id),
                "channel_id": None,
                "user_id": str(user_id),
                "session_id": session_id,
                "deaf": member.deaf if member else False,
                "mute": member.mute if member else False,
                "self_deaf": False,
                "self_mute": False,
                "self_video": False,
                "suppress": False,
                "request_to_speak_timestamp": None,
            }
            if member is not None:
                payload["member"] = member.to_payload()
        self.gateway.dispatch(
            "VOICE_STATE_UPDATE", payload, guild_id=guild.id, intent=INTENT_GUILD_VOICE_STATES
        )
        if user_id == self.bot_user.id:
            self.refresh_bot_view(guild.id)

    def handle_bot_voice_state(self, session: GatewaySession, data: dict[str, Any]) -> None:
        """The bot's op 4: move its voice state, then hand it a voice server if one is attached."""
        self.voice_requests.append(dict(data))
        guild = self.state.guilds.get(int(data.get("guild_id") or 0))
        if guild is None:
            return
        raw_channel = data.get("channel_id")
        channel_id = int(raw_channel) if raw_channel is not None else None
        self._apply_voice_state(
            guild,
            self.bot_user.id,
            channel_id,
            session.session_id,
            bool(data.get("self_mute")),
            bool(data.get("self_deaf")),
        )
        if channel_id is not None and self.voice_server is not None:
            token = self.voice_server.expect(
                guild.id, channel_id, self.bot_user.id, session.session_id
            )
            self.gateway.dispatch(
                "VOICE_SERVER_UPDATE",
                {"token": token, "guild_id": str(guild.id), "endpoint": self.voice_server.endpoint},
                only=session,
            )

    def move_voice_server(self, guild_id: int) -> None:
        """Discord moves the bot's call in this guild to another voice server: a
        VOICE_SERVER_UPDATE (new token, the voice server's endpoint now) while it is connected.

        discord.py then closes its voice websocket (4014) and connects to the
        endpoint given; move the fake voice server first
        (:meth:`tests.fakediscord.voice.FakeVoiceServer.move_endpoint`).
        """
        guild = self.state.guild(guild_id)
        voice = guild.voice_states.get(self.bot_user.id)
        if voice is None or self.voice_server is None:
            raise ValueError(f"the bot is in no voice channel of guild {guild_id}")
        session = self.gateway.sessions.get(voice.session_id)
        if session is None:
            raise ValueError(f"the bot's voice state names no gateway session ({voice.session_id})")
        token = self.voice_server.expect(
            guild.id, voice.channel_id, self.bot_user.id, voice.session_id
        )
        self.gateway.dispatch(
            "VOICE_SERVER_UPDATE",
            {"token": token, "guild_id": str(guild.id), "endpoint": self.voice_server.endpoint},
            only=session,
        )

    # questions ---------------------------------------------------------------------

    def client_view(self, user_id: int, guild_id: int | None = None) -> ClientView:
        """What that member's Discord client receives about the guild right now (see
        :mod:`tests.fakediscord.client_view`); ``guild_id`` may be left out when he is in one guild."""
        if guild_id is None:
            guilds = [guild.id for guild in self.state.guilds.values() if user_id in guild.members]
            if len(guilds) != 1:
                raise ValueError(f"user {user_id} is in {len(guilds)} guilds: name the guild")
            guild_id = guilds[0]
        return build_client_view(self, user_id, guild_id)

    def permissions_for(self, guild_id: int, channel_id: int | None, user_id: int) -> int:
        """Discord's computed permissions of a member in a channel (guild-wide for None)."""
        return self.state.permissions_for(guild_id, channel_id, user_id)

    def guild(self, guild_id: int) -> Guild:
        """A guild by id."""
        return self.state.guild(guild_id)

    def channel(self, channel_id: int) -> Channel:
        """A live channel by id."""
        return self.state.channel(channel_id)

    def user(self, user_id: int) -> User:
        """A user by id."""
        return self.state.user(user_id)

    def member(self, guild_id: int, user_id: int) -> Member:
        """A member by guild and user id."""
        return self.state.member(guild_id, user_id)

    def message(self, message_id: int) -> Message:
        """Any message by id, ephemeral and deleted ones included."""
        try:
            return self.state.messages[message_id]
        except KeyError:
            raise LookupError(f"no message {message_id}") from None

    def find_channel(self, guild_id: int, name: str, type: int | None = None) -> Channel | None:
        """A live channel of the guild by name (and type)."""
        return self.state.find_channel(guild_id, name, type)

    def find_role(self, guild_id: int, name: str) -> Role | None:
        """A role of the guild by name."""
        return self.state.find_role(guild_id, name)

    # gateway payloads ----------------------------------------------------------------

    def ready_payload(self, session: GatewaySession, guild_ids: list[int]) -> dict[str, Any]:
        """READY for a new session: the guilds come as unavailable, then GUILD_CREATE each."""
        user = {**self.bot_user.to_payload(), "verified": True, "mfa_enabled": False, "email": None}
        payload: dict[str, Any] = {
            "v": 10,
            "user": user,
            "user_settings": {},
            "guilds": [{"id": str(guild_id), "unavailable": True} for guild_id in guild_ids],
            "session_id": session.session_id,
            "session_type": "normal",
            "resume_gateway_url": self.gateway_url,
            "application": {"id": str(self.application_id), "flags": self.state.application_flags},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "guild_join_requests": [],
            "geo_ordered_rtc_regions": ["fake"],
            "_trace": ["fake-discord"],
        }
        if session.shard is not None:
            payload["shard"] = list(session.shard)
        return payload

    @property
    def gateway_url(self) -> str:
        """``ws://127.0.0.1:PORT/gateway``."""
        return self.base_url.replace("http://", "ws://", 1) + "/gateway"

    def guild_create_payload(
        self, guild_id: int, session: GatewaySession, *, joined: bool = False
    ) -> dict[str, Any]:
        """GUILD_CREATE as this session gets it.

        As on Discord, the member list is complete only for sessions with the
        GUILD_PRESENCES intent; others get the bot and the members in voice,
        and discord.py then asks for the rest with op 8. A guild announced as
        unavailable in READY comes with ``unavailable: false``; a guild the
        bot ``joined`` has no ``unavailable`` key (discord.py tells
        ``on_guild_available`` from ``on_guild_join`` that way).
        """
        guild = self.state.guild(guild_id)
        in_voice = set(guild.voice_states)
        large = len(guild.members) >= 250
        if session.has_intent(INTENT_GUILD_PRESENCES) and not large:
            members = list(guild.members.values())
        else:
            members = [
                m for m in guild.members.values() if m.id == self.bot_user.id or m.id in in_voice
            ]
        payload = guild.to_payload()
        payload.update(
            {
                "joined_at": guild.joined_at,
                "large": large,
                "member_count": len(guild.members),
                "voice_states": [
                    voice_state.to_payload(member=guild.members.get(user_id), in_guild_create=True)
                    for user_id, voice_state in guild.voice_states.items()
                ],
                "members": [member.to_payload() for member in members],
                "channels": [
                    self._bot_channel(channel) for channel in self.state.guild_channels(guild_id)
                ],
                "threads": [
                    thread.to_payload()
                    for thread in self.state.guild_threads(guild_id)
                    if not thread.archived
                    and self.state.can_view(guild_id, thread, self.bot_user.id)
                ],
                "presences": [],
                "stage_instances": [],
                "guild_scheduled_events": [],
                "soundboard_sounds": [],
                "lazy": True,
            }
        )
        if not joined:
            payload["unavailable"] = False
        return payload
