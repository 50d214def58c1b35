-- +goose Up
-- Facts about the store itself, kept by package events: the fingerprint of
-- the key the hash chain is computed with (never the key) and the first seq
-- hashed with the current hash input format. Not a projection: rebuilds
-- leave it alone.
CREATE TABLE store_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- +goose Down
DROP TABLE store_meta;
