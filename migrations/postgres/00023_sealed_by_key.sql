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
    key_id TEXT COLLATE "C" NOT NULL,
    seq    BIGINT NOT NULL,
    type   TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (key_id, seq)
);
INSERT INTO sealed_by_key (key_id, seq, type)
SELECT k, seq, type FROM (
    SELECT seq, type, substring(payload FROM '"k":"([^"]*)"') AS k FROM events
    WHERE type IN ('session.created', 'session.forked', 'session.detached', 'session.merged', 'session.compressed',
                   'session.imported', 'memory.remembered')
      AND payload LIKE '{"$sealed":1,%'
) AS sealed WHERE k IN (SELECT key_id FROM subject_keys);
-- No tenant's read reaches it: the console never reads it, and it spans
-- every tenant's keys.
REVOKE ALL ON sealed_by_key FROM rath_tenant;

-- +goose Down
DROP TABLE sealed_by_key;
