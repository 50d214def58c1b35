package projections

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/gorath/rath/events"
)

// Approval statuses in the approvals table: pending, or the decision.
const ApprovalPending = "pending"

// approvalDecided records the decision; a run with nothing left pending
// can go on, so it is running again (a fleet worker takes it; or rath
// resume).
func (a *applier) approvalDecided(ev *events.Event, e *events.ApprovalDecided) error {
	tx := a.tx
	res, err := tx.Exec(`UPDATE approvals SET status = ?, decided_by = ?, decided_seq = ?, decided_at = ? WHERE id = ? AND status = ?`,
		e.Decision, e.By, ev.Seq, ev.At.UnixNano(), e.ID, ApprovalPending)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if a.redactedRequests[ev.Stream] {
			return nil // its request was redacted: there is no row to decide
		}
		return inconsistent("approval.decided for %q, which is not pending", e.ID)
	}
	var run string
	if err := tx.QueryRow(`SELECT run FROM approvals WHERE id = ?`, e.ID).Scan(&run); err != nil || run == "" {
		return err
	}
	_, err = tx.Exec(`UPDATE runs SET status = 'running' WHERE id = ? AND status = 'waiting'
		AND NOT EXISTS (SELECT 1 FROM approvals WHERE run = ? AND status = ?)`, run, run, ApprovalPending)
	return err
}

// ApprovalRow is one request, pending or decided.
type ApprovalRow struct {
	ID           string        `db:"id" json:"id"`
	Run          string        `db:"run" json:"run,omitempty"`
	Session      string        `db:"session" json:"session"`
	Agent        string        `db:"agent" json:"agent,omitempty"`
	Kind         string        `db:"kind" json:"kind"`
	Tool         string        `db:"tool" json:"tool,omitempty"`
	Question     string        `db:"question" json:"question,omitempty"`
	Reason       string        `db:"reason" json:"reason,omitempty"`
	Status       string        `db:"status" json:"status"`
	Deadline     int64         `db:"deadline" json:"deadline,omitempty"`
	RequestedSeq int64         `db:"requested_seq" json:"requested_seq"`
	RequestedAt  int64         `db:"requested_at" json:"requested_at"`
	DecidedBy    string        `db:"decided_by" json:"decided_by,omitempty"`
	DecidedSeq   sql.NullInt64 `db:"decided_seq" json:"-"`
	DecidedAt    sql.NullInt64 `db:"decided_at" json:"-"`
	Tenant       string        `db:"tenant" json:"tenant"`
}

const approvalCols = `id, run, session, agent, kind, tool, question, reason, status, deadline, requested_seq, requested_at, decided_by, decided_seq, decided_at, tenant`

// PendingApprovals returns the undecided requests of every run that has
// not finished (a canceled run's requests wait for nobody), oldest first.
func (r *Reader) PendingApprovals(ctx context.Context) ([]ApprovalRow, error) {
	var rs []ApprovalRow
	q := `SELECT a.` + strings.ReplaceAll(approvalCols, ", ", ", a.") + ` FROM approvals a LEFT JOIN runs r ON r.id = a.run
		WHERE a.status = ? AND r.finished_seq IS NULL ORDER BY a.requested_seq`
	if err := r.db.SelectContext(ctx, &rs, r.db.Rebind(q), ApprovalPending); err != nil {
		return nil, fmt.Errorf("projections: pending approvals: %w", err)
	}
	return rs, r.openApprovals(ctx, rs)
}

// RunApprovals returns a run's requests, pending and decided, in order.
func (r *Reader) RunApprovals(ctx context.Context, run string) ([]ApprovalRow, error) {
	var rs []ApprovalRow
	if err := r.db.SelectContext(ctx, &rs, r.db.Rebind(`SELECT `+approvalCols+` FROM approvals WHERE run = ? ORDER BY requested_seq`), run); err != nil {
		return nil, fmt.Errorf("projections: approvals of %s: %w", run, err)
	}
	return rs, r.openApprovals(ctx, rs)
}

// SessionApprovals returns the requests made on a session, in order.
func (r *Reader) SessionApprovals(ctx context.Context, session string) ([]ApprovalRow, error) {
	var rs []ApprovalRow
	if err := r.db.SelectContext(ctx, &rs, r.db.Rebind(`SELECT `+approvalCols+` FROM approvals WHERE session = ? ORDER BY requested_seq`), session); err != nil {
		return nil, fmt.Errorf("projections: approvals on %s: %w", session, err)
	}
	return rs, r.openApprovals(ctx, rs)
}

// ErrNoApproval is returned for a request id the projection does not hold.
var ErrNoApproval = errors.New("projections: no such approval request")

// Approval returns one request.
func (r *Reader) Approval(ctx context.Context, id string) (ApprovalRow, error) {
	var a ApprovalRow
	err := r.db.GetContext(ctx, &a, r.db.Rebind(`SELECT `+approvalCols+` FROM approvals WHERE id = ?`), id)
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("%w: %s", ErrNoApproval, id)
	}
	if err != nil {
		return a, err
	}
	one := []ApprovalRow{a}
	err = r.openApprovals(ctx, one)
	return one[0], err
}
