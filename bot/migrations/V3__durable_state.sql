-- Snapshots carry a checksum of their text and the version of the rules that wrote them,
-- and a game remembers when its current stage began (what a command's sender could have seen).

-- SHA-256 of state in hex, NULL when written before V3
ALTER TABLE snapshots ADD COLUMN checksum TEXT;

-- digest of the rules package that wrote the snapshot
ALTER TABLE snapshots ADD COLUMN rules_version TEXT;

-- unix time the game's current stage was committed
ALTER TABLE games ADD COLUMN stage_since REAL;
