-- +goose Up
-- A session's state every 128 events of its stream (length, placement,
-- usage): time travel reads the snapshot at or before a seq and folds at
-- most 127 events after it, so the state at any seq costs the same at any
-- length. A projection like the others: rebuilt from the log and checked
-- by verify.
CREATE TABLE session_snapshots (
    session           TEXT COLLATE "C" NOT NULL,
    seq               BIGINT NOT NULL,
    version           BIGINT NOT NULL,
    length            BIGINT NOT NULL,
    backend           TEXT NOT NULL DEFAULT '',
    spec              TEXT NOT NULL DEFAULT '',
    prompt_tokens     BIGINT NOT NULL DEFAULT 0,
    completion_tokens BIGINT NOT NULL DEFAULT 0,
    total_tokens      BIGINT NOT NULL DEFAULT 0,
    calls             BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (session, seq)
);

-- +goose Down
DROP TABLE session_snapshots;
