-- +goose Up
-- Redaction with proof (docs/EVIDENCE.md, "Redaction and retention"). A
-- redacted event keeps its row, its hash and its leaf; its payload column
-- becomes the marker {"$redacted":true} and its salt NULL, and its payload
-- commitment (hex SHA-256(salt || payload), what its leaf line holds) moves
-- here, so verify still recomputes the leaf without the payload. record_seq
-- is the evidence.redacted event that says who, when and why.
CREATE TABLE redactions (
    seq        INTEGER PRIMARY KEY,
    record_seq INTEGER NOT NULL,
    commitment TEXT    NOT NULL
);

-- +goose StatementBegin
CREATE TRIGGER redactions_no_update BEFORE UPDATE ON redactions
BEGIN
    SELECT RAISE(ABORT, 'rath: redactions are append-only (UPDATE refused)');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER redactions_no_delete BEFORE DELETE ON redactions
BEGIN
    SELECT RAISE(ABORT, 'rath: redactions are append-only (DELETE refused)');
END;
-- +goose StatementEnd

-- The one UPDATE the log allows: clearing a payload whose commitment is
-- already in redactions. Every other column must stay as it is.
DROP TRIGGER events_no_update;

-- +goose StatementBegin
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
WHEN NOT (
    NEW.seq IS OLD.seq AND NEW.stream IS OLD.stream AND NEW.version IS OLD.version
    AND NEW.type IS OLD.type AND NEW.type_version IS OLD.type_version
    AND NEW.run_id IS OLD.run_id AND NEW.at IS OLD.at AND NEW.hash IS OLD.hash
    AND NEW.payload = '{"$redacted":true}' AND NEW.salt IS NULL
    AND EXISTS (SELECT 1 FROM redactions WHERE redactions.seq = OLD.seq)
)
BEGIN
    SELECT RAISE(ABORT, 'rath: events are append-only (UPDATE refused; only a recorded redaction may clear a payload)');
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER events_no_update;
-- +goose StatementBegin
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'rath: events are append-only (UPDATE refused)');
END;
-- +goose StatementEnd
DROP TRIGGER redactions_no_delete;
DROP TRIGGER redactions_no_update;
DROP TABLE redactions;
