package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/projections"
	"github.com/gorath/rath/session"
)

// AgentLog writes a log shaped like agents' work into rt: n sessions, each
// placed, then rounds rounds of an assistant chunk, its provider call, a
// tool call and the tool's result chunk (a round's events in one append);
// every third session forked first, with a chunk on the fork; every
// sixth's two forks merged; the first session long enough for snapshots
// (session_snapshots). It returns how many events it wrote.
func AgentLog(tb testing.TB, rt *rath.Runtime, n, rounds int) int64 {
	tb.Helper()
	ctx := context.Background()
	head := func() int64 {
		h, err := rt.Store().Head(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		return h.Seq
	}
	start := head()
	for i := range n {
		s, err := rt.NewUserSession(ctx, fmt.Sprint("task ", i))
		if err != nil {
			tb.Fatal(err)
		}
		if i%3 == 0 {
			forks := 1 + i%2 // every sixth: two, merged
			var fs []*session.Session
			for range forks {
				f, err := s.Fork(ctx)
				if err != nil {
					tb.Fatal(err)
				}
				if f, err = f.Append(ctx, session.Chunk{Role: "assistant", Content: "on a fork"}); err != nil {
					tb.Fatal(err)
				}
				fs = append(fs, f)
			}
			if len(fs) == 2 {
				if _, err := fs[0].Merge(ctx, fs[1]); err != nil {
					tb.Fatal(err)
				}
			}
		}
		id := s.ID()
		evs := []events.Payload{&events.SessionPlaced{Session: id, Backend: "local", Spec: fmt.Sprint("/w/", i)}}
		r := rounds
		if i == 0 {
			r = max(rounds, projections.SnapshotEvery) // 4 events a round: several snapshots
		}
		version := s.Version()
		for k := range r {
			next := int64(2 * k) // the chunks before this round: the prompt, then two a round
			evs = append(evs,
				&events.ChunkAppended{Session: id, Index: next + 1, Chunk: events.Chunk{Role: "assistant", Author: "root.agent", Content: fmt.Sprint("round ", k)}},
				&events.ProviderCalled{Session: id, Agent: "root.agent", Model: "m", LatencyMS: int64(k),
					Usage: events.Usage{PromptTokens: int64(100 + k), CompletionTokens: 20, TotalTokens: int64(120 + k)}},
				&events.ToolCalled{Session: id, Agent: "root.agent", CallID: fmt.Sprint("c", k), Tool: "run_shell_command", Arguments: `{"cmd":"ls"}`},
				&events.ChunkAppended{Session: id, Index: next + 2, Chunk: events.Chunk{Role: "tool_result", ToolCallID: fmt.Sprint("c", k), Content: "a.txt b.txt"}})
			if len(evs) >= 400 || k == r-1 {
				out, err := rt.Store().Append(ctx, id, version, evs...)
				if err != nil {
					tb.Fatal(err)
				}
				version = out[len(out)-1].Version
				evs = evs[:0]
			}
		}
	}
	return head() - start
}
