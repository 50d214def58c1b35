-- +goose Up
-- Each worker's own DeadAfter (package fleet), so that whoever judges a
-- worker dead uses the bound that worker beats for (it beats every fifth
-- of it): in a fleet whose workers were started with different
-- --dead-after, a peer with a short one does not take the runs of a live
-- worker with a long one. 0 (rows of workers older than this column)
-- means the judge's own.
ALTER TABLE fleet_workers ADD COLUMN dead_after_ms INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE fleet_workers DROP COLUMN dead_after_ms;
