package projections

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/stmtcache"
	"github.com/jmoiron/sqlx"
)

// ErrNotFound is returned for an unknown session or run.
var ErrNotFound = errors.New("projections: not found")

// SessionRow is a session's row in the read model.
type SessionRow struct {
	ID         string         `db:"id" json:"id"`
	Version    int64          `db:"version" json:"version"`
	Kind       string         `db:"kind" json:"kind"`
	Origin     string         `db:"origin" json:"origin,omitempty"`
	Source     sql.NullString `db:"source" json:"-"`
	Base       sql.NullString `db:"base" json:"-"`
	BaseLen    int64          `db:"base_len" json:"base_len"`
	Length     int64          `db:"length" json:"length"`
	Backend    string         `db:"backend" json:"backend,omitempty"`
	Spec       string         `db:"spec" json:"spec,omitempty"`
	Prompt     int64          `db:"prompt_tokens" json:"prompt_tokens"`
	Completion int64          `db:"completion_tokens" json:"completion_tokens"`
	Total      int64          `db:"total_tokens" json:"total_tokens"`
	Calls      int64          `db:"calls" json:"calls"`
	Children   int64          `db:"children" json:"children"`
	Incomplete bool           `db:"incomplete" json:"incomplete,omitempty"`
	RunID      sql.NullString `db:"run_id" json:"-"`
	CreatedSeq int64          `db:"created_seq" json:"created_seq"`
	UpdatedSeq int64          `db:"updated_seq" json:"updated_seq"`
	Tenant     string         `db:"tenant" json:"tenant"`
}

// Usage returns the session's cumulative usage.
func (r SessionRow) Usage() events.Usage {
	return events.Usage{PromptTokens: r.Prompt, CompletionTokens: r.Completion, TotalTokens: r.Total, Calls: r.Calls}
}

// StoredChunk is a chunk with where it is physically stored.
type StoredChunk struct {
	events.Chunk
	Home  string // the session whose row holds it
	Index int64  // its index in Home
}

// Edge is one lineage edge of the session graph.
type Edge struct {
	Child    string `db:"child" json:"child"`
	Parent   string `db:"parent" json:"parent"`
	Kind     string `db:"kind" json:"kind"`
	Position int    `db:"position" json:"position"`
	Seq      int64  `db:"seq" json:"seq"`
}

// RunRow is a run's row in the read model.
type RunRow struct {
	ID            string        `db:"id" json:"id"`
	Workflow      string        `db:"workflow" json:"workflow"`
	InputSession  string        `db:"input_session" json:"input_session,omitempty"`
	OutputSession string        `db:"output_session" json:"output_session,omitempty"`
	Seed          string        `db:"seed" json:"seed"`
	CodeVersion   string        `db:"code_version" json:"code_version,omitempty"`
	Status        string        `db:"status" json:"status"`
	Error         string        `db:"error" json:"error,omitempty"`
	ParentRun     string        `db:"parent_run" json:"parent_run,omitempty"`
	StartedSeq    int64         `db:"started_seq" json:"started_seq"`
	FinishedSeq   sql.NullInt64 `db:"finished_seq" json:"-"`
	StartedAt     int64         `db:"started_at" json:"started_at"`
	FinishedAt    sql.NullInt64 `db:"finished_at" json:"-"`
	Tenant        string        `db:"tenant" json:"tenant"`
}

// Reader queries the read model. It is safe for concurrent use.
type Reader struct {
	db queryer
	// q runs the lookups sessions make on every load through prepared
	// statements (through db itself when scoped to a tenant).
	q rowQueryer
	// opener opens sealed payloads the reader reads from events rows;
	// nil for none.
	opener Opener
}

// Opener opens what is sealed under a subject's key (eventlog.Store
// implements it): a payload as an events row stores it, and a content
// column (sealed.go) as the projector stored it under binding. Each
// returns the plaintext, or erased true when the subject's key is gone.
type Opener interface {
	OpenStored(ctx context.Context, seq int64, stream, typ string, payload []byte) ([]byte, bool, error)
	OpenText(ctx context.Context, binding, stored string) (string, bool, error)
}

// queryer is what a Reader reads through: the store's read pool, or a
// tenant's scope of it (Scope).
type queryer interface {
	rowQueryer
	Rebind(query string) string
	DriverName() string
}

// rowQueryer is what the prepared statements' cache offers.
type rowQueryer interface {
	GetContext(ctx context.Context, dest any, query string, args ...any) error
	SelectContext(ctx context.Context, dest any, query string, args ...any) error
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// NewReader returns a Reader over db (the store's read pool).
func NewReader(db *sqlx.DB) *Reader { return &Reader{db: db, q: stmtcache.New(db)} }

// WithOpener returns the reader opening sealed payloads and content
// columns with o: a store with a key-encryption key needs it to read
// sessions' chunks, runs' errors and params, and approvals' texts.
func (r *Reader) WithOpener(o Opener) *Reader {
	c := *r
	c.opener = o
	return &c
}

const sessionCols = `id, version, kind, origin, source, base, base_len, length, backend, spec, prompt_tokens, completion_tokens, total_tokens, calls, children, incomplete, run_id, created_seq, updated_seq, tenant`

// Snapshot is a session's state as of one event of its stream (the
// session_snapshots projection).
type Snapshot struct {
	Session    string `db:"session"`
	Seq        int64  `db:"seq"`
	Version    int64  `db:"version"`
	Length     int64  `db:"length"`
	Backend    string `db:"backend"`
	Spec       string `db:"spec"`
	Prompt     int64  `db:"prompt_tokens"`
	Completion int64  `db:"completion_tokens"`
	Total      int64  `db:"total_tokens"`
	Calls      int64  `db:"calls"`
}

// SnapshotAt returns the session's latest snapshot at or before seq, or
// ErrNotFound if it has none there.
func (r *Reader) SnapshotAt(ctx context.Context, id string, seq int64) (Snapshot, error) {
	var s Snapshot
	err := r.q.GetContext(ctx, &s, r.db.Rebind(`SELECT session, seq, version, length, backend, spec, prompt_tokens, completion_tokens, total_tokens, calls
		FROM session_snapshots WHERE session = ? AND seq <= ? ORDER BY seq DESC LIMIT 1`), id, seq)
	if errors.Is(err, sql.ErrNoRows) {
		return s, fmt.Errorf("%w: no snapshot of session %q at or before seq %d", ErrNotFound, id, seq)
	}
	return s, err
}

// Session returns one session's row, or ErrNotFound.
func (r *Reader) Session(ctx context.Context, id string) (SessionRow, error) {
	var row SessionRow
	err := r.q.GetContext(ctx, &row, r.db.Rebind(`SELECT `+sessionCols+` FROM sessions WHERE id = ?`), id)
	if errors.Is(err, sql.ErrNoRows) {
		return row, fmt.Errorf("%w: session %q", ErrNotFound, id)
	}
	if err != nil {
		return row, fmt.Errorf("projections: session %q: %w", id, err)
	}
	return row, nil
}

// Sessions lists every session in creation order.
func (r *Reader) Sessions(ctx context.Context) ([]SessionRow, error) {
	var rows []SessionRow
	if err := r.db.SelectContext(ctx, &rows, r.db.Rebind(`SELECT `+sessionCols+` FROM sessions ORDER BY created_seq`)); err != nil {
		return nil, fmt.Errorf("projections: sessions: %w", err)
	}
	return rows, nil
}

// Parents returns a session's lineage parents in order.
func (r *Reader) Parents(ctx context.Context, id string) ([]Edge, error) {
	var es []Edge
	if err := r.q.SelectContext(ctx, &es, r.db.Rebind(`SELECT child, parent, kind, position, seq FROM session_edges WHERE child = ? ORDER BY position`), id); err != nil {
		return nil, fmt.Errorf("projections: parents of %q: %w", id, err)
	}
	return es, nil
}

// Edges returns the whole session graph.
func (r *Reader) Edges(ctx context.Context) ([]Edge, error) {
	var es []Edge
	if err := r.db.SelectContext(ctx, &es, r.db.Rebind(`SELECT child, parent, kind, position, seq FROM session_edges ORDER BY seq, position`)); err != nil {
		return nil, fmt.Errorf("projections: edges: %w", err)
	}
	return es, nil
}

// Runs lists runs in start order.
func (r *Reader) Runs(ctx context.Context) ([]RunRow, error) {
	var rs []RunRow
	if err := r.db.SelectContext(ctx, &rs, r.db.Rebind(`SELECT id, workflow, input_session, output_session, seed, code_version, status, error, parent_run, started_seq, finished_seq, started_at, finished_at, tenant FROM runs ORDER BY started_seq`)); err != nil {
		return nil, fmt.Errorf("projections: runs: %w", err)
	}
	if err := r.OpenRuns(ctx, rs); err != nil {
		return nil, err
	}
	return rs, nil
}

// Run returns one run, or ErrNotFound.
func (r *Reader) Run(ctx context.Context, id string) (RunRow, error) {
	var rr RunRow
	err := r.q.GetContext(ctx, &rr, r.db.Rebind(`SELECT id, workflow, input_session, output_session, seed, code_version, status, error, parent_run, started_seq, finished_seq, started_at, finished_at, tenant FROM runs WHERE id = ?`), id)
	if errors.Is(err, sql.ErrNoRows) {
		return rr, fmt.Errorf("%w: run %q", ErrNotFound, id)
	}
	if err != nil {
		return rr, fmt.Errorf("projections: run %q: %w", id, err)
	}
	rr.Error, err = r.openText(ctx, colRunError, rr.ID, rr.Error)
	return rr, err
}

// NextCounter returns the next free id counter in a scope (see CounterScope).
func (r *Reader) NextCounter(ctx context.Context, scope string) (int64, error) {
	var n int64
	err := r.q.QueryRowContext(ctx, r.db.Rebind(`SELECT n FROM id_counters WHERE scope = ?`), scope).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("projections: id counter: %w", err)
	}
	return n, nil
}

// Dump renders every row of every SQL projection as text, sorted within
// each table. Two databases with equal dumps have equal projections; the
// rebuild tests compare them. Check compares without holding every row.
func Dump(ctx context.Context, db *sqlx.DB) (map[string][]string, error) {
	out := map[string][]string{}
	for _, t := range Tables {
		rows, err := db.QueryxContext(ctx, `SELECT * FROM `+t)
		if err != nil {
			return nil, fmt.Errorf("projections: dump %s: %w", t, err)
		}
		cols, _ := rows.Columns()
		var lines []string
		for rows.Next() {
			vals, err := rows.SliceScan()
			if err != nil {
				rows.Close()
				return nil, err
			}
			parts := make([]string, len(vals))
			for i, v := range vals {
				if b, ok := v.([]byte); ok {
					v = string(b)
				}
				parts[i] = fmt.Sprintf("%s=%v", cols[i], v)
			}
			lines = append(lines, strings.Join(parts, " "))
		}
		rows.Close()
		sort.Strings(lines)
		out[t] = lines
	}
	return out, nil
}

// OwnUsage sums, for each session in bounds, the provider calls recorded
// on its own stream (a call on a side stream is not in a session's total)
// at stream versions up to bounds[id], counting one call per event.
func (r *Reader) OwnUsage(ctx context.Context, bounds map[string]int64) (map[string]events.Usage, error) {
	out := make(map[string]events.Usage, len(bounds))
	ids := make([]string, 0, len(bounds))
	for id := range bounds {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	const page = 500 // under SQLite's host parameter limit
	for len(ids) > 0 {
		n := min(page, len(ids))
		q, args, err := sqlx.In(`SELECT u.session, e.version, u.prompt_tokens, u.completion_tokens, u.total_tokens
			FROM usage u JOIN events e ON e.seq = u.seq
			WHERE u.session IN (?) AND e.stream = u.session`, ids[:n])
		if err != nil {
			return nil, fmt.Errorf("projections: own usage: %w", err)
		}
		ids = ids[n:]
		rows, err := r.db.QueryContext(ctx, r.db.Rebind(q), args...)
		if err != nil {
			return nil, fmt.Errorf("projections: own usage: %w", err)
		}
		for rows.Next() {
			var id string
			var version int64
			var u events.Usage
			if err := rows.Scan(&id, &version, &u.PromptTokens, &u.CompletionTokens, &u.TotalTokens); err != nil {
				rows.Close()
				return nil, fmt.Errorf("projections: own usage: %w", err)
			}
			if version <= bounds[id] {
				u.Calls = 1
				out[id] = out[id].Add(u)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("projections: own usage: %w", err)
		}
	}
	return out, nil
}

// LeaseRow is a run's current lease on the worker fleet.
type LeaseRow struct {
	Run       string `db:"run"`
	Worker    string `db:"worker"`
	Token     int64  `db:"token"`
	ExpiresAt int64  `db:"expires_at"` // Unix nanoseconds
	Seq       int64  `db:"seq"`
	// Version is the lease stream's version (how many run.leased it
	// holds): a take appends at it, so two takes cannot both succeed.
	Version int64 `db:"version"`
	// TakenAt is when the holder took the run (Unix nanoseconds of its
	// last run.leased that was not a renewal; 0 if none).
	TakenAt int64 `db:"taken_at"`
}

// Leases returns the current lease of every run that was ever leased.
func (r *Reader) Leases(ctx context.Context) ([]LeaseRow, error) {
	var ls []LeaseRow
	if err := r.db.SelectContext(ctx, &ls, r.db.Rebind(`SELECT run, worker, token, expires_at, seq, version, taken_at FROM run_leases ORDER BY run`)); err != nil {
		return nil, fmt.Errorf("projections: leases: %w", err)
	}
	return ls, nil
}
