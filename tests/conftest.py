"""Suite-wide pytest configuration: the fake Discord's plugin (strict answers, the schema-check
line) and the storage backends' (``database``: each test on SQLite and on PostgreSQL)."""

from tests.fakediscord.plugin import (  # noqa: F401
    fake_discord_answers_follow_the_spec,
    pytest_terminal_summary,
)

pytest_plugins = ("tests.storage.plugin",)
