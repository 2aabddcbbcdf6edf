"""The lowest layer of the fake's :class:`~tests.fakediscord.world.World`: its state, the audit log,
members' messages (posting, editing, reacting, reading what the bot posted) and the questions a
test asks of it. :mod:`.world_threads` and :mod:`.world` build on it."""

from __future__ import annotations

import mimetypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .audit import AuditEntry, AuditLog
from .gateway import (
    INTENT_DIRECT_MESSAGES,
    INTENT_GUILD_MESSAGES,
    INTENT_GUILDS,
    Gateway,
)
from .models import (
    Attachment,
    Channel,
    Guild,
    Member,
    Message,
    Role,
    User,
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


class WorldMessages:
    """The world's state and its messages (see :class:`~tests.fakediscord.world.World`)."""

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

    @property
    def bot_user(self) -> User:
        """The bot's user (its id is the application id)."""
        return self.state.bot_user

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
