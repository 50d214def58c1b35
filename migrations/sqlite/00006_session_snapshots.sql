-- +goose Up
-- A session's state every 128 events of its stream (length, placement,
-- usage): time travel reads the snapshot at or before a seq and folds at
-- most 127 events after it, so the state at any seq costs the same at any
-- length. A projection like the others: rebuilt from the log and checked
-- by verify.
CREATE TABLE session_snapshots (
    session           TEXT NOT NULL,
    seq               INTEGER NOT NULL,
    version           INTEGER NOT NULL,
    length            INTEGER NOT NULL,
    backend           TEXT NOT NULL DEFAULT '',
    spec              TEXT NOT NULL DEFAULT '',
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    total_tokens      INTEGER NOT NULL DEFAULT 0,
    calls             INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session, seq)
) WITHOUT ROWID;

-- +goose Down
DROP TABLE session_snapshots;
