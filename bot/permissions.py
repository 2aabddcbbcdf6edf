"""The one permission list: what the bot allows or denies in its overwrites, and its invite.

Discord lets a bot that is not an administrator allow or deny in a channel
overwrite only permissions it holds itself, and never Manage Roles. So the
invite asks for exactly the bits that appear in any overwrite the bot writes
(:data:`OVERWRITE_BITS`) plus what its REST calls need (:data:`CALLS`), and
nothing needs Administrator. :func:`invite_url` is the link server admins
use; ``mafia-bot run`` logs it at startup and the README shows it.

Who gets which of these in a game's channels is decided in
:mod:`cogs.channels`: game roles (one per city for its living residents, its
quiet twin, one for the dead) carry the public part, member overwrites the
secret part (the mafia room) and the host.
"""

from __future__ import annotations

from urllib.parse import urlencode

import discord

P = discord.Permissions

#: reading a channel
READ = P(view_channel=True, read_message_history=True)
#: what a living player may do in a channel he writes in
WRITE = P(
    send_messages=True,
    add_reactions=True,
    attach_files=True,
    embed_links=True,
    send_voice_messages=True,
    use_application_commands=True,
    use_external_emojis=True,
)
#: everything the dead (and, once the game is over, everyone) may no longer do in a game channel,
#: voice channels' text chat included
SILENCE = P(
    send_messages=True,
    send_messages_in_threads=True,
    create_public_threads=True,
    create_private_threads=True,
    add_reactions=True,
    attach_files=True,
    embed_links=True,
    send_voice_messages=True,
    send_polls=True,
    use_application_commands=True,
    use_external_apps=True,
    use_external_emojis=True,
    speak=True,
    stream=True,
    use_soundboard=True,
    use_external_sounds=True,
    use_embedded_activities=True,
)
#: what the dead (and, once the game is over, everyone) may no longer do on the tribune: beyond
#: :data:`SILENCE`, set its status line or create an event in it
TRIBUNE_SILENCE = SILENCE | P(set_voice_channel_status=True, create_events=True)
#: a living player on the tribune: listen, speak, and write in its text chat
VOICE = (
    P(
        view_channel=True,
        read_message_history=True,
        connect=True,
        speak=True,
        use_voice_activation=True,
    )
    | WRITE
)
#: the dead on the tribune: listen only
LISTEN = P(view_channel=True, read_message_history=True, connect=True)
#: the host (and co-hosts) in every game channel
HOST = READ | WRITE | P(connect=True, speak=True, use_voice_activation=True)
#: the bot itself in every game channel (@everyone is denied View Channel there); it pings the
#: game's roles (not mentionable) in the welcome, so it needs Mention Everyone where it posts
BOT = READ | P(
    send_messages=True,
    embed_links=True,
    attach_files=True,
    send_voice_messages=True,
    mention_everyone=True,
    connect=True,
    speak=True,
    use_voice_activation=True,
)
#: what @everyone loses in every game channel
EVERYONE_DENY = P(view_channel=True, connect=True)

#: every bit the bot puts in an overwrite, allowed or denied
OVERWRITE_BITS = READ | WRITE | TRIBUNE_SILENCE | VOICE | LISTEN | HOST | BOT | EVERYONE_DENY

#: what the bot's own calls need beyond that: channels, game roles and their members, pinging
#: the game's (unmentionable) roles
CALLS = P(manage_channels=True, manage_roles=True, mention_everyone=True)

#: the invite: exactly what the bot asks a server for
INVITE = OVERWRITE_BITS | CALLS

#: server permissions that let a member see what overwrites hide (every hidden room) ...
SEES_HIDDEN = P(administrator=True)
#: ... or read who was let into a hidden room (the audit log)
READS_AUDIT_LOG = P(view_audit_log=True)

#: the scopes of the invite link
SCOPES = ("bot", "applications.commands")

#: Discord's own name of each permission bit the bot talks about (its API flag, lower case); the
#: catalogues name them ``permission.<flag>`` as Discord's client does in each language
FLAGS: dict[int, str] = {
    1 << 3: "administrator",
    1 << 4: "manage_channels",
    1 << 6: "add_reactions",
    1 << 7: "view_audit_log",
    1 << 9: "stream",
    1 << 10: "view_channel",
    1 << 11: "send_messages",
    1 << 14: "embed_links",
    1 << 15: "attach_files",
    1 << 16: "read_message_history",
    1 << 17: "mention_everyone",
    1 << 18: "use_external_emojis",
    1 << 20: "connect",
    1 << 21: "speak",
    1 << 25: "use_vad",
    1 << 28: "manage_roles",
    1 << 31: "use_application_commands",
    1 << 35: "create_public_threads",
    1 << 36: "create_private_threads",
    1 << 38: "send_messages_in_threads",
    1 << 39: "use_embedded_activities",
    1 << 42: "use_soundboard",
    1 << 44: "create_events",
    1 << 45: "use_external_sounds",
    1 << 46: "send_voice_messages",
    1 << 48: "set_voice_channel_status",
    1 << 49: "send_polls",
    1 << 50: "use_external_apps",
}


def bits(permissions: discord.Permissions | int) -> list[int]:
    """The single bits set in ``permissions``, lowest first."""
    value = permissions.value if isinstance(permissions, discord.Permissions) else permissions
    return [1 << index for index in range(value.bit_length()) if value >> index & 1]


def flag_names(permissions: discord.Permissions | int) -> list[str]:
    """Discord's flag names of the bits set, lowest first."""
    return [FLAGS.get(bit, str(bit)) for bit in bits(permissions)]


def invite_url(application_id: int) -> str:
    """The link that adds the bot to a server with :data:`INVITE`."""
    query = urlencode(
        {"client_id": application_id, "permissions": INVITE.value, "scope": " ".join(SCOPES)}
    )
    return f"https://discord.com/oauth2/authorize?{query}"


def missing(granted: discord.Permissions) -> list[str]:
    """The invite's permissions the bot lacks, as Discord's flag names in bit order."""
    if granted.administrator:
        return []
    return flag_names(INVITE.value & ~granted.value)
