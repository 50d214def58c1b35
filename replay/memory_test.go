package replay_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/memory"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/session"
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

// changedCommit stands in for the commit code as it was when a run was
// recorded: it plans the commit as the current code does (running the
// recorded extraction call), lets change rewrite the memos, and stores
// them. A replay with the current code must then diverge.
type changedCommit struct {
	*memory.Local
	store  *eventlog.Store
	change func([]memory.Memo) []memory.Memo
}

func (m changedCommit) Commit(ctx context.Context, ns string, s *session.Session, opts ...memory.CommitOption) ([]string, error) {
	plan, err := memory.PlanCommit(ctx, ns, s, opts...)
	if err != nil {
		return nil, err
	}
	plan.Memos = m.change(plan.Memos)
	stream := events.MemoryStream(ns)
	v, err := m.store.StreamVersion(ctx, stream)
	if err != nil {
		return nil, err
	}
	// In the session's run, as memory.Local commits.
	if _, err := m.store.In(s.Manager().Scope()).Append(ctx, stream, v, plan.Events(v+1)...); err != nil {
		return nil, err
	}
	return plan.IDs(v + 1), nil
}

func TestMemory_ReplayRecomputesCommits(t *testing.T) {
	unchanged := func(ms []memory.Memo) []memory.Memo { return ms }
	cases := []struct {
		name    string
		extract bool
		// change is what the recording code did differently.
		change func([]memory.Memo) []memory.Memo
		// wantAt is the type of the first recorded memory event that must
		// diverge ("" for none: the code is unchanged).
		wantAt string
		nth    int // which event of that type (0: the first)
	}{
		{name: "unchanged archive", change: unchanged},
		{name: "unchanged extraction", extract: true, change: unchanged},
		{name: "memo parsing changed", extract: true, wantAt: events.TypeMemoryRemembered,
			change: func(ms []memory.Memo) []memory.Memo {
				for i := range ms {
					ms[i].Text = "- " + ms[i].Text // the old parser kept the bullet
				}
				return ms
			}},
		{name: "extra memo", extract: true, wantAt: events.TypeMemoryRemembered, nth: 1,
			change: func(ms []memory.Memo) []memory.Memo {
				return append(ms, memory.Memo{Text: "a memo the old code invented", Meta: ms[0].Meta})
			}},
		{name: "archive changed", wantAt: events.TypeMemoryCommitted,
			change: func(ms []memory.Memo) []memory.Memo { return ms[:1] }}, // the old code archived the user text only
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			rt := mustOpen(t)
			local, err := rt.Memory(ctx)
			if err != nil {
				t.Fatal(err)
			}
			agent := func(m memory.Memory) *flow.Agent {
				opts := flow.MemoryOptions{Namespace: "user/ana", Commit: true, TopK: -1}
				if tc.extract {
					opts.Extract = provider(t, lessonModel{})
				}
				a, err := flow.NewAgent("You learn.", provider(t, lessonModel{}), flow.WithMemory(m, opts))
				if err != nil {
					t.Fatal(err)
				}
				return a
			}
			in, _ := rt.NewUserSession(ctx, "how should we review code?")
			run, err := rt.Start(ctx, "learn", agent(changedCommit{Local: local, store: rt.Store(), change: tc.change}), in)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := replay.Run(ctx, rt, run.ID, agent(local))
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantAt == "" {
				if !rep.OK() || rep.Matched != rep.Recorded {
					t.Fatalf("unchanged code: %v", rep)
				}
				return
			}
			if rep.OK() {
				t.Fatalf("the commit code changed, yet the replay reports %v", rep)
			}
			evs, err := rt.Store().ReadRun(ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			var want int64
			n := 0
			for _, ev := range evs {
				if ev.Type == tc.wantAt {
					if n == tc.nth {
						want = ev.Seq
						break
					}
					n++
				}
			}
			if d := rep.Divergence; d.Seq != want || d.Type != tc.wantAt || d.Class != replay.ClassMismatch {
				t.Fatalf("divergence %v, want a mismatch at seq %d (%s)", d, want, tc.wantAt)
			}
		})
	}
}
