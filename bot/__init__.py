"""Прокуратор: the bot process (startup, config, storage, languages, the game service)."""
