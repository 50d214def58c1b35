-- +goose Up
-- Access records are their tenant's: a transaction of a tenant (rath.tenant
-- set, as the console's reads are) sees only the reads of that tenant's
-- content, as it sees only its runs (migration 00018). Records written
-- before reads named the run's tenant keep the empty tenant: only the
-- store's operator, who sees every tenant's, lists them.
ALTER TABLE access_records ENABLE ROW LEVEL SECURITY;
ALTER TABLE access_records FORCE ROW LEVEL SECURITY;
CREATE POLICY access_records_tenant ON access_records USING (COALESCE(current_setting('rath.tenant', true), '') = '' OR tenant = current_setting('rath.tenant', true));
CREATE INDEX access_records_tenant ON access_records (tenant, seq);

-- +goose Down
DROP INDEX access_records_tenant;
DROP POLICY access_records_tenant ON access_records;
ALTER TABLE access_records NO FORCE ROW LEVEL SECURITY;
ALTER TABLE access_records DISABLE ROW LEVEL SECURITY;
