-- +goose Up
-- Crypto-shredding (package keyring, docs/SECURITY.md): one data key per
-- subject (user:ID, run:RUNID, session:SID, memory:NAMESPACE), wrapped
-- by the key-encryption key kek_id names. Content sealed under a key
-- opens only while its row exists: erasing a subject deletes the row.
-- No existing row changes; a store without a key-encryption key keeps
-- this table empty and its content in clear.
CREATE TABLE subject_keys (
    subject    TEXT PRIMARY KEY,
    key_id     TEXT NOT NULL,
    wrapped    BLOB NOT NULL,
    kek_id     TEXT NOT NULL,
    created_at INTEGER NOT NULL
);

-- +goose Down
DROP TABLE subject_keys;
