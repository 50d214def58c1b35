-- +goose Up
-- The log becomes a Merkle log (see docs/ARCHITECTURE.md, "The Merkle
-- log"). salt is each event's random salt: its payload commitment is
-- SHA-256(salt || payload), so a payload deleted with its salt cannot be
-- guessed back from the leaf. Events written before this migration have no
-- salt: their leaves are their hash-chain records.
ALTER TABLE events ADD COLUMN salt BYTEA;

-- The RFC 6962 tree over the events in seq order, as the stored hashes of
-- golang.org/x/mod/sumdb/tlog: id is the stored-hash index. A root, an
-- inclusion proof and a consistency proof read O(log n) rows. The tree over
-- the events already in the log is built by the writer when a rath of this
-- version first opens the store.
CREATE TABLE tree_hashes (
    id   BIGINT PRIMARY KEY,
    hash BYTEA  NOT NULL
);
CREATE TRIGGER tree_hashes_no_update BEFORE UPDATE ON tree_hashes
    FOR EACH ROW EXECUTE FUNCTION rath_events_append_only();
CREATE TRIGGER tree_hashes_no_delete BEFORE DELETE ON tree_hashes
    FOR EACH ROW EXECUTE FUNCTION rath_events_append_only();
CREATE TRIGGER tree_hashes_no_truncate BEFORE TRUNCATE ON tree_hashes
    FOR EACH STATEMENT EXECUTE FUNCTION rath_events_append_only();

-- +goose Down
DROP TABLE tree_hashes;
ALTER TABLE events DROP COLUMN salt;
DELETE FROM store_meta WHERE key = 'merkle_from';
