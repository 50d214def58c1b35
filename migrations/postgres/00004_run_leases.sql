-- +goose Up
-- Runs on a worker fleet (package fleet): which worker holds each run,
-- under which fencing token, until when. A projection of run.leased; the
-- store checks a fenced append's token against it in the append's
-- transaction.
CREATE TABLE run_leases (
    run        TEXT   COLLATE "C" PRIMARY KEY,
    worker     TEXT   COLLATE "C" NOT NULL,
    token      BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    seq        BIGINT NOT NULL
);

-- +goose Down
DROP TABLE run_leases;
