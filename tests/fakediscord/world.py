"""Changes to the fake's Discord, each told to the bot over the gateway as Discord would.

Tests use these methods to build a world (users, a guild, members, roles,
channels), to make members act (post a message, join a voice channel) and to
read what the bot did; the REST handlers use the same methods after their
checks, so the state and the bot's cache never drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .client_view import ClientView, build_client_view
from .gateway import (
    INTENT_GUILD_MEMBERS,
    INTENT_GUILD_PRESENCES,
    INTENT_GUILDS,
    GatewaySession,
)
from .models import (
    Channel,
    ChannelType,
    Guild,
    Member,
    Role,
    User,
)
from .permissions import (
    DEFAULT_BOT_PERMISSIONS,
    DEFAULT_EVERYONE_PERMISSIONS,
    Overwrite,
)
from .world_messages import UNSET, Upload, VoiceServerLike
from .world_threads import WorldThreadsVoice

__all__ = ["UNSET", "Upload", "VoiceServerLike", "World"]


class World(WorldThreadsVoice):
    """The state of the fake Discord plus every operation that changes it."""

    # users and guilds ------------------------------------------------------------------

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

    # what a member sees ------------------------------------------------------------

    def client_view(self, user_id: int, guild_id: int | None = None) -> ClientView:
        """What that member's Discord client receives about the guild right now (see
        :mod:`tests.fakediscord.client_view`); ``guild_id`` may be left out when he is in one guild."""
        if guild_id is None:
            guilds = [guild.id for guild in self.state.guilds.values() if user_id in guild.members]
            if len(guilds) != 1:
                raise ValueError(f"user {user_id} is in {len(guilds)} guilds: name the guild")
            guild_id = guilds[0]
        return build_client_view(self, user_id, guild_id)

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
