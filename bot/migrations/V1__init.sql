-- Guild settings, games with their command log, snapshots, and the outbox.

CREATE TABLE guild_settings (
    guild_id      INTEGER PRIMARY KEY,
    language      TEXT NOT NULL,
    host_role_id  INTEGER
);

CREATE TABLE games (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    guild_id        INTEGER NOT NULL,
    host_id         INTEGER NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('lobby', 'running', 'over', 'cancelled')),
    created_at      REAL NOT NULL,
    lobby           TEXT NOT NULL,              -- JSON: players, cities, roles, options, timers
    setup           TEXT,                       -- JSON of rules.Setup once dealt
    seed            INTEGER,
    channels        TEXT NOT NULL DEFAULT '{}', -- JSON: the game's Discord channels
    deadline        REAL,                       -- unix time when the current stage ends by timer
    deadline_stage  TEXT,                       -- the stage that deadline belongs to, e.g. 'day 1 voting'
    reminders_sent  TEXT NOT NULL DEFAULT '[]', -- JSON: reminder offsets already announced for it
    command_count   INTEGER NOT NULL DEFAULT 0
);

-- one open (lobby or running) game per guild
CREATE UNIQUE INDEX games_one_open_per_guild ON games (guild_id)
    WHERE state IN ('lobby', 'running');

CREATE TABLE commands (
    game_id         INTEGER NOT NULL REFERENCES games (id),
    seq             INTEGER NOT NULL,
    command         TEXT NOT NULL,              -- JSON of rules.command_to_dict
    interaction_id  INTEGER,
    source          TEXT NOT NULL,              -- player, host or timer
    created_at      REAL NOT NULL,
    PRIMARY KEY (game_id, seq)
);

-- an interaction is applied once: Discord may deliver it twice
CREATE UNIQUE INDEX commands_interaction ON commands (interaction_id)
    WHERE interaction_id IS NOT NULL;

CREATE TABLE snapshots (
    game_id  INTEGER NOT NULL REFERENCES games (id),
    seq      INTEGER NOT NULL,                  -- commands applied in this state
    state    TEXT NOT NULL,                     -- JSON of rules.Game.to_dict
    PRIMARY KEY (game_id, seq)
);

-- other interactions that changed something (lobby, settings), applied once as well
CREATE TABLE interactions (
    id          INTEGER PRIMARY KEY,
    game_id     INTEGER,
    created_at  REAL NOT NULL
);

CREATE TABLE outbox (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    game_id     INTEGER NOT NULL REFERENCES games (id),
    seq         INTEGER,                        -- the command that produced it, if any
    kind        TEXT NOT NULL,                  -- send, edit, overwrite, voice, ...
    target      TEXT NOT NULL,                  -- JSON: where it goes
    payload     TEXT NOT NULL,                  -- JSON: what is sent
    state       TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed')),
    attempts    INTEGER NOT NULL DEFAULT 0,
    last_error  TEXT,
    message_id  INTEGER,
    created_at  REAL NOT NULL,
    sent_at     REAL
);

CREATE INDEX outbox_pending ON outbox (state, game_id, id);

-- messages the bot edits later (the lobby, ballots), by a name of the game's choosing
CREATE TABLE message_refs (
    game_id     INTEGER NOT NULL REFERENCES games (id),
    ref         TEXT NOT NULL,
    channel_id  INTEGER NOT NULL,
    message_id  INTEGER NOT NULL,
    PRIMARY KEY (game_id, ref)
);

-- small facts about the process, e.g. the hash of the last synced command tree
CREATE TABLE meta (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);
