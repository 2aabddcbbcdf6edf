"""Pointing the real, unmodified discord.py at a fake Discord (in this process)."""

from __future__ import annotations

import discord.gateway
import discord.http
import yarl


def point_discord_py_at(api_base: str, gateway_url: str) -> None:
    """Makes every discord.py client in this process talk to the given REST base and gateway.

    ``api_base`` is like ``http://127.0.0.1:PORT/api/v10`` (REST and the
    interaction webhooks both read ``discord.http.Route.BASE``);
    ``gateway_url`` like ``ws://127.0.0.1:PORT/gateway``. These are
    process-wide class attributes, so the last call wins.
    """
    discord.http.Route.BASE = api_base
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)
