-- +goose Up
-- A tree_hashes row may now hold several hashes: the hash of stored-hash
-- index id, then those of the next indexes the table keeps, 32 bytes
-- each (events/treerows.go). A commit writes its tree hashes as one row:
-- a row a hash cost a row and an index entry for every 32 bytes. Rows
-- written before hold one hash and read the same, so no row changes; the
-- version is raised so that an older rath, which would misread a row of
-- several hashes, refuses the store.
SELECT 1;

-- +goose Down
-- An older rath reads a row as one hash: refuse while rows hold several
-- (the CHECK fails on a count above zero).
CREATE TEMP TABLE rath_down_14 (
    packed INTEGER CONSTRAINT "rath: tree_hashes rows hold several hashes; a schema before version 14 cannot read them" CHECK (packed = 0)
);
INSERT INTO rath_down_14 SELECT COUNT(*) FROM tree_hashes WHERE length(hash) > 32;
DROP TABLE rath_down_14;
