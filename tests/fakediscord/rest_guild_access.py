"""What the guild routes check of the bot: its permissions, and that the role or member it acts on
is below its highest role (403 50013 otherwise)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import missing_permissions

if TYPE_CHECKING:
    from .server import FakeDiscord


class GuildAccess:
    """The bot's standing in a guild, for the guild routes (:mod:`.rest_guilds`,
    :mod:`.rest_members`)."""

    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake

    # helpers ------------------------------------------------------------------------

    def _bot_can(self, guild_id: int, permission: int, channel_id: int | None = None) -> None:
        bot_id = self.fake.bot_user.id
        if not self.fake.state.permissions_for(guild_id, channel_id, bot_id) & permission:
            raise missing_permissions()

    def _check_role_below_bot(self, guild_id: int, role_id: int) -> None:
        state = self.fake.state
        guild = state.guild(guild_id)
        if guild.owner_id == self.fake.bot_user.id:
            return
        role = state.role(guild_id, role_id)
        if role.position >= state.highest_role_position(guild_id, self.fake.bot_user.id):
            raise missing_permissions()

    def _outranks_bot(self, guild_id: int, user_id: int) -> bool:
        """Whether the member is the owner or has a role at least as high as the bot's highest."""
        state = self.fake.state
        if state.guild(guild_id).owner_id == user_id:
            return True
        bot_top = state.highest_role_position(guild_id, self.fake.bot_user.id)
        return state.highest_role_position(guild_id, user_id) >= bot_top
