-- A player replaced mid-game (/host replace) stays in the game's record, as replaced: his row in
-- archive_players names who took his seat, and player_stats counts the games he left that way.
ALTER TABLE archive_players ADD COLUMN replaced_by TEXT;
ALTER TABLE player_stats ADD COLUMN replaced INTEGER NOT NULL DEFAULT 0;
