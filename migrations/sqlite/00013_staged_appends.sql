-- +goose Up
-- Staged appends are a PostgreSQL mechanism (events/staged.go): a SQLite
-- database has one writer at a time and never stages. The tables exist
-- so that both stores have the same schema at the same version.
CREATE TABLE append_intents (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    tag       TEXT NOT NULL,
    request   BLOB NOT NULL,
    staged_at INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE append_outcomes (
    id         INTEGER PRIMARY KEY,
    outcome    BLOB NOT NULL,
    decided_at INTEGER NOT NULL DEFAULT 0
);

-- +goose Down
DROP TABLE append_outcomes;
DROP TABLE append_intents;
