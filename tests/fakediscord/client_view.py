"""What one member's Discord client would receive about a guild, for secrecy tests.

``fake.client_view(user_id)`` collects, as of now, everything Discord would
let that member's client know:

- ``channels``: every channel of the guild as his gateway gets it: in full
  where he can view it (View Channel, or connected to it), obfuscated
  elsewhere (name ``___hidden___``, flag CHANNEL_OBFUSCATED, one @everyone
  overwrite denying View Channel: developers/resources/channel.mdx, Obfuscated
  Channels); a category is viewable when one of its channels is;
- ``threads``: the threads he can see (a public one in a channel he views, a
  private one he is in or, with Manage Threads, any);
- ``roles``, each with the ids of its ``members``, and ``members``: the member
  list, roles included (role membership is public on Discord);
- ``audit_log``: the guild's audit log entries with their reasons, when he has
  View Audit Log (or Administrator), else nothing;
- ``messages``: the messages he can read: in channels and threads he views with
  Read Message History, the ephemeral answers to his own interactions, and
  his DMs with the bot.

Members with Administrator bypass every overwrite and see everything, as on
Discord. :meth:`ClientView.dump` gives all of it as one JSON text, for
"does anything name X" checks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .permissions import ALL_PERMISSIONS, Permission

if TYPE_CHECKING:
    from .world import World


@dataclass
class ClientView:
    """Everything one member's client receives about a guild (see the module docstring)."""

    user_id: int
    guild_id: int
    administrator: bool
    """Whether his server permissions bypass overwrites (he sees every hidden channel)."""
    can_read_audit_log: bool
    channels: list[dict[str, Any]] = field(default_factory=list)
    threads: list[dict[str, Any]] = field(default_factory=list)
    roles: list[dict[str, Any]] = field(default_factory=list)
    members: list[dict[str, Any]] = field(default_factory=list)
    audit_log: list[dict[str, Any]] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)

    def channel(self, channel_id: int) -> dict[str, Any] | None:
        """The channel object he got for a channel id (None if the guild has no such channel)."""
        for channel in self.channels:
            if channel["id"] == str(channel_id):
                return channel
        return None

    def sees(self, channel_id: int) -> bool:
        """Whether he gets the channel in full (not obfuscated)."""
        channel = self.channel(channel_id)
        return channel is not None and not int(channel.get("flags") or 0) & (1 << 17)

    def role_members(self, role_id: int) -> list[str]:
        """The member ids he is shown holding a role."""
        for role in self.roles:
            if role["id"] == str(role_id):
                return list(role["members"])
        return []

    def dump(self) -> str:
        """All of it as one JSON text."""
        return json.dumps(
            {
                "channels": self.channels,
                "threads": self.threads,
                "roles": self.roles,
                "members": self.members,
                "audit_log": self.audit_log,
                "messages": self.messages,
            },
            ensure_ascii=False,
            sort_keys=True,
        )

    def contains(self, text: str) -> bool:
        """Whether ``text`` appears anywhere in what he receives."""
        return text in self.dump() or json.dumps(text, ensure_ascii=False)[1:-1] in self.dump()


def build_client_view(world: World, user_id: int, guild_id: int) -> ClientView:
    """The :class:`ClientView` of a member, as of now."""
    state = world.state
    guild = state.guild(guild_id)
    state.member(guild_id, user_id)
    guild_permissions = state.guild_permissions(guild_id, user_id)
    view = ClientView(
        user_id=user_id,
        guild_id=guild_id,
        administrator=guild_permissions == ALL_PERMISSIONS,
        can_read_audit_log=bool(guild_permissions & Permission.VIEW_AUDIT_LOG),
    )
    readable: set[int] = set()
    for channel in state.guild_channels(guild_id):
        view.channels.append(world.channel_seen_by(channel, user_id))
        if _reads(world, guild_id, channel.id, user_id) and state.can_view(
            guild_id, channel, user_id
        ):
            readable.add(channel.id)
    for thread in state.guild_threads(guild_id):
        if state.can_view(guild_id, thread, user_id):
            view.threads.append(thread.to_payload())
            if _reads(world, guild_id, thread.id, user_id):
                readable.add(thread.id)
    holders: dict[int, list[str]] = {role_id: [] for role_id in guild.roles}
    for member in guild.members.values():
        view.members.append(member.to_payload())
        for role_id in member.roles:
            holders.setdefault(role_id, []).append(str(member.id))
    for role in sorted(guild.roles.values(), key=lambda r: r.position):
        members = (
            [str(m.id) for m in guild.members.values()]
            if role.is_everyone
            else holders.get(role.id, [])
        )
        view.roles.append({**role.to_payload(), "members": members})
    if view.can_read_audit_log:
        view.audit_log = [entry.to_payload() for entry in world.audit_log.of_guild(guild_id)]
    dm = state.dm_channel(user_id)
    for message in state.messages.values():
        if message.deleted:
            continue
        if message.ephemeral:
            if (message.interaction_metadata or {}).get("user", {}).get("id") == str(user_id):
                view.messages.append(world.message_payload(message))
        elif message.channel_id in readable or (dm is not None and message.channel_id == dm.id):
            view.messages.append(world.message_payload(message))
    return view


def _reads(world: World, guild_id: int, channel_id: int, user_id: int) -> bool:
    permissions = world.state.permissions_for(guild_id, channel_id, user_id)
    return bool(
        permissions & Permission.VIEW_CHANNEL and permissions & Permission.READ_MESSAGE_HISTORY
    )
