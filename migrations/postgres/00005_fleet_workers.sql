-- +goose Up
-- The workers of a fleet (package fleet) and their heartbeats, so an
-- operator sees idle workers too. Operational state, not history: not
-- from the event log, not rebuilt, a row per worker process.
CREATE TABLE fleet_workers (
    id           TEXT   COLLATE "C" PRIMARY KEY,
    queue        TEXT   NOT NULL,
    concurrency  BIGINT NOT NULL,
    lease_ms     BIGINT NOT NULL,
    started_at   BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE fleet_workers;
