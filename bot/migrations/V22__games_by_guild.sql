-- A guild's games by their state (issue 29): the reconciler asks, as each of the process's
-- guilds becomes available, which of its finished games keep their channels. The only index
-- on games.guild_id is partial (open games), so each of those questions read the whole table:
-- ten thousand guilds beside a thousand games kept the database busy for seconds after every
-- start, and every command waited behind them.
CREATE INDEX games_by_guild ON games (guild_id, state);
