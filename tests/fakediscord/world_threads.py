"""Threads, overwrites and voice in the fake's :class:`~tests.fakediscord.world.World`: threads and
their members, channel overwrites and what the bot sees of a channel, DMs, voice states and the
voice server's address, each change told to the bot."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from typing import Any

from .gateway import (
    INTENT_GUILD_MEMBERS,
    INTENT_GUILD_VOICE_STATES,
    INTENT_GUILDS,
    GatewaySession,
)
from .models import (
    VOICE_TYPES,
    Channel,
    ChannelType,
    Guild,
    VoiceState,
)
from .permissions import (
    Overwrite,
)
from .world_messages import WorldMessages


class WorldThreadsVoice(WorldMessages):
    """Threads, overwrites, DMs and voice (see :class:`~tests.fakediscord.world.World`)."""

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
