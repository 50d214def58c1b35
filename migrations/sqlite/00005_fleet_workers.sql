-- +goose Up
-- The workers of a fleet (package fleet) and their heartbeats, so an
-- operator sees idle workers too. Operational state, not history: not
-- from the event log, not rebuilt, a row per worker process.
CREATE TABLE fleet_workers (
    id           TEXT   PRIMARY KEY,
    queue        TEXT   NOT NULL,
    concurrency  INTEGER NOT NULL,
    lease_ms     INTEGER NOT NULL,
    started_at   INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL
);

-- +goose Down
DROP TABLE fleet_workers;
