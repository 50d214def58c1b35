package flow_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/session"
)

// roundsModel is a zero-latency model that asks for the no-op tool until
// the conversation holds `rounds` tool results, then answers.
type roundsModel struct{ rounds int }

func (m roundsModel) Complete(_ context.Context, req model.Request) (model.Response, error) {
	results := 0
	for _, msg := range req.Messages {
		if msg.Role == events.RoleToolResult {
			results++
		}
	}
	u := events.Usage{PromptTokens: 20, CompletionTokens: 5, TotalTokens: 25}
	if results >= m.rounds {
		return model.Response{Content: "done", Usage: u}, nil
	}
	return model.Response{ToolCalls: []events.ToolCall{{ID: fmt.Sprint("c", results), Name: "noop", Arguments: `{}`}}, Usage: u}, nil
}

const benchRounds = 10

func benchAgent(b *testing.B) (*rath.Runtime, *flow.Agent) {
	b.Helper()
	rt, err := rath.Open(context.Background(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	p, err := flow.ResolveProvider(flow.Provider{Client: roundsModel{benchRounds}}, flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "/none"})
	if err != nil {
		b.Fatal(err)
	}
	noop, _ := flow.NewTool("noop", "Does nothing.", func(context.Context, *session.Session, struct{}) (string, error) { return "ok", nil })
	a, err := flow.NewAgent("bench", p, flow.WithTools(noop))
	if err != nil {
		b.Fatal(err)
	}
	return rt, a
}

// BenchmarkAgentLoop measures the loop's own cost per tool round: a
// zero-latency model, a no-op tool, every event write included (durable,
// synchronous=FULL). Each Forward runs 10 tool rounds and a final answer.
func BenchmarkAgentLoop(b *testing.B) {
	rt, a := benchAgent(b)
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		s, err := rt.NewUserSession(ctx, "go")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := a.Forward(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N*benchRounds), "µs/round")
}

// BenchmarkAgentsConcurrent runs 1 or 64 agents on separate sessions at
// once and reports tool rounds per second; compare the two in one run.
func BenchmarkAgentsConcurrent(b *testing.B) {
	for _, n := range []int{1, 64} {
		b.Run(fmt.Sprintf("agents=%d", n), func(b *testing.B) {
			rt, a := benchAgent(b)
			ctx := context.Background()
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			work := make(chan struct{}, b.N)
			for range b.N {
				work <- struct{}{}
			}
			close(work)
			for range n {
				wg.Go(func() {
					for range work {
						s, err := rt.NewUserSession(ctx, "go")
						if err == nil {
							_, err = a.Forward(ctx, s)
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N*benchRounds)/time.Since(start).Seconds(), "rounds/s")
		})
	}
}
