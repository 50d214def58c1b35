-- +goose Up
-- sealed_by_key also indexes the model calls and placements sealed under
-- each key: an erasure recounts the usage and sandbox of the sessions
-- they are in, keeping other subjects' calls and placements in the same
-- sessions. Rows for the events already written come from their
-- payloads, as in 00023.
INSERT INTO sealed_by_key (key_id, seq, type)
SELECT substr(rest, 1, instr(rest, '"') - 1), seq, type FROM (
    SELECT seq, type, substr(payload, instr(payload, '"k":"') + 5) AS rest FROM events
    WHERE type IN ('provider.called', 'session.placed')
      AND payload LIKE '{"$sealed":1,%' AND instr(payload, '"k":"') > 0
) WHERE substr(rest, 1, instr(rest, '"') - 1) IN (SELECT key_id FROM subject_keys);

-- +goose Down
DELETE FROM sealed_by_key WHERE type IN ('provider.called', 'session.placed');
