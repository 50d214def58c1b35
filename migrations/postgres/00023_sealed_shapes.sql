-- +goose Up
-- The events that start or link sessions, by the key their payload is
-- sealed under (projections): an erasure reads the shapes it keeps of a
-- subject's sessions through this index, wherever they were made (in a
-- run, or before it, or outside any). Rows for the events already
-- written come from their payloads, which name their key in clear (one
-- kept in a blob gets its row at the next rath rebuild); a key already
-- destroyed gets none, as a rebuild makes none.
CREATE TABLE sealed_shapes (
    key_id TEXT COLLATE "C" NOT NULL,
    seq    BIGINT NOT NULL,
    PRIMARY KEY (key_id, seq)
);
INSERT INTO sealed_shapes (key_id, seq)
SELECT k, seq FROM (
    SELECT seq, substring(payload FROM '"k":"([^"]*)"') AS k FROM events
    WHERE type IN ('session.created', 'session.forked', 'session.detached', 'session.merged', 'session.compressed', 'session.imported')
      AND payload LIKE '{"$sealed":1,%'
) AS sealed WHERE k IN (SELECT key_id FROM subject_keys);
-- No tenant's read reaches it: the console never reads it, and it spans
-- every tenant's keys.
REVOKE ALL ON sealed_shapes FROM rath_tenant;

-- +goose Down
DROP TABLE sealed_shapes;
