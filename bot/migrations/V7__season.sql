-- A season fits in a server (issue 19): a finished game's channels and roles are replaced, after a
-- delay, by one transcript posted in an archive channel the bot keeps per guild (cogs/season.py).
-- Nothing here changes an existing table.

-- the archive channel of each guild
CREATE TABLE season_channels (
    guild_id    INTEGER PRIMARY KEY,
    channel_id  INTEGER NOT NULL
);

-- one row per finished game whose channels are to be archived: due (waiting for its time),
-- posting (its transcript item is in the outbox), done (posted, its channels and roles deleted),
-- failed (Discord refused the transcript: the channels are kept)
CREATE TABLE transcripts (
    game_id     INTEGER PRIMARY KEY REFERENCES games (id),
    guild_id    INTEGER NOT NULL,
    due         REAL NOT NULL,
    state       TEXT NOT NULL DEFAULT 'due' CHECK (state IN ('due', 'posting', 'done', 'failed')),
    channel_id  INTEGER,
    message_id  INTEGER,
    failure     TEXT                        -- JSON of cogs.failures.Failure
);

CREATE INDEX transcripts_due ON transcripts (state, due);
