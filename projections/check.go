package projections

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/migrations"
	"github.com/jmoiron/sqlx"
)

// ErrMismatch is matched by a *Difference: a projection row that does not
// equal the row a rebuild from the log produces.
var ErrMismatch = errors.New("projections: differ from a rebuild of the log")

// tableKeys is each table's primary key, the order in which Check walks it.
var tableKeys = func() map[string][]string {
	m := make(map[string][]string, len(tables))
	for _, t := range tables {
		m[t.name] = t.key
	}
	return m
}()

// CheckOptions configure Check.
type CheckOptions struct {
	// Max is the most differences to collect; zero means 1 (the first).
	Max int
}

// CheckReport is the result of Check.
type CheckReport struct {
	// Seq is the log head the comparison was made at: the projections
	// as of that event were compared with a rebuild of events 1..Seq.
	Seq int64 `json:"seq"`
	// Rows counts the rows compared (stored and rebuilt, once per key).
	Rows int64 `json:"rows"`
	// Tables are the tables compared.
	Tables []string `json:"tables"`
	// Differences are the first differing rows, in table order; empty
	// when the projections equal the rebuild.
	Differences []*Difference `json:"differences,omitempty"`
}

// OK reports whether the projections equal the rebuild.
func (r *CheckReport) OK() bool { return len(r.Differences) == 0 }

// Difference is one projection row that differs from the rebuild.
type Difference struct {
	Table string `json:"table"`
	// Key names the row by its primary key ("session=s-1 idx=2").
	Key string `json:"key"`
	// Stored and Rebuilt render the row in the store and in the rebuild;
	// one is empty when the row exists on one side only.
	Stored  string `json:"stored,omitempty"`
	Rebuilt string `json:"rebuilt,omitempty"`
	// Columns are the columns whose values differ when both rows exist,
	// each as `name: stored "x", rebuilt "y"`.
	Columns []string `json:"columns,omitempty"`
}

func (d *Difference) Error() string {
	var what string
	switch {
	case d.Stored == "":
		what = "missing from the store (a rebuild from the log has " + d.Rebuilt + ")"
	case d.Rebuilt == "":
		what = "in the store but not in a rebuild from the log: " + d.Stored
	default:
		what = strings.Join(d.Columns, "; ")
	}
	return fmt.Sprintf("projections: table %s, row %s differs from a rebuild of the log: %s", d.Table, d.Key, what)
}

// Is makes errors.Is(err, ErrMismatch) true.
func (d *Difference) Is(target error) bool { return target == ErrMismatch }

// Check proves, without changing the store, that the SQL projections equal
// a rebuild from the log. It reads the log head and every projection row in
// one read transaction (one snapshot, in which the projections reflect
// exactly the events up to that head, as the projector writes them in the
// events' own transactions), rebuilds events 1..head into a scratch
// in-memory database, and compares the two table by table, row by row.
// Appends in this or another process may go on meanwhile. It holds one of
// the store's read connections for its snapshot while it reads the log on
// another: the read pool needs at least two (else an error matching
// eventlog.ErrFewReadConns), and the checks of one store take turns
// (eventlog.Store.SeveralReads), so that many at once cannot hold the
// whole pool in snapshots and wait for each other. A log that does not
// rebuild (an event the projector refuses) is an error matching
// ErrInconsistent.
func Check(ctx context.Context, store *eventlog.Store, opts CheckOptions) (*CheckReport, error) {
	if opts.Max <= 0 {
		opts.Max = 1
	}
	var rep *CheckReport
	err := store.SeveralReads(ctx, checkReads, func(ctx context.Context) error {
		var err error
		rep, err = check(ctx, store, opts)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("projections: check: %w", err)
	}
	return rep, nil
}

// checkReads is how many read connections a check needs at once: its
// snapshot's, held for the whole check, and one for the reads beside it
// (the log's pages, the rebuild's lookups), each of which gives its
// connection back when done.
const checkReads = 2

func check(ctx context.Context, store *eventlog.Store, opts CheckOptions) (*CheckReport, error) {
	snap, err := store.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	defer snap.Rollback()
	rep := &CheckReport{Tables: Tables}
	// The first read fixes the snapshot; everything below reads in it.
	if err := snap.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM events`).Scan(&rep.Seq); err != nil {
		return nil, fmt.Errorf("read head: %w", err)
	}
	sc, err := openScratch(ctx)
	if err != nil {
		return nil, err
	}
	defer sc.close()
	// Events up to the head never change (the log is append-only, and the
	// chain check catches an edit), so reading them through the pool, not
	// the snapshot, reads the same events.
	err = sc.store.Exclusive(ctx, func(ctx context.Context, tx *eventlog.Tx) error {
		_, err := replayLog(ctx, tx, store, rep.Seq, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("rebuild into scratch: %w", err)
	}
	for _, t := range Tables {
		if err := compareTable(ctx, snap, sc.store.DB(), t, rep, opts.Max); err != nil {
			return nil, err
		}
		if len(rep.Differences) >= opts.Max {
			break
		}
	}
	return rep, nil
}

// scratch is a throwaway in-memory store with rath's schema.
type scratch struct {
	keeper *sql.DB // holds the in-memory database open
	store  *eventlog.Store
}

func openScratch(ctx context.Context) (*scratch, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("scratch name: %w", err)
	}
	name := "rath-check-" + hex.EncodeToString(b[:])
	keeper, err := migrations.OpenInMemory(ctx, eventlog.DSN(name, true, "busy_timeout(10000)"))
	if err != nil {
		return nil, fmt.Errorf("scratch: %w", err)
	}
	st, err := eventlog.Open(ctx, eventlog.Options{Path: name, InMemory: true, Synchronous: "OFF", BlobThreshold: -1, ReadConns: 1})
	if err != nil {
		keeper.Close()
		return nil, fmt.Errorf("open scratch: %w", err)
	}
	return &scratch{keeper: keeper, store: st}, nil
}

func (s *scratch) close() error { return errors.Join(s.store.Close(), s.keeper.Close()) }

// cursor walks one table in key order.
type cursor struct {
	rows *sqlx.Rows
	cols []string
	row  []any // nil when exhausted
	err  error
}

func newCursor(ctx context.Context, q sqlx.QueryerContext, table string) (*cursor, error) {
	rows, err := q.QueryxContext(ctx, `SELECT * FROM `+table+` ORDER BY `+strings.Join(tableKeys[table], ", "))
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", table, err)
	}
	cols, err := rows.Columns()
	if err != nil {
		rows.Close()
		return nil, fmt.Errorf("table %s: %w", table, err)
	}
	c := &cursor{rows: rows, cols: cols}
	c.next()
	return c, c.err
}

func (c *cursor) next() {
	c.row = nil
	if !c.rows.Next() {
		c.err = c.rows.Err()
		return
	}
	vals, err := c.rows.SliceScan()
	if err != nil {
		c.err = err
		return
	}
	for i, v := range vals {
		if b, ok := v.([]byte); ok {
			vals[i] = string(b) // TEXT columns may scan as bytes
		}
	}
	c.row = vals
}

func (c *cursor) value(row []any, col string) any {
	for i, name := range c.cols {
		if name == col {
			return row[i]
		}
	}
	return nil
}

// compareTable merges the stored and rebuilt rows of table by key and
// appends differences to rep, up to max in all.
func compareTable(ctx context.Context, stored, rebuilt sqlx.QueryerContext, table string, rep *CheckReport, max int) error {
	sc, err := newCursor(ctx, stored, table)
	if err != nil {
		return err
	}
	defer sc.rows.Close()
	rc, err := newCursor(ctx, rebuilt, table)
	if err != nil {
		return err
	}
	defer rc.rows.Close()
	keys := tableKeys[table]
	key := func(c *cursor) []any {
		k := make([]any, len(keys))
		for i, name := range keys {
			k[i] = c.value(c.row, name)
		}
		return k
	}
	for (sc.row != nil || rc.row != nil) && len(rep.Differences) < max {
		rep.Rows++
		var cmp int
		switch {
		case sc.row == nil:
			cmp = 1
		case rc.row == nil:
			cmp = -1
		default:
			cmp = compareKeys(key(sc), key(rc))
		}
		switch {
		case cmp < 0:
			rep.Differences = append(rep.Differences, &Difference{Table: table, Key: renderKey(keys, key(sc)), Stored: renderRow(sc.cols, sc.row)})
			sc.next()
		case cmp > 0:
			rep.Differences = append(rep.Differences, &Difference{Table: table, Key: renderKey(keys, key(rc)), Rebuilt: renderRow(rc.cols, rc.row)})
			rc.next()
		default:
			if d := diffRow(table, keys, sc, rc); d != nil {
				rep.Differences = append(rep.Differences, d)
			}
			sc.next()
			rc.next()
		}
		if sc.err != nil || rc.err != nil {
			return fmt.Errorf("table %s: %w", table, errors.Join(sc.err, rc.err))
		}
	}
	return nil
}

func diffRow(table string, keys []string, sc, rc *cursor) *Difference {
	var cols []string
	for i, name := range sc.cols {
		if !equalValues(sc.row[i], rc.value(rc.row, name)) {
			cols = append(cols, fmt.Sprintf("%s: stored %s, rebuilt %s", name, short(sc.row[i]), short(rc.value(rc.row, name))))
		}
	}
	if len(cols) == 0 {
		return nil
	}
	k := make([]any, len(keys))
	for i, name := range keys {
		k[i] = sc.value(sc.row, name)
	}
	return &Difference{Table: table, Key: renderKey(keys, k), Stored: renderRow(sc.cols, sc.row), Rebuilt: renderRow(rc.cols, rc.row), Columns: cols}
}

func equalValues(a, b any) bool {
	return compareValues(a, b) == 0 && fmt.Sprintf("%T", a) == fmt.Sprintf("%T", b)
}

// compareKeys orders key tuples as SQLite's ORDER BY does.
func compareKeys(a, b []any) int {
	for i := range a {
		if c := compareValues(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// compareValues orders two column values as SQLite does: NULL, then
// numbers, then text (BINARY collation), then blobs.
func compareValues(a, b any) int {
	ra, rb := rank(a), rank(b)
	if ra != rb {
		return ra - rb
	}
	switch x := a.(type) {
	case int64:
		return compareNum(float64(x), toFloat(b), x, b)
	case float64:
		return compareNum(x, toFloat(b), nil, nil)
	case string:
		return strings.Compare(x, b.(string))
	case []byte:
		return bytes.Compare(x, b.([]byte))
	}
	return 0
}

func compareNum(fa, fb float64, ia, ib any) int {
	if x, ok := ia.(int64); ok {
		if y, ok := ib.(int64); ok {
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		}
	}
	switch {
	case fa < fb:
		return -1
	case fa > fb:
		return 1
	}
	return 0
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

func rank(v any) int {
	switch v.(type) {
	case nil:
		return 0
	case int64, float64:
		return 1
	case string:
		return 2
	}
	return 3
}

func renderKey(keys []string, vals []any) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, vals[i])
	}
	return strings.Join(parts, " ")
}

func renderRow(cols []string, row []any) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = fmt.Sprintf("%s=%s", c, short(row[i]))
	}
	return strings.Join(parts, " ")
}

// maxShown bounds how much of one value a difference quotes.
const maxShown = 80

func short(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		if utf8.RuneCountInString(x) > maxShown {
			r := []rune(x)
			x = string(r[:maxShown]) + "…"
		}
		return fmt.Sprintf("%q", x)
	}
	return fmt.Sprint(v)
}
