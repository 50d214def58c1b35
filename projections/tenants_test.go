package projections_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/projections"
	"github.com/gorath/rath/session"
)

// forking is a workflow that forks its input and writes to the fork.
var forking = flow.Func(func(ctx context.Context, s *session.Session) (*session.Session, error) {
	f, err := s.Fork(ctx)
	if err != nil {
		return nil, err
	}
	return f.Append(ctx, session.Chunk{Role: events.RoleAssistant, Content: "ok"})
})

// tenantRun starts a run of forking in tenant and returns it with its
// input session.
func tenantRun(t *testing.T, rt *rath.Runtime, tenant string) (*rath.Run, *session.Session) {
	t.Helper()
	in, err := rt.NewUserSession(t.Context(), "hello "+tenant)
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Start(t.Context(), "forking", forking, in, rath.WithTenant(tenant))
	if err != nil {
		t.Fatal(err)
	}
	return run, in
}

// A run's tenant is recorded with it and given to its input, its
// sessions and its approvals; a rebuild gives the same; a merge across
// tenants is refused; each tenant's scope sees its own rows only, even
// through a query that filters on nothing.
func TestTenants_RecordScopeAndRebuild(t *testing.T) {
	for _, st := range bothStores(t) {
		t.Run(st.name, func(t *testing.T) {
			ctx := t.Context()
			rt := st.open(t)
			defer rt.Close()
			acme, acmeIn := tenantRun(t, rt, "acme")
			globex, globexIn := tenantRun(t, rt, "globex")
			plain, _ := tenantRun(t, rt, "")
			appendAll(t, rt, &events.ApprovalRequested{ID: "ap-acme", Run: acme.ID, Session: acme.Output.ID(), Kind: events.ApprovalQuestion, Question: "?"})
			check := func(t *testing.T) {
				for run, want := range map[string]string{acme.ID: "acme", globex.ID: "globex", plain.ID: events.DefaultTenant} {
					row, err := rt.Reader().Run(ctx, run)
					if err != nil || row.Tenant != want {
						t.Errorf("run %s: tenant %q, %v; want %q", run, row.Tenant, err, want)
					}
				}
				for id, want := range map[string]string{acmeIn.ID(): "acme", acme.Output.ID(): "acme", globexIn.ID(): "globex", globex.Output.ID(): "globex"} {
					row, err := rt.Reader().Session(ctx, id)
					if err != nil || row.Tenant != want {
						t.Errorf("session %s: tenant %q, %v; want %q", id, row.Tenant, err, want)
					}
				}
				ap, err := rt.Reader().Approval(ctx, "ap-acme")
				if err != nil || ap.Tenant != "acme" {
					t.Errorf("approval: tenant %q, %v; want acme", ap.Tenant, err)
				}
			}
			check(t)
			_, err := acme.Output.Merge(ctx, globex.Output)
			if !errors.Is(err, projections.ErrCrossTenant) {
				t.Fatalf("merge across tenants: %v, want ErrCrossTenant", err)
			}
			if _, err := projections.Rebuild(ctx, rt.Store(), nil); err != nil {
				t.Fatal(err)
			}
			check(t)

			sc, err := projections.NewScope(ctx, rt.Store().DB(), "acme")
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			// A query that forgets the tenant still sees only acme's.
			var runs, sessions []string
			if err := sc.SelectContext(ctx, &runs, `SELECT id FROM runs ORDER BY id`); err != nil {
				t.Fatal(err)
			}
			if err := sc.SelectContext(ctx, &sessions, `SELECT s.id FROM sessions s LEFT JOIN session_edges e ON e.child = s.id ORDER BY s.id`); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(runs, []string{acme.ID}) {
				t.Errorf("acme's scope sees runs %q, want only %s", runs, acme.ID)
			}
			if slices.Contains(sessions, globexIn.ID()) || slices.Contains(sessions, globex.Output.ID()) || !slices.Contains(sessions, acme.Output.ID()) {
				t.Errorf("acme's scope sees sessions %q", sessions)
			}
			if _, err := sc.Reader().Run(ctx, globex.ID); !errors.Is(err, projections.ErrNotFound) {
				t.Errorf("acme's reader finds globex's run: %v", err)
			}
			var edges int
			if err := sc.GetContext(ctx, &edges, `SELECT COUNT(*) FROM session_edges WHERE parent = `+rt.Store().DB().Rebind("?"), globexIn.ID()); err != nil || edges != 0 {
				t.Errorf("acme's scope sees %d edges of globex's sessions (%v)", edges, err)
			}
			all, err := projections.NewScope(ctx, rt.Store().DB(), "")
			if err != nil {
				t.Fatal(err)
			}
			if rs, err := all.Reader().Runs(ctx); err != nil || len(rs) != 3 {
				t.Errorf("the scope of every tenant sees %d runs (%v), want 3", len(rs), err)
			}
		})
	}
}
