package projections_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/keyring/keyringtest"
	"github.com/gorath/rath/projections"
	"github.com/gorath/rath/session"
)

func MustOpen(tb testing.TB) *rath.Runtime {
	tb.Helper()
	rt, err := rath.Open(context.Background(), tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close() })
	return rt
}

// populate drives a random but reproducible mix of every session operation.
func populate(tb testing.TB, rt *rath.Runtime, steps int) {
	tb.Helper()
	ctx := context.Background()
	// Everything populate writes is run r1's.
	run := rt.Store().In(eventlog.Scope{Run: events.RunRef{ID: "r1", Seed: "s"}})
	// r1 is a run submitted to the fleet and leased before it starts.
	if _, err := run.Append(ctx, events.SubmitStream("r1"), eventlog.NoStream, events.RunSubmitted{Run: "r1", Workflow: "wf", InputSession: "s-in", Queue: "default"}); err != nil {
		tb.Fatal(err)
	}
	if _, err := run.Append(ctx, events.LeaseStream("r1"), eventlog.NoStream, events.RunLeased{Run: "r1", Worker: "w1", Token: 1, ExpiresAt: 1e18}); err != nil {
		tb.Fatal(err)
	}
	if _, err := run.Append(ctx, "r1", eventlog.NoStream, events.RunStarted{Run: "r1", Workflow: "wf", Seed: "s", Tenant: "acme"}); err != nil {
		tb.Fatal(err)
	}
	// A dataset, and a namespace the run remembered in (its tenant's).
	if _, err := run.Append(ctx, events.DatasetStream("d1"), eventlog.NoStream, events.DatasetCreated{Name: "d1", Source: "jsonl", Tenant: "acme"}); err != nil {
		tb.Fatal(err)
	}
	if _, err := run.Append(ctx, events.MemoryStream("notes"), eventlog.NoStream, events.MemoryRemembered{Namespace: "notes", ID: "m1", Text: "x"}); err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	root, err := rt.Sessions().In(run.Scope()).New(ctx, session.OriginUser, session.Chunk{Role: events.RoleUser, Content: "root"})
	if err != nil {
		tb.Fatal(err)
	}
	heads := []*session.Session{root}
	for i := range steps {
		k := rng.IntN(len(heads))
		s := heads[k]
		var next *session.Session
		switch op := rng.IntN(10); {
		case op < 5:
			next, err = s.Append(ctx, session.Chunk{Role: "assistant", Content: fmt.Sprintf("c%d", i), Author: "root.agent",
				ToolCalls: []session.ToolCall{{ID: fmt.Sprint("t", i), Name: "run_shell_command", Arguments: `{"cmd":"ls"}`}}})
		case op < 6:
			next, err = s.To(ctx, "local", fmt.Sprint("/w", i))
		case op < 7:
			next, err = s.Emit(ctx, [][]byte{[]byte(fmt.Sprint("req", i))}, events.ProviderCalled{Session: s.ID(), Model: "m",
				RequestRef: eventlog.BlobHash([]byte(fmt.Sprint("req", i))), Usage: events.Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}, LatencyMS: 7})
		case op < 8:
			var f *session.Session
			f, err = s.Fork(ctx)
			heads = append(heads, f)
			next = s
		case op < 9 && i%2 == 0:
			var d *session.Session
			d, err = s.Detach(ctx)
			heads = append(heads, d)
			next = s
		case op < 9:
			var c *session.Session
			c, err = s.Compress(ctx, session.Chunk{Role: "summary", Content: fmt.Sprint("summary ", i)})
			heads = append(heads, c)
			next = s
		default:
			o := heads[rng.IntN(len(heads))]
			if o.ID() == s.ID() {
				next = s
				break
			}
			var m *session.Session
			m, err = s.Merge(ctx, o)
			heads = append(heads, m)
			next = s
		}
		if err != nil {
			tb.Fatalf("step %d: %v", i, err)
		}
		heads[k] = next
	}
	// A person in the loop: one request decided, one left pending.
	for i, id := range []string{"apr-1", "apr-2"} {
		req := events.ApprovalRequested{ID: id, Run: "r1", Session: heads[0].ID(), Kind: events.ApprovalTool, Tool: "run_shell_command", Arguments: `{"cmd":"ls"}`, ArgsHash: "h"}
		if _, err := run.Append(ctx, events.ApprovalStream(id), eventlog.NoStream, req); err != nil {
			tb.Fatal(err)
		}
		if i == 0 {
			dec := events.ApprovalDecided{ID: id, Run: "r1", Decision: events.DecisionApproved, By: "alice", ArgsHash: "h"}
			if _, err := run.Append(ctx, events.ApprovalStream(id), 1, dec); err != nil {
				tb.Fatal(err)
			}
		}
	}
	// Tokens, one revoked, and a read of the run (api_tokens, access_records).
	for i, id := range []string{"tok-1", "tok-2"} {
		tok := events.TokenCreated{ID: id, Hash: fmt.Sprintf("%064x", i+1), Tenant: "acme", Role: "viewer", By: "os:ann"}
		if _, err := run.Append(ctx, events.TokenStream(id), eventlog.NoStream, tok); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := run.Append(ctx, events.TokenStream("tok-1"), 1, events.TokenRevoked{ID: "tok-1", By: "os:ann"}); err != nil {
		tb.Fatal(err)
	}
	viewed := events.AccessViewed{Who: "token:tok-2", Issuer: "rath-token", Tenant: "acme", Run: "r1", FromSeq: 1, ToSeq: 3, What: events.ViewedEvents, Route: "GET /api/runs/{id}/events", At: 1}
	if _, err := run.Append(ctx, viewed.StreamID(), eventlog.AnyVersion, viewed); err != nil {
		tb.Fatal(err)
	}
	// One long session, so it has snapshots (session_snapshots).
	long := heads[len(heads)-1]
	for i := range projections.SnapshotEvery + 2 {
		if long, err = long.Append(ctx, session.Chunk{Role: "user", Content: fmt.Sprint("long ", i)}); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := run.Append(ctx, "r1", 1, events.RunFinished{Run: "r1", Status: "ok", OutputSession: heads[0].ID()}); err != nil {
		tb.Fatal(err)
	}
}

func TestRebuild_EqualsIncremental(t *testing.T) {
	ctx := t.Context()
	// With a key-encryption key: the content columns and sealed_by_key
	// are rebuilt from sealed events.
	rt, err := rath.OpenWith(ctx, rath.Options{Dir: t.TempDir(), KEK: keyringtest.KEK(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	populate(t, rt, 400)
	before, err := projections.Dump(ctx, rt.Store().DB())
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range projections.Tables {
		if len(before[table]) == 0 {
			t.Fatalf("table %s is empty: the scenario does not cover it", table)
		}
	}
	stats, err := rt.Rebuild(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := rt.Store().Head(ctx)
	if stats.Events != head.Seq {
		t.Fatalf("rebuilt %d events, log has %d", stats.Events, head.Seq)
	}
	after, err := projections.Dump(ctx, rt.Store().DB())
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range projections.Tables {
		b, a := before[table], after[table]
		if len(a) != len(b) {
			t.Fatalf("%s: %d rows incrementally, %d rebuilt", table, len(b), len(a))
		}
		for i := range b {
			if a[i] != b[i] {
				t.Fatalf("%s row %d differs:\nincremental: %s\nrebuilt:     %s", table, i, b[i], a[i])
			}
		}
	}
}

func TestProjector_RefusesInconsistentEvents(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	s, _ := rt.NewUserSession(ctx, "x")
	tests := []struct {
		name   string
		stream string
		p      events.Payload
	}{
		{"chunk for unknown session", "nope", events.ChunkAppended{Session: "nope", Chunk: events.Chunk{Role: "user"}}},
		{"chunk index gap", s.ID(), events.ChunkAppended{Session: s.ID(), Index: 5, Chunk: events.Chunk{Role: "user"}}},
		{"fork of unknown", "f", events.SessionForked{Session: "f", Source: "nope"}},
		{"fork past the end", "f", events.SessionForked{Session: "f", Source: s.ID(), BaseLen: 9}},
		{"run finished without start", "r", events.RunFinished{Run: "r", Status: "ok"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rt.Store().Append(ctx, tt.stream, eventlog.AnyVersion, tt.p)
			if !errors.Is(err, projections.ErrInconsistent) {
				t.Fatalf("err = %v, want ErrInconsistent", err)
			}
		})
	}
	head, _ := rt.Store().Head(ctx)
	if head.Seq != 1 {
		t.Fatalf("log has %d events, want 1: a refused event was written", head.Seq)
	}
}

// Every table of the schema is either the log's own (events, blobs, tree_hashes, redactions,
// store_meta, goose's version table, the signed checkpoints and their
// cosignatures), an asynchronous projection's
// checkpoint, operational state outside the log (the fleet's worker
// heartbeats, appends staged for the lock's holder), or in projections.Tables, the one list Rebuild, Check and
// Dump use: a new read model cannot be forgotten by rebuild and verify.
func TestTables_CoverTheSchema(t *testing.T) {
	rt := MustOpen(t)
	var names []string
	if err := rt.Store().DB().SelectContext(t.Context(), &names, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`); err != nil {
		t.Fatal(err)
	}
	own := map[string]bool{"events": true, "blobs": true, "store_meta": true, "tree_hashes": true, "redactions": true, "goose_db_version": true, "projection_checkpoints": true, "fleet_workers": true,
		"checkpoints": true, "checkpoint_cosignatures": true, "append_intents": true, "append_outcomes": true,
		"subject_keys": true} // subjects' data keys: erasure deletes them, no rebuild makes them
	for _, t2 := range projections.Tables {
		own[t2] = true
	}
	for _, name := range names {
		if !own[name] {
			t.Errorf("table %s is in the schema but neither the log's nor in projections.Tables", name)
		}
	}
}
