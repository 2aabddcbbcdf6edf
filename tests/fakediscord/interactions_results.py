"""Following the bot's answers to an interaction: its callback (the types Discord defines) and
what the member sees of it, original and followups (re-exported by :mod:`.interactions`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .models import (
    MESSAGE_FLAG_EPHEMERAL,
    Message,
)
from .recording import MultipartPart
from .snowflake import snowflake_time

if TYPE_CHECKING:
    from .driving import Driving

CALLBACK_PONG = 1
CALLBACK_CHANNEL_MESSAGE = 4
CALLBACK_DEFERRED_CHANNEL_MESSAGE = 5
CALLBACK_DEFERRED_UPDATE_MESSAGE = 6
CALLBACK_UPDATE_MESSAGE = 7
CALLBACK_AUTOCOMPLETE_RESULT = 8
CALLBACK_MODAL = 9


@dataclass
class Callback:
    """One ``POST /interactions/{id}/{token}/callback`` the bot made (accepted or not)."""

    type: int
    data: dict[str, Any]
    status: int
    time: float
    files: list[MultipartPart] = field(default_factory=list)
    error_code: int | None = None


class InteractionResult:
    """An interaction the fake sent, and everything the bot answered to it.

    ``callback`` is the accepted initial response; ``original`` the message it
    created or updated (a deferred answer is "loading" until the bot edits
    it or sends its first followup, which Discord turns into an edit of the
    original); ``followups`` the later webhook messages.
    """

    def __init__(self, fake: Driving, payload: dict[str, Any]) -> None:
        self.fake = fake
        self.payload = payload
        self.id = int(payload["id"])
        self.token = str(payload["token"])
        self.type = int(payload["type"])
        self.guild_id = int(payload["guild_id"]) if payload.get("guild_id") else None
        self.channel_id = int(payload["channel_id"])
        user = payload["member"]["user"] if "member" in payload else payload["user"]
        self.user_id = int(user["id"])
        # Discord's 3 s run from when it created the interaction (its snowflake's time): one the
        # gateway delivers late has that much less left (a snowflake from the future, none less)
        created = snowflake_time(self.id).timestamp()
        self.sent_at = time.monotonic() - max(0.0, time.time() - created)
        """When Discord created it, on the monotonic clock (its deadlines count from there)."""
        self.deliveries = 1
        self.callback: Callback | None = None
        self.attempts: list[Callback] = []
        """Every callback request, including refused ones (a second acknowledgement, a late one)."""
        self.original_message_id: int | None = None
        self.followup_ids: list[int] = []
        message = payload.get("message")
        self.source_message_id = int(message["id"]) if message else None
        self.triggered_by: InteractionResult | None = None
        """For a modal submission: the interaction whose answer opened the modal."""

    def __repr__(self) -> str:
        return f"<InteractionResult id={self.id} type={self.type} callback={self.callback_type}>"

    # reading ------------------------------------------------------------------------

    @property
    def callback_type(self) -> int | None:
        """The accepted callback's type (4 message, 5 deferred, 6 deferred update, 7 update, 8 choices, 9 modal)."""
        return self.callback.type if self.callback is not None else None

    @property
    def deferred(self) -> bool:
        """Whether the bot first answered with a deferral (type 5 or 6)."""
        return self.callback_type in (
            CALLBACK_DEFERRED_CHANNEL_MESSAGE,
            CALLBACK_DEFERRED_UPDATE_MESSAGE,
        )

    @property
    def original(self) -> Message | None:
        """The interaction's original message as it is now (None if there is none or it was deleted)."""
        if self.original_message_id is None:
            return None
        message = self.fake.state.messages.get(self.original_message_id)
        return None if message is None or message.deleted else message

    @property
    def followups(self) -> list[Message]:
        """Followup messages still standing, oldest first."""
        messages = [self.fake.state.messages.get(message_id) for message_id in self.followup_ids]
        return [m for m in messages if m is not None and not m.deleted]

    @property
    def messages(self) -> list[Message]:
        """The original message (if any) followed by the followups."""
        original = self.original
        return ([original] if original is not None else []) + self.followups

    @property
    def content(self) -> str:
        """The original message's content (or the callback's, when it created no message)."""
        original = self.original
        if original is not None:
            return original.content
        if self.callback is not None:
            return str(self.callback.data.get("content") or "")
        return ""

    @property
    def embeds(self) -> list[dict[str, Any]]:
        """The original message's embeds."""
        original = self.original
        if original is not None:
            return original.embeds
        return list(self.callback.data.get("embeds") or []) if self.callback is not None else []

    @property
    def components(self) -> list[dict[str, Any]]:
        """The original message's components."""
        original = self.original
        if original is not None:
            return original.components
        return list(self.callback.data.get("components") or []) if self.callback is not None else []

    @property
    def flags(self) -> int:
        """The original message's flags."""
        original = self.original
        if original is not None:
            return original.flags
        return int(self.callback.data.get("flags") or 0) if self.callback is not None else 0

    @property
    def ephemeral(self) -> bool:
        """Whether the answer is visible to the invoking user only."""
        return bool(self.flags & MESSAGE_FLAG_EPHEMERAL)

    @property
    def text(self) -> str:
        """All readable text of the original message (content, embeds, labels)."""
        original = self.original
        return original.text if original is not None else self.content

    @property
    def choices(self) -> list[dict[str, Any]]:
        """Autocomplete choices (callback type 8)."""
        if self.callback is None or self.callback.type != CALLBACK_AUTOCOMPLETE_RESULT:
            return []
        return list(self.callback.data.get("choices") or [])

    @property
    def modal(self) -> dict[str, Any] | None:
        """The modal the bot opened (callback type 9): ``custom_id``, ``title``, ``components``."""
        if self.callback is None or self.callback.type != CALLBACK_MODAL:
            return None
        return self.callback.data

    # waiting ------------------------------------------------------------------------

    async def wait_callback(self, timeout: float = 5.0) -> Callback:
        """Waits for the bot's accepted initial response."""
        return await self.fake.wait_until(
            lambda: self.callback,
            timeout,
            f"no callback for interaction {self.id} ({self.describe()})",
        )

    async def wait_answered(self, timeout: float = 5.0) -> None:
        """Waits until the bot acknowledged the interaction or a callback of its was refused
        (then ``callback`` is None and ``attempts`` says why)."""
        await self.fake.wait_until(
            lambda: self.callback is not None or bool(self.attempts),
            timeout,
            f"the bot did not answer interaction {self.id} ({self.describe()})",
        )

    async def wait_final(self, timeout: float = 5.0) -> None:
        """Waits for the bot's answer as the user ends up reading it: the initial response, and
        when that was a deferral ("thinking…") the edit that replaces it. A command the
        bot deferred is applied after its deferral, so a test that goes on before the edit may
        look at a game the command has not changed yet."""
        await self.wait_callback(timeout)
        if self.deferred:
            await self.wait_original(timeout)

    async def wait_original(self, timeout: float = 5.0) -> Message:
        """Waits until the original message exists and is no longer "thinking"."""
        await self.wait_callback(timeout)

        def finished() -> Message | None:
            original = self.original
            return original if original is not None and not original.loading else None

        return await self.fake.wait_until(
            finished,
            timeout,
            f"the original answer of interaction {self.id} never finished ({self.describe()})",
        )

    async def wait_followups(self, count: int = 1, timeout: float = 5.0) -> list[Message]:
        """Waits until at least ``count`` followup messages exist."""
        return await self.fake.wait_until(
            lambda: self.followups if len(self.followups) >= count else None,
            timeout,
            f"interaction {self.id} got {len(self.followups)} followups, wanted {count}",
        )

    def describe(self) -> str:
        """What happened so far, for failure messages."""
        parts = [f"type {self.type}", f"{len(self.attempts)} callback attempt(s)"]
        parts.extend(
            f"callback type {a.type} -> {a.status}"
            + (f" (code {a.error_code})" if a.error_code else "")
            for a in self.attempts
        )
        return ", ".join(parts)
