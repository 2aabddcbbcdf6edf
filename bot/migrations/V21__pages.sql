-- A transcript people can read and keep (issue 30): what was read of a finished game's channels,
-- with the names its messages need and the server's time zone then, compressed (JSON, zlib), so
-- the game's HTML page and its text twin can be made again at any time.
CREATE TABLE transcript_pages (
    game_id  INTEGER PRIMARY KEY,
    data     TEXT NOT NULL          -- base64 of the zlib-compressed JSON
);
