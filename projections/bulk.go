package projections

import (
	"fmt"
	"strings"

	"github.com/gorath/rath/eventlog"
)

// A rebuild holds the writer alone and reads back none of the rows it
// writes but the runs' and approvals' (a run.finished must find its run),
// so it keeps the sessions and the id counters in memory and writes them
// at its end, and queues the rows of usage, session_edges and
// session_snapshots: each table's rows go in multi-row INSERTs. On
// PostgreSQL a statement is a round trip, and a statement a row made a
// rebuild about one round trip an event (internal/storetest
// TestPostgres_ARebuildWritesInBulk).

// bulkParams bounds a multi-row INSERT's parameters: well under SQLite's
// 32,766 and PostgreSQL's 65,535.
const bulkParams = 4096

// bulkInsert queues the rows of one table and writes them in INSERTs of
// up to max rows.
type bulkInsert struct {
	table string
	cols  []string
	rows  [][]any
	max   int
	// texts are the statements by their number of rows: a full batch's
	// and a rest's. The writer prepares each text once (a round trip) and
	// keeps it, so a table's rebuilds add at most max of them.
	texts map[int]string
}

func newBulkInsert(table string, cols ...string) *bulkInsert {
	return &bulkInsert{table: table, cols: cols, max: bulkParams / len(cols), texts: map[int]string{}}
}

// add queues a row (one value per column, in order), writing a full
// batch.
func (b *bulkInsert) add(tx *eventlog.Tx, row ...any) error {
	b.rows = append(b.rows, row)
	if len(b.rows) < b.max {
		return nil
	}
	err := b.write(tx, b.rows)
	b.rows = b.rows[:0]
	return err
}

// flush writes what is queued, in one INSERT.
func (b *bulkInsert) flush(tx *eventlog.Tx) error {
	if len(b.rows) == 0 {
		return nil
	}
	err := b.write(tx, b.rows)
	b.rows = nil
	return err
}

func (b *bulkInsert) write(tx *eventlog.Tx, rows [][]any) error {
	q, ok := b.texts[len(rows)]
	if !ok {
		one := "(?" + strings.Repeat(", ?", len(b.cols)-1) + ")"
		q = "INSERT INTO " + b.table + " (" + strings.Join(b.cols, ", ") + ") VALUES " + one + strings.Repeat(", "+one, len(rows)-1)
		b.texts[len(rows)] = q
	}
	args := make([]any, 0, len(rows)*len(b.cols))
	for _, r := range rows {
		args = append(args, r...)
	}
	if _, err := tx.Exec(q, args...); err != nil {
		return fmt.Errorf("projections: write %d rows of %s: %w", len(rows), b.table, err)
	}
	return nil
}

// rebuildRows is what a rebuild writes in bulk.
type rebuildRows struct {
	usage, edges, snapshots, sessions, counters, byKey *bulkInsert
	// counters are the id counters' values so far, by scope.
	counterN map[string]int64
	// runTenants are the runs' tenants so far, and inputTaken the
	// sessions some run took as its input (tenants.go).
	runTenants map[string]string
	inputTaken map[string]bool
}

func newRebuildRows() *rebuildRows {
	return &rebuildRows{
		usage:     newBulkInsert("usage", "seq", "session", "run_id", "agent", "model", "prompt_tokens", "completion_tokens", "total_tokens", "latency_ms"),
		edges:     newBulkInsert("session_edges", "child", "parent", "kind", "position", "seq"),
		snapshots: newBulkInsert("session_snapshots", "session", "seq", "version", "length", "backend", "spec", "prompt_tokens", "completion_tokens", "total_tokens", "calls"),
		sessions: newBulkInsert("sessions", "id", "version", "kind", "origin", "source", "base", "base_len", "length", "backend", "spec",
			"prompt_tokens", "completion_tokens", "total_tokens", "calls", "children", "incomplete", "run_id", "created_seq", "updated_seq", "tenant"),
		counters: newBulkInsert("id_counters", "scope", "n"),
		byKey:    newBulkInsert("sealed_by_key", "key_id", "seq", "type"),
		counterN: map[string]int64{},

		runTenants: map[string]string{},
		inputTaken: map[string]bool{},
	}
}
