package eval_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eval"
	"github.com/gorath/rath/flow"
)

// Runs re-executed four at a time are reported in case order, whatever
// order they finish in, and Progress counts up one call at a time. The
// first case's workflow is handed out only once the fourth case's has
// been asked for: one run at a time, that never happens and the check
// ends at the guard's deadline with an error item.
func TestRegress_ParallelKeepsCaseOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 25*time.Second) // a guard against a hang, not a measure
	defer cancel()
	rt, err := rath.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	prompts := map[string]string{"triage": "You sort tickets.", "writer": "You write replies."}
	cases := recordSupport(t, ctx, rt, prompts, 8)
	changed := map[string]string{"triage": "You sort tickets, urgent ones first.", "writer": prompts["writer"]}
	now := nowWorkflow(t, rt, changed)
	fourth := make(chan struct{})
	var progress []int
	rep, err := eval.Regress(ctx, rt, cases, eval.RegressOptions{
		Parallel: 4,
		Workflow: func(ctx context.Context, run string) (flow.Workflow, error) {
			switch run {
			case cases[3].Run:
				close(fourth)
			case cases[0].Run:
				select {
				case <-fourth:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return now(ctx, run)
		},
		Progress: func(done, total int) {
			if total != len(cases) {
				t.Errorf("progress total %d, want %d", total, len(cases))
			}
			progress = append(progress, done)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Items) != len(cases) {
		t.Fatalf("%d items, want %d", len(rep.Items), len(cases))
	}
	for i, it := range rep.Items {
		want := eval.OutcomeSame
		if i%4 == 0 { // the triage runs, whose prompt changed
			want = eval.OutcomeNeedsLive
		}
		if it.Run != cases[i].Run || it.Outcome != want {
			t.Errorf("item %d: %s %s, want %s %s", i, it.Run, it.Verdict(), cases[i].Run, want)
		}
	}
	if rep.Same != 6 || rep.NeedsLive != 2 {
		t.Errorf("report: %d same, %d need live answers; want 6 and 2", rep.Same, rep.NeedsLive)
	}
	if want := []int{1, 2, 3, 4, 5, 6, 7, 8}; !slices.Equal(progress, want) {
		t.Errorf("progress %v, want %v", progress, want)
	}
}
