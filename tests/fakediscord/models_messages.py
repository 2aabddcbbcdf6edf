"""Messages in the fake's model of Discord: their flags, attachments, mentions and component
trees (re-exported by :mod:`tests.fakediscord.models`)."""

from __future__ import annotations

import base64
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .snowflake import iso_timestamp

if TYPE_CHECKING:
    from .models import Member, User


MESSAGE_FLAG_EPHEMERAL = 1 << 6
"""Message flag: only the invoking user sees it."""
MESSAGE_FLAG_LOADING = 1 << 7
"""Message flag: a deferred interaction answer still "thinking"."""
MESSAGE_FLAG_VOICE_MESSAGE = 1 << 13
"""Message flag: a native voice message."""
MESSAGE_FLAG_COMPONENTS_V2 = 1 << 15
"""Message flag: the message uses layout components instead of content/embeds."""


@dataclass
class Attachment:
    """A file attached to a message (or to an interaction option), with its bytes."""

    id: int
    filename: str
    data: bytes
    url: str
    content_type: str | None = None
    upload_content_type: str | None = None
    """The Content-Type of the multipart part as the client sent it."""
    description: str | None = None
    title: str | None = None
    duration_secs: float | None = None
    waveform: str | None = None
    flags: int = 0
    ephemeral: bool = False

    @property
    def size(self) -> int:
        """Length of the file in bytes."""
        return len(self.data)

    @property
    def waveform_bytes(self) -> bytes | None:
        """The decoded waveform of a voice message."""
        return base64.b64decode(self.waveform) if self.waveform is not None else None

    def to_payload(self) -> dict[str, Any]:
        """Discord's attachment object."""
        payload: dict[str, Any] = {
            "id": str(self.id),
            "filename": self.filename,
            "size": self.size,
            "url": self.url,
            "proxy_url": self.url,
            "flags": self.flags,
        }
        optional = {
            "content_type": self.content_type,
            "description": self.description,
            "title": self.title,
            "duration_secs": self.duration_secs,
            "waveform": self.waveform,
        }
        payload.update({key: value for key, value in optional.items() if value is not None})
        if self.ephemeral:
            payload["ephemeral"] = True
        return payload


_USER_MENTION = re.compile(r"<@!?(\d+)>")
_ROLE_MENTION = re.compile(r"<@&(\d+)>")


@dataclass
class Message:
    """A message anywhere: a channel, a DM, an interaction answer or a followup.

    ``kind`` says how it came to be: ``"channel"`` (the bot posted through
    ``POST /channels/{id}/messages``, DMs included), ``"interaction"`` (an
    interaction callback created or deferred it), ``"followup"`` (a webhook
    followup) or ``"user"`` (a test made a member post it).
    """

    id: int
    channel_id: int
    guild_id: int | None
    author: User
    kind: str
    content: str = ""
    embeds: list[dict[str, Any]] = field(default_factory=list)
    components: list[dict[str, Any]] = field(default_factory=list)
    attachments: list[Attachment] = field(default_factory=list)
    flags: int = 0
    type: int = 0
    tts: bool = False
    nonce: str | int | None = None
    timestamp: str = field(default_factory=iso_timestamp)
    edited_timestamp: str | None = None
    pinned: bool = False
    deleted: bool = False
    webhook_id: int | None = None
    application_id: int | None = None
    interaction_id: int | None = None
    interaction_metadata: dict[str, Any] | None = None
    message_reference: dict[str, Any] | None = None
    edits: list[dict[str, Any]] = field(default_factory=list)
    """Earlier versions (``content``, ``embeds``, ``components``, ``flags``, attachment names), oldest first."""
    created_monotonic: float = field(default_factory=time.monotonic)
    pinged: frozenset[int] = frozenset()
    """Who Discord notified when it was posted (:mod:`.pings`); edits notify nobody."""

    @property
    def ephemeral(self) -> bool:
        """Whether only the interaction's user sees it."""
        return bool(self.flags & MESSAGE_FLAG_EPHEMERAL)

    @property
    def loading(self) -> bool:
        """Whether this is a deferred answer still "thinking"."""
        return bool(self.flags & MESSAGE_FLAG_LOADING)

    @property
    def is_dm(self) -> bool:
        """Whether it was posted in a DM channel."""
        return self.guild_id is None

    @property
    def text(self) -> str:
        """Content, embed texts and component labels joined by newlines, for assertions."""
        parts: list[str] = [self.content] if self.content else []
        for embed in self.embeds:
            parts.extend(_embed_texts(embed))
        for component in walk_components(self.components):
            for key in ("label", "placeholder", "content"):
                value = component.get(key)
                if isinstance(value, str) and value:
                    parts.append(value)
        return "\n".join(parts)

    def snapshot(self) -> dict[str, Any]:
        """The editable part of the message as it is now."""
        return {
            "content": self.content,
            "embeds": [dict(embed) for embed in self.embeds],
            "components": list(self.components),
            "flags": self.flags,
            "attachments": [attachment.filename for attachment in self.attachments],
            "edited_timestamp": self.edited_timestamp,
        }

    def find_component(self, custom_id: str) -> dict[str, Any] | None:
        """The component with this ``custom_id``, searched through rows and containers."""
        for component in walk_components(self.components):
            if component.get("custom_id") == custom_id:
                return component
        return None

    def custom_ids(self) -> list[str]:
        """Every interactive component's ``custom_id``, in order."""
        return [
            str(component["custom_id"])
            for component in walk_components(self.components)
            if "custom_id" in component
        ]

    def to_payload(
        self, *, member: Member | None = None, users: dict[int, User] | None = None
    ) -> dict[str, Any]:
        """Discord's message object. ``users`` resolves ``<@id>`` mentions."""
        mentions: list[dict[str, Any]] = []
        if users is not None:
            seen: set[int] = set()
            for match in _USER_MENTION.finditer(self.content):
                user_id = int(match.group(1))
                if user_id in users and user_id not in seen:
                    seen.add(user_id)
                    mentions.append(users[user_id].to_payload())
        payload: dict[str, Any] = {
            "id": str(self.id),
            "type": self.type,
            "channel_id": str(self.channel_id),
            "author": self.author.to_payload(),
            "content": self.content,
            "timestamp": self.timestamp,
            "edited_timestamp": self.edited_timestamp,
            "tts": self.tts,
            "mention_everyone": "@everyone" in self.content or "@here" in self.content,
            "mentions": mentions,
            "mention_roles": sorted({m.group(1) for m in _ROLE_MENTION.finditer(self.content)}),
            "attachments": [attachment.to_payload() for attachment in self.attachments],
            "embeds": [dict(embed) for embed in self.embeds],
            "components": list(self.components),
            "pinned": self.pinned,
            "flags": self.flags,
        }
        if self.guild_id is not None:
            payload["guild_id"] = str(self.guild_id)
            if member is not None:
                payload["member"] = member.to_payload(with_user=False)
        if self.webhook_id is not None:
            payload["webhook_id"] = str(self.webhook_id)
        if self.application_id is not None:
            payload["application_id"] = str(self.application_id)
        if self.interaction_metadata is not None:
            payload["interaction_metadata"] = self.interaction_metadata
        if self.message_reference is not None:
            payload["message_reference"] = self.message_reference
        if self.nonce is not None:
            payload["nonce"] = self.nonce
        return payload


def walk_components(components: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every component in a component tree, depth first (rows, containers, accessories)."""
    found: list[dict[str, Any]] = []
    for component in components:
        found.append(component)
        children = component.get("components")
        if isinstance(children, list):
            found.extend(walk_components(children))
        for key in ("accessory", "component"):
            child = component.get(key)
            if isinstance(child, dict):
                found.extend(walk_components([child]))
    return found


def _embed_texts(embed: dict[str, Any]) -> list[str]:
    texts: list[str] = []
    for key in ("title", "description"):
        if embed.get(key):
            texts.append(str(embed[key]))
    for key in ("author", "footer"):
        part = embed.get(key)
        if isinstance(part, dict):
            value = part.get("name") or part.get("text")
            if value:
                texts.append(str(value))
    for embed_field in embed.get("fields") or []:
        texts.append(f"{embed_field.get('name', '')}\n{embed_field.get('value', '')}")
    return texts
