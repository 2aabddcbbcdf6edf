"""Reading a message body (JSON or multipart) and Discord's rules for it that no schema states.

The OpenAPI spec checks types and most lengths (:mod:`.spec`); the rules here
are the ones it cannot express, or that must hold when the spec file is
absent. Each cites the page of Discord's documentation (``discord/discord-api-docs``,
``developers/...``) it comes from:

- content up to 2000 characters (``resources/message.mdx``, Create Message: the
  spec says 4000, which only Nitro users get);
- up to 10 embeds; title 256, description 4096, up to 25 fields, field name 256
  and value 1024 (both required), footer text 2048, author name 256, and 6000
  characters across all embeds, whitespace at the ends not counted
  (``resources/message.mdx``, Embed Limits);
- legacy components: up to 5 action rows, each with 1 to 5 buttons or exactly
  one select; buttons and selects only inside rows (``components/reference.mdx``,
  Action Row); a custom_id of 1 to 100 characters, unique in the message; a
  component ``id`` unique in the message (Anatomy of a Component); button labels
  up to 80, non-link buttons need a custom_id and no url, link buttons a url and
  no custom_id, premium buttons a sku_id only (Button); selects: placeholder up
  to 150, min_values 0 to 25, max_values 1 to 25 and not below min_values; a
  string select has 1 to 25 options, each label and value 1 to 100 characters,
  description up to 100, values unique, no more defaults than max_values
  (String Select); with IS_COMPONENTS_V2 up to 40 components in all and no
  content or embeds (Component Reference, IS_COMPONENTS_V2);
- allowed_mentions: up to 100 users and 100 roles, and ``parse`` excludes the
  explicit list of the same kind unless that list is empty (``resources/message.mdx``,
  Allowed Mentions Object);
- attachments: at most 10 files; ``attachments[].id`` of a new message names an
  uploaded ``files[n]``; in an edit it names an attachment the message has or a
  new upload; ids appear once (``reference.mdx``, Uploading Files and Editing
  Message Attachments);
- a message needs content, an embed, a component, a file, a sticker or a poll
  (50006); voice messages (IS_VOICE_MESSAGE) carry one audio file with
  duration and waveform and nothing else, and cannot be edited.

A failed check is a 400 with Discord's error code and ``errors`` tree, so the
bot's error handling sees what it would see in production.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from .errors import DiscordError, field_error, invalid_form_body, nest
from .messages_components import _legacy_component_errors, _length_error, _v2_component_errors
from .models import MESSAGE_FLAG_COMPONENTS_V2, MESSAGE_FLAG_VOICE_MESSAGE, walk_components
from .recording import MultipartPart

MAX_CONTENT = 2000
MAX_EMBEDS = 10
MAX_EMBED_TOTAL = 6000
MAX_EMBED_FIELDS = 25
MAX_MENTIONS = 100
MAX_FILES = 10

_FILE_PART = re.compile(r"files\[(\d+)\]|file(\d*)")

_EMBED_LIMITS = {
    "title": 256,
    "description": 4096,
}


@dataclass
class NewFile:
    """A file uploaded with a message, with the metadata given for it in ``attachments``."""

    index: int
    filename: str
    data: bytes
    upload_content_type: str | None
    description: str | None = None
    title: str | None = None
    duration_secs: float | None = None
    waveform: str | None = None
    flags: int = 0


@dataclass
class MessageInput:
    """The parts of a create/edit body the fake understands.

    ``fields`` has only the keys present in the body (so an edit changes
    only those); ``kept_attachment_ids`` is None when the body has no
    ``attachments`` key, else the ids of existing attachments to keep.
    """

    fields: dict[str, Any]
    new_files: list[NewFile] = field(default_factory=list)
    kept_attachment_ids: list[int] | None = None
    attachment_ids: list[Any] = field(default_factory=list)
    """Every ``attachments[].id`` of the body, as sent."""
    uploaded_parts: int = 0
    """How many file parts the multipart body carried."""

    def has(self, key: str) -> bool:
        """Whether the body set this key (even to null)."""
        return key in self.fields

    def get(self, key: str, default: Any = None) -> Any:
        """The body's value for a key."""
        value = self.fields.get(key, default)
        return default if value is None else value


def parse_message_input(body: Any, parts: list[MultipartPart]) -> MessageInput:
    """Reads a JSON body, or a multipart body's ``payload_json`` and ``files[n]`` parts."""
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise invalid_form_body(
            {
                "_errors": [
                    {
                        "code": "DICT_TYPE_CONVERT",
                        "message": "Only dictionaries may be used in a DictType",
                    }
                ]
            }
        )
    fields = {
        key: body[key]
        for key in (
            "content",
            "embeds",
            "components",
            "flags",
            "tts",
            "nonce",
            "enforce_nonce",
            "message_reference",
            "allowed_mentions",
            "poll",
            "sticker_ids",
        )
        if key in body
    }
    uploads = _uploads(parts)
    metadata, kept, attachment_ids = _attachment_entries(body, uploads)
    new_files = _new_files(uploads, metadata)
    return MessageInput(
        fields=fields,
        new_files=new_files,
        kept_attachment_ids=kept,
        attachment_ids=attachment_ids,
        uploaded_parts=len(uploads),
    )


def _uploads(parts: list[MultipartPart]) -> dict[int, MultipartPart]:
    """The multipart body's files, by their index (``files[n]``, ``file`` or ``fileN``)."""
    uploads: dict[int, MultipartPart] = {}
    for part in parts:
        match = _FILE_PART.fullmatch(part.name)
        if match is None or part.filename is None:
            continue
        index = int(match.group(1) if match.group(1) is not None else (match.group(2) or 0))
        uploads[index] = part
    return uploads


def _attachment_entries(
    body: dict[str, Any], uploads: dict[int, MultipartPart]
) -> tuple[dict[int, dict[str, Any]], list[int] | None, list[Any]]:
    """The body's ``attachments``: the metadata of each upload, the ids of existing attachments
    kept (None without ``attachments``) and every id as given."""
    metadata: dict[int, dict[str, Any]] = {}
    kept: list[int] | None = None
    attachment_ids: list[Any] = []
    if "attachments" in body:
        kept = []
        for entry in body.get("attachments") or []:
            if not isinstance(entry, dict) or not str(entry.get("id", "")).isdigit():
                raise invalid_form_body(
                    {
                        "attachments": {
                            str(len(attachment_ids)): {
                                "id": field_error("BASE_TYPE_REQUIRED", "This field is required")
                            }
                        }
                    }
                )
            attachment_ids.append(entry.get("id"))
            raw_id = int(str(entry.get("id")))
            if raw_id in uploads:
                metadata[raw_id] = entry
            else:
                kept.append(raw_id)
    return metadata, kept, attachment_ids


def _new_files(
    uploads: dict[int, MultipartPart], metadata: dict[int, dict[str, Any]]
) -> list[NewFile]:
    """The uploaded files in index order, with what their attachment entries say of them."""
    new_files: list[NewFile] = []
    for index in sorted(uploads):
        part = uploads[index]
        meta = metadata.get(index, {})
        duration = meta.get("duration_secs")
        new_files.append(
            NewFile(
                index=index,
                filename=str(meta.get("filename") or part.filename),
                data=part.data,
                upload_content_type=part.content_type,
                description=meta.get("description"),
                title=meta.get("title"),
                duration_secs=float(duration) if duration is not None else None,
                waveform=meta.get("waveform"),
                flags=int(meta.get("flags") or 0),
            )
        )
    return new_files


_SELECT_DEFAULTS = {"min_values": 1, "max_values": 1}
_COMPONENT_DEFAULTS: dict[Any, dict[str, Any]] = {
    3: _SELECT_DEFAULTS,
    5: _SELECT_DEFAULTS,
    6: _SELECT_DEFAULTS,
    7: _SELECT_DEFAULTS,
    8: _SELECT_DEFAULTS,
    11: {"description": None, "spoiler": False},
    13: {"spoiler": False},
    14: {"spacing": 1, "divider": True},
    17: {"accent_color": None, "spoiler": False},
}
"""What Discord fills in when a component leaves it out (components/reference.mdx)."""


def number_components(components: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The components as Discord stores them, defaults filled in (a select's min and max
    values are 1); and every component gets an ``id``, given in order
    from 1 where the bot left it out (or sent 0), never reusing an id it chose itself
    (developers/components/reference.mdx, "the id ... is generated sequentially if left empty")."""
    copied = copy.deepcopy(components)
    every = walk_components(copied)
    for component in every:
        for key, value in _COMPONENT_DEFAULTS.get(component.get("type"), {}).items():
            component.setdefault(key, value)
    taken = {
        int(c["id"])
        for c in every
        if isinstance(c.get("id"), int) and not isinstance(c.get("id"), bool) and c["id"]
    }
    next_id = 1
    for component in every:
        if component.get("id"):
            continue
        while next_id in taken:
            next_id += 1
        component["id"] = next_id
        taken.add(next_id)
    return copied


def check_file_sizes(new_files: list[NewFile], limit: int) -> None:
    """413 40005 when a file is larger than the guild's upload limit."""
    for new_file in new_files:
        if len(new_file.data) > limit:
            raise DiscordError(413, 40005, "Request entity too large")


def upload_limit(premium_tier: int) -> int:
    """Bytes a bot may upload per file in a guild of this boost tier."""
    return {2: 50 * 1024 * 1024, 3: 100 * 1024 * 1024}.get(premium_tier, 10 * 1024 * 1024)


def validate_message(
    *,
    content: str,
    embeds: list[dict[str, Any]],
    components: list[dict[str, Any]],
    flags: int,
    attachment_count: int,
    has_sticker_or_poll: bool = False,
    allowed_mentions: Any = None,
) -> None:
    """Raises Discord's 400 for a message that Discord would refuse."""
    errors: dict[str, Any] = {}
    if len(content) > MAX_CONTENT:
        errors.update(
            nest(
                ["content"],
                field_error("BASE_TYPE_MAX_LENGTH", f"Must be {MAX_CONTENT} or fewer in length."),
            )
        )
    if len(embeds) > MAX_EMBEDS:
        errors.update(
            nest(
                ["embeds"],
                field_error("BASE_TYPE_MAX_LENGTH", f"Must be {MAX_EMBEDS} or fewer in length."),
            )
        )
    else:
        errors.update(_embed_errors(embeds))
    if flags & MESSAGE_FLAG_COMPONENTS_V2:
        if content or embeds:
            errors.update(
                nest(
                    ["content" if content else "embeds"],
                    field_error(
                        "MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2",
                        "The 'content' and 'embeds' fields cannot be used when using MessageFlags.IS_COMPONENTS_V2",
                    ),
                )
            )
        errors.update(_v2_component_errors(components))
    else:
        errors.update(_legacy_component_errors(components))
    errors.update(_allowed_mentions_errors(allowed_mentions))
    if attachment_count > MAX_FILES:
        errors.update(
            nest(
                ["attachments"],
                field_error("BASE_TYPE_MAX_LENGTH", f"Must be {MAX_FILES} or fewer in length."),
            )
        )
    if errors:
        raise invalid_form_body(errors)
    if not (content or embeds or components or attachment_count or has_sticker_or_poll):
        raise DiscordError(400, 50006, "Cannot send an empty message")


def check_attachments(data: MessageInput, existing_ids: set[int] | None) -> None:
    """``attachments`` against the uploads: a new message (``existing_ids`` None) may name only
    its ``files[n]``; an edit also the attachments the message has; each id once."""
    errors: dict[str, Any] = {}
    uploads = {new_file.index for new_file in data.new_files}
    seen: set[int] = set()
    for index, raw in enumerate(data.attachment_ids):
        attachment_id = int(str(raw))
        if attachment_id in seen:
            errors[str(index)] = {
                "id": field_error("ATTACHMENT_DUPLICATE_ID", "Attachment ids must be unique")
            }
        elif attachment_id not in uploads and (
            existing_ids is None or attachment_id not in existing_ids
        ):
            errors[str(index)] = {"id": field_error("ATTACHMENT_NOT_FOUND", "Unknown attachment")}
        seen.add(attachment_id)
    if data.uploaded_parts > MAX_FILES:
        errors["_errors"] = [
            {"code": "BASE_TYPE_MAX_LENGTH", "message": f"Must be {MAX_FILES} or fewer in length."}
        ]
    if errors:
        raise invalid_form_body({"attachments": errors})


def validate_voice_message(
    *,
    content: str,
    embeds: list[dict[str, Any]],
    components: list[dict[str, Any]],
    new_files: list[NewFile],
) -> None:
    """Discord's rules for a message with the IS_VOICE_MESSAGE flag (1 << 13)."""
    if content or embeds or components:
        raise DiscordError(400, 50159, "Voice messages do not support additional content.")
    if len(new_files) != 1 or not (new_files[0].upload_content_type or "").startswith("audio/"):
        raise DiscordError(400, 50160, "Voice messages must have a single audio attachment.")
    voice_file = new_files[0]
    if voice_file.duration_secs is None or voice_file.waveform is None:
        raise DiscordError(400, 50161, "Voice messages must have supporting metadata.")


def is_voice_message(flags: int) -> bool:
    """Whether the flags mark a native voice message."""
    return bool(flags & MESSAGE_FLAG_VOICE_MESSAGE)


def _embed_errors(embeds: list[dict[str, Any]]) -> dict[str, Any]:
    errors: dict[str, Any] = {}
    total = 0
    for index, embed in enumerate(embeds):
        embed_errors: dict[str, Any] = {}
        for key, limit in _EMBED_LIMITS.items():
            value = embed.get(key)
            if value is not None:
                text = str(value).strip()
                total += len(text)
                if len(text) > limit:
                    embed_errors[key] = _length_error(limit)
        for part, key, limit in (("footer", "text", 2048), ("author", "name", 256)):
            holder = embed.get(part) or {}
            if isinstance(holder, dict) and holder.get(key) is not None:
                text = str(holder[key]).strip()
                total += len(text)
                if len(text) > limit:
                    embed_errors[part] = {key: _length_error(limit)}
        fields = embed.get("fields") or []
        if len(fields) > MAX_EMBED_FIELDS:
            embed_errors["fields"] = _length_error(MAX_EMBED_FIELDS)
            fields = []
        field_errors: dict[str, Any] = {}
        for field_index, embed_field in enumerate(fields):
            one: dict[str, Any] = {}
            for key, limit in (("name", 256), ("value", 1024)):
                text = str(embed_field.get(key) or "").strip()
                total += len(text)
                if not text:
                    one[key] = field_error("BASE_TYPE_REQUIRED", "This field is required")
                elif len(text) > limit:
                    one[key] = _length_error(limit)
            if one:
                field_errors[str(field_index)] = one
        if field_errors:
            embed_errors["fields"] = field_errors
        if embed_errors:
            errors[str(index)] = embed_errors
    if total > MAX_EMBED_TOTAL:
        # The whole list is too big: Discord says so about the list, not about one embed.
        return {
            "embeds": {
                "_errors": [
                    {
                        "code": "MAX_EMBED_SIZE_EXCEEDED",
                        "message": f"Embed size exceeds maximum size of {MAX_EMBED_TOTAL}",
                    }
                ]
            }
        }
    return {"embeds": errors} if errors else {}


def _allowed_mentions_errors(allowed: Any) -> dict[str, Any]:
    if not isinstance(allowed, dict):
        return {}
    errors: dict[str, Any] = {}
    parse = allowed.get("parse") or []
    for kind in ("users", "roles"):
        explicit = allowed.get(kind) or []
        if isinstance(explicit, list) and len(explicit) > MAX_MENTIONS:
            errors[kind] = _length_error(MAX_MENTIONS)
        elif explicit and isinstance(parse, list) and kind in parse:
            errors["_errors"] = [
                {
                    "code": "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE",
                    "message": f'parse:["{kind}"] and {kind}: [ids...] are mutually exclusive.',
                }
            ]
    return {"allowed_mentions": errors} if errors else {}
