-- +goose Up
-- Signed checkpoints of the Merkle log and their witnesses' cosignatures
-- (see docs/EVIDENCE.md, "Signed checkpoints and witnesses"), kept by
-- package checkpoint. Both tables are append-only, as the log is.

-- store_id names the store in the origin line of its checkpoints
-- ("rath.store/<store_id>"): random, made once when the store is created or
-- first migrated to this version, never changed by rath.
INSERT INTO store_meta (key, value) VALUES ('store_id', replace(gen_random_uuid()::text, '-', ''))
    ON CONFLICT (key) DO NOTHING;

-- One row per signed checkpoint. note is the signed note exactly as the
-- signer wrote it (the C2SP tlog-checkpoint body, a blank line, its
-- signature line); size and root repeat its body for lookups.
-- verifier_key is the note verifier key of its signer, so a change of key
-- is visible in the table.
CREATE TABLE checkpoints (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    size         BIGINT NOT NULL,
    root         BYTEA  NOT NULL,
    key_name     TEXT   NOT NULL,
    verifier_key TEXT   NOT NULL,
    note         BYTEA  NOT NULL,
    signed_at    BIGINT NOT NULL,
    UNIQUE (size, verifier_key)
);

-- A witness's cosignature of a checkpoint: one more note signature line
-- over the same body, by the witness's key.
CREATE TABLE checkpoint_cosignatures (
    checkpoint_id BIGINT NOT NULL REFERENCES checkpoints (id),
    witness_key   TEXT   NOT NULL,
    signature     TEXT   NOT NULL,
    at            BIGINT NOT NULL,
    PRIMARY KEY (checkpoint_id, witness_key)
);

CREATE TRIGGER checkpoints_no_update BEFORE UPDATE ON checkpoints
    FOR EACH ROW EXECUTE FUNCTION rath_events_append_only();
CREATE TRIGGER checkpoints_no_delete BEFORE DELETE ON checkpoints
    FOR EACH ROW EXECUTE FUNCTION rath_events_append_only();
CREATE TRIGGER checkpoints_no_truncate BEFORE TRUNCATE ON checkpoints
    FOR EACH STATEMENT EXECUTE FUNCTION rath_events_append_only();
CREATE TRIGGER checkpoint_cosignatures_no_update BEFORE UPDATE ON checkpoint_cosignatures
    FOR EACH ROW EXECUTE FUNCTION rath_events_append_only();
CREATE TRIGGER checkpoint_cosignatures_no_delete BEFORE DELETE ON checkpoint_cosignatures
    FOR EACH ROW EXECUTE FUNCTION rath_events_append_only();
CREATE TRIGGER checkpoint_cosignatures_no_truncate BEFORE TRUNCATE ON checkpoint_cosignatures
    FOR EACH STATEMENT EXECUTE FUNCTION rath_events_append_only();

-- +goose Down
DROP TABLE checkpoint_cosignatures;
DROP TABLE checkpoints;
DELETE FROM store_meta WHERE key = 'store_id';
