"""Suite-wide pytest configuration: the fake Discord's plugin (strict answers, schema-check line)."""

pytest_plugins = ["tests.fakediscord.plugin"]
