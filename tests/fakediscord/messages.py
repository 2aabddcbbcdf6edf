"""Reading a message body (JSON or multipart) and checking it against Discord's limits.

The checks are the ones a bot most easily trips over: lengths of content and
embed parts, empty embed fields, too many components, duplicated custom ids,
empty messages, and the rules of native voice messages. A failed check is a
400 with Discord's error code, so the bot's error handling sees what it would
see in production.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from .errors import DiscordError, field_error, invalid_form_body, nest
from .models import MESSAGE_FLAG_COMPONENTS_V2, MESSAGE_FLAG_VOICE_MESSAGE, walk_components
from .recording import MultipartPart

MAX_CONTENT = 2000
MAX_EMBEDS = 10
MAX_EMBED_TOTAL = 6000
MAX_ACTION_ROWS = 5
MAX_ROW_BUTTONS = 5
MAX_CUSTOM_ID = 100
MAX_BUTTON_LABEL = 80
MAX_SELECT_OPTIONS = 25
MAX_V2_COMPONENTS = 40

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
        raise invalid_form_body({"_errors": [{"code": "DICT_TYPE_CONVERT", "message": "Only dictionaries may be used in a DictType"}]})
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
    uploads: dict[int, MultipartPart] = {}
    for part in parts:
        match = _FILE_PART.fullmatch(part.name)
        if match is None or part.filename is None:
            continue
        index = int(match.group(1) if match.group(1) is not None else (match.group(2) or 0))
        uploads[index] = part
    metadata: dict[int, dict[str, Any]] = {}
    kept: list[int] | None = None
    if "attachments" in body:
        kept = []
        for entry in body.get("attachments") or []:
            raw_id = int(str(entry.get("id")))
            if raw_id in uploads:
                metadata[raw_id] = entry
            else:
                kept.append(raw_id)
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
    return MessageInput(fields=fields, new_files=new_files, kept_attachment_ids=kept)


def number_components(components: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The components as Discord stores them: every component gets an ``id``, given in order
    from 1 where the bot left it out (or sent 0), never reusing an id it chose itself
    (developers/components/reference.mdx, "the id ... is generated sequentially if left empty")."""
    copied = copy.deepcopy(components)
    every = walk_components(copied)
    taken = {int(c["id"]) for c in every if isinstance(c.get("id"), int) and not isinstance(c.get("id"), bool) and c["id"]}
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
) -> None:
    """Raises Discord's 400 for a message that Discord would refuse."""
    errors: dict[str, Any] = {}
    if len(content) > MAX_CONTENT:
        errors.update(nest(["content"], field_error("BASE_TYPE_MAX_LENGTH", f"Must be {MAX_CONTENT} or fewer in length.")))
    if len(embeds) > MAX_EMBEDS:
        errors.update(nest(["embeds"], field_error("BASE_TYPE_MAX_LENGTH", f"Must be {MAX_EMBEDS} or fewer in length.")))
    errors.update(_embed_errors(embeds))
    if flags & MESSAGE_FLAG_COMPONENTS_V2:
        if content or embeds:
            errors.update(
                nest(
                    ["content" if content else "embeds"],
                    field_error("MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2", "The 'content' and 'embeds' fields cannot be used when using MessageFlags.IS_COMPONENTS_V2"),
                )
            )
        errors.update(_v2_component_errors(components))
    else:
        errors.update(_legacy_component_errors(components))
    if errors:
        raise invalid_form_body(errors)
    if not (content or embeds or components or attachment_count or has_sticker_or_poll):
        raise DiscordError(400, 50006, "Cannot send an empty message")


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
                total += len(str(value))
                if len(str(value)) > limit:
                    embed_errors[key] = field_error("BASE_TYPE_MAX_LENGTH", f"Must be {limit} or fewer in length.")
        footer = embed.get("footer") or {}
        if footer.get("text") is not None:
            total += len(str(footer["text"]))
            if len(str(footer["text"])) > 2048:
                embed_errors["footer"] = {"text": field_error("BASE_TYPE_MAX_LENGTH", "Must be 2048 or fewer in length.")}
        author = embed.get("author") or {}
        if author.get("name") is not None:
            total += len(str(author["name"]))
            if len(str(author["name"])) > 256:
                embed_errors["author"] = {"name": field_error("BASE_TYPE_MAX_LENGTH", "Must be 256 or fewer in length.")}
        fields = embed.get("fields") or []
        if len(fields) > 25:
            embed_errors["fields"] = field_error("BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
        field_errors: dict[str, Any] = {}
        for field_index, embed_field in enumerate(fields):
            one: dict[str, Any] = {}
            for key, limit in (("name", 256), ("value", 1024)):
                value = str(embed_field.get(key) or "")
                total += len(value)
                if not value.strip():
                    one[key] = field_error("BASE_TYPE_REQUIRED", "This field is required")
                elif len(value) > limit:
                    one[key] = field_error("BASE_TYPE_MAX_LENGTH", f"Must be {limit} or fewer in length.")
            if one:
                field_errors[str(field_index)] = one
        if field_errors and "fields" not in embed_errors:
            embed_errors["fields"] = field_errors
        if embed_errors:
            errors[str(index)] = embed_errors
    if total > MAX_EMBED_TOTAL:
        errors["_errors"] = [{"code": "MAX_EMBED_SIZE_EXCEEDED", "message": "Embed size exceeds maximum size of 6000"}]
    return {"embeds": errors} if errors else {}


def _legacy_component_errors(components: list[dict[str, Any]]) -> dict[str, Any]:
    errors: dict[str, Any] = {}
    if len(components) > MAX_ACTION_ROWS:
        return nest(["components"], field_error("BASE_TYPE_MAX_LENGTH", f"Must be {MAX_ACTION_ROWS} or fewer in length."))
    seen: set[str] = set()
    for row_index, row in enumerate(components):
        if row.get("type") != 1:
            errors[str(row_index)] = field_error(
                "UNION_TYPE_CHOICES", "Value of field \"type\" must be one of (1,)."
            )
            continue
        children = row.get("components") or []
        selects = [c for c in children if c.get("type") in (3, 5, 6, 7, 8)]
        if not children or len(children) > MAX_ROW_BUTTONS or (selects and len(children) > 1):
            errors[str(row_index)] = {
                "components": field_error("BASE_TYPE_BAD_LENGTH", "Must be between 1 and 5 in length.")
            }
            continue
        for child_index, child in enumerate(children):
            child_errors = _interactive_errors(child, seen)
            if child_errors:
                errors.setdefault(str(row_index), {}).setdefault("components", {})[str(child_index)] = child_errors
    return {"components": errors} if errors else {}


def _v2_component_errors(components: list[dict[str, Any]]) -> dict[str, Any]:
    every = walk_components(components)
    if len(every) > MAX_V2_COMPONENTS:
        return nest(["components"], field_error("COMPONENT_MAX_TOTAL_COMPONENTS_EXCEEDED", f"The maximum number of components is {MAX_V2_COMPONENTS}."))
    seen: set[str] = set()
    for component in every:
        child_errors = _interactive_errors(component, seen)
        if child_errors:
            return {"components": child_errors}
    return {}


def _interactive_errors(component: dict[str, Any], seen: set[str]) -> dict[str, Any]:
    errors: dict[str, Any] = {}
    custom_id = component.get("custom_id")
    if custom_id is not None:
        if len(str(custom_id)) > MAX_CUSTOM_ID:
            errors["custom_id"] = field_error("BASE_TYPE_MAX_LENGTH", f"Must be {MAX_CUSTOM_ID} or fewer in length.")
        elif custom_id in seen:
            errors["custom_id"] = field_error("COMPONENT_CUSTOM_ID_DUPLICATED", "Component custom id cannot be duplicated")
        seen.add(str(custom_id))
    label = component.get("label")
    if component.get("type") == 2 and label is not None and len(str(label)) > MAX_BUTTON_LABEL:
        errors["label"] = field_error("BASE_TYPE_MAX_LENGTH", f"Must be {MAX_BUTTON_LABEL} or fewer in length.")
    options = component.get("options")
    if component.get("type") == 3 and options is not None and not 1 <= len(options) <= MAX_SELECT_OPTIONS:
        errors["options"] = field_error("BASE_TYPE_BAD_LENGTH", f"Must be between 1 and {MAX_SELECT_OPTIONS} in length.")
    return errors
