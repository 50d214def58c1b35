-- +goose Up
-- The runs not finished, for a fleet worker's reaper, which looks every
-- half second for leases that lapsed and workers that died: without it,
-- each look read every lease and every run the store ever had. The
-- predicate is spelled as the queries spell it (projections, runstate.go):
-- SQLite uses a partial index only for a query that has its term.
CREATE INDEX runs_unfinished ON runs (id) WHERE status IN ('queued', 'running', 'waiting');

-- +goose Down
DROP INDEX runs_unfinished;
