package projections_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/projections"
)

// RunsNewest pages the runs list in the database: the newest first, the
// filters (status, start time, a page's cursor, text) applied before the
// limit, and the count of all it selects.
func TestReader_RunsNewestPagesInTheDatabase(t *testing.T) {
	for _, st := range bothStores(t) {
		t.Run(st.name, func(t *testing.T) {
			ctx := t.Context()
			rt := st.open(t)
			defer rt.Close()
			// r0 .. r5 in start order: the even ones finish ok, r3 fails,
			// r1 and r5 are still running.
			for i := range 6 {
				run := fmt.Sprintf("r%d", i)
				appendAll(t, rt, events.RunStarted{Run: run, Workflow: "wf", InputSession: "in-" + run, Seed: "s"})
				switch {
				case i%2 == 0:
					appendAll(t, rt, events.RunFinished{Run: run, Status: "ok"})
				case i == 3:
					appendAll(t, rt, events.RunFinished{Run: run, Status: "error", Error: "no"})
				}
			}
			all, err := rt.Reader().Runs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			r3Started, r3Seq := all[3].StartedAt, all[3].StartedSeq
			for _, c := range []struct {
				name  string
				f     projections.RunsFilter
				limit int
				want  []string
				total int
			}{
				{"every run", projections.RunsFilter{}, 0, []string{"r5", "r4", "r3", "r2", "r1", "r0"}, 6},
				{"the newest two", projections.RunsFilter{}, 2, []string{"r5", "r4"}, 6},
				{"a limit above the count", projections.RunsFilter{}, 10, []string{"r5", "r4", "r3", "r2", "r1", "r0"}, 6},
				{"one status", projections.RunsFilter{Statuses: []string{"ok"}}, 2, []string{"r4", "r2"}, 3},
				{"two statuses", projections.RunsFilter{Statuses: []string{"error", "running"}}, 0, []string{"r5", "r3", "r1"}, 3},
				{"started since r3", projections.RunsFilter{StartedAfter: r3Started}, 1, []string{"r5"}, 3},
				{"both filters", projections.RunsFilter{Statuses: []string{"ok"}, StartedAfter: r3Started}, 5, []string{"r4"}, 1},
				{"none selected", projections.RunsFilter{Statuses: []string{"canceled"}}, 3, []string{}, 0},
				{"started before r3 (a page's cursor)", projections.RunsFilter{Before: r3Seq}, 0, []string{"r2", "r1", "r0"}, 3},
				{"text in a session", projections.RunsFilter{Text: "in-r4"}, 0, []string{"r4"}, 1},
				{"text in an error", projections.RunsFilter{Text: "no"}, 0, []string{"r3"}, 1},
				{"text in an id", projections.RunsFilter{Text: "r1"}, 0, []string{"r1"}, 1},
				{"a LIKE wildcard is a character", projections.RunsFilter{Text: "r_"}, 0, []string{}, 0},
				{"text and a cursor", projections.RunsFilter{Text: "in-r", Before: r3Seq}, 2, []string{"r2", "r1"}, 3},
			} {
				rows, total, err := rt.Reader().RunsNewest(ctx, c.f, c.limit)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				got := []string{}
				for _, r := range rows {
					got = append(got, r.ID)
				}
				if diff := cmp.Diff(c.want, got); diff != "" || total != c.total {
					t.Errorf("%s: runs (-want +got):\n%s; total %d, want %d", c.name, diff, total, c.total)
				}
			}
			if rows, _, _ := rt.Reader().RunsNewest(ctx, projections.RunsFilter{Statuses: []string{"error"}}, 1); len(rows) != 1 || rows[0].Error != "no" {
				t.Errorf("a failed run's row reads %+v, want its error", rows)
			}
		})
	}
}
