-- +goose Up
-- A session's row is updated by nearly every append (its length, its
-- token counts, its version). PostgreSQL logs such an update, when the new
-- row version fits on the same page, as the bytes between the first and
-- the last column that changed: with the counters spread between the
-- session's fixed fields, that span held its kind, origin, base, backend,
-- sandbox spec and run. The table is written again with the fixed fields
-- first and the counters last, most often changed at the end; the rows,
-- the index, the row-level security and the grants are as they were.
CREATE TABLE sessions_reordered (
    id                TEXT   COLLATE "C" PRIMARY KEY,
    kind              TEXT   COLLATE "C" NOT NULL,
    origin            TEXT   COLLATE "C" NOT NULL DEFAULT '',
    source            TEXT   COLLATE "C",
    base              TEXT   COLLATE "C",
    base_len          BIGINT NOT NULL DEFAULT 0,
    backend           TEXT   COLLATE "C" NOT NULL DEFAULT '',
    spec              TEXT   COLLATE "C" NOT NULL DEFAULT '',
    run_id            TEXT   COLLATE "C",
    created_seq       BIGINT NOT NULL,
    tenant            TEXT   COLLATE "C" NOT NULL DEFAULT 'default',
    children          BIGINT NOT NULL DEFAULT 0,
    incomplete        BIGINT NOT NULL DEFAULT 0,
    length            BIGINT NOT NULL DEFAULT 0,
    prompt_tokens     BIGINT NOT NULL DEFAULT 0,
    completion_tokens BIGINT NOT NULL DEFAULT 0,
    total_tokens      BIGINT NOT NULL DEFAULT 0,
    calls             BIGINT NOT NULL DEFAULT 0,
    version           BIGINT NOT NULL,
    updated_seq       BIGINT NOT NULL
);
INSERT INTO sessions_reordered (id, kind, origin, source, base, base_len, backend, spec, run_id, created_seq, tenant,
        children, incomplete, length, prompt_tokens, completion_tokens, total_tokens, calls, version, updated_seq)
    SELECT id, kind, origin, source, base, base_len, backend, spec, run_id, created_seq, tenant,
        children, incomplete, length, prompt_tokens, completion_tokens, total_tokens, calls, version, updated_seq
    FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_reordered RENAME TO sessions;
ALTER INDEX sessions_reordered_pkey RENAME TO sessions_pkey;
CREATE INDEX sessions_run ON sessions (run_id) WHERE run_id IS NOT NULL;
ALTER TABLE sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY sessions_tenant ON sessions USING (COALESCE(current_setting('rath.tenant', true), '') = '' OR tenant = current_setting('rath.tenant', true));
GRANT SELECT ON sessions TO rath_tenant;

-- +goose Down
-- The order of the columns changes nothing a query sees.
SELECT 1;
