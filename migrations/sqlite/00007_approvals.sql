-- +goose Up
-- A person in the loop: one row per approval.requested, updated by its
-- approval.decided. A projection: `rath approvals` lists the pending ones.
CREATE TABLE approvals (
    id            TEXT    PRIMARY KEY,
    run           TEXT    NOT NULL DEFAULT '',
    session       TEXT    NOT NULL,
    agent         TEXT    NOT NULL DEFAULT '',
    kind          TEXT    NOT NULL,
    tool          TEXT    NOT NULL DEFAULT '',
    question      TEXT    NOT NULL DEFAULT '',
    reason        TEXT    NOT NULL DEFAULT '',
    status        TEXT    NOT NULL,
    deadline      INTEGER NOT NULL DEFAULT 0,
    requested_seq INTEGER NOT NULL,
    requested_at  INTEGER NOT NULL,
    decided_by    TEXT    NOT NULL DEFAULT '',
    decided_seq   INTEGER,
    decided_at    INTEGER
);
CREATE INDEX approvals_status ON approvals (status, requested_seq);
CREATE INDEX approvals_run ON approvals (run);

-- +goose Down
DROP TABLE approvals;
