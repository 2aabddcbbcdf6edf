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
;

-- Scheduled games (issue 23): /mafia schedule stores the game to open here first ('creating'),
-- then the Discord event it made ('scheduled', event_id), and at starts_at the bot opens the lobby
-- in channel_id for host_id and pings the members interested in the event ('opened', game_id).
-- An event deleted or cancelled in Discord meanwhile opens nothing ('cancelled'), nor does one
-- whose server had a game open then ('skipped').

CREATE TABLE scheduled_games (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    guild_id    INTEGER NOT NULL,
    host_id     INTEGER NOT NULL,
    channel_id  INTEGER NOT NULL,
    title       TEXT NOT NULL,
    starts_at   REAL NOT NULL,
    event_id    INTEGER,
    game_id     INTEGER,
    state       TEXT NOT NULL,
    created_at  REAL NOT NULL
);

CREATE INDEX scheduled_games_due ON scheduled_games (state, starts_at)
