package projections_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/projections"
)

// An Append's updates of a session row are written once, at its end (or
// before an event that reads the row): the row must come out as if each
// event had been applied alone, which a rebuild (one event at a time)
// proves, and a bad event anywhere in the Append refuses all of it.
func TestProjector_HeldUpdates(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	s, err := rt.NewUserSession(ctx, "first")
	if err != nil {
		t.Fatal(err)
	}
	other, err := rt.NewUserSession(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	chunk := func(id string, i int64) events.ChunkAppended {
		return events.ChunkAppended{Session: id, Index: i, Chunk: events.Chunk{Role: "assistant", Content: fmt.Sprint("c", i)}}
	}
	call := func(id string, tokens int64) events.ProviderCalled {
		return events.ProviderCalled{Session: id, Model: "m", Agent: "a", Usage: events.Usage{PromptTokens: tokens, CompletionTokens: 1, TotalTokens: tokens + 1}}
	}
	tool := events.ToolReturned{Session: s.ID(), CallID: "t1", Tool: "count"}
	// Two sessions in one atomic write: chunks around a model call and a
	// tool result, and a fork in the middle, which reads the source's
	// length (so what is held must be written before it).
	_, err = rt.Store().AppendWrites(ctx,
		eventlog.Write{Stream: s.ID(), Expected: 1, Events: []events.Payload{
			call(s.ID(), 10), chunk(s.ID(), 1), tool, chunk(s.ID(), 2), call(s.ID(), 20),
		}},
		eventlog.Write{Stream: "f1", Expected: eventlog.NoStream, Events: []events.Payload{events.SessionForked{Session: "f1", Source: s.ID(), BaseLen: 3}}},
		eventlog.Write{Stream: other.ID(), Expected: 1, Events: []events.Payload{chunk(other.ID(), 1), call(other.ID(), 5)}},
	)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Length, Version, Calls, Prompt, Completion, Total int64
	}
	read := func(id string) row {
		var r row
		if err := rt.Store().DB().QueryRowContext(ctx, `SELECT length, version, calls, prompt_tokens, completion_tokens, total_tokens FROM sessions WHERE id = ?`, id).
			Scan(&r.Length, &r.Version, &r.Calls, &r.Prompt, &r.Completion, &r.Total); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if got, want := read(s.ID()), (row{Length: 3, Version: 6, Calls: 2, Prompt: 30, Completion: 2, Total: 32}); got != want {
		t.Errorf("session row %+v, want %+v", got, want)
	}
	if got, want := read(other.ID()), (row{Length: 2, Version: 3, Calls: 1, Prompt: 5, Completion: 1, Total: 6}); got != want {
		t.Errorf("other session row %+v, want %+v", got, want)
	}
	if got := read("f1").Length; got != 3 {
		t.Errorf("fork has %d chunks, want 3 (the source's, written before the fork)", got)
	}
	// Enough held chunks to cross a snapshot boundary inside one Append.
	var long []events.Payload
	for i := range int64(projections.SnapshotEvery + 3) {
		long = append(long, chunk(s.ID(), 3+i))
	}
	if _, err := rt.Store().Append(ctx, s.ID(), 6, long...); err != nil {
		t.Fatal(err)
	}
	rep, err := projections.Check(ctx, rt.Store(), projections.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("the projections differ from a rebuild: %v", rep.Differences)
	}

	head, _ := rt.Store().Head(ctx)
	bad := []struct {
		name   string
		stream string
		evs    []events.Payload
	}{
		{"a gap after held chunks", s.ID(), []events.Payload{chunk(s.ID(), 134), chunk(s.ID(), 136)}},
		{"a first chunk past the stored length", s.ID(), []events.Payload{chunk(s.ID(), 135), call(s.ID(), 1)}},
		{"a first chunk at a taken index", s.ID(), []events.Payload{chunk(s.ID(), 133), chunk(s.ID(), 134)}},
		{"a model call for an unknown session", "ghost", []events.Payload{events.ToolReturned{Session: "ghost", CallID: "t1", Tool: "count"}, call("ghost", 1)}},
		{"chunks for an unknown session", "ghost", []events.Payload{chunk("ghost", 0), chunk("ghost", 1)}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rt.Store().Append(ctx, tt.stream, eventlog.AnyVersion, tt.evs...)
			if !errors.Is(err, projections.ErrInconsistent) {
				t.Fatalf("err = %v, want ErrInconsistent", err)
			}
		})
	}
	if after, _ := rt.Store().Head(ctx); after.Seq != head.Seq {
		t.Fatalf("the log went from %d to %d events: a refused Append was written", head.Seq, after.Seq)
	}
	if got := read(s.ID()).Length; got != 134 {
		t.Fatalf("session has %d chunks after refused Appends, want 134", got)
	}
}
