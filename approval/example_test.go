package approval_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/approval"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/session"
)

// A run suspends on a call that needs approval; a person approves it;
// the run is resumed and finishes; a second decision is refused.
func ExampleDecide() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rath-approval-example")
	defer os.RemoveAll(dir)
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		panic(err)
	}
	defer rt.Close()

	greet, _ := flow.NewTool("greet", "Greet someone.", func(_ context.Context, _ *session.Session, a struct {
		Name string `json:"name"`
	}) (string, error) {
		return "hello " + a.Name, nil
	})
	model := flow.Scripted(
		scripted.Entry{ToolCalls: []scripted.ToolCall{{ID: "g1", Name: "greet", Arguments: `{"name":"Ada"}`}}},
		scripted.Entry{Content: "I greeted Ada."},
	)
	agent, _ := flow.NewAgent("Greet people.", model, flow.WithTools(greet), flow.WithApproval("greet", flow.Always()))

	in, _ := rt.NewUserSession(ctx, "Greet Ada.")
	run, err := rt.Start(ctx, "greeter", agent, in)
	var waiting *flow.WaitingError
	if !errors.As(err, &waiting) {
		panic(err)
	}
	row, _ := rt.Reader().Run(ctx, run.ID)
	fmt.Println("status:", row.Status)

	id := waiting.Requests[0]
	st, _ := approval.Load(ctx, rt.Store(), id)
	fmt.Println("asks:", st.Request.Tool, st.Request.Arguments)
	if _, err := approval.Decide(ctx, rt.Store(), id, approval.Decision{Decision: events.DecisionApproved, By: "alice"}, time.Now()); err != nil {
		panic(err)
	}
	run, err = replay.Resume(ctx, rt, run.ID, agent)
	if err != nil {
		panic(err)
	}
	last, _ := run.Output.Last()
	fmt.Println("answer:", last.Content)

	_, err = approval.Decide(ctx, rt.Store(), id, approval.Decision{Decision: events.DecisionRejected, By: "bob", Note: "too late"}, time.Now())
	fmt.Println("second decision refused:", errors.Is(err, approval.ErrDecided))
	// Output:
	// status: waiting
	// asks: greet {"name":"Ada"}
	// answer: I greeted Ada.
	// second decision refused: true
}

// Show is what a person sees of a request: a command written to display
// as `X=ls -la # rm -f important.txt` shows its bidi controls escaped,
// and is flagged.
func ExampleShow() {
	sh := approval.Show([]byte(`{"cmd":"X=\u2067\u2066 rm -f important.txt \u2069 # \u2066ls -la\u2069\u2069","timeout":30}`), "", "the command matches rm")
	fmt.Println(sh.Warning)
	for _, f := range sh.Fields {
		fmt.Printf("%s: %s\n", f.Name, f.Value)
	}
	// Output:
	// contains invisible or direction-changing characters (shown escaped)
	// cmd: X=\u2067\u2066 rm -f important.txt \u2069 # \u2066ls -la\u2069\u2069
	// timeout: 30
}

// A context's clock sets and judges deadlines: a fleet worker passes its
// lease clock, so every machine agrees when a deadline falls due.
func ExampleWithClock() {
	at := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	ctx := approval.WithClock(context.Background(), func(context.Context) (time.Time, error) { return at, nil })
	now, err := approval.Now(ctx)
	fmt.Println(now.Format(time.RFC3339), err)
	// Output: 2026-11-26T09:00:00Z <nil>
}
