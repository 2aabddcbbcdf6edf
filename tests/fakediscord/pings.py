"""Who Discord notifies for a new message: its mentions, as its ``allowed_mentions`` lets them.

Discord's rules (``resources/message.mdx``, Allowed Mentions Object, and
``topics/permissions.mdx``, MENTION_EVERYONE): without ``allowed_mentions``
every mention in the content is parsed; with it, a user mention pings only if
``parse`` has ``users`` or ``users`` lists him, a role mention only if
``parse`` has ``roles`` or ``roles`` lists it, ``@everyone``/``@here`` only if
``parse`` has ``everyone``. A role pings only if it is mentionable or the
author holds Mention @everyone, @here, and All Roles in the channel (so does
``@everyone``). Only members who can see the channel are notified. An edit
notifies nobody. Tests read the result as :attr:`Message.pinged`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .permissions import Permission

if TYPE_CHECKING:
    from .models import Channel
    from .state import DiscordState

_USER = re.compile(r"<@!?(\d+)>")
_ROLE = re.compile(r"<@&(\d+)>")


def pinged(
    state: DiscordState, channel: Channel, author_id: int, content: str, allowed: Any
) -> frozenset[int]:
    """The user ids a new message by ``author_id`` in ``channel`` notifies."""
    if channel.guild_id is None:
        return frozenset(int(m) for m in _USER.findall(content))
    guild = state.guild(channel.guild_id)
    parse = (
        {"users", "roles", "everyone"}
        if not isinstance(allowed, dict)
        else set(allowed.get("parse") or [])
    )
    users = (
        {int(u) for u in (allowed or {}).get("users") or []} if isinstance(allowed, dict) else set()
    )
    roles = (
        {int(r) for r in (allowed or {}).get("roles") or []} if isinstance(allowed, dict) else set()
    )
    mentions_all = bool(
        state.permissions_for(guild.id, channel.id, author_id) & Permission.MENTION_EVERYONE
    )
    wanted: set[int] = set()
    for user in (int(u) for u in _USER.findall(content)):
        if "users" in parse or user in users:
            wanted.add(user)
    for role_id in (int(r) for r in _ROLE.findall(content)):
        role = guild.roles.get(role_id)
        if role is None or not ("roles" in parse or role_id in roles):
            continue
        if role.mentionable or mentions_all:
            wanted.update(
                member_id for member_id, member in guild.members.items() if role_id in member.roles
            )
    if ("@everyone" in content or "@here" in content) and "everyone" in parse and mentions_all:
        wanted.update(guild.members)
    wanted.discard(author_id)
    return frozenset(
        user
        for user in wanted
        if user in guild.members
        and state.permissions_for(guild.id, channel.id, user) & Permission.VIEW_CHANNEL
    )
