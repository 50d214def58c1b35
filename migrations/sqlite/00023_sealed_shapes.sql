-- +goose Up
-- The events that start or link sessions, by the key their payload is
-- sealed under (projections): an erasure reads the shapes it keeps of a
-- subject's sessions through this index, wherever they were made (in a
-- run, or before it, or outside any). Rows for the events already
-- written come from their payloads, which name their key in clear (one
-- kept in a blob gets its row at the next rath rebuild); a key already
-- destroyed gets none, as a rebuild makes none.
CREATE TABLE sealed_shapes (
    key_id TEXT NOT NULL,
    seq    INTEGER NOT NULL,
    PRIMARY KEY (key_id, seq)
) WITHOUT ROWID;
INSERT INTO sealed_shapes (key_id, seq)
SELECT substr(rest, 1, instr(rest, '"') - 1), seq FROM (
    SELECT seq, substr(payload, instr(payload, '"k":"') + 5) AS rest FROM events
    WHERE type IN ('session.created', 'session.forked', 'session.detached', 'session.merged', 'session.compressed', 'session.imported')
      AND payload LIKE '{"$sealed":1,%' AND instr(payload, '"k":"') > 0
) WHERE substr(rest, 1, instr(rest, '"') - 1) IN (SELECT key_id FROM subject_keys);

-- +goose Down
DROP TABLE sealed_shapes;
