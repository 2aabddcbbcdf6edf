"""REST routes of channels: the channel, its permission overwrites, its messages and pins.

The bot's own permissions in the channel decide, as on Discord: without
VIEW_CHANNEL a call is 403 50001 "Missing Access"; without SEND_MESSAGES,
ATTACH_FILES (for files), SEND_VOICE_MESSAGES (for voice messages),
MANAGE_CHANNELS or MANAGE_ROLES it is 403 50013 "Missing Permissions".
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from . import audit
from .errors import (
    DiscordError,
    field_error,
    invalid_form_body,
    unknown,
)
from .gateway import CONTENT_FIELDS
from .message_compose import (
    CHANNEL_MESSAGE_FLAGS,
    _stored,
    apply_edit,
    compose_message,
)
from .messages import (
    is_voice_message,
    parse_message_input,
)
from .models import (
    MESSAGEABLE_TYPES,
    Channel,
    ChannelType,
)
from .permissions import OVERWRITE_MEMBER, OVERWRITE_ROLE, Overwrite, Permission
from .rest_guilds import check_room, normalize_text_channel_name
from .rest_threads import ThreadRoutes
from .routing import RestRequest, Router
from .world import UNSET

if TYPE_CHECKING:
    from .server import FakeDiscord

_CHANNEL_KEYS = (
    "name",
    "topic",
    "nsfw",
    "bitrate",
    "user_limit",
    "rate_limit_per_user",
    "position",
    "parent_id",
)


def _existing(channel: Channel, overwrite: Overwrite) -> Overwrite | None:
    """The channel's current overwrite for the same role or member."""
    for current in channel.overwrites:
        if current.id == overwrite.id and current.type == overwrite.type:
            return current
    return None


def _body_channel_name(channel: Channel, body: dict[str, Any]) -> str | None:
    """The edit's ``name`` (None without): 1 to 100 characters, a text channel's normalised."""
    name = body.get("name")
    if name is None:
        return None
    name = str(name)
    if not 1 <= len(name) <= 100:
        raise invalid_form_body(
            {"name": field_error("BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")}
        )
    if channel.type in (ChannelType.GUILD_TEXT, ChannelType.GUILD_ANNOUNCEMENT):
        name = normalize_text_channel_name(name)
    return name


#: how long Discord remembers an enforced nonce ("the past few minutes")
NONCE_WINDOW = 300.0


class ChannelRoutes(ThreadRoutes):
    """``/channels/...`` routes."""

    def __init__(self, fake: FakeDiscord) -> None:
        super().__init__(fake)
        self.enforced_nonces: dict[tuple[int, str], tuple[int, float]] = {}

    def register(self, router: Router) -> None:
        """Adds these routes to the router."""
        router.add("GET", "/channels/{channel_id}", self.get_channel)
        router.add("PATCH", "/channels/{channel_id}", self.edit_channel)
        router.add("DELETE", "/channels/{channel_id}", self.delete_channel)
        router.add("PUT", "/channels/{channel_id}/permissions/{overwrite_id}", self.put_overwrite)
        router.add(
            "DELETE", "/channels/{channel_id}/permissions/{overwrite_id}", self.delete_overwrite
        )
        router.add("POST", "/channels/{channel_id}/typing", self.typing)
        router.add("GET", "/channels/{channel_id}/messages", self.list_messages)
        router.add("POST", "/channels/{channel_id}/messages", self.create_message)
        router.add("POST", "/channels/{channel_id}/messages/bulk-delete", self.bulk_delete)
        router.add("GET", "/channels/{channel_id}/messages/pins", self.list_pins)
        router.add("PUT", "/channels/{channel_id}/messages/pins/{message_id}", self.pin)
        router.add("DELETE", "/channels/{channel_id}/messages/pins/{message_id}", self.unpin)
        router.add("GET", "/channels/{channel_id}/pins", self.list_pins_legacy)
        router.add("PUT", "/channels/{channel_id}/pins/{message_id}", self.pin)
        router.add("DELETE", "/channels/{channel_id}/pins/{message_id}", self.unpin)
        router.add("GET", "/channels/{channel_id}/messages/{message_id}", self.get_message)
        router.add("PATCH", "/channels/{channel_id}/messages/{message_id}", self.edit_message)
        router.add("DELETE", "/channels/{channel_id}/messages/{message_id}", self.delete_message)
        router.add("POST", "/channels/{channel_id}/threads", self.start_thread)
        router.add(
            "POST",
            "/channels/{channel_id}/messages/{message_id}/threads",
            self.start_thread_from_message,
        )
        router.add("GET", "/channels/{channel_id}/thread-members", self.list_thread_members)
        router.add("GET", "/channels/{channel_id}/thread-members/{user_id}", self.get_thread_member)
        router.add("PUT", "/channels/{channel_id}/thread-members/@me", self.join_thread)
        router.add("DELETE", "/channels/{channel_id}/thread-members/@me", self.leave_thread)
        router.add("PUT", "/channels/{channel_id}/thread-members/{user_id}", self.add_thread_member)
        router.add(
            "DELETE", "/channels/{channel_id}/thread-members/{user_id}", self.remove_thread_member
        )

    # channels -----------------------------------------------------------------------

    async def get_channel(self, request: RestRequest) -> Any:
        """GET /channels/{channel_id}."""
        channel, _ = self._visible_channel(request)
        return channel.to_payload()

    async def edit_channel(self, request: RestRequest) -> Any:
        """PATCH /channels/{channel_id}."""
        channel, permissions = self._visible_channel(request)
        if channel.guild_id is None:
            raise DiscordError(400, 50003, "Cannot execute action on a DM channel")
        self._need(permissions, Permission.MANAGE_CHANNELS)
        body = request.body()
        overwrites = self._body_overwrites(channel, permissions, body)
        parent_id, locked = self._body_parent(channel, body)
        if locked is not None:
            overwrites = locked
        name = _body_channel_name(channel, body)
        before = channel.to_payload()
        overwrites_before = list(channel.overwrites)
        updated = self.fake.update_channel(
            channel.id,
            name=name,
            topic=body.get("topic", UNSET),
            position=body.get("position"),
            parent_id=parent_id,
            overwrites=overwrites,
            nsfw=body.get("nsfw"),
            bitrate=body.get("bitrate"),
            user_limit=body.get("user_limit"),
            rate_limit_per_user=body.get("rate_limit_per_user"),
        )
        after = updated.to_payload()
        reason = request.record.audit_reason
        changed = audit.changes_between(before, after, _CHANNEL_KEYS)
        if changed:
            self.fake.audit(
                channel.guild_id, audit.CHANNEL_UPDATE, channel.id, reason=reason, changes=changed
            )
        if overwrites is not None:
            self._audit_overwrites(channel, overwrites_before, list(updated.overwrites), reason)
        return after

    def _body_overwrites(
        self, channel: Channel, permissions: int, body: dict[str, Any]
    ) -> list[Overwrite] | None:
        """The edit's ``permission_overwrites`` (None without), checked against what the bot
        may grant."""
        if "permission_overwrites" not in body:
            return None
        assert channel.guild_id is not None
        self._need(permissions, Permission.MANAGE_ROLES)
        overwrites = self.fake.guild_routes.parse_overwrites(
            channel.guild_id, body.get("permission_overwrites") or []
        )
        self.fake.state.check_overwrite_grants(
            channel.guild_id,
            channel,
            [(_existing(channel, overwrite), overwrite) for overwrite in overwrites],
            creating=False,
        )
        return overwrites

    def _body_parent(
        self, channel: Channel, body: dict[str, Any]
    ) -> tuple[Any, list[Overwrite] | None]:
        """The edit's ``parent_id`` (UNSET without; a category of the guild with room, or None),
        and the category's overwrites when ``lock_permissions`` asks for them."""
        if "parent_id" not in body:
            return UNSET, None
        raw_parent = body.get("parent_id")
        parent_id = int(str(raw_parent)) if raw_parent is not None else None
        if parent_id is None:
            return None, None
        assert channel.guild_id is not None
        parent = self.fake.state.channels.get(parent_id)
        if (
            parent is None
            or parent.type != ChannelType.GUILD_CATEGORY
            or parent.guild_id != channel.guild_id
        ):
            raise invalid_form_body(
                {"parent_id": field_error("CHANNEL_PARENT_INVALID_TYPE", "Not a category")}
            )
        if parent_id != channel.parent_id:
            check_room(self.fake, channel.guild_id, parent_id, new_channel=False, moving=channel.id)
        if body.get("lock_permissions"):
            return parent_id, [Overwrite(o.id, o.type, o.allow, o.deny) for o in parent.overwrites]
        return parent_id, None

    def _audit_overwrites(
        self, channel: Channel, before: list[Overwrite], after: list[Overwrite], reason: str | None
    ) -> None:
        """One entry per overwrite created, changed or removed, as Discord logs them."""
        assert channel.guild_id is not None
        guild = self.fake.state.guild(channel.guild_id)
        old = {(o.type, o.id): o for o in before}
        new = {(o.type, o.id): o for o in after}
        for key in [*old, *(k for k in new if k not in old)]:
            previous, current = old.get(key), new.get(key)
            if (
                previous is not None
                and current is not None
                and (previous.allow, previous.deny) == (current.allow, current.deny)
            ):
                continue
            action = (
                audit.CHANNEL_OVERWRITE_CREATE
                if previous is None
                else audit.CHANNEL_OVERWRITE_DELETE
                if current is None
                else audit.CHANNEL_OVERWRITE_UPDATE
            )
            subject = current or previous
            assert subject is not None
            role = guild.roles.get(subject.id) if subject.type == OVERWRITE_ROLE else None
            self.fake.audit(
                channel.guild_id,
                action,
                channel.id,
                reason=reason,
                changes=audit.overwrite_changes(previous, current),
                options=audit.overwrite_options(subject, role.name if role else None),
            )

    async def delete_channel(self, request: RestRequest) -> Any:
        """DELETE /channels/{channel_id}: answers the deleted channel."""
        channel, permissions = self._visible_channel(request)
        if channel.guild_id is None:
            return channel.to_payload()
        self._need(permissions, Permission.MANAGE_CHANNELS)
        gone = self.fake.delete_channel(channel.id).to_payload()
        keys = (
            ("name", "type", "permission_overwrites") if not channel.is_thread else ("name", "type")
        )
        self.fake.audit(
            channel.guild_id,
            audit.THREAD_DELETE if channel.is_thread else audit.CHANNEL_DELETE,
            channel.id,
            reason=request.record.audit_reason,
            changes=[audit.change(key, gone[key]) for key in keys if key in gone],
        )
        return gone

    async def put_overwrite(self, request: RestRequest) -> Any:
        """PUT /channels/{channel_id}/permissions/{overwrite_id} {allow, deny, type}."""
        channel, permissions = self._visible_channel(request)
        if channel.guild_id is None:
            raise DiscordError(400, 50003, "Cannot execute action on a DM channel")
        self._need(permissions, Permission.MANAGE_ROLES)
        body = request.body()
        if body.get("type") is None:
            raise invalid_form_body(
                {"type": field_error("BASE_TYPE_REQUIRED", "This field is required")}
            )
        overwrite = Overwrite.from_payload({**body, "id": request.params["overwrite_id"]})
        guild = self.fake.state.guild(channel.guild_id)
        if overwrite.type == OVERWRITE_ROLE and overwrite.id not in guild.roles:
            raise unknown("Role")
        if overwrite.type == OVERWRITE_MEMBER and overwrite.id not in guild.members:
            raise unknown("Member")
        before = list(channel.overwrites)
        self.fake.state.check_overwrite_grants(
            channel.guild_id, channel, [(_existing(channel, overwrite), overwrite)], creating=False
        )
        self.fake.set_overwrite(channel.id, overwrite)
        self._audit_overwrites(
            channel, before, list(channel.overwrites), request.record.audit_reason
        )
        return None

    async def delete_overwrite(self, request: RestRequest) -> Any:
        """DELETE /channels/{channel_id}/permissions/{overwrite_id}."""
        channel, permissions = self._visible_channel(request)
        self._need(permissions, Permission.MANAGE_ROLES)
        before = list(channel.overwrites)
        self.fake.delete_overwrite(channel.id, request.snowflake("overwrite_id"))
        if channel.guild_id is not None:
            self._audit_overwrites(
                channel, before, list(channel.overwrites), request.record.audit_reason
            )
        return None

    async def typing(self, request: RestRequest) -> Any:
        """POST /channels/{channel_id}/typing."""
        channel, permissions = self._visible_channel(request)
        if channel.guild_id is not None:
            self._need(permissions, Permission.SEND_MESSAGES)
        return None

    # messages -----------------------------------------------------------------------

    async def create_message(self, request: RestRequest) -> Any:
        """POST /channels/{channel_id}/messages (JSON or multipart with files)."""
        channel = self.fake.state.channel(request.snowflake("channel_id"))
        if channel.type not in MESSAGEABLE_TYPES:
            raise DiscordError(400, 50008, "Cannot send messages in a non-text channel")
        data = parse_message_input(request.json, request.parts)
        if channel.guild_id is not None:
            _, permissions = self._visible_channel(request)
            # In a thread it is Send Messages in Threads that counts ("The SEND_MESSAGES
            # permission is not inherited", topics/permissions.mdx, Inherited Permissions).
            self._need(
                permissions,
                Permission.SEND_MESSAGES_IN_THREADS
                if channel.is_thread
                else Permission.SEND_MESSAGES,
            )
            if data.new_files:
                self._need(permissions, Permission.ATTACH_FILES)
            if is_voice_message(int(data.get("flags", 0))):
                self._need(permissions, Permission.SEND_VOICE_MESSAGES)
        else:
            recipient = channel.recipients[0] if channel.recipients else None
            if recipient is not None and not recipient.accepts_dms:
                raise DiscordError(403, 50007, "Cannot send messages to this user")
        nonce = data.get("nonce")
        key = (channel.id, str(nonce))
        if nonce is not None and data.get("enforce_nonce"):
            # Discord: the same author, channel and nonce within a few minutes gives back
            # the message already created instead of a second one.
            earlier = self.enforced_nonces.get(key)
            if earlier is not None and time.monotonic() - earlier[1] < NONCE_WINDOW:
                existing = self.fake.state.messages.get(earlier[0])
                if existing is not None and not existing.deleted:
                    return self.fake.message_payload(existing)
        message = compose_message(
            self.fake,
            channel=channel,
            kind="channel",
            data=data,
            allowed_flags=CHANNEL_MESSAGE_FLAGS,
        )
        self.fake.add_message(message)
        if nonce is not None and data.get("enforce_nonce"):
            self.enforced_nonces[key] = (message.id, time.monotonic())
        return self.fake.message_payload(message)

    async def list_messages(self, request: RestRequest) -> Any:
        """GET /channels/{channel_id}/messages?limit&before&after&around (newest first)."""
        channel, permissions = self._visible_channel(request)
        limit = int(request.query.get("limit", "50"))
        if (
            not 1 <= limit <= 100
        ):  # "Max number of messages to return (1-100)", resources/message.mdx
            raise invalid_form_body(
                {
                    "limit": field_error(
                        "NUMBER_TYPE_MAX" if limit > 100 else "NUMBER_TYPE_MIN",
                        "int value should be less than or equal to 100."
                        if limit > 100
                        else "int value should be greater than or equal to 1.",
                    )
                }
            )
        if not permissions & Permission.READ_MESSAGE_HISTORY:
            return []  # "no messages will be returned" (resources/message.mdx)
        messages = self.fake.state.channel_messages(channel.id)
        if "before" in request.query:
            before = int(request.query["before"])
            chosen = [m for m in messages if m.id < before][-limit:]
        elif "after" in request.query:
            after = int(request.query["after"])
            chosen = [m for m in messages if m.id > after][:limit]
        elif "around" in request.query:
            around = int(request.query["around"])
            older = [m for m in messages if m.id < around][-(limit // 2) :] if limit > 1 else []
            newer = [m for m in messages if m.id >= around][: limit - len(older)]
            chosen = older + newer
        else:
            chosen = messages[-limit:]
        return [
            self._content_for_bot(_stored(self.fake.message_payload(m)))
            for m in sorted(chosen, key=lambda m: m.id, reverse=True)
        ]

    def _content_for_bot(self, payload: dict[str, Any]) -> dict[str, Any]:
        """A message as the REST API gives it to a bot: without the Message Content intent enabled
        for the application (its flags GATEWAY_MESSAGE_CONTENT or _LIMITED, bits 18 and 19), the
        content, embeds, attachments, components and poll of others' messages are empty, unless
        they mention the bot ("across Discord's APIs", events/gateway.mdx#message-content-intent)."""
        bot_id = str(self.fake.state.bot_user.id)
        if (
            self.fake.state.application_flags & (1 << 18 | 1 << 19)
            or str((payload.get("author") or {}).get("id")) == bot_id
            or any(str(user.get("id")) == bot_id for user in payload.get("mentions", []))
        ):
            return payload
        for key in CONTENT_FIELDS:
            if key in payload:
                payload[key] = "" if key == "content" else []
        return payload

    async def get_message(self, request: RestRequest) -> Any:
        """GET /channels/{channel_id}/messages/{message_id}."""
        channel, permissions = self._visible_channel(request)
        self._need(permissions, Permission.READ_MESSAGE_HISTORY)
        return _stored(
            self.fake.message_payload(
                self.fake.state.message(channel.id, request.snowflake("message_id"))
            )
        )

    async def edit_message(self, request: RestRequest) -> Any:
        """PATCH /channels/{channel_id}/messages/{message_id}: only the bot's own messages."""
        channel, _ = self._visible_channel(request)
        message = self.fake.state.message(channel.id, request.snowflake("message_id"))
        if message.author.id != self.fake.bot_user.id:
            raise DiscordError(403, 50005, "Cannot edit a message authored by another user")
        data = parse_message_input(request.json, request.parts)
        return self.fake.message_payload(apply_edit(self.fake, message, data))

    async def delete_message(self, request: RestRequest) -> Any:
        """DELETE /channels/{channel_id}/messages/{message_id}."""
        channel, permissions = self._visible_channel(request)
        message = self.fake.state.message(channel.id, request.snowflake("message_id"))
        if message.author.id != self.fake.bot_user.id:
            if channel.guild_id is None:
                raise DiscordError(403, 50003, "Cannot execute action on a DM channel")
            self._need(permissions, Permission.MANAGE_MESSAGES)
        self.fake.delete_message(message)
        if message.author.id != self.fake.bot_user.id and channel.guild_id is not None:
            # Discord logs deleting someone else's message only.
            self.fake.audit(
                channel.guild_id,
                audit.MESSAGE_DELETE,
                message.author.id,
                reason=request.record.audit_reason,
                options={"channel_id": str(channel.id), "count": "1"},
            )
        return None

    async def bulk_delete(self, request: RestRequest) -> Any:
        """POST /channels/{channel_id}/messages/bulk-delete {messages: [ids]}."""
        channel, permissions = self._visible_channel(request)
        self._need(permissions, Permission.MANAGE_MESSAGES)
        ids = [int(str(raw)) for raw in request.body().get("messages") or []]
        if not 2 <= len(ids) <= 100:
            raise invalid_form_body(
                {
                    "messages": field_error(
                        "BASE_TYPE_BAD_LENGTH", "Must be between 2 and 100 in length."
                    )
                }
            )
        deleted = 0
        for message_id in ids:
            message = self.fake.state.messages.get(message_id)
            if message is not None and message.channel_id == channel.id and not message.deleted:
                self.fake.delete_message(message)
                deleted += 1
        if channel.guild_id is not None:
            self.fake.audit(
                channel.guild_id,
                audit.MESSAGE_BULK_DELETE,
                channel.id,
                reason=request.record.audit_reason,
                options={"count": str(deleted)},
            )
        return None
