-- +goose Up
-- The source of truth: an append-only, hash-chained event log.
CREATE TABLE events (
    seq          INTEGER PRIMARY KEY,
    stream       TEXT    NOT NULL,
    version      INTEGER NOT NULL CHECK (version > 0),
    type         TEXT    NOT NULL,
    type_version INTEGER NOT NULL DEFAULT 1,
    run_id       TEXT,
    payload      TEXT    NOT NULL,
    at           INTEGER NOT NULL,
    hash         TEXT    NOT NULL,
    UNIQUE (stream, version)
);
CREATE INDEX events_run ON events (run_id, seq) WHERE run_id IS NOT NULL;
CREATE INDEX events_type ON events (type, seq);

-- +goose StatementBegin
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'rath: events are append-only (UPDATE refused)');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'rath: events are append-only (DELETE refused)');
END;
-- +goose StatementEnd

-- Content-addressed large values; hash is the hex SHA-256 of bytes.
CREATE TABLE blobs (
    hash  TEXT PRIMARY KEY,
    size  INTEGER NOT NULL,
    bytes BLOB    NOT NULL
);

-- +goose Down
DROP TABLE blobs;
DROP TRIGGER events_no_delete;
DROP TRIGGER events_no_update;
DROP TABLE events;
