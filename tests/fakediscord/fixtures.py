"""Pytest fixtures: a started fake Discord with one ready-made guild.

Use them from a ``conftest.py``::

    from tests.fakediscord.fixtures import fake_discord, fake_guild  # noqa: F401

``fake_guild`` gives the :class:`StandardGuild` (the fake and the objects in
it); ``fake_discord`` gives the same fake directly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

import pytest_asyncio

from .models import Channel, ChannelType, Guild, Member
from .permissions import DEFAULT_BOT_PERMISSIONS, DEFAULT_EVERYONE_PERMISSIONS
from .server import FakeDiscord

DEFAULT_PLAYERS = ("alice", "boris", "vera", "gleb", "dasha")


@dataclass
class StandardGuild:
    """One guild with an owner, a few members, a text and a voice channel."""

    fake: FakeDiscord
    guild: Guild
    owner: Member
    players: list[Member]
    text_channel: Channel
    voice_channel: Channel

    def player(self, username: str) -> Member:
        """A player by username."""
        for member in self.players:
            if member.user.username == username:
                return member
        raise LookupError(f"no player {username!r}")


def build_standard_guild(
    fake: FakeDiscord,
    *,
    players: Sequence[str] = DEFAULT_PLAYERS,
    preferred_locale: str = "ru",
    bot_permissions: int = DEFAULT_BOT_PERMISSIONS,
    everyone_permissions: int = DEFAULT_EVERYONE_PERMISSIONS,
) -> StandardGuild:
    """Creates the standard guild in ``fake`` (before or after it started).

    ``everyone_permissions=0`` strips @everyone of every permission: what members
    may then do comes from roles and overwrites alone.
    """
    owner_user = fake.create_user("host", global_name="Host")
    guild = fake.create_guild(
        "Mafia Club",
        owner=owner_user,
        preferred_locale=preferred_locale,
        bot_permissions=bot_permissions,
        everyone_permissions=everyone_permissions,
    )
    text_channel = fake.create_channel(guild.id, "general", ChannelType.GUILD_TEXT)
    voice_channel = fake.create_channel(guild.id, "Voice", ChannelType.GUILD_VOICE)
    members = [fake.add_member(guild.id, name) for name in players]
    return StandardGuild(
        fake=fake,
        guild=guild,
        owner=guild.members[owner_user.id],
        players=members,
        text_channel=text_channel,
        voice_channel=voice_channel,
    )


@pytest_asyncio.fixture
async def fake_guild() -> AsyncIterator[StandardGuild]:
    """A started :class:`FakeDiscord` holding the standard guild (locale ``ru``)."""
    fake = FakeDiscord()
    world = build_standard_guild(fake)
    await fake.start()
    try:
        yield world
    finally:
        await fake.close()


@pytest_asyncio.fixture
async def fake_discord(fake_guild: StandardGuild) -> FakeDiscord:
    """The started fake of :func:`fake_guild`."""
    return fake_guild.fake
