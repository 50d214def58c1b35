-- +goose Up
-- Tenants: every run, session, approval, dataset and memory namespace
-- belongs to one. A projection: run.started (or run.submitted) names the
-- run's tenant, its sessions and approvals take it, dataset.created names
-- a dataset's, and a namespace belongs to the tenant of the run that
-- first remembered in it. Rows of stores written before tenants are the
-- default tenant's, as their events are read. SQLite has no row-level
-- security: the console's one read layer (projections.Reader scoped to a
-- tenant) filters on these columns.
ALTER TABLE runs ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default';
ALTER TABLE sessions ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default';
ALTER TABLE approvals ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default';
CREATE INDEX runs_tenant ON runs (tenant, started_seq);
CREATE INDEX approvals_tenant ON approvals (tenant, status, requested_seq);

CREATE TABLE datasets (
    name   TEXT PRIMARY KEY,
    tenant TEXT NOT NULL DEFAULT 'default',
    seq    INTEGER NOT NULL
);
CREATE TABLE memory_namespaces (
    namespace TEXT PRIMARY KEY,
    tenant    TEXT NOT NULL DEFAULT 'default',
    seq       INTEGER NOT NULL
);
INSERT INTO datasets (name, tenant, seq)
    SELECT substr(stream, length('dataset:') + 1), 'default', seq FROM events
    WHERE type = 'dataset.created' AND version = 1 AND stream LIKE 'dataset:%'
    ON CONFLICT DO NOTHING;
INSERT INTO memory_namespaces (namespace, tenant, seq)
    SELECT substr(stream, length('memory:') + 1), 'default', MIN(seq) FROM events
    WHERE type = 'memory.remembered' AND stream LIKE 'memory:%' GROUP BY stream
    ON CONFLICT DO NOTHING;

-- +goose Down
DROP TABLE memory_namespaces;
DROP TABLE datasets;
DROP INDEX approvals_tenant;
DROP INDEX runs_tenant;
ALTER TABLE approvals DROP COLUMN tenant;
ALTER TABLE sessions DROP COLUMN tenant;
ALTER TABLE runs DROP COLUMN tenant;
