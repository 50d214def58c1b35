-- +goose Up
-- Redaction with proof (docs/EVIDENCE.md, "Redaction and retention"). A
-- redacted event keeps its row, its hash and its leaf; its payload column
-- becomes the marker {"$redacted":true} and its salt NULL, and its payload
-- commitment (hex SHA-256(salt || payload), what its leaf line holds) moves
-- here, so verify still recomputes the leaf without the payload. record_seq
-- is the evidence.redacted event that says who, when and why.
CREATE TABLE redactions (
    seq        BIGINT PRIMARY KEY,
    record_seq BIGINT NOT NULL,
    commitment TEXT   COLLATE "C" NOT NULL
);
CREATE TRIGGER redactions_no_update BEFORE UPDATE ON redactions
    FOR EACH ROW EXECUTE FUNCTION rath_events_append_only();
CREATE TRIGGER redactions_no_delete BEFORE DELETE ON redactions
    FOR EACH ROW EXECUTE FUNCTION rath_events_append_only();
CREATE TRIGGER redactions_no_truncate BEFORE TRUNCATE ON redactions
    FOR EACH STATEMENT EXECUTE FUNCTION rath_events_append_only();

-- The one UPDATE the log allows: clearing a payload whose commitment is
-- already in redactions. Every other column must stay as it is.
-- +goose StatementBegin
CREATE FUNCTION rath_events_redact_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.seq IS NOT DISTINCT FROM OLD.seq AND NEW.stream IS NOT DISTINCT FROM OLD.stream
       AND NEW.version IS NOT DISTINCT FROM OLD.version AND NEW.type IS NOT DISTINCT FROM OLD.type
       AND NEW.type_version IS NOT DISTINCT FROM OLD.type_version AND NEW.run_id IS NOT DISTINCT FROM OLD.run_id
       AND NEW.at IS NOT DISTINCT FROM OLD.at AND NEW.hash IS NOT DISTINCT FROM OLD.hash
       AND NEW.payload = '{"$redacted":true}' AND NEW.salt IS NULL
       AND EXISTS (SELECT 1 FROM redactions WHERE redactions.seq = OLD.seq) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'rath: events are append-only (UPDATE refused; only a recorded redaction may clear a payload)';
END;
$$;
-- +goose StatementEnd
DROP TRIGGER events_no_update ON events;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
    FOR EACH ROW EXECUTE FUNCTION rath_events_redact_only();

-- +goose Down
DROP TRIGGER events_no_update ON events;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
    FOR EACH ROW EXECUTE FUNCTION rath_events_append_only();
DROP FUNCTION rath_events_redact_only();
DROP TABLE redactions;
