-- The archive of finished games and the per-player figures computed from it (issue 12).
-- bot/archive.py writes one game's archive in one transaction, keyed by game id: writing it
-- again changes nothing. Nothing here changes an existing table. Games finished before this
-- migration are listed in archive_backfill and archived at the next start (nothing posted).

CREATE TABLE archive (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT, -- the order of archiving: ratings follow it
    game_id     INTEGER NOT NULL UNIQUE REFERENCES games (id),
    guild_id    INTEGER NOT NULL,
    host_id     INTEGER NOT NULL,
    ended       TEXT NOT NULL CHECK (ended IN ('over', 'cancelled')),
    created_at  REAL NOT NULL,
    ended_at    REAL NOT NULL,
    seed        INTEGER NOT NULL,
    setup       TEXT NOT NULL,              -- JSON of rules.Setup: cities, residents, statuses, rules
    names       TEXT NOT NULL,              -- JSON: player id -> display name in the lobby
    log         TEXT NOT NULL,              -- JSON: [[command, source], ...], the whole command log
    winners     TEXT NOT NULL,              -- JSON list: City:honest, City:mafia, maniac
    last_phase  TEXT NOT NULL,              -- where the game stopped, e.g. night 3
    players     INTEGER NOT NULL,
    cities      TEXT NOT NULL               -- JSON list of the city names, in order
);

CREATE INDEX archive_by_guild ON archive (guild_id, seq);

CREATE TABLE archive_deaths (
    game_id  INTEGER NOT NULL REFERENCES archive (game_id),
    ordinal  INTEGER NOT NULL,
    player   TEXT NOT NULL,
    city     TEXT NOT NULL,
    status   TEXT NOT NULL,
    cause    TEXT NOT NULL,
    phase    TEXT NOT NULL,
    by_city  TEXT,                          -- the city that executed him
    PRIMARY KEY (game_id, ordinal)
);

-- the votes each city counted at the end of each day: voter -> candidate
CREATE TABLE archive_votes (
    game_id    INTEGER NOT NULL REFERENCES archive (game_id),
    day        INTEGER NOT NULL,
    city       TEXT NOT NULL,
    voter      TEXT NOT NULL,
    candidate  TEXT NOT NULL,
    PRIMARY KEY (game_id, day, voter)
);

-- last words: the command that gave it and the outbox item that posts the recording, if any
CREATE TABLE archive_last_words (
    game_id    INTEGER NOT NULL REFERENCES archive (game_id),
    seq        INTEGER NOT NULL,
    player     TEXT NOT NULL,
    phase      TEXT NOT NULL,
    outbox_id  INTEGER,
    path       TEXT,
    duration   REAL,
    PRIMARY KEY (game_id, seq)
);

CREATE TABLE archive_players (
    game_id      INTEGER NOT NULL REFERENCES archive (game_id),
    guild_id     INTEGER NOT NULL,
    player       TEXT NOT NULL,
    name         TEXT NOT NULL,
    city         TEXT NOT NULL,
    status       TEXT NOT NULL,
    side         TEXT NOT NULL CHECK (side IN ('honest', 'mafia', 'maniac')),
    won          INTEGER NOT NULL,
    survived     INTEGER NOT NULL,
    executed     INTEGER NOT NULL,
    votes        INTEGER NOT NULL,          -- days his vote was counted
    votes_mafia  INTEGER NOT NULL,          -- of them, for a mafioso
    checks       INTEGER NOT NULL,          -- commissar: checks made
    hits         INTEGER NOT NULL,          -- commissar: checks that found a mafioso
    PRIMARY KEY (game_id, player)
);

CREATE INDEX archive_players_by_player ON archive_players (guild_id, player);

-- per guild and player, over every archived game played to the end
CREATE TABLE player_stats (
    guild_id     INTEGER NOT NULL,
    player       TEXT NOT NULL,
    name         TEXT NOT NULL,             -- his display name in his latest game
    games        INTEGER NOT NULL,
    wins         INTEGER NOT NULL,
    survived     INTEGER NOT NULL,
    executed     INTEGER NOT NULL,
    votes        INTEGER NOT NULL,
    votes_mafia  INTEGER NOT NULL,
    checks       INTEGER NOT NULL,
    hits         INTEGER NOT NULL,
    mu           REAL NOT NULL,
    sigma        REAL NOT NULL,
    rating       REAL NOT NULL,             -- mu - 3 sigma: what the leaderboard sorts by
    PRIMARY KEY (guild_id, player)
);

CREATE INDEX player_stats_by_wins ON player_stats (guild_id, wins DESC, games);
CREATE INDEX player_stats_by_rating ON player_stats (guild_id, rating DESC);

CREATE TABLE player_status_stats (
    guild_id  INTEGER NOT NULL,
    player    TEXT NOT NULL,
    status    TEXT NOT NULL,
    games     INTEGER NOT NULL,
    wins      INTEGER NOT NULL,
    PRIMARY KEY (guild_id, player, status)
);

-- the strength of each side itself in a guild (how often it wins, whoever plays it)
CREATE TABLE side_ratings (
    guild_id  INTEGER NOT NULL,
    side      TEXT NOT NULL,
    mu        REAL NOT NULL,
    sigma     REAL NOT NULL,
    PRIMARY KEY (guild_id, side)
);

CREATE TABLE archive_backfill (
    game_id  INTEGER PRIMARY KEY
);

INSERT INTO archive_backfill (game_id)
    SELECT id FROM games WHERE state IN ('over', 'cancelled') AND setup IS NOT NULL AND seed IS NOT NULL
