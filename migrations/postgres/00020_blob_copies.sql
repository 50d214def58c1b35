-- +goose Up
-- Sealed blobs per subject (docs/EVIDENCE.md, "Erasure"): with a
-- key-encryption key, a blob is stored once per subject, under its
-- content address followed by "." and the id of the subject's data key,
-- so erasing one subject leaves another's copy of the same bytes
-- readable. A blob in clear keeps its bare address. This index finds
-- every copy of an address; no row changes.
CREATE INDEX blobs_address ON blobs ((substr(hash, 1, 64)));

-- +goose Down
DROP INDEX blobs_address;
