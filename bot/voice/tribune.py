"""The bot's connection to a game's tribune voice channel, where last words are recorded.

One connection per guild (discord.py's ``guild.voice_client``): a
:class:`~bot.voice.receiver.ReceivingVoiceClient` already in the tribune with
its link alive is used again; any other is dropped first and a fresh one made,
muted (the bot only listens). Each receiver stamps the audio it gets with the
clock it is given (a test drives a simulated one).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import discord

from bot.voice.receiver import ReceivingVoiceClient

__all__ = ["join", "leave"]


async def leave(client: discord.Client, guild_id: int) -> None:
    """Leave the tribune (a failed connection is dropped, the next one starts afresh)."""
    guild = client.get_guild(guild_id)
    voice = guild.voice_client if guild is not None else None
    if voice is not None:
        with contextlib.suppress(Exception):
            await voice.disconnect(force=True)


async def join(
    client: discord.Client,
    guild_id: int,
    channel_id: int,
    *,
    clock: Callable[[], float],
    timeout: float,
    fresh: bool = False,
) -> ReceivingVoiceClient:
    """The bot in the tribune ``channel_id``: the connection it has there, or a new one
    (``fresh``: a new one in any case, the dropped one given up first).

    Raises:
        ConnectionError: the tribune is gone.
    """
    if fresh:
        await _give_up(client, guild_id)
    guild = client.get_guild(guild_id)
    channel = guild.get_channel(channel_id) if guild else None
    if guild is None or not isinstance(channel, discord.VoiceChannel):
        raise ConnectionError("the tribune voice channel is gone")
    voice = guild.voice_client
    if isinstance(voice, ReceivingVoiceClient) and voice.channel == channel and voice.link_alive():
        voice.receiver.clock = clock
        return voice
    if voice is not None:
        await leave(client, guild.id)
    made = await channel.connect(
        cls=ReceivingVoiceClient, timeout=timeout, reconnect=False, self_mute=True
    )
    assert isinstance(made, ReceivingVoiceClient)
    made.receiver.clock = clock
    return made


async def _give_up(client: discord.Client, guild_id: int) -> None:
    """The dropped connection given up (its receiver abandoned), or any other one left."""
    guild = client.get_guild(guild_id)
    old = guild.voice_client if guild is not None else None
    if isinstance(old, ReceivingVoiceClient):
        await old.abandon()
    elif guild is not None:
        await leave(client, guild.id)
