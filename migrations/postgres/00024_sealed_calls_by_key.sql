-- +goose Up
-- sealed_by_key also indexes the model calls and placements sealed under
-- each key: an erasure recounts the usage and sandbox of the sessions
-- they are in, keeping other subjects' calls and placements in the same
-- sessions. Rows for the events already written come from their
-- payloads, as in 00023.
INSERT INTO sealed_by_key (key_id, seq, type)
SELECT k, seq, type FROM (
    SELECT seq, type, substring(payload FROM '"k":"([^"]*)"') AS k FROM events
    WHERE type IN ('provider.called', 'session.placed')
      AND payload LIKE '{"$sealed":1,%'
) AS sealed WHERE k IN (SELECT key_id FROM subject_keys);

-- +goose Down
DELETE FROM sealed_by_key WHERE type IN ('provider.called', 'session.placed');
