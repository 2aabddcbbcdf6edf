"""Suite-wide pytest configuration: the fake Discord's plugin (strict answers, the schema-check
line), the storage backends' (``database``: each test on SQLite and on PostgreSQL) and the guard
that no test leaves an aiosqlite connection open (the process must exit)."""

from tests.fakediscord.plugin import (  # noqa: F401
    fake_discord_answers_follow_the_spec,
    pytest_terminal_summary,
)
from tests.open_connections import (  # noqa: F401
    aiosqlite_connections_closed,
    pytest_sessionfinish,
    pytest_unconfigure,
)

pytest_plugins = ("tests.storage.plugin",)
