package migrations

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
)

// The migration that writes PostgreSQL's sessions table again with its
// counters last keeps every row, the run index, the row-level security
// and the tenant role's grant, and leaves the counters an append updates
// at the end of the row.
func TestSessionCountersLast_KeepsRowsPolicyAndGrants(t *testing.T) {
	ctx := t.Context()
	db := openDialect(t, Postgres, "sessioncounters")
	if err := UpTo(ctx, db, 26); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO sessions (id, version, kind, origin, source, base, base_len, length, backend, spec, prompt_tokens, completion_tokens,
			total_tokens, calls, children, incomplete, run_id, created_seq, updated_seq, tenant)
		VALUES ('s-a', 7, 'fork', 'agent_prompt', 'root-a', 'root-a', 3, 9, 'local', '{"workspace":"/w"}', 11, 12, 23, 2, 1, 1, 'run-a', 4, 40, 'acme')`,
		`INSERT INTO sessions (id, version, kind, created_seq, updated_seq) VALUES ('s-b', 1, 'root', 5, 5)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	rows := func() string {
		t.Helper()
		var out []string
		r, err := db.QueryContext(ctx, `SELECT to_jsonb(s)::text FROM sessions s ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for r.Next() {
			var row string
			if err := r.Scan(&row); err != nil {
				t.Fatal(err)
			}
			out = append(out, row)
		}
		return strings.Join(out, "\n")
	}
	before := rows()
	if _, err := Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	if after := rows(); after != before {
		t.Fatalf("the rows changed:\nbefore %s\nafter  %s", before, after)
	}
	var cols []string
	r, err := db.QueryContext(ctx, `SELECT column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'sessions' ORDER BY ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var c string
		if err := r.Scan(&c); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	r.Close()
	want := []string{"length", "prompt_tokens", "completion_tokens", "total_tokens", "calls", "version", "updated_seq"}
	if len(cols) != 20 || !slices.Equal(cols[len(cols)-len(want):], want) {
		t.Fatalf("columns %v, want 20 ending with %v", cols, want)
	}
	var indexes string
	if err := db.QueryRowContext(ctx, `SELECT string_agg(indexname, ' ' ORDER BY indexname) FROM pg_indexes
		WHERE schemaname = current_schema() AND tablename = 'sessions'`).Scan(&indexes); err != nil || indexes != "sessions_pkey sessions_run" {
		t.Fatalf("indexes %q (%v), want the key and the run index", indexes, err)
	}
	// A tenant's transaction (projections' scope: the role and the
	// setting) sees its own sessions only.
	seen := func(tenant string) string {
		t.Helper()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		var ids sql.NullString
		for _, q := range []string{`SET LOCAL ROLE rath_tenant`, `SELECT set_config('rath.tenant', '` + tenant + `', true)`} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.QueryRowContext(context.WithoutCancel(ctx), `SELECT string_agg(id, ' ' ORDER BY id) FROM sessions`).Scan(&ids); err != nil {
			t.Fatal(err)
		}
		return ids.String
	}
	if got := seen("acme"); got != "s-a" {
		t.Errorf("tenant acme sees %q, want s-a", got)
	}
	if got := seen("default"); got != "s-b" {
		t.Errorf("the default tenant sees %q, want s-b", got)
	}
}
