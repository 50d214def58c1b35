-- +goose Up
-- Who may act and who read what, projected from the access.* events: one
-- row per API token (only the SHA-256 of its secret; revoked_seq once
-- revoked), and one row per access.viewed, the reads of run content that
-- `rath access` and the console's run page list.
CREATE TABLE api_tokens (
    id          TEXT    COLLATE "C" PRIMARY KEY,
    hash        TEXT    COLLATE "C" NOT NULL UNIQUE,
    tenant      TEXT    COLLATE "C" NOT NULL,
    role        TEXT    COLLATE "C" NOT NULL,
    expires_at  BIGINT  NOT NULL DEFAULT 0,
    created_by  TEXT    COLLATE "C" NOT NULL DEFAULT '',
    created_seq BIGINT  NOT NULL,
    created_at  BIGINT  NOT NULL,
    revoked_by  TEXT    COLLATE "C" NOT NULL DEFAULT '',
    revoked_seq BIGINT,
    revoked_at  BIGINT
);
CREATE TABLE access_records (
    seq       BIGINT  PRIMARY KEY,
    who       TEXT    COLLATE "C" NOT NULL,
    issuer    TEXT    COLLATE "C" NOT NULL DEFAULT '',
    tenant    TEXT    COLLATE "C" NOT NULL DEFAULT '',
    run       TEXT    COLLATE "C" NOT NULL DEFAULT '',
    from_seq  BIGINT  NOT NULL DEFAULT 0,
    to_seq    BIGINT  NOT NULL DEFAULT 0,
    namespace TEXT    COLLATE "C" NOT NULL DEFAULT '',
    what      TEXT    COLLATE "C" NOT NULL,
    route     TEXT    COLLATE "C" NOT NULL DEFAULT '',
    at        BIGINT  NOT NULL
);
CREATE INDEX access_records_run ON access_records (run, seq);
CREATE INDEX access_records_who ON access_records (who, seq);
CREATE INDEX access_records_at ON access_records (at);

-- +goose Down
DROP TABLE access_records;
DROP TABLE api_tokens;
