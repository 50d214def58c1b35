-- +goose Up
-- Access records are their tenant's: the read layer (projections.Scope)
-- filters them on this column as it does runs; the index serves it and
-- `rath access --tenant`.
CREATE INDEX access_records_tenant ON access_records (tenant, seq);

-- +goose Down
DROP INDEX access_records_tenant;
