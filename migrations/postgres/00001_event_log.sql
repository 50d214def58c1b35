-- +goose Up
-- The source of truth: an append-only, hash-chained event log. Every text
-- column sorts bytewise (COLLATE "C"), as SQLite's do, so listings and the
-- projection check compare rows in the same order on both backends.
CREATE TABLE events (
    seq          BIGINT  PRIMARY KEY,
    stream       TEXT    COLLATE "C" NOT NULL,
    version      BIGINT  NOT NULL CHECK (version > 0),
    type         TEXT    COLLATE "C" NOT NULL,
    type_version INTEGER NOT NULL DEFAULT 1,
    run_id       TEXT    COLLATE "C",
    payload      TEXT    COLLATE "C" NOT NULL,
    at           BIGINT  NOT NULL,
    hash         TEXT    COLLATE "C" NOT NULL,
    UNIQUE (stream, version)
);
CREATE INDEX events_run ON events (run_id, seq) WHERE run_id IS NOT NULL;
CREATE INDEX events_type ON events (type, seq);

-- +goose StatementBegin
CREATE FUNCTION rath_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'rath: events are append-only (% refused)', TG_OP;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
    FOR EACH ROW EXECUTE FUNCTION rath_events_append_only();
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION rath_events_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION rath_events_append_only();

-- Content-addressed large values; hash is the hex SHA-256 of bytes.
CREATE TABLE blobs (
    hash  TEXT   COLLATE "C" PRIMARY KEY,
    size  BIGINT NOT NULL,
    bytes BYTEA  NOT NULL
);

-- +goose Down
DROP TABLE blobs;
DROP TABLE events;
DROP FUNCTION rath_events_append_only();
