"""Composing a message the bot posts or edits (content, embeds, components, files and flags, as
Discord checks and stores them); used by the channel and interaction routes, re-exported by
:mod:`.rest_channels`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    DiscordError,
    field_error,
    invalid_form_body,
)
from .messages import (
    MessageInput,
    check_attachments,
    check_file_sizes,
    is_voice_message,
    number_components,
    upload_limit,
    validate_message,
    validate_voice_message,
)
from .models import (
    MESSAGE_FLAG_COMPONENTS_V2,
    MESSAGE_FLAG_EPHEMERAL,
    MESSAGE_FLAG_VOICE_MESSAGE,
    Attachment,
    Channel,
    Message,
)
from .pings import pinged
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
    check_file_sizes(data.new_files, _channel_upload_limit(fake, channel))
    reference = _checked_reference(fake, data)
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


def _channel_upload_limit(fake: FakeDiscord, channel: Channel) -> int:
    """The upload limit of the channel's guild (by its boost tier; a DM's is the base one)."""
    premium_tier = (
        fake.state.guilds[channel.guild_id].premium_tier
        if channel.guild_id in fake.state.guilds
        else 0
    )
    return upload_limit(premium_tier)


def _checked_reference(fake: FakeDiscord, data: MessageInput) -> Any:
    """The body's ``message_reference`` (None without); 400 for a message that does not exist
    unless ``fail_if_not_exists`` is false."""
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
    return reference


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
