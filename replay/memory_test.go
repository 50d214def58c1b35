package replay_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/replay"
)

// lessonModel answers with a fixed lesson, and with the memories it was
// given when there are any.
type lessonModel struct{}

func (lessonModel) Complete(_ context.Context, req model.Request) (model.Response, error) {
	var mem []string
	for _, m := range req.Messages {
		if m.Role == events.RoleMemory {
			mem = append(mem, m.Content)
		}
	}
	if len(mem) > 0 {
		return model.Response{Content: "I remember: " + strings.Join(mem, " | ")}, nil
	}
	return model.Response{Content: "Lesson: run the tests before review."}, nil
}

func memoryAgent(t *testing.T, rt *rath.Runtime) *flow.Agent {
	t.Helper()
	m, err := rt.Memory(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	a, err := flow.NewAgent("You learn.", provider(t, lessonModel{}), flow.WithMemory(m, flow.MemoryOptions{Namespace: "user/ana", Commit: true}))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestMemory_PersistsAcrossRunsAndReplays(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()

	// First program run: learn something and commit it.
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	in1, _ := rt.NewUserSession(ctx, "how should we review code?")
	run1, err := rt.Start(ctx, "learn", memoryAgent(t, rt), in1)
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()

	// Second program run, a new process in real life: recall it.
	rt, err = rath.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	in2, _ := rt.NewUserSession(ctx, "what did we learn about review and tests?")
	run2, err := rt.Start(ctx, "learn", memoryAgent(t, rt), in2)
	if err != nil {
		t.Fatal(err)
	}
	var recalled []string
	for _, c := range run2.Output.Chunks() {
		if c.Role == events.RoleMemory {
			recalled = append(recalled, c.Content)
		}
	}
	if len(recalled) == 0 || !strings.Contains(strings.Join(recalled, " "), "run the tests before review") {
		t.Fatalf("the second run did not recall the first run's lesson: %v", run2.Output.Chunks())
	}
	last, _ := run2.Output.Last()
	if !strings.Contains(last.Content, "I remember") {
		t.Fatalf("answer = %q", last.Content)
	}
	// Both runs replay exactly: recalls answered from the log, commits
	// reproduced with the same ids.
	for _, id := range []string{run1.ID, run2.ID} {
		rep, err := replay.Run(ctx, rt, id, memoryAgent(t, rt))
		if err != nil || !rep.OK() {
			t.Fatalf("replay %s: %v %v", id, rep, err)
		}
	}
}
