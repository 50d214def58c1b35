-- +goose Up
-- The erasure generation (store_meta's keyring_generation row, which every
-- erasure rewrites) is kept in the chain lock's row too, so that an append
-- sequenced at its end checks it in the statement that takes the lock:
-- waiting for the lock, PostgreSQL reads the row as the last holder left
-- it, so an erasure that committed meanwhile is seen there, with no
-- statement of its own (docs/ARCHITECTURE.md, "Sealed appends and a
-- concurrent erasure"). A trigger copies the row, so whatever writes the
-- generation keeps both equal.
ALTER TABLE chain_lock ADD COLUMN erase_generation TEXT COLLATE "C" NOT NULL DEFAULT '';
UPDATE chain_lock SET erase_generation = COALESCE((SELECT value FROM store_meta WHERE key = 'keyring_generation'), '') WHERE id = 1;
-- +goose StatementBegin
CREATE FUNCTION rath_erase_generation_to_lock() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE chain_lock SET erase_generation = NEW.value WHERE id = 1;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER store_meta_erase_generation AFTER INSERT OR UPDATE ON store_meta
    FOR EACH ROW WHEN (NEW.key = 'keyring_generation') EXECUTE FUNCTION rath_erase_generation_to_lock();

-- +goose Down
DROP TRIGGER store_meta_erase_generation ON store_meta;
DROP FUNCTION rath_erase_generation_to_lock();
ALTER TABLE chain_lock DROP COLUMN erase_generation;
