-- +goose Up
-- Runs on a worker fleet (package fleet): which worker holds each run,
-- under which fencing token, until when. A projection of run.leased; the
-- store checks a fenced append's token against it in the append's
-- transaction.
CREATE TABLE run_leases (
    run        TEXT    PRIMARY KEY,
    worker     TEXT    NOT NULL,
    token      INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    seq        INTEGER NOT NULL
);

-- +goose Down
DROP TABLE run_leases;
