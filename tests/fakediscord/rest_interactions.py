"""Interaction callbacks and the interaction webhook (followups, ``@original``).

As on Discord: an interaction can be acknowledged once (a second callback is
400 40060), within ``fake.interaction_ack_deadline`` seconds (later: 404
10062); followups need an acknowledged interaction (else 404 10015); the
first followup after a "thinking" deferral replaces the loading message
instead of posting a new one. These routes need no bot token.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .errors import DiscordError, field_error, invalid_form_body, unknown
from .interactions import (
    CALLBACK_AUTOCOMPLETE_RESULT,
    CALLBACK_CHANNEL_MESSAGE,
    CALLBACK_DEFERRED_CHANNEL_MESSAGE,
    CALLBACK_DEFERRED_UPDATE_MESSAGE,
    CALLBACK_MODAL,
    CALLBACK_PONG,
    CALLBACK_UPDATE_MESSAGE,
    INTERACTION_APPLICATION_COMMAND,
    INTERACTION_AUTOCOMPLETE,
    INTERACTION_MESSAGE_COMPONENT,
    INTERACTION_MODAL_SUBMIT,
    INTERACTION_PING,
    Callback,
    InteractionResult,
)
from .message_compose import CHANNEL_MESSAGE_FLAGS, apply_edit, compose_message
from .messages import MessageInput, parse_message_input
from .models import MESSAGE_FLAG_EPHEMERAL, MESSAGE_FLAG_LOADING, Message
from .routing import RestRequest, RestResponse, Router

if TYPE_CHECKING:
    from .server import FakeDiscord

INTERACTION_MESSAGE_FLAGS = CHANNEL_MESSAGE_FLAGS | MESSAGE_FLAG_EPHEMERAL
"""Flags an interaction answer or followup may set (others are dropped, as Discord drops them)."""
MAX_CHOICES = 25
MAX_CHOICE_TEXT = 100

_VALID_CALLBACKS = {
    CALLBACK_PONG: {INTERACTION_PING},
    CALLBACK_CHANNEL_MESSAGE: {
        INTERACTION_APPLICATION_COMMAND,
        INTERACTION_MESSAGE_COMPONENT,
        INTERACTION_MODAL_SUBMIT,
    },
    CALLBACK_DEFERRED_CHANNEL_MESSAGE: {
        INTERACTION_APPLICATION_COMMAND,
        INTERACTION_MESSAGE_COMPONENT,
        INTERACTION_MODAL_SUBMIT,
    },
    CALLBACK_DEFERRED_UPDATE_MESSAGE: {INTERACTION_MESSAGE_COMPONENT, INTERACTION_MODAL_SUBMIT},
    CALLBACK_UPDATE_MESSAGE: {INTERACTION_MESSAGE_COMPONENT, INTERACTION_MODAL_SUBMIT},
    CALLBACK_AUTOCOMPLETE_RESULT: {INTERACTION_AUTOCOMPLETE},
    CALLBACK_MODAL: {INTERACTION_APPLICATION_COMMAND, INTERACTION_MESSAGE_COMPONENT},
}


def interaction_metadata(
    fake: FakeDiscord, result: InteractionResult, *, nested: bool = False
) -> dict[str, Any]:
    """A message's ``interaction_metadata``: who did what; a modal's submission names the
    interaction that opened the modal (``triggering_interaction_metadata``)."""
    metadata: dict[str, Any] = {
        "id": str(result.id),
        "type": result.type,
        "user": fake.state.user(result.user_id).to_payload(),
        "authorizing_integration_owners": result.payload.get("authorizing_integration_owners", {}),
    }
    if result.type == INTERACTION_APPLICATION_COMMAND:
        metadata["name"] = str(result.payload.get("data", {}).get("name", ""))
        metadata["command_type"] = int(result.payload.get("data", {}).get("type", 1))
    if result.source_message_id is not None:
        metadata["interacted_message_id"] = str(result.source_message_id)
    if result.original_message_id is not None:
        metadata["original_response_message_id"] = str(result.original_message_id)
    if result.type == INTERACTION_MODAL_SUBMIT and not nested and result.triggered_by is not None:
        metadata["triggering_interaction_metadata"] = interaction_metadata(
            fake, result.triggered_by, nested=True
        )
    return metadata


@contextlib.contextmanager
def _under_data() -> Iterator[None]:
    """A callback's message is its ``data``: Discord names a bad field of it under ``data`` in
    the errors tree (``data.content``), as the spec's check does; the message checks shared with
    Create Message name it from the message's root."""
    try:
        yield
    except DiscordError as error:
        if error.code == 50035 and error.errors is not None and "data" not in error.errors:
            error.errors = {"data": error.errors}
        raise


class InteractionRoutes:
    """``/interactions/...`` and ``/webhooks/{application_id}/{interaction_token}/...``."""

    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake

    def register(self, router: Router) -> None:
        """Adds these routes to the router (no bot token needed, as on Discord)."""
        router.add(
            "POST",
            "/interactions/{interaction_id}/{interaction_token}/callback",
            self.callback,
            auth=False,
        )
        base = "/webhooks/{application_id}/{interaction_token}"
        router.add("POST", base, self.followup, auth=False)
        for suffix in ("/messages/@original", "/messages/{message_id}"):
            router.add("GET", base + suffix, self.get_message, auth=False)
            router.add("PATCH", base + suffix, self.edit_message, auth=False)
            router.add("DELETE", base + suffix, self.delete_message, auth=False)

    # callback -----------------------------------------------------------------------

    async def callback(self, request: RestRequest) -> Any:
        """POST /interactions/{interaction_id}/{interaction_token}/callback."""
        result = self.fake.interactions_by_token.get(request.params["interaction_token"])
        if result is None or str(result.id) != request.params["interaction_id"]:
            raise unknown("interaction")
        body = request.body()
        attempt = Callback(
            type=int(body.get("type") or 0),
            data=dict(body.get("data") or {}),
            status=0,
            time=time.monotonic(),
            files=[part for part in request.parts if part.filename is not None],
        )
        result.attempts.append(attempt)
        try:
            response = self._acknowledge(request, result, attempt)
        except DiscordError as error:
            attempt.status = error.status
            attempt.error_code = error.code
            raise
        attempt.status = response.status
        return response

    def _acknowledge(
        self, request: RestRequest, result: InteractionResult, attempt: Callback
    ) -> RestResponse:
        self._check_acknowledgeable(result, attempt)
        resource_message = self._perform(request, result, attempt)
        result.callback = attempt
        self.fake.notify()
        if not request.flag("with_response"):
            return RestResponse(status=204)
        return self._callback_response(result, attempt, resource_message)

    def _check_acknowledgeable(self, result: InteractionResult, attempt: Callback) -> None:
        """Not acknowledged yet, within the deadline, and a callback type this interaction takes."""
        fake = self.fake
        if result.callback is not None:
            raise DiscordError(400, 40060, "Interaction has already been acknowledged.")
        if time.monotonic() - result.sent_at > fake.interaction_ack_deadline:
            raise unknown("interaction")
        if result.type not in _VALID_CALLBACKS.get(attempt.type, set()):
            raise invalid_form_body(
                {
                    "type": field_error(
                        "INTERACTION_RESPONSE_TYPE_INVALID",
                        f"Interaction response type {attempt.type} is not valid for interaction type {result.type}",
                    )
                }
            )

    def _perform(
        self, request: RestRequest, result: InteractionResult, attempt: Callback
    ) -> Message | None:
        """Do what the callback asks; the message it creates or updates, if any."""
        fake = self.fake
        channel = fake.state.channel(result.channel_id)
        source = (
            fake.state.messages.get(result.source_message_id) if result.source_message_id else None
        )
        resource_message: Message | None = None
        if attempt.type == CALLBACK_CHANNEL_MESSAGE:
            with _under_data():
                data = parse_message_input(attempt.data, request.parts)
                message = compose_message(
                    fake,
                    channel=channel,
                    kind="interaction",
                    data=data,
                    allowed_flags=INTERACTION_MESSAGE_FLAGS,
                    ephemeral_files=bool(int(data.get("flags", 0)) & MESSAGE_FLAG_EPHEMERAL),
                )
            resource_message = self._adopt(result, message)
        elif attempt.type == CALLBACK_DEFERRED_CHANNEL_MESSAGE:
            ephemeral = int(attempt.data.get("flags") or 0) & MESSAGE_FLAG_EPHEMERAL
            message = Message(
                id=fake.state.new_id(),
                channel_id=channel.id,
                guild_id=channel.guild_id,
                author=fake.bot_user,
                kind="interaction",
                flags=MESSAGE_FLAG_LOADING | ephemeral,
            )
            resource_message = self._adopt(result, message)
        elif attempt.type in (CALLBACK_DEFERRED_UPDATE_MESSAGE, CALLBACK_UPDATE_MESSAGE):
            if source is None:
                raise invalid_form_body(
                    {
                        "type": field_error(
                            "INTERACTION_RESPONSE_TYPE_INVALID", "There is no message to update"
                        )
                    }
                )
            if attempt.type == CALLBACK_UPDATE_MESSAGE:
                with _under_data():
                    apply_edit(fake, source, parse_message_input(attempt.data, request.parts))
            result.original_message_id = source.id
            resource_message = source
        elif attempt.type == CALLBACK_AUTOCOMPLETE_RESULT:
            self._check_choices(attempt.data)
        elif attempt.type == CALLBACK_MODAL:
            self._check_modal(attempt.data)
        return resource_message

    def _callback_response(
        self, result: InteractionResult, attempt: Callback, resource_message: Message | None
    ) -> RestResponse:
        """The answer to a callback ``with_response``: the interaction and, for a new or updated
        message, the message."""
        fake = self.fake
        interaction: dict[str, Any] = {"id": str(result.id), "type": result.type}
        resource: dict[str, Any] = {"type": attempt.type}
        if resource_message is not None:
            interaction.update(
                {
                    "response_message_id": str(resource_message.id),
                    "response_message_loading": resource_message.loading,
                    "response_message_ephemeral": resource_message.ephemeral,
                }
            )
            resource["message"] = fake.message_payload(resource_message)
        body: dict[str, Any] = {"interaction": interaction}
        # Discord's resource carries the message of a new or updated message only (the spec's
        # InteractionCallbackResponse knows no resource for deferrals, choices or modals).
        if (
            attempt.type in (CALLBACK_CHANNEL_MESSAGE, CALLBACK_UPDATE_MESSAGE)
            and "message" in resource
        ):
            body["resource"] = resource
        return RestResponse(status=200, body=body)

    def _adopt(self, result: InteractionResult, message: Message) -> Message:
        """Marks a new message as the interaction's answer and stores it."""
        fake = self.fake
        message.interaction_id = result.id
        message.interaction_metadata = interaction_metadata(fake, result)
        message.webhook_id = fake.application_id
        message.application_id = fake.application_id
        message.type = 20 if result.type == INTERACTION_APPLICATION_COMMAND else 0
        fake.add_message(message)
        result.original_message_id = message.id
        return message

    @staticmethod
    def _check_choices(data: dict[str, Any]) -> None:
        """Autocomplete choices: at most 25 (interactions/receiving-and-responding.mdx, Autocomplete),
        each name 1-100 characters and a string value up to 100 (application-commands.mdx, choice)."""
        choices = data.get("choices")
        if not isinstance(choices, list):
            raise invalid_form_body(
                {"data": {"choices": field_error("BASE_TYPE_REQUIRED", "This field is required")}}
            )
        if len(choices) > MAX_CHOICES:
            raise invalid_form_body(
                {
                    "data": {
                        "choices": field_error(
                            "BASE_TYPE_MAX_LENGTH", f"Must be {MAX_CHOICES} or fewer in length."
                        )
                    }
                }
            )
        errors: dict[str, Any] = {}
        for index, choice in enumerate(choices):
            one: dict[str, Any] = {}
            if not isinstance(choice, dict):
                errors[str(index)] = field_error(
                    "DICT_TYPE_CONVERT", "Only dictionaries may be used in a DictType"
                )
                continue
            if not 1 <= len(str(choice.get("name", ""))) <= MAX_CHOICE_TEXT:
                one["name"] = field_error(
                    "BASE_TYPE_BAD_LENGTH", f"Must be between 1 and {MAX_CHOICE_TEXT} in length."
                )
            value = choice.get("value")
            if value is None:
                one["value"] = field_error("BASE_TYPE_REQUIRED", "This field is required")
            elif isinstance(value, str) and len(value) > MAX_CHOICE_TEXT:
                one["value"] = field_error(
                    "BASE_TYPE_MAX_LENGTH", f"Must be {MAX_CHOICE_TEXT} or fewer in length."
                )
            localized = choice.get("name_localizations") or {}
            if isinstance(localized, dict):
                bad = {
                    locale: field_error(
                        "BASE_TYPE_BAD_LENGTH",
                        f"Must be between 1 and {MAX_CHOICE_TEXT} in length.",
                    )
                    for locale, text in localized.items()
                    if not 1 <= len(str(text)) <= MAX_CHOICE_TEXT
                }
                if bad:
                    one["name_localizations"] = bad
            if one:
                errors[str(index)] = one
        if errors:
            raise invalid_form_body({"data": {"choices": errors}})

    @staticmethod
    def _check_modal(data: dict[str, Any]) -> None:
        """A modal: custom_id 1-100, title 1-45, 1 to 5 components
        (interactions/receiving-and-responding.mdx, Modal)."""
        errors: dict[str, Any] = {}
        custom_id = data.get("custom_id")
        if not custom_id:
            errors["custom_id"] = field_error("BASE_TYPE_REQUIRED", "This field is required")
        elif len(str(custom_id)) > 100:
            errors["custom_id"] = field_error(
                "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
            )
        if not 1 <= len(str(data.get("title") or "")) <= 45:
            errors["title"] = field_error(
                "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 45 in length."
            )
        if not 1 <= len(data.get("components") or []) <= 5:
            errors["components"] = field_error(
                "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 5 in length."
            )
        if errors:
            raise invalid_form_body({"data": errors})

    # webhook ------------------------------------------------------------------------

    def _result(self, request: RestRequest) -> InteractionResult:
        if request.snowflake("application_id") != self.fake.application_id:
            raise unknown("Webhook")
        result = self.fake.interactions_by_token.get(request.params["interaction_token"])
        if result is None or result.callback is None:
            raise unknown("Webhook")
        if time.monotonic() - result.sent_at > self.fake.interaction_token_lifetime:
            # "Interaction tokens are valid for 15 minutes" (interactions/receiving-and-responding.mdx).
            raise DiscordError(401, 50027, "Invalid Webhook Token")
        return result

    def _target(self, request: RestRequest, result: InteractionResult) -> Message:
        if "message_id" in request.params:
            message_id = request.snowflake("message_id")
            if message_id != result.original_message_id and message_id not in result.followup_ids:
                raise unknown("Message")
        else:
            if result.original_message_id is None:
                raise unknown("Message")
            message_id = result.original_message_id
        message = self.fake.state.messages.get(message_id)
        if message is None or message.deleted:
            raise unknown("Message")
        return message

    async def followup(self, request: RestRequest) -> Any:
        """POST /webhooks/{application_id}/{interaction_token}?wait=true."""
        fake = self.fake
        result = self._result(request)
        data = parse_message_input(request.json, request.parts)
        original = result.original
        if (
            original is not None
            and original.loading
            and result.callback_type == CALLBACK_DEFERRED_CHANNEL_MESSAGE
        ):
            message = self._finish_loading(original, data)
        else:
            channel = fake.state.channel(result.channel_id)
            flags = int(data.get("flags", 0))
            message = compose_message(
                fake,
                channel=channel,
                kind="followup",
                data=data,
                allowed_flags=INTERACTION_MESSAGE_FLAGS,
                ephemeral_files=bool(flags & MESSAGE_FLAG_EPHEMERAL),
            )
            message.webhook_id = fake.application_id
            message.application_id = fake.application_id
            message.interaction_id = result.id
            message.interaction_metadata = interaction_metadata(fake, result)
            fake.add_message(message)
            result.followup_ids.append(message.id)
        fake.notify()
        if request.flag("wait"):
            return fake.message_payload(message)
        return None

    def _finish_loading(self, original: Message, data: MessageInput) -> Message:
        """The first followup after a deferral becomes the original answer (ephemeral as deferred)."""
        return apply_edit(self.fake, original, data, clear_flags=MESSAGE_FLAG_LOADING)

    async def get_message(self, request: RestRequest) -> Any:
        """GET .../messages/@original or .../messages/{message_id}."""
        result = self._result(request)
        return self.fake.message_payload(self._target(request, result))

    async def edit_message(self, request: RestRequest) -> Any:
        """PATCH .../messages/@original or .../messages/{message_id} (JSON or multipart)."""
        result = self._result(request)
        message = self._target(request, result)
        data = parse_message_input(request.json, request.parts)
        if message.loading:
            edited = self._finish_loading(message, data)
        else:
            edited = apply_edit(self.fake, message, data)
        self.fake.notify()
        return self.fake.message_payload(edited)

    async def delete_message(self, request: RestRequest) -> Any:
        """DELETE .../messages/@original or .../messages/{message_id}."""
        result = self._result(request)
        self.fake.delete_message(self._target(request, result))
        return None
