package flow_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/modeltest"
)

const secretKey = "sk-test-SECRET-0123456789-do-not-leak"

// The agent loop over the real wire formats: a 429 with Retry-After, a
// 500, a malformed body and a stream cut mid-way are retried; tool calls
// (two in one response) round-trip; the streamed answer is assembled.
// Afterwards the key appears nowhere: not in the database file, not in an
// error, not in a log line.
func TestAgent_OverTheWire(t *testing.T) {
	for _, kind := range []string{flow.VendorOpenAI, flow.VendorAnthropic} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			var srv *modeltest.Server
			if kind == flow.VendorOpenAI {
				srv = modeltest.NewOpenAI(t)
			} else {
				srv = modeltest.NewAnthropic(t)
			}
			srv.Push(
				modeltest.Reply{Status: 429, Message: "slow down", RetryAfter: "0"},
				modeltest.Reply{Status: 500, Message: "boom"},
				modeltest.Reply{Raw: `{"choices": [`, Status: 200},
				modeltest.Reply{ToolCalls: []events.ToolCall{
					{ID: "t1", Name: "add", Arguments: `{"a":2,"b":40}`},
					{ID: "t2", Name: "add", Arguments: `{"a":1,"b":1}`},
				}, Usage: events.Usage{PromptTokens: 30, CompletionTokens: 10}},
				modeltest.Reply{Content: "The sums are 42 and 2.", CutAfter: 2},
				modeltest.Reply{Content: "The sums are 42 and 2.", Usage: events.Usage{PromptTokens: 50, CompletionTokens: 8}},
			)
			dir := t.TempDir()
			rt, err := rath.Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			p, err := flow.ResolveProvider(flow.Provider{Vendor: kind, Model: "m-1", BaseURL: srv.URL(), APIKey: secretKey,
				Retry: flow.RetryPolicy{MaxAttempts: 5, InitialBackoff: time.Millisecond}}, flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "/none", Models: rath.Models()})
			if err != nil {
				t.Fatal(err)
			}
			var streamed strings.Builder
			agent, err := flow.NewAgent("You add.", p, flow.WithTools(adder(t, flow.WithParallelSafe())),
				flow.WithStreaming(func(d model.Delta) { streamed.WriteString(d.Content) }))
			if err != nil {
				t.Fatal(err)
			}
			s, _ := rt.NewUserSession(ctx, "add 2+40 and 1+1")
			out, err := agent.Forward(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&logs, "%v\n", out)
			cs := out.Chunks()
			if len(cs) != 5 || cs[2].Content != "42" || cs[3].Content != "2" || cs[4].Content != "The sums are 42 and 2." {
				t.Fatalf("transcript = %+v", cs)
			}
			if !strings.HasSuffix(streamed.String(), "The sums are 42 and 2.") {
				t.Fatalf("streamed = %q", streamed.String())
			}
			failed, _ := rt.Store().Read(ctx, eventlog.Query{Types: []string{events.TypeProviderFailed}})
			if len(failed) != 4 {
				t.Fatalf("failed attempts recorded = %d, want 4 (429, 500, malformed, cut stream)", len(failed))
			}
			for _, ev := range failed {
				fmt.Fprintf(&logs, "%s\n", ev.Payload)
			}
			// A call that fails for good: its error must not carry the key.
			srv.Push(modeltest.Reply{Status: 401, Message: "bad key " + secretKey})
			_, ferr := agent.Forward(ctx, out)
			if ferr == nil || model.KindOf(ferr) != model.KindAuth {
				t.Fatalf("401: err = %v", ferr)
			}
			fmt.Fprintf(&logs, "%v\n", ferr)
			rt.Close()
			db, err := os.ReadFile(filepath.Join(dir, rath.DBFile))
			if err != nil {
				t.Fatal(err)
			}
			wal, _ := os.ReadFile(filepath.Join(dir, rath.DBFile+"-wal"))
			for name, b := range map[string][]byte{"database": db, "wal": wal, "errors and logs": logs.Bytes()} {
				if bytes.Contains(b, []byte(secretKey)) || bytes.Contains(b, []byte("SECRET-0123456789")) {
					t.Fatalf("the API key leaked into the %s", name)
				}
			}
			// The requests did carry it, so the test would see a leak.
			if h := srv.Requests()[0].Header; !strings.Contains(h.Get("Authorization")+h.Get("x-api-key"), secretKey) {
				t.Fatal("the key was never sent; the leak check proves nothing")
			}
		})
	}
}
