-- +goose Up
-- Tenants: every run, session, approval, dataset and memory namespace
-- belongs to one. A projection: run.started (or run.submitted) names the
-- run's tenant, its sessions and approvals take it, dataset.created names
-- a dataset's, and a namespace belongs to the tenant of the run that
-- first remembered in it. Rows of stores written before tenants are the
-- default tenant's, as their events are read.
ALTER TABLE runs ADD COLUMN tenant TEXT COLLATE "C" NOT NULL DEFAULT 'default';
ALTER TABLE sessions ADD COLUMN tenant TEXT COLLATE "C" NOT NULL DEFAULT 'default';
ALTER TABLE approvals ADD COLUMN tenant TEXT COLLATE "C" NOT NULL DEFAULT 'default';
CREATE INDEX runs_tenant ON runs (tenant, started_seq);
CREATE INDEX approvals_tenant ON approvals (tenant, status, requested_seq);

CREATE TABLE datasets (
    name   TEXT COLLATE "C" PRIMARY KEY,
    tenant TEXT COLLATE "C" NOT NULL DEFAULT 'default',
    seq    BIGINT NOT NULL
);
CREATE TABLE memory_namespaces (
    namespace TEXT COLLATE "C" PRIMARY KEY,
    tenant    TEXT COLLATE "C" NOT NULL DEFAULT 'default',
    seq       BIGINT NOT NULL
);
INSERT INTO datasets (name, tenant, seq)
    SELECT substr(stream, length('dataset:') + 1), 'default', seq FROM events
    WHERE type = 'dataset.created' AND version = 1 AND stream LIKE 'dataset:%'
    ON CONFLICT DO NOTHING;
INSERT INTO memory_namespaces (namespace, tenant, seq)
    SELECT substr(stream, length('memory:') + 1), 'default', MIN(seq) FROM events
    WHERE type = 'memory.remembered' AND stream LIKE 'memory:%' GROUP BY stream
    ON CONFLICT DO NOTHING;

-- Row-level security: a transaction that sets rath.tenant (SET LOCAL, as
-- the console and its API do for each request) sees and writes only that
-- tenant's rows; one that leaves it unset or empty (the CLI, workers,
-- the projector) sees every tenant's. FORCE, because rath connects as
-- the tables' owner, whom policies otherwise skip. A lease is visible
-- with its run.
ALTER TABLE runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE runs FORCE ROW LEVEL SECURITY;
CREATE POLICY runs_tenant ON runs USING (COALESCE(current_setting('rath.tenant', true), '') = '' OR tenant = current_setting('rath.tenant', true));
ALTER TABLE sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY sessions_tenant ON sessions USING (COALESCE(current_setting('rath.tenant', true), '') = '' OR tenant = current_setting('rath.tenant', true));
ALTER TABLE approvals ENABLE ROW LEVEL SECURITY;
ALTER TABLE approvals FORCE ROW LEVEL SECURITY;
CREATE POLICY approvals_tenant ON approvals USING (COALESCE(current_setting('rath.tenant', true), '') = '' OR tenant = current_setting('rath.tenant', true));
ALTER TABLE datasets ENABLE ROW LEVEL SECURITY;
ALTER TABLE datasets FORCE ROW LEVEL SECURITY;
CREATE POLICY datasets_tenant ON datasets USING (COALESCE(current_setting('rath.tenant', true), '') = '' OR tenant = current_setting('rath.tenant', true));
ALTER TABLE memory_namespaces ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_namespaces FORCE ROW LEVEL SECURITY;
CREATE POLICY memory_namespaces_tenant ON memory_namespaces USING (COALESCE(current_setting('rath.tenant', true), '') = '' OR tenant = current_setting('rath.tenant', true));
ALTER TABLE run_leases ENABLE ROW LEVEL SECURITY;
ALTER TABLE run_leases FORCE ROW LEVEL SECURITY;
CREATE POLICY run_leases_tenant ON run_leases USING (COALESCE(current_setting('rath.tenant', true), '') = '' OR EXISTS (SELECT 1 FROM runs r WHERE r.id = run_leases.run));

-- Policies do not bind a superuser or a role with BYPASSRLS, which is
-- what rath often connects as: a tenant's transaction also takes the
-- role rath_tenant (SET LOCAL ROLE), which may read this schema's tables
-- and nothing more. Roles belong to the cluster, so another database's
-- migration may have made it already.
-- +goose StatementBegin
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'rath_tenant') THEN
        BEGIN
            CREATE ROLE rath_tenant NOLOGIN NOBYPASSRLS;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;
        END;
    END IF;
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO rath_tenant', current_schema());
    EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO rath_tenant', current_schema());
    EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT ON TABLES TO rath_tenant', current_schema());
    IF NOT pg_has_role(current_user, 'rath_tenant', 'MEMBER') THEN
        EXECUTE format('GRANT rath_tenant TO %I', current_user);
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I REVOKE SELECT ON TABLES FROM rath_tenant', current_schema());
    EXECUTE format('REVOKE SELECT ON ALL TABLES IN SCHEMA %I FROM rath_tenant', current_schema());
    EXECUTE format('REVOKE USAGE ON SCHEMA %I FROM rath_tenant', current_schema());
END
$$;
-- +goose StatementEnd
DROP POLICY run_leases_tenant ON run_leases;
ALTER TABLE run_leases NO FORCE ROW LEVEL SECURITY;
ALTER TABLE run_leases DISABLE ROW LEVEL SECURITY;
DROP POLICY memory_namespaces_tenant ON memory_namespaces;
DROP POLICY datasets_tenant ON datasets;
DROP POLICY approvals_tenant ON approvals;
ALTER TABLE approvals NO FORCE ROW LEVEL SECURITY;
ALTER TABLE approvals DISABLE ROW LEVEL SECURITY;
DROP POLICY sessions_tenant ON sessions;
ALTER TABLE sessions NO FORCE ROW LEVEL SECURITY;
ALTER TABLE sessions DISABLE ROW LEVEL SECURITY;
DROP POLICY runs_tenant ON runs;
ALTER TABLE runs NO FORCE ROW LEVEL SECURITY;
ALTER TABLE runs DISABLE ROW LEVEL SECURITY;
DROP TABLE memory_namespaces;
DROP TABLE datasets;
DROP INDEX approvals_tenant;
DROP INDEX runs_tenant;
ALTER TABLE approvals DROP COLUMN tenant;
ALTER TABLE sessions DROP COLUMN tenant;
ALTER TABLE runs DROP COLUMN tenant;
