-- +goose Up
-- A person in the loop: one row per approval.requested, updated by its
-- approval.decided. A projection: `rath approvals` lists the pending ones.
CREATE TABLE approvals (
    id            TEXT   COLLATE "C" PRIMARY KEY,
    run           TEXT   COLLATE "C" NOT NULL DEFAULT '',
    session       TEXT   COLLATE "C" NOT NULL,
    agent         TEXT   COLLATE "C" NOT NULL DEFAULT '',
    kind          TEXT   COLLATE "C" NOT NULL,
    tool          TEXT   COLLATE "C" NOT NULL DEFAULT '',
    question      TEXT   COLLATE "C" NOT NULL DEFAULT '',
    reason        TEXT   COLLATE "C" NOT NULL DEFAULT '',
    status        TEXT   COLLATE "C" NOT NULL,
    deadline      BIGINT NOT NULL DEFAULT 0,
    requested_seq BIGINT NOT NULL,
    requested_at  BIGINT NOT NULL,
    decided_by    TEXT   COLLATE "C" NOT NULL DEFAULT '',
    decided_seq   BIGINT,
    decided_at    BIGINT
);
CREATE INDEX approvals_status ON approvals (status, requested_seq);
CREATE INDEX approvals_run ON approvals (run);

-- +goose Down
DROP TABLE approvals;
