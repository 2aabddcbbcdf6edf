"""Where discord.py connects: Discord itself, or a local fake Discord in tests.

``DISCORD_API_BASE`` (e.g. ``http://127.0.0.1:8080/api/v10``) and
``DISCORD_GATEWAY_URL`` (e.g. ``ws://127.0.0.1:8080/gateway``) point the
unmodified discord.py at another server; unset, it talks to Discord.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import discord
import yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route


def point_at(api_base: str | None = None, gateway_url: str | None = None) -> None:
    """Point discord.py's REST and gateway at the given URLs (None leaves one as it is)."""
    if api_base:
        Route.BASE = api_base.rstrip("/")
    if gateway_url:
        DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)


def point_from_environment(environ: Mapping[str, str] | None = None) -> bool:
    """Apply ``DISCORD_API_BASE``/``DISCORD_GATEWAY_URL`` if set; True if anything changed."""
    environ = os.environ if environ is None else environ
    api_base = environ.get("DISCORD_API_BASE")
    gateway = environ.get("DISCORD_GATEWAY_URL")
    point_at(api_base, gateway)
    return bool(api_base or gateway)


__all__ = ["discord", "point_at", "point_from_environment"]
