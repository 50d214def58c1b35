package projections_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/projections"
	"github.com/gorath/rath/session"
)

// TestChunkRange reads ranges of a session whose chunks come from a
// creation event, chunk.appended events past several snapshots, a payload
// kept in blobs and a base chain, and compares each with the same range of
// the whole session read from its start.
func TestChunkRange(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	root, err := rt.Sessions().New(ctx, session.OriginUser, session.Chunk{Role: "system", Content: "sys"}, session.Chunk{Role: "user", Content: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		c := session.Chunk{Role: "user", Content: fmt.Sprint("message ", i)}
		switch i {
		case 140:
			c.Content = strings.Repeat("big ", eventlog.DefaultBlobThreshold/2) // its event's payload goes to blobs
		case 141:
			c = session.Chunk{Role: "assistant", ToolCalls: []events.ToolCall{{ID: "c1", Name: "sh", Arguments: `{"cmd":"ls"}`}}}
		case 142:
			c = session.Chunk{Role: "tool_result", ToolCallID: "c1", Content: "a\nb\t\"c\"", Meta: map[string]string{"k": "v"}}
		}
		if root, err = root.Append(ctx, c); err != nil {
			t.Fatal(err)
		}
		if i%50 == 0 {
			if root, err = root.Emit(ctx, nil, events.ProviderCalled{Session: root.ID(), Model: "m"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	fork, err := root.Fork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if fork, err = fork.Append(ctx, session.Chunk{Role: "user", Content: fmt.Sprint("fork ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	merged, err := fork.Merge(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if merged, err = merged.Append(ctx, session.Chunk{Role: "user", Content: "after the merge"}); err != nil {
		t.Fatal(err)
	}
	r := rt.Reader()
	for _, s := range []*session.Session{root, fork, merged} {
		all, err := r.Chunks(ctx, s.ID(), int64(s.Len()))
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range s.Chunks() {
			if fmt.Sprint(all[i].Chunk) != fmt.Sprint(c) {
				t.Fatalf("%s chunk %d: read %+v, the handle has %+v", s.ID(), i, all[i].Chunk, c)
			}
		}
		n := int64(len(all))
		for _, rg := range [][2]int64{{0, n}, {1, 2}, {127, 131}, {139, 145}, {200, n}, {n - 1, n}, {n, n}, {130, 260}} {
			got, err := r.ChunkRange(ctx, s.ID(), rg[0], rg[1])
			if err != nil {
				t.Fatalf("%s %v: %v", s.ID(), rg, err)
			}
			if fmt.Sprint(got) != fmt.Sprint(all[rg[0]:rg[1]]) {
				t.Fatalf("%s chunks %v differ from the same range of the whole session", s.ID(), rg)
			}
		}
		if _, err := r.ChunkRange(ctx, s.ID(), 0, n+1); !errors.Is(err, projections.ErrInconsistent) {
			t.Fatalf("%s: one chunk past the end: %v, want ErrInconsistent", s.ID(), err)
		}
	}
}

// A chunk event on a stream other than its session's is refused (by the
// store; the projector refuses it too, for a log copied from elsewhere):
// a session's chunks are read from its own stream.
func TestChunkOnAnotherStreamIsInconsistent(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	s, err := rt.NewUserSession(ctx, "hi")
	if err != nil {
		t.Fatal(err)
	}
	_, err = rt.Store().Append(ctx, "elsewhere", eventlog.NoStream, events.ChunkAppended{Session: s.ID(), Index: 1, Chunk: events.Chunk{Role: "user", Content: "smuggled"}})
	if !errors.Is(err, events.ErrInvalid) {
		t.Fatalf("append: %v, want ErrInvalid", err)
	}
	if got, err := rt.Sessions().Load(ctx, s.ID()); err != nil || got.Len() != 1 {
		t.Fatalf("the session after the refused append: %v, %v", got, err)
	}
}
