-- Durable provisioning: a lobby being started ('starting'), outbox lanes, ping preferences.

-- games: the state 'starting' (dealt, its channels and roles being made). SQLite cannot change a
-- CHECK constraint, so the table is rebuilt (foreign keys are off while migrations run).
-- PostgreSQL changes the constraint in place (its foreign keys would not let the table go).
-- sqlite only
CREATE TABLE games_v2 (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    guild_id        INTEGER NOT NULL,
    host_id         INTEGER NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('lobby', 'starting', 'running', 'over', 'cancelled')),
    created_at      REAL NOT NULL,
    lobby           TEXT NOT NULL,
    setup           TEXT,
    seed            INTEGER,
    channels        TEXT NOT NULL DEFAULT '{}',
    deadline        REAL,
    deadline_stage  TEXT,
    reminders_sent  TEXT NOT NULL DEFAULT '[]',
    command_count   INTEGER NOT NULL DEFAULT 0
);

-- sqlite only
INSERT INTO games_v2 (id, guild_id, host_id, state, created_at, lobby, setup, seed, channels,
                      deadline, deadline_stage, reminders_sent, command_count)
    SELECT id, guild_id, host_id, state, created_at, lobby, setup, seed, channels,
           deadline, deadline_stage, reminders_sent, command_count FROM games;

-- sqlite only
DROP TABLE games;

-- sqlite only
ALTER TABLE games_v2 RENAME TO games;

-- postgresql only
ALTER TABLE games DROP CONSTRAINT games_state_check;

-- postgresql only
ALTER TABLE games ADD CONSTRAINT games_state_check
    CHECK (state IN ('lobby', 'starting', 'running', 'over', 'cancelled'));

-- postgresql only
DROP INDEX games_one_open_per_guild;

-- one open (lobby, starting or running) game per guild
CREATE UNIQUE INDEX games_one_open_per_guild ON games (guild_id)
    WHERE state IN ('lobby', 'starting', 'running');

-- the outbox's lanes, each carried out in order on its own: 'provision' (a game's roles and
-- channels being made or removed), 'permissions' (overwrites, game roles of members),
-- 'messages' (posts, edits, voice messages, deleting channels at the end)
ALTER TABLE outbox ADD COLUMN lane TEXT NOT NULL DEFAULT 'messages';

UPDATE outbox SET lane = 'permissions' WHERE kind = 'overwrite';

DROP INDEX outbox_pending;

CREATE INDEX outbox_pending ON outbox (state, game_id, lane, id);

-- a player's own settings, whatever the guild: whether the game's roles may ping him
CREATE TABLE user_settings (
    user_id  INTEGER PRIMARY KEY,
    pings    INTEGER NOT NULL DEFAULT 1
);
