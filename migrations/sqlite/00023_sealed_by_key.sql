-- +goose Up
-- The events an erasure reads, by the key their payload is sealed under
-- (projections): those that start or link sessions, whose shapes it
-- keeps, and memory.remembered, whose memories it purges from the memory
-- index. It finds them through this index wherever they were made (in a
-- run, before it, or outside any). Rows for the events already written
-- come from their payloads, which name their key in clear (one kept in a
-- blob gets its row at the next rath rebuild); a key already destroyed
-- gets none, as a rebuild makes none.
CREATE TABLE sealed_by_key (
    key_id TEXT NOT NULL,
    seq    INTEGER NOT NULL,
    type   TEXT NOT NULL,
    PRIMARY KEY (key_id, seq)
) WITHOUT ROWID;
INSERT INTO sealed_by_key (key_id, seq, type)
SELECT substr(rest, 1, instr(rest, '"') - 1), seq, type FROM (
    SELECT seq, type, substr(payload, instr(payload, '"k":"') + 5) AS rest FROM events
    WHERE type IN ('session.created', 'session.forked', 'session.detached', 'session.merged', 'session.compressed',
                   'session.imported', 'memory.remembered')
      AND payload LIKE '{"$sealed":1,%' AND instr(payload, '"k":"') > 0
) WHERE substr(rest, 1, instr(rest, '"') - 1) IN (SELECT key_id FROM subject_keys);

-- +goose Down
DROP TABLE sealed_by_key;
