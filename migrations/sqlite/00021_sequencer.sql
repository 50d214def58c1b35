-- +goose Up
-- PostgreSQL's appends number their rows from a counter in chain_lock
-- (migration 00021 there); SQLite has one writer, which numbers its rows
-- as it writes them. The step keeps both schemas at the same version.
SELECT 1;

-- +goose Down
SELECT 1;
