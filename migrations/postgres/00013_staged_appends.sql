-- +goose Up
-- Staged appends (events/staged.go). A writer that finds the chain lock
-- held by another process stages its append here, and the holder writes
-- it in its own commit, in seq order, checking its versions and lease
-- there, and leaves the outcome (the events' seqs, or the error) in
-- append_outcomes for the appender to take. UNLOGGED: nothing here is
-- acknowledged to anyone; an append returns only once its events are in
-- the (logged) events table, so a crash that empties these tables loses
-- only appends whose callers see an error.
CREATE UNLOGGED TABLE append_intents (
    id        BIGSERIAL PRIMARY KEY,
    tag       TEXT NOT NULL,
    request   BYTEA NOT NULL,
    staged_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX append_intents_tag ON append_intents (tag, id);
CREATE UNLOGGED TABLE append_outcomes (
    id         BIGINT PRIMARY KEY,
    outcome    BYTEA NOT NULL,
    decided_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE append_outcomes;
DROP TABLE append_intents;
