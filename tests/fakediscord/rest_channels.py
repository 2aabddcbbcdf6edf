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
    missing_access,
    missing_permissions,
    unknown,
)
from .gateway import CONTENT_FIELDS
from .messages import (
    MessageInput,
    check_attachments,
    check_file_sizes,
    is_voice_message,
    number_components,
    parse_message_input,
    upload_limit,
    validate_message,
    validate_voice_message,
)
from .models import (
    MESSAGE_FLAG_COMPONENTS_V2,
    MESSAGE_FLAG_EPHEMERAL,
    MESSAGE_FLAG_VOICE_MESSAGE,
    MESSAGEABLE_TYPES,
    Attachment,
    Channel,
    ChannelType,
    Message,
)
from .permissions import ALL_PERMISSIONS, OVERWRITE_MEMBER, OVERWRITE_ROLE, Overwrite, Permission
from .pings import pinged
from .rest_guilds import check_room, normalize_text_channel_name
from .routing import RestRequest, RestResponse, Router
from .snowflake import iso_timestamp
from .world import UNSET

if TYPE_CHECKING:
    from .server import FakeDiscord

SUPPRESS_EMBEDS = 1 << 2
SUPPRESS_NOTIFICATIONS = 1 << 12
CHANNEL_MESSAGE_FLAGS = (
    SUPPRESS_EMBEDS
    | SUPPRESS_NOTIFICATIONS
    | MESSAGE_FLAG_VOICE_MESSAGE
    | MESSAGE_FLAG_COMPONENTS_V2
)
"""Flags a bot may set on a message it posts in a channel."""


def normalize_embeds(embeds: Any) -> list[dict[str, Any]]:
    """Embeds as Discord echoes them: ``type: rich`` added, texts trimmed ("Leading and trailing
    whitespace characters are not included (they are trimmed automatically)", Embed Limits),
    a field's ``inline`` false unless set."""
    if not isinstance(embeds, list):
        return []
    normalized: list[dict[str, Any]] = []
    for embed in embeds:
        if not isinstance(embed, dict):
            continue
        one = {"type": "rich", **embed}
        for key in ("title", "description"):
            if isinstance(one.get(key), str):
                one[key] = one[key].strip()
        if isinstance(one.get("fields"), list):
            one["fields"] = [
                {
                    **field,
                    "name": str(field.get("name") or "").strip(),
                    "value": str(field.get("value") or "").strip(),
                    "inline": bool(field.get("inline", False)),
                }
                for field in one["fields"]
                if isinstance(field, dict)
            ]
        normalized.append(one)
    return normalized


def compose_message(
    fake: FakeDiscord,
    *,
    channel: Channel,
    kind: str,
    data: MessageInput,
    allowed_flags: int,
    extra_flags: int = 0,
    ephemeral_files: bool = False,
) -> Message:
    """Checks a new message body and builds the message (not yet stored)."""
    flags = (int(data.get("flags", 0)) & allowed_flags) | extra_flags
    content = str(data.get("content", ""))
    embeds = normalize_embeds(data.get("embeds", []))
    components = list(data.get("components", []))
    if is_voice_message(flags):
        validate_voice_message(
            content=content, embeds=embeds, components=components, new_files=data.new_files
        )
    validate_message(
        content=content,
        embeds=embeds,
        components=components,
        flags=flags,
        attachment_count=len(data.new_files),
        has_sticker_or_poll=bool(data.get("sticker_ids") or data.get("poll")),
        allowed_mentions=data.get("allowed_mentions"),
    )
    check_attachments(data, None)
    premium_tier = (
        fake.state.guilds[channel.guild_id].premium_tier
        if channel.guild_id in fake.state.guilds
        else 0
    )
    check_file_sizes(data.new_files, upload_limit(premium_tier))
    reference = data.get("message_reference")
    if reference is not None:
        referenced = fake.state.messages.get(int(str(reference.get("message_id", 0))))
        if (referenced is None or referenced.deleted) and reference.get("fail_if_not_exists", True):
            raise invalid_form_body(
                {
                    "message_reference": field_error(
                        "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message"
                    )
                }
            )
    attachments = materialize(fake, channel.id, data, ephemeral=ephemeral_files)
    ephemeral = bool(flags & MESSAGE_FLAG_EPHEMERAL)
    return Message(
        pinged=frozenset()
        if ephemeral
        else pinged(fake.state, channel, fake.bot_user.id, content, data.get("allowed_mentions")),
        id=fake.state.new_id(),
        channel_id=channel.id,
        guild_id=channel.guild_id,
        author=fake.bot_user,
        kind=kind,
        content=content,
        embeds=embeds,
        components=number_components(components),
        attachments=attachments,
        flags=flags,
        type=19 if reference is not None else 0,
        tts=bool(data.get("tts", False)),
        nonce=data.get("nonce"),
        message_reference=(
            {**reference, "channel_id": str(channel.id), "type": reference.get("type", 0)}
            if reference
            else None
        ),
    )


def materialize(
    fake: FakeDiscord, channel_id: int, data: MessageInput, *, ephemeral: bool = False
) -> list[Attachment]:
    """Stores the uploaded files of a body on the fake CDN."""
    return [
        fake.make_attachment(
            channel_id,
            new_file.filename,
            new_file.data,
            content_type=new_file.upload_content_type,
            upload_content_type=new_file.upload_content_type,
            description=new_file.description,
            title=new_file.title,
            duration_secs=new_file.duration_secs,
            waveform=new_file.waveform,
            flags=new_file.flags,
            ephemeral=ephemeral,
        )
        for new_file in data.new_files
    ]


def apply_edit(
    fake: FakeDiscord, message: Message, data: MessageInput, *, clear_flags: int = 0
) -> Message:
    """Checks and applies an edit body to a message (fields absent from the body stay).

    ``clear_flags`` are removed from the message's flags by the same edit.
    """
    if is_voice_message(message.flags):
        raise DiscordError(400, 50162, "Voice messages cannot be edited.")
    content = str(data.get("content", "")) if data.has("content") else message.content
    embeds = normalize_embeds(data.get("embeds", [])) if data.has("embeds") else message.embeds
    components = list(data.get("components", [])) if data.has("components") else message.components
    flags = message.flags
    if data.has("flags"):
        given = int(data.get("flags", 0))
        flags = (flags & ~SUPPRESS_EMBEDS) | (
            given & (SUPPRESS_EMBEDS | MESSAGE_FLAG_COMPONENTS_V2)
        )
    flags &= ~clear_flags
    if data.kept_attachment_ids is not None:
        kept = [a for a in message.attachments if a.id in set(data.kept_attachment_ids)]
    else:
        kept = list(message.attachments)
    validate_message(
        content=content,
        embeds=embeds,
        components=components,
        flags=flags,
        attachment_count=len(kept) + len(data.new_files),
        allowed_mentions=data.get("allowed_mentions"),
    )
    check_attachments(data, {attachment.id for attachment in message.attachments})
    new_attachments = materialize(fake, message.channel_id, data, ephemeral=message.ephemeral)
    return fake.edit_message(
        message,
        content=content if data.has("content") else UNSET,
        embeds=embeds if data.has("embeds") else UNSET,
        components=number_components(components) if data.has("components") else UNSET,
        flags=flags,
        attachments=kept + new_attachments
        if data.kept_attachment_ids is not None or data.new_files
        else UNSET,
    )


def _stored(payload: dict[str, Any]) -> dict[str, Any]:
    """A message as Discord gives it back later: the nonce is only in the answer to its creation
    and in MESSAGE_CREATE, never stored with the message."""
    payload.pop("nonce", None)
    return payload


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


#: how long Discord remembers an enforced nonce ("the past few minutes")
NONCE_WINDOW = 300.0


class ChannelRoutes:
    """``/channels/...`` routes."""

    def __init__(self, fake: FakeDiscord) -> None:
        self.enforced_nonces: dict[tuple[int, str], tuple[int, float]] = {}
        self.fake = fake

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

    # helpers ------------------------------------------------------------------------

    def _permissions(self, channel: Channel) -> int:
        if channel.guild_id is None:
            return ALL_PERMISSIONS & ~int(Permission.MANAGE_MESSAGES)
        return self.fake.state.permissions_for(channel.guild_id, channel.id, self.fake.bot_user.id)

    def _visible_channel(self, request: RestRequest) -> tuple[Channel, int]:
        channel = self.fake.state.channel(request.snowflake("channel_id"))
        permissions = self._permissions(channel)
        if not permissions & Permission.VIEW_CHANNEL:
            raise missing_access()
        if (
            channel.is_thread
            and channel.guild_id is not None
            and not self.fake.state.can_view(channel.guild_id, channel, self.fake.bot_user.id)
        ):
            raise missing_access()
        return channel, permissions

    @staticmethod
    def _need(permissions: int, permission: int) -> None:
        if not permissions & permission:
            raise missing_permissions()

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
        overwrites = None
        if "permission_overwrites" in body:
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
        parent_id: Any = UNSET
        if "parent_id" in body:
            raw_parent = body.get("parent_id")
            parent_id = int(str(raw_parent)) if raw_parent is not None else None
            if parent_id is not None:
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
                    check_room(
                        self.fake, channel.guild_id, parent_id, new_channel=False, moving=channel.id
                    )
                if body.get("lock_permissions"):
                    overwrites = [
                        Overwrite(o.id, o.type, o.allow, o.deny) for o in parent.overwrites
                    ]
        name = body.get("name")
        if name is not None:
            name = str(name)
            if not 1 <= len(name) <= 100:
                raise invalid_form_body(
                    {
                        "name": field_error(
                            "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
                        )
                    }
                )
            if channel.type in (ChannelType.GUILD_TEXT, ChannelType.GUILD_ANNOUNCEMENT):
                name = normalize_text_channel_name(name)
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

    # threads ------------------------------------------------------------------------

    def _thread_parent(self, request: RestRequest, *, private: bool) -> Channel:
        parent, permissions = self._visible_channel(request)
        if (
            parent.guild_id is None
            or parent.is_thread
            or parent.type not in (ChannelType.GUILD_TEXT, ChannelType.GUILD_ANNOUNCEMENT)
        ):
            raise DiscordError(400, 50024, "Cannot execute action on this channel type")
        self._need(
            permissions,
            Permission.CREATE_PRIVATE_THREADS if private else Permission.CREATE_PUBLIC_THREADS,
        )
        return parent

    async def start_thread(self, request: RestRequest) -> Any:
        """POST /channels/{channel_id}/threads {name, type}: a thread without a message
        (private unless type 11 or 10 is asked for, resources/channel.mdx, Start Thread without Message)."""
        body = request.body()
        private = int(body.get("type") or ChannelType.PRIVATE_THREAD) == ChannelType.PRIVATE_THREAD
        parent = self._thread_parent(request, private=private)
        name = str(body.get("name") or "")
        if not 1 <= len(name) <= 100:
            raise invalid_form_body(
                {
                    "name": field_error(
                        "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
                    )
                }
            )
        thread = self.fake.create_thread(
            parent.id, name, owner_id=self.fake.bot_user.id, private=private
        )
        self._audit_thread(thread, request)
        return RestResponse(status=201, body=thread.to_payload())

    async def start_thread_from_message(self, request: RestRequest) -> Any:
        """POST /channels/{channel_id}/messages/{message_id}/threads {name}: a public thread
        whose id is the message's."""
        parent = self._thread_parent(request, private=False)
        message = self.fake.state.message(parent.id, request.snowflake("message_id"))
        if message.id in self.fake.state.channels:
            raise DiscordError(400, 160004, "A thread has already been created for this message")
        name = str(request.body().get("name") or "")
        if not 1 <= len(name) <= 100:
            raise invalid_form_body(
                {
                    "name": field_error(
                        "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
                    )
                }
            )
        thread = self.fake.create_thread(
            parent.id, name, owner_id=self.fake.bot_user.id, thread_id=message.id
        )
        self._audit_thread(thread, request)
        return RestResponse(status=201, body=thread.to_payload())

    def _audit_thread(self, thread: Channel, request: RestRequest) -> None:
        assert thread.guild_id is not None
        self.fake.audit(
            thread.guild_id,
            audit.THREAD_CREATE,
            thread.id,
            reason=request.record.audit_reason,
            changes=[
                audit.change("name", None, thread.name),
                audit.change("type", None, thread.type),
            ],
        )

    def _thread(self, request: RestRequest) -> tuple[Channel, int]:
        thread, permissions = self._visible_channel(request)
        if not thread.is_thread:
            raise DiscordError(400, 50024, "Cannot execute action on this channel type")
        return thread, permissions

    async def list_thread_members(self, request: RestRequest) -> Any:
        """GET /channels/{channel_id}/thread-members."""
        thread, _ = self._thread(request)
        return [
            self.fake.thread_member_payload(thread, user_id) for user_id in thread.thread_members
        ]

    async def get_thread_member(self, request: RestRequest) -> Any:
        """GET /channels/{channel_id}/thread-members/{user_id}."""
        thread, _ = self._thread(request)
        user_id = request.snowflake("user_id")
        if user_id not in thread.thread_members:
            raise DiscordError(404, 10007, "Unknown Member")
        return self.fake.thread_member_payload(thread, user_id)

    async def join_thread(self, request: RestRequest) -> Any:
        """PUT /channels/{channel_id}/thread-members/@me."""
        thread, _ = self._thread(request)
        self.fake.add_thread_member(thread.id, self.fake.bot_user.id)
        return None

    async def leave_thread(self, request: RestRequest) -> Any:
        """DELETE /channels/{channel_id}/thread-members/@me."""
        thread, _ = self._thread(request)
        self.fake.remove_thread_member(thread.id, self.fake.bot_user.id)
        return None

    async def add_thread_member(self, request: RestRequest) -> Any:
        """PUT /channels/{channel_id}/thread-members/{user_id}: "Requires the ability to send
        messages in the thread" (resources/channel.mdx, Add Thread Member)."""
        thread, permissions = self._thread(request)
        self._need(permissions, Permission.SEND_MESSAGES_IN_THREADS)
        assert thread.guild_id is not None
        user_id = request.snowflake("user_id")
        self.fake.state.member(thread.guild_id, user_id)
        self.fake.add_thread_member(thread.id, user_id)
        return None

    async def remove_thread_member(self, request: RestRequest) -> Any:
        """DELETE /channels/{channel_id}/thread-members/{user_id}: "Requires the MANAGE_THREADS
        permission, or the creator of the thread if it is a PRIVATE_THREAD"."""
        thread, permissions = self._thread(request)
        is_owner = (
            thread.type == ChannelType.PRIVATE_THREAD and thread.owner_id == self.fake.bot_user.id
        )
        if not is_owner:
            self._need(permissions, Permission.MANAGE_THREADS)
        self.fake.remove_thread_member(thread.id, request.snowflake("user_id"))
        return None

    # pins ---------------------------------------------------------------------------

    def _pinned(self, channel: Channel) -> list[Message]:
        return [m for m in self.fake.state.channel_messages(channel.id) if m.pinned]

    async def list_pins(self, request: RestRequest) -> Any:
        """GET /channels/{channel_id}/messages/pins."""
        channel, permissions = self._visible_channel(request)
        self._need(permissions, Permission.READ_MESSAGE_HISTORY)
        limit = max(1, min(int(request.query.get("limit", "50")), 50))
        pinned = list(reversed(self._pinned(channel)))[:limit]
        return {
            "items": [
                {"pinned_at": iso_timestamp(), "message": self.fake.message_payload(m)}
                for m in pinned
            ],
            "has_more": False,
        }

    async def list_pins_legacy(self, request: RestRequest) -> Any:
        """GET /channels/{channel_id}/pins."""
        channel, permissions = self._visible_channel(request)
        self._need(permissions, Permission.READ_MESSAGE_HISTORY)
        return [self.fake.message_payload(m) for m in reversed(self._pinned(channel))]

    async def pin(self, request: RestRequest) -> Any:
        """PUT /channels/{channel_id}/messages/pins/{message_id}."""
        return self._set_pin(request, True)

    async def unpin(self, request: RestRequest) -> Any:
        """DELETE /channels/{channel_id}/messages/pins/{message_id}."""
        return self._set_pin(request, False)

    def _set_pin(self, request: RestRequest, pinned: bool) -> RestResponse:
        channel, permissions = self._visible_channel(request)
        if channel.guild_id is not None:
            self._need(permissions, Permission.MANAGE_MESSAGES | Permission.PIN_MESSAGES)
        message = self.fake.state.message(channel.id, request.snowflake("message_id"))
        self.fake.set_pinned(message, pinned)
        if channel.guild_id is not None:
            self.fake.audit(
                channel.guild_id,
                audit.MESSAGE_PIN if pinned else audit.MESSAGE_UNPIN,
                message.author.id,
                reason=request.record.audit_reason,
                options={"channel_id": str(channel.id), "message_id": str(message.id)},
            )
        return RestResponse(status=204)
