"""Suite-wide pytest configuration: the fake Discord's plugin (strict answers, the schema-check line)."""

from tests.fakediscord.plugin import (  # noqa: F401
    fake_discord_answers_follow_the_spec,
    pytest_terminal_summary,
)
