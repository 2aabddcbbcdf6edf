-- One started game per player, whichever process serves it (issue 13): a row per player of a
-- game being started or running, keyed by the user, written in the transaction that changes the
-- game's state (bot/storage.py: Storage._sync_active). A second game's start is refused by the
-- key itself, so processes sharing one PostgreSQL cannot both let him in.

CREATE TABLE active_players (
    user_id  INTEGER PRIMARY KEY,
    game_id  INTEGER NOT NULL REFERENCES games (id)
);

CREATE INDEX active_players_by_game ON active_players (game_id);

-- the players of the games already started when this migration runs (their lobby's list)
-- sqlite only
INSERT OR IGNORE INTO active_players (user_id, game_id)
    SELECT CAST(json_extract(p.value, '$.id') AS INTEGER), g.id
    FROM games g, json_each(g.lobby, '$.players') p
    WHERE g.state IN ('starting', 'running') AND json_valid(g.lobby)
        AND json_extract(p.value, '$.id') IS NOT NULL
    ORDER BY g.id;

-- postgresql only
INSERT INTO active_players (user_id, game_id)
    SELECT (p ->> 'id')::BIGINT, g.id
    FROM games g, jsonb_array_elements(g.lobby::jsonb -> 'players') p
    WHERE g.state IN ('starting', 'running') AND p ->> 'id' IS NOT NULL
    ORDER BY g.id
    ON CONFLICT (user_id) DO NOTHING
