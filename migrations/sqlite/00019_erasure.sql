-- +goose Up
-- Sealed blobs per subject (docs/EVIDENCE.md, "Erasure"): with a
-- key-encryption key, a blob is stored once per subject, under its
-- content address followed by "." and the id of the subject's data key,
-- so erasing one subject leaves another's copy of the same bytes
-- readable. A blob in clear keeps its bare address. This index finds
-- every copy of an address; no row changes.
--
-- A run's subject (run.started and run.submitted record it): whose
-- content a resumed run's is, and the runs an erasure of a user reaches
-- without reading the log. Runs recorded before keep '' (their own).
CREATE INDEX blobs_address ON blobs (substr(hash, 1, 64));
ALTER TABLE runs ADD COLUMN subject TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_subject ON runs (subject) WHERE subject <> '';

-- +goose Down
DROP INDEX runs_subject;
ALTER TABLE runs DROP COLUMN subject;
DROP INDEX blobs_address;
