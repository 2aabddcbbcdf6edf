-- A guild's scheduled games (issue 29): /mafia status and /help name the next one, and asked
-- for every scheduled game of the process's shards to pick the guild's, on every command.
CREATE INDEX scheduled_games_by_guild ON scheduled_games (guild_id, state, starts_at)
