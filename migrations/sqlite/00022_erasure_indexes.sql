-- +goose Up
-- An erasure reaches a run's usage and a session's approvals through
-- these, so its time grows with the subject's runs, not with the store
-- (rath's TestErase_StatementsUseIndexes explains every statement it
-- runs). No row changes.
CREATE INDEX usage_run ON usage (run_id) WHERE run_id IS NOT NULL;
CREATE INDEX approvals_session ON approvals (session);

-- +goose Down
DROP INDEX approvals_session;
DROP INDEX usage_run;
