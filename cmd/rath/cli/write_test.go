package cli

import (
	"strings"
	"testing"

	"github.com/gorath/rath/events"
)

type created struct {
	ID      string   `json:"id"`
	Version int64    `json:"version"`
	Chunks  int      `json:"chunks"`
	Parents []string `json:"parents"`
}

type shown struct {
	Session struct {
		Version int64    `json:"version"`
		Kind    string   `json:"kind"`
		Origin  string   `json:"origin"`
		Parents []string `json:"parents"`
	} `json:"session"`
	Chunks []events.Chunk `json:"chunks"`
}

func TestRun_NewAppendForkMerge(t *testing.T) {
	dir := t.TempDir()
	id := strings.TrimSpace(mustRun(t, dir, "new", "Plan", "the", "release"))
	sys := decodeJSON[created](t, mustRun(t, dir, "new", "--role", "system", "You plan releases.", "--json"))
	empty := decodeJSON[created](t, mustRun(t, dir, "new", "--json"))
	if sys.Chunks != 1 || empty.Chunks != 0 || sys.ID == id || empty.ID == id {
		t.Fatalf("new: %s %+v %+v", id, sys, empty)
	}
	if v := decodeJSON[shown](t, mustRun(t, dir, "show", sys.ID, "--json")); v.Session.Origin != "agent_prompt" || v.Chunks[0].Role != "system" {
		t.Fatalf("system session = %+v", v)
	}

	if got := strings.TrimSpace(mustRun(t, dir, "append", id, "--role", "assistant", "--author", "root.planner", "Step", "one.")); got != "2" {
		t.Fatalf("append printed %q, want the new version 2", got)
	}
	r := rathIn(t, dir, "multi\nline from stdin", "append", id, "--json", "-")
	if r.code != 0 {
		t.Fatalf("append from stdin: %d %s", r.code, r.stderr)
	}
	if c := decodeJSON[created](t, r.stdout); c.Version != 3 || c.Chunks != 3 {
		t.Fatalf("append --json = %+v", c)
	}
	mustRun(t, dir, "append", id, "--role", "tool_result", "--tool-call-id", "c1", "--name", "ls", "ok")
	v := decodeJSON[shown](t, mustRun(t, dir, "show", id, "--json"))
	want := []events.Chunk{
		{Role: "user", Content: "Plan the release"},
		{Role: "assistant", Content: "Step one.", Author: "root.planner"},
		{Role: "user", Content: "multi\nline from stdin"},
		{Role: "tool_result", Content: "ok", Name: "ls", ToolCallID: "c1"},
	}
	if len(v.Chunks) != len(want) {
		t.Fatalf("chunks = %+v", v.Chunks)
	}
	for i := range want {
		if v.Chunks[i].Role != want[i].Role || v.Chunks[i].Content != want[i].Content || v.Chunks[i].Author != want[i].Author || v.Chunks[i].ToolCallID != want[i].ToolCallID {
			t.Fatalf("chunk %d = %+v, want %+v", i, v.Chunks[i], want[i])
		}
	}

	fork := strings.TrimSpace(mustRun(t, dir, "fork", id))
	mustRun(t, dir, "append", fork, "--role", "assistant", "Alternative.")
	old := decodeJSON[created](t, mustRun(t, dir, "fork", id, "--at", "2", "--json"))
	if old.Chunks != 1 || len(old.Parents) != 1 || old.Parents[0] != id {
		t.Fatalf("fork --at 2 = %+v, want the one-chunk state of %s", old, id)
	}
	merged := decodeJSON[created](t, mustRun(t, dir, "merge", id, fork, old.ID, "--json"))
	if merged.Chunks != 5 || strings.Join(merged.Parents, ",") != strings.Join([]string{id, fork, old.ID}, ",") {
		t.Fatalf("merge = %+v", merged)
	}
	if got := strings.TrimSpace(mustRun(t, dir, "merge", fork, id)); !strings.HasPrefix(got, "s-") || strings.Contains(got, "\n") {
		t.Fatalf("merge printed %q, want one id", got)
	}
}

func TestRun_WriteErrors(t *testing.T) {
	w := seed(t)
	tests := []struct {
		name string
		argv []string
		code int
		want string
	}{
		{"bad role", []string{"append", w.root, "--role", "narrator", "x"}, 2, "not one of"},
		{"tool result without call id", []string{"append", w.root, "--role", "tool_result", "x"}, 2, "tool_call_id"},
		{"append to unknown", []string{"append", "s-nope", "x"}, 1, "not found"},
		{"append without text", []string{"append", w.root}, 2, "Try: rath append"},
		{"fork unknown", []string{"fork", "s-nope"}, 1, "not found"},
		{"fork at zero", []string{"fork", w.root, "--at", "0"}, 2, "positive seq"},
		{"merge one", []string{"merge", w.root}, 2, "Try: rath merge"},
		{"merge with itself", []string{"merge", w.root, w.root}, 1, "named twice"},
		{"new with bad role", []string{"new", "--role", "assistant", "x"}, 2, "user or a system"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rathCLI(t, w.dir, tt.argv...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", r.code, tt.code, r.stderr, tt.want)
			}
			if r.stdout != "" {
				t.Fatalf("a failed command printed data: %q", r.stdout)
			}
		})
	}
}
