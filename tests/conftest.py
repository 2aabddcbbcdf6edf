"""Suite-wide pytest configuration: the fake Discord's plugin (strict answers, the schema-check
line) and the guard that no test leaves an aiosqlite connection open (the process must exit)."""

from tests.fakediscord.plugin import (  # noqa: F401
    fake_discord_answers_follow_the_spec,
    pytest_terminal_summary,
)
from tests.open_connections import (  # noqa: F401
    aiosqlite_connections_closed,
    pytest_sessionfinish,
    pytest_unconfigure,
)
