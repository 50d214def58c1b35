-- +goose Up
-- A tree_hashes row may now hold several hashes: the hash of stored-hash
-- index id, then those of the next indexes the table keeps, 32 bytes
-- each (events/treerows.go). A commit writes its tree hashes as one row:
-- a row a hash cost a tuple and an index entry for every 32 bytes. Rows
-- written before hold one hash and read the same, so no row changes; the
-- version is raised so that an older rath, which would misread a row of
-- several hashes, refuses the store.
COMMENT ON TABLE tree_hashes IS 'rath: each row holds one or more 32-byte hashes of consecutive stored-hash indexes, from id';

-- +goose Down
-- An older rath reads a row as one hash: refuse while rows hold several.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM tree_hashes WHERE length(hash) > 32) THEN
        RAISE EXCEPTION 'rath: tree_hashes rows hold several hashes; a schema before version 14 cannot read them';
    END IF;
END
$$;
-- +goose StatementEnd
COMMENT ON TABLE tree_hashes IS NULL;
