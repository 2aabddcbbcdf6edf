-- A server's own presets of house rules (issue 23): /host preset save stores the lobby's settings
-- under a name, /host setup preset:NAME sets a lobby from them (bot/presets.py holds what a
-- preset is). settings is a JSON object, and the name is unique per guild, as the host typed it
-- (name_key, its casefold, is what is compared).

CREATE TABLE guild_presets (
    guild_id  INTEGER NOT NULL,
    name_key  TEXT NOT NULL,
    name      TEXT NOT NULL,
    settings  TEXT NOT NULL,
    saved_by  INTEGER NOT NULL,
    saved_at  REAL NOT NULL,
    PRIMARY KEY (guild_id, name_key)
)
