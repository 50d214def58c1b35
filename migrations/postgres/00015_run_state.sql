-- +goose Up
-- What a fleet worker, a cancel or a resume checks of a run, in one read
-- of the read model (projections.Reader.RunState) rather than a fold of
-- the run's streams: whether and when it was submitted, its params (the
-- submission's, then those its run.started recorded: canonical JSON,
-- empty for none), and of its lease the lease stream's version (what a
-- take appends at) and when the holder took it (its last run.leased that
-- was not a renewal; 0 for none). Rows already there are filled in from
-- the log, as a rebuild fills them (json, not jsonb: -> keeps the
-- payload's own text).
ALTER TABLE runs ADD COLUMN submitted_seq BIGINT,
    ADD COLUMN params TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE run_leases ADD COLUMN version BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN taken_at BIGINT NOT NULL DEFAULT 0;
UPDATE runs SET
    submitted_seq = (SELECT e.seq FROM events e WHERE e.stream = 'submit:' || runs.id AND e.version = 1),
    params = CASE
        WHEN EXISTS (SELECT 1 FROM events e WHERE e.stream = runs.id AND e.version = 1 AND e.type = 'run.started')
        THEN COALESCE((SELECT (e.payload::json -> 'params')::text FROM events e WHERE e.stream = runs.id AND e.version = 1), '')
        ELSE COALESCE((SELECT (e.payload::json -> 'params')::text FROM events e WHERE e.stream = 'submit:' || runs.id AND e.version = 1), '')
    END;
UPDATE run_leases SET
    version = (SELECT e.version FROM events e WHERE e.seq = run_leases.seq),
    taken_at = COALESCE((SELECT e.at FROM events e WHERE e.stream = 'lease:' || run_leases.run
        AND NOT COALESCE((e.payload::json ->> 'renewal')::boolean, false) ORDER BY e.version DESC LIMIT 1), 0);

-- +goose Down
ALTER TABLE run_leases DROP COLUMN taken_at, DROP COLUMN version;
ALTER TABLE runs DROP COLUMN params, DROP COLUMN submitted_seq;
