package projections

import (
	"context"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"
)

// RunsFilter selects runs for RunsNewest. The zero value selects every
// run.
type RunsFilter struct {
	// Statuses keeps runs with one of these stored statuses (ok and error
	// for finished runs, StatusWord's done and failed); empty keeps all.
	Statuses []string
	// StartedAfter keeps runs started at or after it (Unix ns); zero
	// keeps all.
	StartedAfter int64
	// Before keeps runs started before this seq (a page's cursor: the
	// last row's StartedSeq); zero keeps all.
	Before int64
	// Text keeps runs whose id, workflow, sessions or error hold it;
	// empty keeps all. Sealed columns hold ciphertext and do not match.
	Text string
}

// RunsNewest returns the newest limit runs f selects, newest first, and
// how many it selects in all; limit < 1 returns every one. Only the runs
// returned are read and opened (a sealed store opens their content
// columns), so a page costs the same on a store of any size but for the
// count, which reads no content.
func (r *Reader) RunsNewest(ctx context.Context, f RunsFilter, limit int) ([]RunRow, int, error) {
	rs, err := r.RunsPage(ctx, f, limit)
	if err != nil {
		return nil, 0, err
	}
	total := len(rs)
	if limit > 0 && total == limit {
		where, args, err := f.where()
		if err != nil {
			return nil, 0, err
		}
		// On db, not the prepared statements' cache: the text varies with
		// the filters.
		if err := r.db.QueryRowContext(ctx, r.db.Rebind(`SELECT COUNT(*) FROM runs`+where), args...).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("projections: count runs: %w", err)
		}
	}
	return rs, total, nil
}

// RunsPage returns the newest limit runs f selects, newest first, opened,
// without a count: a page of a list that counts otherwise, or not at all
// (the console asks for one more than it shows, to know whether a next
// page exists). limit < 1 returns every one.
func (r *Reader) RunsPage(ctx context.Context, f RunsFilter, limit int) ([]RunRow, error) {
	where, args, err := f.where()
	if err != nil {
		return nil, err
	}
	query := `SELECT id, workflow, input_session, output_session, seed, code_version, status, error, parent_run, started_seq, finished_seq, started_at, finished_at, tenant FROM runs` + where + ` ORDER BY started_seq DESC`
	if limit > 0 {
		query += ` LIMIT ?`
		args = append(args, limit)
	}
	var rs []RunRow
	if err := r.db.SelectContext(ctx, &rs, r.db.Rebind(query), args...); err != nil {
		return nil, fmt.Errorf("projections: runs: %w", err)
	}
	if err := r.OpenRuns(ctx, rs); err != nil {
		return nil, err
	}
	return rs, nil
}

// where is f's WHERE clause (with its leading space, "" for none) and
// its arguments, in ? placeholders.
func (f RunsFilter) where() (string, []any, error) {
	var conds []string
	var args []any
	if len(f.Statuses) > 0 {
		in, inArgs, err := sqlx.In(`status IN (?)`, f.Statuses)
		if err != nil {
			return "", nil, fmt.Errorf("projections: runs: %w", err)
		}
		conds, args = append(conds, in), append(args, inArgs...)
	}
	if f.StartedAfter != 0 {
		conds, args = append(conds, `started_at >= ?`), append(args, f.StartedAfter)
	}
	if f.Before != 0 {
		conds, args = append(conds, `started_seq < ?`), append(args, f.Before)
	}
	if f.Text != "" {
		p := likePattern(f.Text)
		conds = append(conds, `(id LIKE ? ESCAPE '\' OR workflow LIKE ? ESCAPE '\' OR input_session LIKE ? ESCAPE '\' OR output_session LIKE ? ESCAPE '\' OR error LIKE ? ESCAPE '\')`)
		args = append(args, p, p, p, p, p)
	}
	if len(conds) == 0 {
		return "", nil, nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args, nil
}

// likePattern matches s anywhere, quoted for LIKE ... ESCAPE '\'.
func likePattern(s string) string {
	return "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s) + "%"
}
