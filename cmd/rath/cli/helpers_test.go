package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
)

type result struct {
	stdout, stderr string
	code           int
}

// rathIn runs the CLI against dir with stdin and returns what it printed.
func rathIn(t *testing.T, dir, stdin string, argv ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(t.Context(), Config{}, append([]string{"--dir", dir}, argv...), strings.NewReader(stdin), &out, &errb)
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

func rathCLI(t *testing.T, dir string, argv ...string) result {
	t.Helper()
	return rathIn(t, dir, "", argv...)
}

// mustRun runs the CLI and fails the test unless it exits 0.
func mustRun(t *testing.T, dir string, argv ...string) string {
	t.Helper()
	r := rathCLI(t, dir, argv...)
	if r.code != 0 {
		t.Fatalf("rath %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(argv, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

func decodeJSON[T any](t *testing.T, text string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("output is not the expected JSON: %v\n%s", err, text)
	}
	return v
}

// world is a store populated through the library, closed before the CLI
// opens it.
type world struct {
	dir                             string
	root, fork, merged, detached    string
	rootCreatedSeq, events, rootLen int64
}

func seed(t *testing.T) world {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	inRun := eventlog.Scope{Run: events.RunRef{ID: "run-1", Seed: "cli"}}
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	must := func(s *session.Session, err error) *session.Session {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if _, err := rt.Store().In(inRun).Append(ctx, "run-1", eventlog.NoStream, events.RunStarted{Run: "run-1", Workflow: "wf", Seed: "cli"}); err != nil {
		t.Fatal(err)
	}
	root := must(rt.Sessions().In(inRun).New(ctx, session.OriginUser, session.Chunk{Role: events.RoleUser, Content: "List the files"}))
	root = must(root.Append(ctx,
		events.Chunk{Role: "assistant", Author: "root.agent", ToolCalls: []events.ToolCall{{ID: "c1", Name: "list_files", Arguments: `{"dir":"."}`}}},
		events.Chunk{Role: "tool_result", ToolCallID: "c1", Name: "list_files", Content: "a.go\nb.go"},
	))
	root = must(root.To(ctx, "local", "/work"))
	req := []byte(`{"model":"m","messages":[]}`)
	root = must(root.Emit(ctx, [][]byte{req}, events.ProviderCalled{Session: root.ID(), Model: "m", RequestRef: eventlog.BlobHash(req),
		Usage: events.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}}))
	fork := must(root.Fork(ctx))
	fork = must(fork.Append(ctx, events.Chunk{Role: "assistant", Content: "fork answer", Author: "root.b"}))
	merged := must(root.Merge(ctx, fork))
	detached := must(fork.Detach(ctx))
	head, err := rt.Store().Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	row, err := rt.Reader().Session(ctx, root.ID())
	if err != nil {
		t.Fatal(err)
	}
	return world{dir: dir, root: root.ID(), fork: fork.ID(), merged: merged.ID(), detached: detached.ID(),
		rootCreatedSeq: row.CreatedSeq, events: head.Seq, rootLen: int64(root.Len())}
}

// openDB opens the world's database directly, bypassing rath, to tamper
// with it.
func openDB(t *testing.T, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, rath.DBFile)+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func exec(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex // protects b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func userChunk(text string) events.Chunk { return events.Chunk{Role: events.RoleUser, Content: text} }
