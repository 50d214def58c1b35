package projections

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// Statuses of a run that has not finished, as the runs table holds them
// (a finished run's is the one its run.finished recorded).
const (
	RunQueued  = "queued"  // submitted, not started
	RunRunning = "running" // started, nothing pending
	RunWaiting = "waiting" // a request for a person is pending
)

// RunState is one run as the read model holds it: what a fleet worker, a
// cancel or a resume checks before it acts on the run, read in one query
// ([Reader.RunState]). It is a snapshot: the run may move on as soon as
// it is read, which is why a holder's appends are fenced by its lease.
type RunState struct {
	Run string
	// Tenant is the run's tenant (its submission's until it starts).
	Tenant string
	// Subject is whose content the run is (run.submitted's, then
	// run.started's): "user:ID", or "" for the run's own.
	Subject      string
	Workflow     string
	InputSession string
	// Params are the run's parameters: its submission's until it starts,
	// then those its run.started recorded (empty, not nil, for none).
	Params map[string]string
	// ParamsErased says the params were sealed under a subject's key
	// that was erased since: Params is empty, and the run cannot go on.
	ParamsErased bool
	// Status is queued (submitted, not started), running, waiting, or the
	// status its run.finished recorded; Error is the reason recorded with
	// it.
	Status string
	Error  string
	// Submitted says the run was put on a queue (run.submitted): only
	// such a run has a job a fleet worker may take.
	Submitted bool
	// Started says its run.started is in the log; Finished, its
	// run.finished.
	Started  bool
	Finished bool
	// Lease is the run's current lease; its Token is zero if the run was
	// never leased.
	Lease LeaseRow
}

// Holder reports the worker that holds the run at nanos (Unix
// nanoseconds, on the lease clock), or "" if no lease is live then.
func (s RunState) Holder(nanos int64) string {
	if s.Lease.Token == 0 || nanos >= s.Lease.ExpiresAt {
		return ""
	}
	return s.Lease.Worker
}

// runStateRow is RunState as its query scans it.
type runStateRow struct {
	ID           string        `db:"id"`
	Workflow     string        `db:"workflow"`
	InputSession string        `db:"input_session"`
	Params       string        `db:"params"`
	Status       string        `db:"status"`
	Error        string        `db:"error"`
	SubmittedSeq sql.NullInt64 `db:"submitted_seq"`
	StartedSeq   int64         `db:"started_seq"`
	FinishedSeq  sql.NullInt64 `db:"finished_seq"`
	Worker       string        `db:"worker"`
	Token        int64         `db:"token"`
	ExpiresAt    int64         `db:"expires_at"`
	Seq          int64         `db:"seq"`
	Version      int64         `db:"version"`
	TakenAt      int64         `db:"taken_at"`
	Tenant       string        `db:"tenant"`
	Subject      string        `db:"subject"`
}

const runStateQuery = `SELECT r.id, r.workflow, r.input_session, r.params, r.status, r.error, r.submitted_seq, r.started_seq, r.finished_seq,
	COALESCE(l.worker, '') AS worker, COALESCE(l.token, 0) AS token, COALESCE(l.expires_at, 0) AS expires_at,
	COALESCE(l.seq, 0) AS seq, COALESCE(l.version, 0) AS version, COALESCE(l.taken_at, 0) AS taken_at, r.tenant, r.subject
	FROM runs r LEFT JOIN run_leases l ON l.run = r.id WHERE r.id = ?`

// RunState returns run's state with its lease, in one query, or
// ErrNotFound for a run the log has neither submitted nor started.
func (r *Reader) RunState(ctx context.Context, run string) (RunState, error) {
	var row runStateRow
	err := r.q.GetContext(ctx, &row, r.db.Rebind(runStateQuery), run)
	if errors.Is(err, sql.ErrNoRows) {
		return RunState{}, fmt.Errorf("%w: run %q", ErrNotFound, run)
	}
	if err != nil {
		return RunState{}, fmt.Errorf("projections: run state %q: %w", run, err)
	}
	if row.Params, err = r.openText(ctx, colRunParams, row.ID, row.Params); err != nil {
		return RunState{}, err
	}
	if row.Error, err = r.openText(ctx, colRunError, row.ID, row.Error); err != nil {
		return RunState{}, err
	}
	// An erased subject's params read as none: ParamsErased says so.
	erased := row.Params == ErasedText
	params := map[string]string{}
	if row.Params != "" && !erased {
		if err := json.Unmarshal([]byte(row.Params), &params); err != nil {
			return RunState{}, fmt.Errorf("projections: run state %q: params: %w", run, err)
		}
	}
	return RunState{
		Run: row.ID, Tenant: row.Tenant, Subject: row.Subject, Workflow: row.Workflow, InputSession: row.InputSession, Params: params,
		ParamsErased: erased, Status: row.Status, Error: row.Error,
		Submitted: row.SubmittedSeq.Valid,
		// run.submitted writes the row with started_seq its own seq;
		// run.started sets it to its own.
		Started:  !row.SubmittedSeq.Valid || row.StartedSeq != row.SubmittedSeq.Int64,
		Finished: row.FinishedSeq.Valid,
		Lease: LeaseRow{Run: row.ID, Worker: row.Worker, Token: row.Token, ExpiresAt: row.ExpiresAt,
			Seq: row.Seq, Version: row.Version, TakenAt: row.TakenAt},
	}, nil
}

// StatusWord is how a run's status is shown: the log records a finished
// run as ok or error (rath.RunOK, rath.RunError), an operator reads done
// or failed. Any other status shows as it is.
func StatusWord(status string) string {
	switch status {
	case "ok":
		return "done"
	case "error":
		return "failed"
	}
	return status
}
