"""Running an in-process discord.py client against the fake, and stopping it cleanly."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator

import discord

from .pointing import point_discord_py_at
from .server import PATIENCE, FakeDiscord


@contextlib.asynccontextmanager
async def running_client(
    fake: FakeDiscord,
    client: discord.Client,
    *,
    ready_timeout: float = 30.0,
    guild_ready_timeout: float = 0.05,
) -> AsyncIterator[discord.Client]:
    """Starts ``client`` against ``fake``, yields it once it is ready, and closes it afterwards.

    ``ready_timeout`` only catches a client that never gets ready: parsing a big guild's
    GUILD_CREATE makes no call to wait on, and takes seconds on a loaded machine.
    ``guild_ready_timeout`` shortens discord.py's wait for more GUILD_CREATEs
    before ``on_ready`` (2 s by default). If the client fails to start (a bad
    token, a crash in ``setup_hook``) its exception is raised here, and an
    exception that ends the client while the test runs is raised on exit.
    """
    point_discord_py_at(fake.api_base, fake.gateway_url)
    client._connection.guild_ready_timeout = guild_ready_timeout
    task = asyncio.create_task(client.start(fake.token), name="fake-discord-client")
    try:
        loop = asyncio.get_running_loop()
        # As in FakeDiscord.wait_until: a slow start (a loaded machine) that is still making its
        # calls is waited for; one that stopped making any fails after ``ready_timeout``.
        started = loop.time()
        deadline, progress = started + ready_timeout, fake.progress()
        while not client.is_ready():
            if task.done():
                task.result()
                raise RuntimeError("the client stopped before it was ready")
            if fake.progress() != progress:
                progress = fake.progress()
                deadline = min(started + PATIENCE * ready_timeout, loop.time() + ready_timeout)
            if loop.time() > deadline:
                raise TimeoutError(f"the client was not ready within {ready_timeout} s")
            await asyncio.sleep(0.005)
        yield client
    finally:
        await client.close()
        done, _ = await asyncio.wait({task}, timeout=5.0)
        if not done:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        elif not task.cancelled():
            error = task.exception()
            if error is not None and sys.exc_info()[1] is None:
                raise error
