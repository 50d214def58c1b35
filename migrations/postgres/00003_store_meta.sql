-- +goose Up
-- Facts about the store itself, kept by package events: the fingerprint of
-- the key the hash chain is computed with (never the key) and the first seq
-- hashed with the current hash input format. Not a projection: rebuilds
-- leave it alone.
CREATE TABLE store_meta (
    key   TEXT COLLATE "C" PRIMARY KEY,
    value TEXT COLLATE "C" NOT NULL
);

-- The chain lock: its one row is locked FOR UPDATE by every transaction
-- that appends, so appends from every process and machine serialize, seqs
-- are handed out in commit order and no reader sees seq N+1 before N.
-- (SQLite's database-wide write lock does this on the embedded store.)
CREATE TABLE chain_lock (
    id INTEGER PRIMARY KEY CHECK (id = 1)
);
INSERT INTO chain_lock (id) VALUES (1);

-- +goose Down
DROP TABLE chain_lock;
DROP TABLE store_meta;
