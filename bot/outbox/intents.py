"""What the bot means to do on Discord, one class per kind of outbox item.

An :class:`~bot.storage.OutboxItem` is how an intent is stored: a ``kind``, a
``target`` and a ``payload`` (JSON, so a stored item outlives the process that
wrote it). Code that asks for something builds one of the classes below, whose
fields say what that kind needs, and stores :meth:`Intent.item`; the outbox's
calls read a stored item back with :func:`intent_of`. Both directions are exact
(``intent_of(x.item()) == x``: tests/bot/test_intents.py), so the stored form,
and what older processes stored, stays what it was.

A ``channel`` or ``role`` is an id, or the key of something the game's
provisioning makes (``"city:0"``, ``"role:alive"``): the outbox resolves keys
when the item is carried out.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self, TypeAlias

from bot.storage.records import OutboxItem

__all__ = [
    "CreateChannel",
    "CreateRole",
    "DeleteChannel",
    "DeleteRole",
    "Edit",
    "EditChannel",
    "INTENTS",
    "Intent",
    "MemberRole",
    "Overwrite",
    "Picture",
    "Ref",
    "Send",
    "Sweep",
    "Transcript",
    "Voice",
    "intent_of",
]

#: an id on Discord, or the key of what the game's provisioning makes
Ref: TypeAlias = int | str

#: Discord's overwrite target types
ROLE_TARGET = 0
MEMBER_TARGET = 1


@dataclass(frozen=True)
class Intent(ABC):
    """One thing to do on Discord; ``lane`` empty: the lane of its kind."""

    kind: ClassVar[str]
    lane: str = field(default="", kw_only=True)

    @abstractmethod
    def target(self) -> dict[str, Any]:
        """The stored item's target."""

    @abstractmethod
    def payload(self) -> dict[str, Any]:
        """The stored item's payload."""

    def item(self) -> OutboxItem:
        """The intent as the outbox stores it."""
        return OutboxItem(self.kind, self.target(), self.payload(), lane=self.lane)

    @classmethod
    @abstractmethod
    def read(cls, item: OutboxItem) -> Intent:
        """The intent a stored item of this kind holds."""


def _message_target(channel: Ref | None, user: int | None, ref: str | None) -> dict[str, Any]:
    target: dict[str, Any] = {}
    if channel is not None:
        target["channel_id"] = channel
    if user is not None:
        target["user_id"] = user
    if ref is not None:
        target["ref"] = ref
    return target


@dataclass(frozen=True)
class Send(Intent):
    """A message posted in a channel, or in a member's DMs (``user``); ``ref`` names it for
    later edits. ``message`` is Discord's message body (content, components, mentions...)."""

    kind: ClassVar[str] = "send"
    message: dict[str, Any]
    channel: Ref | None = None
    user: int | None = None
    ref: str | None = None

    def target(self) -> dict[str, Any]:
        return _message_target(self.channel, self.user, self.ref)

    def payload(self) -> dict[str, Any]:
        return self.message

    @classmethod
    def read(cls, item: OutboxItem) -> Send:
        t = item.target
        return cls(
            item.payload, t.get("channel_id"), t.get("user_id"), t.get("ref"), lane=item.lane
        )


@dataclass(frozen=True)
class Edit(Intent):
    """An edit of the message posted under ``ref`` (only the newest pending one is sent)."""

    kind: ClassVar[str] = "edit"
    ref: str
    message: dict[str, Any]

    def target(self) -> dict[str, Any]:
        return {"ref": self.ref}

    def payload(self) -> dict[str, Any]:
        return self.message

    @classmethod
    def read(cls, item: OutboxItem) -> Edit:
        return cls(item.target["ref"], item.payload, lane=item.lane)


@dataclass(frozen=True)
class _InChannel(Intent):
    """An intent about one channel, with a body its handler reads."""

    channel: Ref
    body: dict[str, Any]

    def target(self) -> dict[str, Any]:
        return {"channel_id": self.channel}

    def payload(self) -> dict[str, Any]:
        return self.body

    @classmethod
    def read(cls, item: OutboxItem) -> Self:
        return cls(item.target["channel_id"], item.payload, lane=item.lane)


@dataclass(frozen=True)
class _InGuild(Intent):
    """An intent about a whole guild, with a body its handler reads."""

    guild: int
    body: dict[str, Any]

    def target(self) -> dict[str, Any]:
        return {"guild_id": self.guild}

    def payload(self) -> dict[str, Any]:
        return self.body

    @classmethod
    def read(cls, item: OutboxItem) -> Self:
        return cls(item.target["guild_id"], item.payload, lane=item.lane)


@dataclass(frozen=True)
class Voice(_InChannel):
    """A recorded last word posted as a voice message (``body``: the file and its caption,
    read by the last word's handler)."""

    kind: ClassVar[str] = "voice"


@dataclass(frozen=True)
class Picture(_InChannel):
    """A finished game's picture posted with its caption (drawn by the history's handler)."""

    kind: ClassVar[str] = "picture"


@dataclass(frozen=True)
class Transcript(_InGuild):
    """A finished game's channels copied into the guild's archive (the season's handler)."""

    kind: ClassVar[str] = "transcript"


@dataclass(frozen=True)
class Overwrite(Intent):
    """A channel's permission overwrite for a role (``member=False``) or a member, set to
    ``allow``/``deny`` (bit fields), or removed (``delete``)."""

    kind: ClassVar[str] = "overwrite"
    channel: Ref
    who: Ref
    member: bool
    allow: int = 0
    deny: int = 0
    delete: bool = False

    def target(self) -> dict[str, Any]:
        kind = MEMBER_TARGET if self.member else ROLE_TARGET
        return {"channel_id": self.channel, "id": self.who, "type": kind}

    def payload(self) -> dict[str, Any]:
        if self.delete:
            return {"delete": True}
        return {"allow": str(self.allow), "deny": str(self.deny)}

    @classmethod
    def read(cls, item: OutboxItem) -> Overwrite:
        t, p = item.target, item.payload
        member = int(t.get("type", MEMBER_TARGET)) == MEMBER_TARGET
        if p.get("delete"):
            return cls(t["channel_id"], t["id"], member, delete=True, lane=item.lane)
        allow, deny = int(p.get("allow", 0)), int(p.get("deny", 0))
        return cls(t["channel_id"], t["id"], member, allow, deny, lane=item.lane)


@dataclass(frozen=True)
class MemberRole(Intent):
    """A game role given to (``add``) or taken from a member."""

    kind: ClassVar[str] = "member_role"
    guild: int
    user: int
    role: Ref
    add: bool

    def target(self) -> dict[str, Any]:
        return {"guild_id": self.guild, "user_id": self.user, "role": self.role}

    def payload(self) -> dict[str, Any]:
        return {"add": self.add}

    @classmethod
    def read(cls, item: OutboxItem) -> MemberRole:
        t = item.target
        add = bool(item.payload.get("add", True))
        return cls(t["guild_id"], t["user_id"], t["role"], add, lane=item.lane)


@dataclass(frozen=True)
class _Made(Intent):
    """Something the game's provisioning makes, under its key (``spec``: Discord's fields)."""

    guild: int
    key: str
    spec: dict[str, Any]

    def target(self) -> dict[str, Any]:
        return {"guild_id": self.guild, "key": self.key}

    def payload(self) -> dict[str, Any]:
        return self.spec

    @classmethod
    def read(cls, item: OutboxItem) -> Self:
        return cls(item.target["guild_id"], item.target["key"], item.payload, lane=item.lane)


@dataclass(frozen=True)
class CreateRole(_Made):
    """A role made for the game under ``key`` (``spec``: Discord's role fields and a reason)."""

    kind: ClassVar[str] = "create_role"


@dataclass(frozen=True)
class CreateChannel(_Made):
    """A channel made for the game under ``key`` (``spec``: name, type, parent, topic,
    overwrites and a reason)."""

    kind: ClassVar[str] = "create_channel"


@dataclass(frozen=True)
class DeleteRole(Intent):
    """A game role deleted (one already gone is what was asked for)."""

    kind: ClassVar[str] = "delete_role"
    guild: int
    role: Ref

    def target(self) -> dict[str, Any]:
        return {"guild_id": self.guild, "role": self.role}

    def payload(self) -> dict[str, Any]:
        return {}

    @classmethod
    def read(cls, item: OutboxItem) -> DeleteRole:
        return cls(item.target["guild_id"], item.target["role"], lane=item.lane)


@dataclass(frozen=True)
class DeleteChannel(Intent):
    """A game channel deleted (one already gone is what was asked for)."""

    kind: ClassVar[str] = "delete_channel"
    channel: Ref

    def target(self) -> dict[str, Any]:
        return {"channel_id": self.channel}

    def payload(self) -> dict[str, Any]:
        return {}

    @classmethod
    def read(cls, item: OutboxItem) -> DeleteChannel:
        return cls(item.target["channel_id"], lane=item.lane)


@dataclass(frozen=True)
class EditChannel(_InChannel):
    """A channel's fields changed (``body``: Discord's fields; overwrites may name a role by its
    key until it is made)."""

    kind: ClassVar[str] = "edit_channel"


@dataclass(frozen=True)
class Sweep(_InGuild):
    """Duplicates of what a provisioning made removed (``body``: the names, topics and category
    it made; with ``rollback``, everything of those names no item made)."""

    kind: ClassVar[str] = "sweep"


#: every kind of intent by its stored ``kind``
INTENTS: dict[str, type[Intent]] = {
    cls.kind: cls
    for cls in (
        Send,
        Edit,
        Voice,
        Picture,
        Transcript,
        Overwrite,
        MemberRole,
        CreateRole,
        CreateChannel,
        DeleteRole,
        DeleteChannel,
        EditChannel,
        Sweep,
    )
}


def intent_of(item: OutboxItem) -> Intent:
    """The intent a stored item holds (``KeyError``: a kind no code makes)."""
    return INTENTS[item.kind].read(item)
