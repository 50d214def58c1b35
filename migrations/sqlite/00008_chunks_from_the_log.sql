-- +goose Up
-- A chunk's content is stored once, in its event: sessions read their
-- chunks from the log (the events of their own stream, in version order),
-- so the chunks projection, which held a second copy, goes. The type index
-- leaves out chunk.appended, the most common type, which no query looks up
-- by type (reads by type add the same term, so they use the index).
-- The space the old table took is reused by new pages; VACUUM returns it
-- to the file system.
DROP TABLE chunks;
DROP INDEX events_type;
CREATE INDEX events_type ON events (type, seq) WHERE type <> 'chunk.appended';

-- +goose Down
DROP INDEX events_type;
CREATE INDEX events_type ON events (type, seq);
-- Empty: `rath rebuild` with the previous version fills it.
CREATE TABLE chunks (
    session TEXT    NOT NULL,
    idx     INTEGER NOT NULL,
    role    TEXT    NOT NULL,
    author  TEXT    NOT NULL DEFAULT '',
    content TEXT    NOT NULL DEFAULT '',
    extra   TEXT    NOT NULL DEFAULT '',
    seq     INTEGER NOT NULL,
    PRIMARY KEY (session, idx)
) WITHOUT ROWID;
