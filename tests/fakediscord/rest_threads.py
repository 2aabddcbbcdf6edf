"""REST routes of threads (starting one, its members) and of a channel's pins; the channel routes
(:class:`~.rest_channels.ChannelRoutes`) register them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import audit
from .errors import (
    DiscordError,
    field_error,
    invalid_form_body,
)
from .models import (
    Channel,
    ChannelType,
    Message,
)
from .permissions import Permission
from .rest_channel_access import ChannelAccess
from .routing import RestRequest, RestResponse
from .snowflake import iso_timestamp

if TYPE_CHECKING:
    pass


class ThreadRoutes(ChannelAccess):
    """The thread and pin routes of ``/channels/...``."""

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
