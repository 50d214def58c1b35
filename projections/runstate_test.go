package projections_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/migrations"
	"github.com/gorath/rath/projections"
)

var dbs atomic.Int64

// store is one of the two stores a test runs on: where it lives, and how
// to open it (again).
type store struct {
	name, dir, dsn string
}

func (s store) open(tb testing.TB) *rath.Runtime {
	tb.Helper()
	rt, err := rath.OpenWith(tb.Context(), rath.Options{Dir: s.dir, DSN: s.dsn})
	if err != nil {
		tb.Fatal(err)
	}
	return rt
}

// bothStores returns a fresh SQLite store and a fresh PostgreSQL one.
func bothStores(t *testing.T) []store {
	t.Helper()
	dsn, err := server.CreateDatabase(t.Context(), fmt.Sprintf("runstate%d", dbs.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	return []store{{name: "sqlite", dir: t.TempDir()}, {name: "postgres", dir: t.TempDir(), dsn: dsn}}
}

// appendAll appends each payload to its own stream, at any version.
func appendAll(tb testing.TB, rt *rath.Runtime, evs ...events.Payload) {
	tb.Helper()
	for _, p := range evs {
		if _, err := rt.Store().Append(tb.Context(), p.(interface{ StreamID() string }).StreamID(), eventlog.AnyVersion, p); err != nil {
			tb.Fatalf("append %T: %v", p, err)
		}
	}
}

// leaseTime is when run's lease stream's event at version v was
// appended, as the log says.
func leaseTime(tb testing.TB, rt *rath.Runtime, run string, v int64) int64 {
	tb.Helper()
	evs, err := rt.Store().ReadStream(tb.Context(), events.LeaseStream(run), v)
	if err != nil || len(evs) == 0 {
		tb.Fatalf("lease %s v%d: %v", run, v, err)
	}
	return evs[0].At.UnixNano()
}

// The read model holds what a fleet worker, a cancel and a resume check
// of a run, and one query returns it: submitted or not, started,
// finished, the params the run goes on with, and its lease with the
// lease stream's version and when its holder took it.
func TestReader_RunState(t *testing.T) {
	for _, st := range bothStores(t) {
		t.Run(st.name, func(t *testing.T) {
			ctx := t.Context()
			rt := st.open(t)
			defer rt.Close()
			far := time.Now().Add(time.Hour).UnixNano()
			appendAll(t, rt,
				// queued: submitted with params, never leased.
				events.RunSubmitted{Run: "queued", Workflow: "wf", InputSession: "in-q", Queue: "default", Params: map[string]string{"model": "m<&>é", "n": "1"}},
				// leased: taken, renewed twice, taken again by w2, renewed.
				events.RunSubmitted{Run: "leased", Workflow: "wf", InputSession: "in-l", Queue: "default"},
				events.RunLeased{Run: "leased", Worker: "w1", Token: 1, ExpiresAt: far},
				events.RunLeased{Run: "leased", Worker: "w1", Token: 1, ExpiresAt: far, Renewal: true},
				events.RunLeased{Run: "leased", Worker: "w2", Token: 2, ExpiresAt: far},
				events.RunLeased{Run: "leased", Worker: "w2", Token: 2, ExpiresAt: far + 1, Renewal: true},
				// started: its run.started recorded params of its own.
				events.RunSubmitted{Run: "started", Workflow: "wf", InputSession: "in-s", Queue: "default", Params: map[string]string{"a": "submitted"}},
				events.RunLeased{Run: "started", Worker: "w1", Token: 1, ExpiresAt: far},
				events.RunStarted{Run: "started", Workflow: "wf", InputSession: "in-s", Seed: "started", Params: map[string]string{"a": "recorded", "b": "added"}},
				// noparams: started without params, which then are none.
				events.RunSubmitted{Run: "noparams", Workflow: "wf", InputSession: "in-n", Queue: "default", Params: map[string]string{"a": "submitted"}},
				events.RunStarted{Run: "noparams", Workflow: "wf", InputSession: "in-n", Seed: "noparams"},
				// finished: canceled.
				events.RunSubmitted{Run: "finished", Workflow: "wf", InputSession: "in-f", Queue: "default"},
				events.RunStarted{Run: "finished", Workflow: "wf", InputSession: "in-f", Seed: "finished"},
				events.RunFinished{Run: "finished", Status: "canceled", Error: "by hand"},
				// local: started by a program, never submitted.
				events.RunStarted{Run: "local", Workflow: "wf", Seed: "local"},
			)
			tests := []struct {
				run  string
				want projections.RunState
			}{
				{"queued", projections.RunState{Workflow: "wf", InputSession: "in-q", Params: map[string]string{"model": "m<&>é", "n": "1"},
					Status: "queued", Submitted: true}},
				{"leased", projections.RunState{Workflow: "wf", InputSession: "in-l", Params: map[string]string{}, Status: "queued", Submitted: true,
					Lease: projections.LeaseRow{Worker: "w2", Token: 2, ExpiresAt: far + 1, Version: 4, TakenAt: leaseTime(t, rt, "leased", 3)}}},
				{"started", projections.RunState{Workflow: "wf", InputSession: "in-s", Params: map[string]string{"a": "recorded", "b": "added"},
					Status: "running", Submitted: true, Started: true,
					Lease: projections.LeaseRow{Worker: "w1", Token: 1, ExpiresAt: far, Version: 1, TakenAt: leaseTime(t, rt, "started", 1)}}},
				{"noparams", projections.RunState{Workflow: "wf", InputSession: "in-n", Params: map[string]string{}, Status: "running", Submitted: true, Started: true}},
				{"finished", projections.RunState{Workflow: "wf", InputSession: "in-f", Params: map[string]string{}, Status: "canceled", Error: "by hand",
					Submitted: true, Started: true, Finished: true}},
				{"local", projections.RunState{Workflow: "wf", Params: map[string]string{}, Status: "running", Started: true}},
			}
			for _, tt := range tests {
				got, err := rt.Reader().RunState(ctx, tt.run)
				if err != nil {
					t.Fatalf("%s: %v", tt.run, err)
				}
				tt.want.Run, tt.want.Lease.Run = tt.run, tt.run
				if tt.want.Tenant == "" {
					tt.want.Tenant = "default" // a run that names none belongs to the default tenant
				}
				if tt.want.Lease.Token != 0 {
					tt.want.Lease.Seq = got.Lease.Seq // where it is in the log does not matter here
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", tt.run, diff)
				}
			}
			if _, err := rt.Reader().RunState(ctx, "nosuch"); !errors.Is(err, projections.ErrNotFound) {
				t.Errorf("an unknown run: %v, want ErrNotFound", err)
			}
			// A lease that ran out is listed for takeover while its run is
			// queued or running, not once it finished.
			appendAll(t, rt,
				events.RunLeased{Run: "queued", Worker: "w3", Token: 1, ExpiresAt: 10},
				events.RunLeased{Run: "finished", Worker: "w3", Token: 1, ExpiresAt: 10})
			expired, err := rt.Reader().ExpiredLeases(ctx, time.Now().UnixNano())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"queued"}, expired); diff != "" {
				t.Errorf("expired leases (-want +got):\n%s", diff)
			}
		})
	}
}

// A store written before the read model held run states (no params,
// submission, lease version or taken time in its rows) has them filled
// in from the log when it is migrated, equal to what the projector
// writes: the runs and leases a fleet had going on go on the same, and
// the projections still equal a rebuild.
func TestMigration_RunStateFilledFromTheLog(t *testing.T) {
	for _, st := range bothStores(t) {
		t.Run(st.name, func(t *testing.T) {
			ctx := t.Context()
			rt := st.open(t)
			appendAll(t, rt,
				events.RunSubmitted{Run: "queued", Workflow: "wf", InputSession: "in-q", Queue: "default", Params: map[string]string{"q": `"quoted" \ <&> é ✓`}},
				events.RunSubmitted{Run: "started", Workflow: "wf", InputSession: "in-s", Queue: "default", Params: map[string]string{"a": "submitted"}},
				events.RunLeased{Run: "started", Worker: "w1", Token: 1, ExpiresAt: 1e18},
				events.RunLeased{Run: "started", Worker: "w1", Token: 1, ExpiresAt: 2e18, Renewal: true},
				events.RunStarted{Run: "started", Workflow: "wf", InputSession: "in-s", Seed: "started", Params: map[string]string{"a": "recorded"}},
				events.RunSubmitted{Run: "noparams", Workflow: "wf", InputSession: "in-n", Queue: "default", Params: map[string]string{"a": "submitted"}},
				events.RunStarted{Run: "noparams", Workflow: "wf", InputSession: "in-n", Seed: "noparams"},
				events.RunLeased{Run: "renewed", Worker: "w1", Token: 1, ExpiresAt: 1e18, Renewal: true},
				events.RunStarted{Run: "local", Workflow: "wf", Seed: "local"},
			)
			runs := []string{"queued", "started", "noparams", "local"}
			want := map[string]projections.RunState{}
			for _, run := range runs {
				s, err := rt.Reader().RunState(ctx, run)
				if err != nil {
					t.Fatal(err)
				}
				want[run] = s
			}
			wantLeases, err := rt.Reader().Leases(ctx)
			if err != nil {
				t.Fatal(err)
			}
			rt.Close()
			downgrade(t, st)
			rt = st.open(t) // migrates
			defer rt.Close()
			for _, run := range runs {
				got, err := rt.Reader().RunState(ctx, run)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want[run], got); diff != "" {
					t.Errorf("%s after the migration (-want +got):\n%s", run, diff)
				}
			}
			gotLeases, err := rt.Reader().Leases(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantLeases, gotLeases); diff != "" {
				t.Errorf("leases after the migration (-want +got):\n%s", diff)
			}
			rep, err := projections.Check(ctx, rt.Store(), projections.CheckOptions{Max: 10})
			if err != nil || !rep.OK() {
				t.Fatalf("check after the migration: %v %v", err, rep.Differences)
			}
		})
	}
}

// downgrade takes st's schema back to before the run_state migration,
// as an older rath left it: its columns gone, its version not applied.
func downgrade(t *testing.T, st store) {
	t.Helper()
	ctx := t.Context()
	files, err := filepath.Glob("../migrations/sqlite/*_run_state.sql")
	if err != nil || len(files) != 1 {
		t.Fatalf("the run_state migration: %v %v", files, err)
	}
	var version int64
	if _, err := fmt.Sscanf(filepath.Base(files[0]), "%d_", &version); err != nil {
		t.Fatal(err)
	}
	// The migrations after it are taken down first, newest first.
	later := map[int64][]string{
		16: {`DROP TABLE subject_keys`},
		17: {`DROP TABLE access_records`, `DROP TABLE api_tokens`},
		18: {`DROP TABLE memory_namespaces`, `DROP TABLE datasets`, `DROP INDEX approvals_tenant`, `DROP INDEX runs_tenant`,
			`ALTER TABLE approvals DROP COLUMN tenant`, `ALTER TABLE sessions DROP COLUMN tenant`, `ALTER TABLE runs DROP COLUMN tenant`},
		19: {`DROP INDEX runs_subject`, `ALTER TABLE runs DROP COLUMN subject`, `DROP INDEX blobs_address`},
		20: {`DROP INDEX access_records_tenant`},
		21: {},
		22: {`DROP INDEX approvals_session`, `DROP INDEX usage_run`},
		23: {`DROP TABLE sealed_by_key`},
		24: {`DELETE FROM sealed_by_key WHERE type IN ('provider.called', 'session.placed')`},
		25: {},
		26: {`CREATE INDEX blobs_address ON blobs (substr(hash, 1, 64))`},
		27: {},
		28: {`DROP INDEX runs_unfinished`},
	}
	if st.dsn != "" {
		later[21] = []string{`ALTER TABLE chain_lock DROP COLUMN seq`}
		later[25] = []string{`DROP TRIGGER store_meta_erase_generation ON store_meta`,
			`DROP FUNCTION rath_erase_generation_to_lock()`, `ALTER TABLE chain_lock DROP COLUMN erase_generation`}
		later[20] = append(later[20], `DROP POLICY access_records_tenant ON access_records`,
			`ALTER TABLE access_records NO FORCE ROW LEVEL SECURITY`, `ALTER TABLE access_records DISABLE ROW LEVEL SECURITY`)
		// The policies depend on the columns.
		later[18] = append([]string{`DROP POLICY run_leases_tenant ON run_leases`, `DROP POLICY approvals_tenant ON approvals`,
			`DROP POLICY sessions_tenant ON sessions`, `DROP POLICY runs_tenant ON runs`}, later[18]...)
	}
	var stmts []string
	all, err := filepath.Glob("../migrations/sqlite/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(all) // newest first
	for _, f := range all {
		var v int64
		if _, err := fmt.Sscanf(filepath.Base(f), "%d_", &v); err != nil || v <= version {
			continue
		}
		down, ok := later[v]
		if !ok {
			t.Fatalf("the run_state migration is %d, the latest %d: add how to take %d down to later", version, migrations.Latest(), v)
		}
		stmts = append(stmts, down...)
		stmts = append(stmts, fmt.Sprintf(`DELETE FROM goose_db_version WHERE version_id = %d`, v))
	}
	stmts = append(stmts,
		`ALTER TABLE run_leases DROP COLUMN taken_at`, `ALTER TABLE run_leases DROP COLUMN version`,
		`ALTER TABLE runs DROP COLUMN params`, `ALTER TABLE runs DROP COLUMN submitted_seq`,
	)
	db := openWritable(t, st)
	stmts = append(stmts, fmt.Sprintf(`DELETE FROM goose_db_version WHERE version_id = %d`, version))
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", strings.Fields(s)[0], err)
		}
	}
}
