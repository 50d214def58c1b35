package dossier_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/dossier"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/session"
)

// note appends one assistant chunk: the smallest workflow that writes.
var note = flow.Func(func(ctx context.Context, s *session.Session) (*session.Session, error) {
	return s.Append(ctx, events.Chunk{Role: events.RoleAssistant, Content: "noted", Author: flow.Path(ctx)})
})

// Parents the run did not touch are drawn as context: a fork parent with
// its lineage edge, a detached session's source with a dashed provenance
// edge.
func TestBuild_ParentsAreContext(t *testing.T) {
	ctx := t.Context()
	rt := mustOpen(t)
	a, err := rt.NewUserSession(ctx, "shared start")
	if err != nil {
		t.Fatal(err)
	}
	forked, err := a.Fork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	detached, err := a.Detach(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		input  *session.Session
		kind   string
		dashed bool
	}{
		{"fork", forked, "fork", false},
		{"detach", detached, dossier.EdgeDetach, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run, err := rt.Start(ctx, "note", note, tt.input, rath.WithRunID("run-"+tt.name))
			if err != nil {
				t.Fatal(err)
			}
			d, err := dossier.Build(ctx, rt, run.ID, dossier.Options{SkipVerify: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Sessions) != 2 {
				t.Fatalf("%d sessions, want the input and its source", len(d.Sessions))
			}
			parent, child := d.Sessions[0], d.Sessions[1]
			if parent.ID != a.ID() || parent.InRun || parent.Chunks != nil || !child.InRun || child.ID != tt.input.ID() {
				t.Fatalf("sessions = %+v, %+v", parent, child)
			}
			if len(d.Graph.Edges) != 1 {
				t.Fatalf("edges = %+v", d.Graph.Edges)
			}
			e := d.Graph.Edges[0]
			if e.From != a.ID() || e.To != tt.input.ID() || e.Kind != tt.kind || e.Dashed != tt.dashed {
				t.Fatalf("edge = %+v", e)
			}
			// The inherited chunk is not shared with a shown transcript (the
			// context node has none), so it is listed in full.
			html := render(t, d, "html")
			if !strings.Contains(html, "shared start") || strings.Contains(html, "are shared with") {
				t.Fatal("the inherited chunk is not shown in the child's transcript")
			}
			if !strings.Contains(html, `class="node k-root ctx"`) {
				t.Fatal("the context node is not drawn as context")
			}
		})
	}
}

// A run that crashed (started, never finished) still gets a dossier.
func TestBuild_UnfinishedRun(t *testing.T) {
	ctx := t.Context()
	rt := mustOpen(t)
	input, err := rt.NewUserSession(ctx, "go")
	if err != nil {
		t.Fatal(err)
	}
	rec := rt.Store().In(eventlog.Scope{Run: events.RunRef{ID: "run-crashed", Seed: "s"}})
	if _, err := rec.Append(ctx, "run-crashed", eventlog.NoStream, events.RunStarted{Run: "run-crashed", Workflow: "w", InputSession: input.ID(), Seed: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := flow.Forward(ctx, note, input.In(rec.Scope())); err != nil {
		t.Fatal(err)
	}
	d, err := dossier.Build(ctx, rt, "run-crashed", dossier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Run.Status != "running" || d.Run.FinishedSeq != 0 || !d.Run.FinishedAt.IsZero() || len(d.Workflows) != 1 || d.Workflows[0].ExitSeq == 0 {
		t.Fatalf("run = %+v, workflows %+v", d.Run, d.Workflows)
	}
	if html := render(t, d, "html"); !strings.Contains(html, "never: the run did not finish") {
		t.Fatal("the HTML does not say the run never finished")
	}
	if md := render(t, d, "md"); !strings.Contains(md, "| finished | never: the run did not finish |") {
		t.Fatal("the Markdown does not say the run never finished")
	}
}

// One Dossier renders the same page from many goroutines.
func TestHTML_ConcurrentRender(t *testing.T) {
	f := mustFixture(t)
	want := render(t, f.d, "html")
	var wg sync.WaitGroup
	got := make([]string, 4)
	for i := range got {
		wg.Go(func() {
			var sb strings.Builder
			if err := f.d.HTML(&sb); err == nil {
				got[i] = sb.String()
			}
		})
	}
	wg.Wait()
	for i, g := range got {
		if g != want {
			t.Fatalf("render %d differs", i)
		}
	}
}
