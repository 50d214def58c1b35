package console_test

import (
	"path/filepath"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/internal/console"
	"github.com/gorath/rath/internal/pgtest"
)

// A run whose calls name no model (a cassette run) shows its provider's
// label in the models column, on both stores; a run that names one keeps
// it. A finished run that was never submitted offers neither Resume nor
// Cancel.
func TestRuns_ModelFromTheProvider(t *testing.T) {
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			rt := newRuntime(t)
			if store == "postgres" {
				pg, err := pgtest.Start(t.Context(), pgtest.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(pg.Stop)
				dsn, err := pg.CreateDatabase(t.Context(), "rath")
				if err != nil {
					t.Fatal(err)
				}
				if rt, err = rath.OpenWith(t.Context(), rath.Options{Dir: filepath.Join(t.TempDir(), "local"), DSN: dsn}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { rt.Close() })
			}
			named := startRun(t, rt, "shouter", "Shout")
			unnamed := unnamedRun(t, rt)
			srv, err := console.New(console.Options{Runtime: rt})
			if err != nil {
				t.Fatal(err)
			}
			f := serveFixture(t, srv, rt, named)
			models := map[string][]string{}
			for _, r := range decode[console.RunsPage](t, f.get(t, "/api/runs", "")).Runs {
				models[r.ID] = r.Models
			}
			if got := models[unnamed]; len(got) != 1 || got[0] != "scripted" {
				t.Errorf("models of the run naming none: %q", got)
			}
			if got := models[named]; len(got) != 1 || got[0] != "scripted" {
				t.Errorf("models of the run naming one: %q", got)
			}
			v := decode[console.RunView](t, f.get(t, "/api/runs/"+unnamed, ""))
			if v.Actions == nil || v.Actions.Resume || v.Actions.Cancel {
				t.Errorf("a finished run's actions: %+v", v.Actions)
			}
		})
	}
}
