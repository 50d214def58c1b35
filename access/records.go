package access

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// Viewed is one read of run content: what Record appends.
type Viewed struct {
	// Run is the run read; empty for a memory namespace's read.
	Run string
	// Session is the session read, if the read was of one (in the
	// event; the access_records row keeps the run).
	Session string
	// FromSeq and ToSeq are the seq range read (0 for none).
	FromSeq, ToSeq int64
	// Namespace is the memory namespace read.
	Namespace string
	// What is one of the events.Viewed* kinds ("transcript", "events",
	// "model_call", ...).
	What string
	// Route is the route read through ("GET /api/runs/{id}/events").
	Route string
	// Tenant is the tenant whose content was read; empty means the
	// identity's. An identity of every tenant (the local modes') reading
	// a run records the run's tenant, so that the tenant's admins see
	// the read.
	Tenant string
}

// Record appends one access.viewed event: id read v, at now. Errors: an
// ErrInvalid for an identity without a subject, or the store's (among
// them events.ErrInvalid for a record naming nothing read).
func Record(ctx context.Context, rt Runtime, id Identity, v Viewed, now time.Time) error {
	if id.Subject == "" {
		return invalid("an access record needs who read")
	}
	tenant := v.Tenant
	if tenant == "" {
		tenant = id.Tenant
	}
	e := events.AccessViewed{Who: id.Subject, Issuer: id.Issuer, Tenant: tenant, Run: v.Run, Session: v.Session, FromSeq: v.FromSeq, ToSeq: v.ToSeq,
		Namespace: v.Namespace, What: v.What, Route: v.Route, At: now.UnixNano()}
	if _, err := rt.Store().Append(ctx, e.StreamID(), eventlog.AnyVersion, e); err != nil {
		return fmt.Errorf("record access: %w", err)
	}
	return nil
}

// AccessRecord is one stored access.viewed, as Records lists it.
type AccessRecord struct {
	Seq       int64     `db:"seq" json:"seq"`
	Who       string    `db:"who" json:"who"`
	Issuer    string    `db:"issuer" json:"issuer,omitempty"`
	Tenant    string    `db:"tenant" json:"tenant,omitempty"`
	Run       string    `db:"run" json:"run,omitempty"`
	FromSeq   int64     `db:"from_seq" json:"from_seq,omitempty"`
	ToSeq     int64     `db:"to_seq" json:"to_seq,omitempty"`
	Namespace string    `db:"namespace" json:"namespace,omitempty"`
	What      string    `db:"what" json:"what"`
	Route     string    `db:"route" json:"route"`
	AtNanos   int64     `db:"at" json:"-"`
	At        time.Time `db:"-" json:"at"`
}

// Filter selects access records; its zero value selects all.
type Filter struct {
	Tenant string    // only reads of this tenant's content
	Run    string    // only reads of this run
	Who    string    // only reads by this subject
	Since  time.Time // only reads at or after this time; zero for any
	// Limit is the most returned, the newest; 0 for no limit.
	Limit int
}

// Querier runs a read: the store's read pool (Runtime.Store().DB()), or
// a tenant's scope of it (projections.Scope), under which a tenant's
// records are all there is.
type Querier interface {
	SelectContext(ctx context.Context, dest any, query string, args ...any) error
	Rebind(query string) string
}

// Records lists the access records f selects through q, oldest first.
func Records(ctx context.Context, q Querier, f Filter) ([]AccessRecord, error) {
	var conds []string
	var args []any
	if f.Tenant != "" {
		conds, args = append(conds, "tenant = ?"), append(args, f.Tenant)
	}
	if f.Run != "" {
		conds, args = append(conds, "run = ?"), append(args, f.Run)
	}
	if f.Who != "" {
		conds, args = append(conds, "who = ?"), append(args, f.Who)
	}
	if !f.Since.IsZero() {
		conds, args = append(conds, "at >= ?"), append(args, f.Since.UnixNano())
	}
	query := `SELECT seq, who, issuer, tenant, run, from_seq, to_seq, namespace, what, route, at FROM access_records`
	if len(conds) > 0 {
		query += " WHERE " + strings.Join(conds, " AND ")
	}
	query += " ORDER BY seq DESC"
	if f.Limit > 0 {
		query += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	var rs []AccessRecord
	if err := q.SelectContext(ctx, &rs, q.Rebind(query), args...); err != nil {
		return nil, fmt.Errorf("access records: %w", err)
	}
	// Newest were read (for the limit); oldest first is what one reads.
	for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
		rs[i], rs[j] = rs[j], rs[i]
	}
	for i := range rs {
		rs[i].At = time.Unix(0, rs[i].AtNanos).UTC()
	}
	return rs, nil
}
