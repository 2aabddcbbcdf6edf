"""Fixtures of the fake Discord's own tests."""

from tests.fakediscord.fixtures import fake_discord, fake_guild  # noqa: F401
