"""What every ``/channels/...`` route checks first: the bot's permissions in the channel, and
that it can see it (403 50001 without VIEW_CHANNEL, 403 50013 without a permission it needs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import (
    missing_access,
    missing_permissions,
)
from .models import (
    Channel,
)
from .permissions import ALL_PERMISSIONS, Permission
from .routing import RestRequest

if TYPE_CHECKING:
    from .server import FakeDiscord


class ChannelAccess:
    """The bot's access to a channel, for the channel routes (:mod:`.rest_channels`,
    :mod:`.rest_threads`)."""

    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake

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
