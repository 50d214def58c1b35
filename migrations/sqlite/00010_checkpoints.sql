-- +goose Up
-- Signed checkpoints of the Merkle log and their witnesses' cosignatures
-- (see docs/EVIDENCE.md, "Signed checkpoints and witnesses"), kept by
-- package checkpoint. Both tables are append-only, as the log is.

-- store_id names the store in the origin line of its checkpoints
-- ("rath.store/<store_id>"): random, made once when the store is created or
-- first migrated to this version, never changed by rath.
INSERT INTO store_meta (key, value) VALUES ('store_id', lower(hex(randomblob(16))))
    ON CONFLICT (key) DO NOTHING;

-- One row per signed checkpoint. note is the signed note exactly as the
-- signer wrote it (the C2SP tlog-checkpoint body, a blank line, its
-- signature line); size and root repeat its body for lookups.
-- verifier_key is the note verifier key of its signer, so a change of key
-- is visible in the table.
CREATE TABLE checkpoints (
    id           INTEGER PRIMARY KEY,
    size         INTEGER NOT NULL,
    root         BLOB    NOT NULL,
    key_name     TEXT    NOT NULL,
    verifier_key TEXT    NOT NULL,
    note         BLOB    NOT NULL,
    signed_at    INTEGER NOT NULL,
    UNIQUE (size, verifier_key)
);

-- A witness's cosignature of a checkpoint: one more note signature line
-- over the same body, by the witness's key.
CREATE TABLE checkpoint_cosignatures (
    checkpoint_id INTEGER NOT NULL REFERENCES checkpoints (id),
    witness_key   TEXT    NOT NULL,
    signature     TEXT    NOT NULL,
    at            INTEGER NOT NULL,
    PRIMARY KEY (checkpoint_id, witness_key)
);

-- +goose StatementBegin
CREATE TRIGGER checkpoints_no_update BEFORE UPDATE ON checkpoints
BEGIN
    SELECT RAISE(ABORT, 'rath: checkpoints are append-only (UPDATE refused)');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER checkpoints_no_delete BEFORE DELETE ON checkpoints
BEGIN
    SELECT RAISE(ABORT, 'rath: checkpoints are append-only (DELETE refused)');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER checkpoint_cosignatures_no_update BEFORE UPDATE ON checkpoint_cosignatures
BEGIN
    SELECT RAISE(ABORT, 'rath: cosignatures are append-only (UPDATE refused)');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER checkpoint_cosignatures_no_delete BEFORE DELETE ON checkpoint_cosignatures
BEGIN
    SELECT RAISE(ABORT, 'rath: cosignatures are append-only (DELETE refused)');
END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE checkpoint_cosignatures;
DROP TABLE checkpoints;
DELETE FROM store_meta WHERE key = 'store_id';
