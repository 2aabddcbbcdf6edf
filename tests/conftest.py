"""Suite-wide pytest configuration: the fake Discord's plugin (strict answers, the schema-check
line), the storage backends' (``database``: each test on SQLite and on PostgreSQL) and the guard
that no test leaves an aiosqlite connection open (the process must exit)."""

pytest_plugins = ("tests.fakediscord.plugin", "tests.open_connections", "tests.storage.plugin")
