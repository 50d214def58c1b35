-- +goose Up
-- Read models. Every row here is derived from events and can be rebuilt.
-- Columns are in the same order as the SQLite schema's: the projection
-- check compares the two row by row.

-- One row per session. A session shares the first base_len chunks of base
-- (structural sharing), and stores only its own chunks (index >= base_len).
CREATE TABLE sessions (
    id                TEXT   COLLATE "C" PRIMARY KEY,
    version           BIGINT NOT NULL,
    kind              TEXT   COLLATE "C" NOT NULL,
    origin            TEXT   COLLATE "C" NOT NULL DEFAULT '',
    source            TEXT   COLLATE "C",
    base              TEXT   COLLATE "C",
    base_len          BIGINT NOT NULL DEFAULT 0,
    length            BIGINT NOT NULL DEFAULT 0,
    backend           TEXT   COLLATE "C" NOT NULL DEFAULT '',
    spec              TEXT   COLLATE "C" NOT NULL DEFAULT '',
    prompt_tokens     BIGINT NOT NULL DEFAULT 0,
    completion_tokens BIGINT NOT NULL DEFAULT 0,
    total_tokens      BIGINT NOT NULL DEFAULT 0,
    calls             BIGINT NOT NULL DEFAULT 0,
    children          BIGINT NOT NULL DEFAULT 0,
    incomplete        BIGINT NOT NULL DEFAULT 0,
    run_id            TEXT   COLLATE "C",
    created_seq       BIGINT NOT NULL,
    updated_seq       BIGINT NOT NULL
);
CREATE INDEX sessions_run ON sessions (run_id) WHERE run_id IS NOT NULL;

-- The session graph: child has parent, with the lineage kind and order.
CREATE TABLE session_edges (
    child    TEXT   COLLATE "C" NOT NULL,
    parent   TEXT   COLLATE "C" NOT NULL,
    kind     TEXT   COLLATE "C" NOT NULL,
    position BIGINT NOT NULL,
    seq      BIGINT NOT NULL,
    PRIMARY KEY (child, parent)
);
CREATE INDEX session_edges_parent ON session_edges (parent);

-- Chunks physically stored by a session (its own, not the shared prefix).
CREATE TABLE chunks (
    session TEXT   COLLATE "C" NOT NULL,
    idx     BIGINT NOT NULL,
    role    TEXT   COLLATE "C" NOT NULL,
    author  TEXT   COLLATE "C" NOT NULL DEFAULT '',
    content TEXT   COLLATE "C" NOT NULL DEFAULT '',
    extra   TEXT   COLLATE "C" NOT NULL DEFAULT '',
    seq     BIGINT NOT NULL,
    PRIMARY KEY (session, idx)
);

-- One row per model call that reported usage.
CREATE TABLE usage (
    seq               BIGINT PRIMARY KEY,
    session           TEXT   COLLATE "C" NOT NULL,
    run_id            TEXT   COLLATE "C",
    agent             TEXT   COLLATE "C" NOT NULL DEFAULT '',
    model             TEXT   COLLATE "C" NOT NULL DEFAULT '',
    prompt_tokens     BIGINT NOT NULL DEFAULT 0,
    completion_tokens BIGINT NOT NULL DEFAULT 0,
    total_tokens      BIGINT NOT NULL DEFAULT 0,
    latency_ms        BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX usage_session ON usage (session);

CREATE TABLE runs (
    id             TEXT   COLLATE "C" PRIMARY KEY,
    workflow       TEXT   COLLATE "C" NOT NULL DEFAULT '',
    input_session  TEXT   COLLATE "C" NOT NULL DEFAULT '',
    output_session TEXT   COLLATE "C" NOT NULL DEFAULT '',
    seed           TEXT   COLLATE "C" NOT NULL DEFAULT '',
    code_version   TEXT   COLLATE "C" NOT NULL DEFAULT '',
    status         TEXT   COLLATE "C" NOT NULL,
    error          TEXT   COLLATE "C" NOT NULL DEFAULT '',
    parent_run     TEXT   COLLATE "C" NOT NULL DEFAULT '',
    started_seq    BIGINT NOT NULL,
    finished_seq   BIGINT,
    started_at     BIGINT NOT NULL,
    finished_at    BIGINT
);

-- Deterministic id counters: how many ids were derived in a scope
-- (seed + parent session), so the next id is reproducible.
CREATE TABLE id_counters (
    scope TEXT   COLLATE "C" PRIMARY KEY,
    n     BIGINT NOT NULL
);

-- How far each asynchronous projection (for example the memory index) got.
CREATE TABLE projection_checkpoints (
    name TEXT   COLLATE "C" PRIMARY KEY,
    seq  BIGINT NOT NULL
);

-- +goose Down
DROP TABLE projection_checkpoints;
DROP TABLE id_counters;
DROP TABLE runs;
DROP TABLE usage;
DROP TABLE chunks;
DROP TABLE session_edges;
DROP TABLE sessions;
