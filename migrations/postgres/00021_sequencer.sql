-- +goose Up
-- The chain's counter: the last seq handed out. An append moves it in the
-- statement that takes the chain lock, as the last part of its
-- transaction, and numbers its rows from it on the server, so that no
-- client round trip runs while the lock is held (docs/ARCHITECTURE.md,
-- "Parallel writers (PostgreSQL)").
ALTER TABLE chain_lock ADD COLUMN seq bigint NOT NULL DEFAULT 0;
UPDATE chain_lock SET seq = COALESCE((SELECT max(seq) FROM events), 0) WHERE id = 1;

-- +goose Down
ALTER TABLE chain_lock DROP COLUMN seq;
