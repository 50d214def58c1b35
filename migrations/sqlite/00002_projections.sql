-- +goose Up
-- Read models. Every row here is derived from events and can be rebuilt.

-- One row per session. A session shares the first base_len chunks of base
-- (structural sharing), and stores only its own chunks (index >= base_len).
CREATE TABLE sessions (
    id                TEXT PRIMARY KEY,
    version           INTEGER NOT NULL,
    kind              TEXT    NOT NULL,          -- root, fork, detach, merge, compress, import
    origin            TEXT    NOT NULL DEFAULT '', -- user, agent_prompt, empty, import, ...
    source            TEXT,                      -- provenance: the session it was derived from
    base              TEXT,
    base_len          INTEGER NOT NULL DEFAULT 0,
    length            INTEGER NOT NULL DEFAULT 0,
    backend           TEXT    NOT NULL DEFAULT '',
    spec              TEXT    NOT NULL DEFAULT '',
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    total_tokens      INTEGER NOT NULL DEFAULT 0,
    calls             INTEGER NOT NULL DEFAULT 0,
    children          INTEGER NOT NULL DEFAULT 0,
    incomplete        INTEGER NOT NULL DEFAULT 0,
    run_id            TEXT,
    created_seq       INTEGER NOT NULL,
    updated_seq       INTEGER NOT NULL
);
CREATE INDEX sessions_run ON sessions (run_id) WHERE run_id IS NOT NULL;

-- The session graph: child has parent, with the lineage kind and order.
CREATE TABLE session_edges (
    child    TEXT    NOT NULL,
    parent   TEXT    NOT NULL,
    kind     TEXT    NOT NULL,
    position INTEGER NOT NULL,
    seq      INTEGER NOT NULL,
    PRIMARY KEY (child, parent)
);
CREATE INDEX session_edges_parent ON session_edges (parent);

-- Chunks physically stored by a session (its own, not the shared prefix).
-- The rarely set fields (name, tool_call_id, tool_calls, meta) share one
-- JSON column: reading a 10,000-chunk session costs per column read.
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

-- One row per model call that reported usage.
CREATE TABLE usage (
    seq               INTEGER PRIMARY KEY,
    session           TEXT    NOT NULL,
    run_id            TEXT,
    agent             TEXT    NOT NULL DEFAULT '',
    model             TEXT    NOT NULL DEFAULT '',
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    total_tokens      INTEGER NOT NULL DEFAULT 0,
    latency_ms        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX usage_session ON usage (session);

CREATE TABLE runs (
    id            TEXT PRIMARY KEY,
    workflow      TEXT    NOT NULL DEFAULT '',
    input_session TEXT    NOT NULL DEFAULT '',
    output_session TEXT   NOT NULL DEFAULT '',
    seed          TEXT    NOT NULL DEFAULT '',
    code_version  TEXT    NOT NULL DEFAULT '',
    status        TEXT    NOT NULL,
    error         TEXT    NOT NULL DEFAULT '',
    parent_run    TEXT    NOT NULL DEFAULT '',
    started_seq   INTEGER NOT NULL,
    finished_seq  INTEGER,
    started_at    INTEGER NOT NULL,
    finished_at   INTEGER
);

-- Deterministic id counters: how many ids were derived in a scope
-- (seed + parent session), so the next id is reproducible.
CREATE TABLE id_counters (
    scope TEXT PRIMARY KEY,
    n     INTEGER NOT NULL
) WITHOUT ROWID;

-- How far each asynchronous projection (for example the memory index) got.
CREATE TABLE projection_checkpoints (
    name TEXT PRIMARY KEY,
    seq  INTEGER NOT NULL
);

-- +goose Down
DROP TABLE projection_checkpoints;
DROP TABLE id_counters;
DROP TABLE runs;
DROP TABLE usage;
DROP TABLE chunks;
DROP TABLE session_edges;
DROP TABLE sessions;
