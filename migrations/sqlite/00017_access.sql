-- +goose Up
-- Who may act and who read what, projected from the access.* events: one
-- row per API token (only the SHA-256 of its secret; revoked_seq once
-- revoked), and one row per access.viewed, the reads of run content that
-- `rath access` and the console's run page list.
CREATE TABLE api_tokens (
    id          TEXT    PRIMARY KEY,
    hash        TEXT    NOT NULL UNIQUE,
    tenant      TEXT    NOT NULL,
    role        TEXT    NOT NULL,
    expires_at  INTEGER NOT NULL DEFAULT 0,
    created_by  TEXT    NOT NULL DEFAULT '',
    created_seq INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    revoked_by  TEXT    NOT NULL DEFAULT '',
    revoked_seq INTEGER,
    revoked_at  INTEGER
);
CREATE TABLE access_records (
    seq       INTEGER PRIMARY KEY,
    who       TEXT    NOT NULL,
    issuer    TEXT    NOT NULL DEFAULT '',
    tenant    TEXT    NOT NULL DEFAULT '',
    run       TEXT    NOT NULL DEFAULT '',
    from_seq  INTEGER NOT NULL DEFAULT 0,
    to_seq    INTEGER NOT NULL DEFAULT 0,
    namespace TEXT    NOT NULL DEFAULT '',
    what      TEXT    NOT NULL,
    route     TEXT    NOT NULL DEFAULT '',
    at        INTEGER NOT NULL
);
CREATE INDEX access_records_run ON access_records (run, seq);
CREATE INDEX access_records_who ON access_records (who, seq);
CREATE INDEX access_records_at ON access_records (at);

-- +goose Down
DROP TABLE access_records;
DROP TABLE api_tokens;
