"""The one permission list: what the bot allows or denies in its overwrites, and its invite.

Discord lets a bot that is not an administrator allow or deny in a channel
overwrite only permissions it holds itself, and never Manage Roles. So the
invite asks for exactly the bits that appear in any overwrite the bot writes
(:data:`OVERWRITE_BITS`) plus what its REST calls need (:data:`CALLS`), and
nothing needs Administrator. :func:`invite_url` is the link server admins
use; ``mafia-bot run`` prints it at startup and the README shows it.
"""

from __future__ import annotations

from urllib.parse import urlencode

import discord

P = discord.Permissions

#: reading a channel
READ = P(view_channel=True, read_message_history=True)
#: what a living player may do in a channel he writes in
WRITE = P(send_messages=True, add_reactions=True, attach_files=True, embed_links=True,
          send_voice_messages=True, use_application_commands=True, use_external_emojis=True)
#: everything the dead (and, once the game is over, everyone) may no longer do in a game channel,
#: voice channels' text chat included
SILENCE = P(send_messages=True, send_messages_in_threads=True, create_public_threads=True,
            create_private_threads=True, add_reactions=True, attach_files=True, embed_links=True,
            send_voice_messages=True, send_polls=True, use_application_commands=True,
            use_external_apps=True, use_external_emojis=True, speak=True, stream=True,
            use_soundboard=True, use_external_sounds=True, use_embedded_activities=True)
#: a living player on the tribune: listen, speak, and write in its text chat
VOICE = P(view_channel=True, read_message_history=True, connect=True, speak=True,
          use_voice_activation=True) | WRITE
#: the dead on the tribune: listen only
LISTEN = P(view_channel=True, read_message_history=True, connect=True)
#: the host (and co-hosts) in every game channel
HOST = READ | WRITE | P(connect=True, speak=True, use_voice_activation=True)
#: the bot itself in every game channel (@everyone is denied View Channel there)
BOT = READ | P(send_messages=True, embed_links=True, attach_files=True, send_voice_messages=True,
               mention_everyone=True, connect=True, speak=True, use_voice_activation=True)
#: what @everyone loses in every game channel
EVERYONE_DENY = P(view_channel=True, connect=True)

#: every bit the bot puts in an overwrite, allowed or denied
OVERWRITE_BITS = READ | WRITE | SILENCE | VOICE | LISTEN | HOST | BOT | EVERYONE_DENY

#: what the bot's own calls need beyond that: channels, game roles and their members, pinging
#: the game's (unmentionable) roles
CALLS = P(manage_channels=True, manage_roles=True, mention_everyone=True)

#: the invite: exactly what the bot asks a server for
INVITE = OVERWRITE_BITS | CALLS

#: the scopes of the invite link
SCOPES = ("bot", "applications.commands")


def invite_url(application_id: int) -> str:
    """The link that adds the bot to a server with :data:`INVITE`."""
    query = urlencode({"client_id": application_id, "permissions": INVITE.value,
                       "scope": " ".join(SCOPES)})
    return f"https://discord.com/oauth2/authorize?{query}"


def missing(granted: discord.Permissions) -> list[str]:
    """The invite's permissions the bot lacks (discord.py's flag names, in bit order)."""
    if granted.administrator:
        return []
    return [name for name, value in INVITE if value and not getattr(granted, name)]
