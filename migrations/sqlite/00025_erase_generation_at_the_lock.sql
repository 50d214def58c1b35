-- +goose Up
-- PostgreSQL keeps the erasure generation in its chain lock's row too
-- (migration 00025 there), for appends that take the lock at their end.
-- SQLite has one writer, which reads the generation in its transaction.
-- The step keeps both schemas at the same version.
SELECT 1;

-- +goose Down
SELECT 1;
