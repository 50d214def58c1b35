package rath_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/session"
)

// run.started, carried by the run's first append, still opens the run's
// events, and a run started twice is refused before anything of the
// second start is written.
func TestStart_RunStartedOpensTheRunAndASecondStartWritesNothing(t *testing.T) {
	ctx := t.Context()
	rt, err := rath.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	agent, err := flow.NewAgent("Answer briefly.", flow.Scripted(scripted.Entry{Content: "Paris."}, scripted.Entry{Content: "Lyon."}))
	if err != nil {
		t.Fatal(err)
	}
	in, err := rt.NewUserSession(ctx, "Capital of France?")
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Start(ctx, "geo", agent, in, rath.WithRunID("run-once"))
	if err != nil {
		t.Fatal(err)
	}
	evs, err := rt.Store().ReadRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) < 3 || evs[0].Type != events.TypeRunStarted || evs[1].Seq != evs[0].Seq+1 || evs[len(evs)-1].Type != events.TypeRunFinished {
		t.Fatalf("run events %v", types(evs))
	}
	// The same run id again: refused as a conflict, and nothing of the
	// second start lands.
	in2, _ := rt.NewUserSession(ctx, "again")
	head, _ := rt.Store().Head(ctx)
	_, err = rt.Start(ctx, "geo", agent, in2, rath.WithRunID("run-once"))
	if !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("second start: err = %v, want a conflict", err)
	}
	if again, _ := rt.Store().Head(ctx); again.Seq != head.Seq {
		t.Fatalf("the refused start wrote %d events", again.Seq-head.Seq)
	}
}

// run.started costs no commit of its own: a workflow that appends
// nothing records its run in one commit, run.started riding with
// run.finished.
func TestStart_AWorkflowThatAppendsNothing(t *testing.T) {
	ctx := t.Context()
	rt, in := runtimeWithSession(t)
	before := rt.Store().Stats()
	run, err := rt.Start(ctx, "quiet", flow.Empty, in)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := rt.Store().ReadRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := types(evs); len(got) != 2 || got[0] != events.TypeRunStarted || got[1] != events.TypeRunFinished {
		t.Fatalf("run events %v", got)
	}
	if n := rt.Store().Stats().Commits - before.Commits; n != 1 {
		t.Fatalf("%d commits, want 1", n)
	}
}

// runtimeWithSession opens a runtime in a temporary directory, closed
// with the test, and a user session on it.
func runtimeWithSession(t *testing.T) (*rath.Runtime, *session.Session) {
	t.Helper()
	rt, err := rath.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	in, err := rt.NewUserSession(t.Context(), "hello")
	if err != nil {
		t.Fatal(err)
	}
	return rt, in
}

func types(evs []events.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// The root workflow's exit record rides with run.finished: a workflow
// that appends one chunk costs three commits (the entry with run.started,
// the chunk, the exit with run.finished), one that appends nothing two,
// and the log holds the same events in the same order as when the exit
// was a commit of its own. The entry is not carried further, to the
// body's first event: a run would then be out of sight (no runs row, not
// cancelable by id) for its whole first model call.
func TestStart_TheRootsExitRidesWithRunFinished(t *testing.T) {
	chunk := func(ctx context.Context, s *session.Session) (*session.Session, error) {
		return s.Append(ctx, session.Chunk{Role: "assistant", Content: "hi"})
	}
	nothing := func(ctx context.Context, s *session.Session) (*session.Session, error) { return s, nil }
	fails := func(ctx context.Context, s *session.Session) (*session.Session, error) {
		return nil, errors.New("no model")
	}
	for _, c := range []struct {
		name    string
		body    flow.Func
		commits int64
		types   []string
		failed  bool
	}{
		{"one chunk", chunk, 3, []string{events.TypeRunStarted, events.TypeWorkflowEntered, events.TypeChunkAppended, events.TypeWorkflowExited, events.TypeRunFinished}, false},
		{"nothing", nothing, 2, []string{events.TypeRunStarted, events.TypeWorkflowEntered, events.TypeWorkflowExited, events.TypeRunFinished}, false},
		// A body that fails with no output records no exit, as before
		// (its record on the input handle is refused as stale): the entry
		// with run.started, the refused record, run.finished.
		{"fails", fails, 3, []string{events.TypeRunStarted, events.TypeWorkflowEntered, events.TypeRunFinished}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			rt, in := runtimeWithSession(t)
			before := rt.Store().Stats()
			run, err := rt.Start(ctx, "greet", c.body, in)
			if (err != nil) != c.failed {
				t.Fatalf("err = %v, want failed %v", err, c.failed)
			}
			if n := rt.Store().Stats().Commits - before.Commits; n != c.commits {
				t.Fatalf("%d commits, want %d", n, c.commits)
			}
			evs, err := rt.Store().Read(ctx, eventlog.Query{FromSeq: before.Events + 1})
			if err != nil {
				t.Fatal(err)
			}
			if got := types(evs); !slices.Equal(got, c.types) {
				t.Fatalf("events %v, want %v", got, c.types)
			}
			if c.failed {
				return
			}
			exited := evs[len(evs)-2]
			if run.Output.Version() != exited.Version {
				t.Fatalf("the output handle is at version %d, the exit record at %d", run.Output.Version(), exited.Version)
			}
			// The output handle is current: it can be appended to.
			if _, err := run.Output.Append(ctx, session.Chunk{Role: "user", Content: "thanks"}); err != nil {
				t.Fatalf("append to the run's output: %v", err)
			}
		})
	}
}

// A root workflow that returns a stale output handle fails its run, as
// when the exit record was written on its own: the record is refused,
// run.finished records the failure, and nothing of the exit lands.
func TestStart_AStaleOutputFailsTheRun(t *testing.T) {
	ctx := t.Context()
	rt, in := runtimeWithSession(t)
	wf := flow.Func(func(ctx context.Context, s *session.Session) (*session.Session, error) {
		first, err := s.Append(ctx, session.Chunk{Role: "assistant", Content: "one"})
		if err != nil {
			return nil, err
		}
		if _, err := first.Append(ctx, session.Chunk{Role: "assistant", Content: "two"}); err != nil {
			return nil, err
		}
		return first, nil // no longer the head
	})
	run, err := rt.Start(ctx, "stale", wf, in)
	var stale *session.StaleError
	if !errors.As(err, &stale) || !strings.Contains(err.Error(), "flow: exit root") {
		t.Fatalf("err = %v, want the exit record's stale handle", err)
	}
	evs, rerr := rt.Store().ReadRun(ctx, run.ID)
	if rerr != nil {
		t.Fatal(rerr)
	}
	last := evs[len(evs)-1]
	p, derr := last.Decode()
	fin, ok := p.(*events.RunFinished)
	if derr != nil || !ok || fin.Status != rath.RunError || !strings.Contains(fin.Error, "stale") {
		t.Fatalf("last run event %s %s (%v), want run.finished with the stale handle's error", last.Type, last.Payload, derr)
	}
	for _, ev := range evs {
		if ev.Type == events.TypeWorkflowExited {
			t.Fatalf("an exit record landed at seq %d", ev.Seq)
		}
	}
	if run.Output == nil || run.Output.Version() != 3 {
		t.Fatalf("output %v, want the handle the workflow returned (version 3)", run.Output)
	}
}
