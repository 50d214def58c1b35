package cli

import (
	"bufio"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gorath/rath/events"
)

func TestRun_Sessions(t *testing.T) {
	w := seed(t)
	out := mustRun(t, w.dir, "sessions")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if got := strings.Fields(lines[0]); !slices.Equal(got, []string{"ID", "KIND", "CHUNKS", "VERSION", "BACKEND", "PARENTS", "TOKENS"}) {
		t.Fatalf("header = %v", got)
	}
	if len(lines) != 5 {
		t.Fatalf("%d rows, want 4 sessions:\n%s", len(lines)-1, out)
	}
	// The root row: 3 chunks, version 5 (create, 2 appends, place, call), local, 15 tokens.
	if got := strings.Fields(lines[1]); !slices.Equal(got, []string{w.root, "root", "3", "5", "local", "-", "15"}) {
		t.Fatalf("root row = %v", got)
	}

	type row struct {
		ID      string       `json:"id"`
		Kind    string       `json:"kind"`
		Chunks  int64        `json:"chunks"`
		Parents []string     `json:"parents"`
		Backend string       `json:"backend"`
		Usage   events.Usage `json:"usage"`
	}
	rows := decodeJSON[[]row](t, mustRun(t, w.dir, "sessions", "--json"))
	want := []row{
		{ID: w.root, Kind: "root", Chunks: 3, Parents: []string{}, Backend: "local", Usage: events.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, Calls: 1}},
		{ID: w.fork, Kind: "fork", Chunks: 4, Parents: []string{w.root}, Backend: "local", Usage: events.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, Calls: 1}},
		// The merge of the root and its fork counts the root's one call once.
		{ID: w.merged, Kind: "merge", Chunks: 4, Parents: []string{w.root, w.fork}, Backend: "local", Usage: events.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, Calls: 1}},
		{ID: w.detached, Kind: "detach", Chunks: 4, Parents: []string{}, Backend: "local"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Fatalf("sessions --json (-want +got):\n%s", diff)
	}
}

func TestRun_Show(t *testing.T) {
	w := seed(t)
	out := mustRun(t, w.dir, "show", w.root)
	for _, want := range []string{
		"session   " + w.root, "kind      root (user)", "placement local /work", "usage     15 tokens (10 prompt, 5 completion) in 1 model call",
		"#0 user\n    List the files", "#1 assistant by root.agent\n    -> call c1 list_files {\"dir\":\".\"}",
		"#2 tool_result list_files for call c1\n    a.go\n    b.go",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	type view struct {
		Session struct {
			ID      string   `json:"id"`
			Kind    string   `json:"kind"`
			Version int64    `json:"version"`
			Chunks  int64    `json:"chunks"`
			Parents []string `json:"parents"`
		} `json:"session"`
		AtSeq  int64 `json:"at_seq"`
		Chunks []struct {
			Index int `json:"index"`
			events.Chunk
		} `json:"chunks"`
	}
	v := decodeJSON[view](t, mustRun(t, w.dir, "show", w.merged, "--json"))
	if v.Session.ID != w.merged || v.Session.Kind != "merge" || len(v.Chunks) != 4 || !slices.Equal(v.Session.Parents, []string{w.root, w.fork}) {
		t.Fatalf("show --json = %+v", v)
	}
	if c := v.Chunks[3]; c.Index != 3 || c.Content != "fork answer" || c.Author != "root.b" {
		t.Fatalf("last chunk = %+v", c)
	}
	// Time travel: right after its creation the root held one chunk.
	at := decodeJSON[view](t, mustRun(t, w.dir, "show", w.root, "--at", fmt.Sprint(w.rootCreatedSeq), "--json"))
	if at.AtSeq != w.rootCreatedSeq || at.Session.Version != 1 || at.Session.Chunks != 1 || len(at.Chunks) != 1 {
		t.Fatalf("show --at = %+v", at)
	}
	if r := rathCLI(t, w.dir, "show", "s-nope"); r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Fatalf("unknown session: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := rathCLI(t, w.dir, "show", w.root, "--at", "1"); r.code != 1 || !strings.Contains(r.stderr, "did not exist yet") {
		t.Fatalf("show before creation: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestRun_Graph(t *testing.T) {
	w := seed(t)
	mermaid := mustRun(t, w.dir, "graph")
	for _, want := range []string{"graph TD", "-->|fork|", "-->|merge|", w.detached + "<br/>detach"} {
		if !strings.Contains(mermaid, want) {
			t.Errorf("mermaid lacks %q:\n%s", want, mermaid)
		}
	}
	if n := strings.Count(mermaid, "-->"); n != 3 {
		t.Errorf("mermaid has %d edges, want 3 (fork, merge x2):\n%s", n, mermaid)
	}
	dot := mustRun(t, w.dir, "graph", "--format", "dot")
	for _, want := range []string{"digraph rath {", fmt.Sprintf("%q -> %q [label=\"fork\"];", w.root, w.fork), fmt.Sprintf("%q [label=\"%s\\ndetach\"];", w.detached, w.detached)} {
		if !strings.Contains(dot, want) {
			t.Errorf("dot lacks %q:\n%s", want, dot)
		}
	}
	type graph struct {
		Nodes []struct{ ID, Kind string }            `json:"nodes"`
		Edges []struct{ Parent, Child, Kind string } `json:"edges"`
	}
	for _, argv := range [][]string{{"graph", "--format", "json"}, {"graph", "--json"}} {
		g := decodeJSON[graph](t, mustRun(t, w.dir, argv...))
		if len(g.Nodes) != 4 || len(g.Edges) != 3 {
			t.Fatalf("%v: %d nodes %d edges", argv, len(g.Nodes), len(g.Edges))
		}
		for _, e := range g.Edges {
			if e.Child == w.detached || e.Parent == w.detached {
				t.Fatalf("detached session has an edge: %+v", e)
			}
		}
	}
}

func TestRun_Events(t *testing.T) {
	w := seed(t)
	countLines := func(s string) int {
		if strings.TrimSpace(s) == "" {
			return 0
		}
		return len(strings.Split(strings.TrimSpace(s), "\n"))
	}
	tests := []struct {
		name string
		argv []string
		want int
	}{
		{"all", nil, int(w.events)},
		{"stream", []string{"--stream", w.root}, 5},
		{"from", []string{"--from", fmt.Sprint(w.events - 1)}, 2},
		{"type", []string{"--type", "chunk.appended"}, 3},
		{"limit", []string{"--limit", "2"}, 2},
		{"run", []string{"--run", "run-1"}, int(w.events)},
		{"unknown run", []string{"--run", "nope"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := mustRun(t, w.dir, append([]string{"events"}, tt.argv...)...)
			if got := countLines(text); got != tt.want {
				t.Fatalf("%d lines, want %d:\n%s", got, tt.want, text)
			}
			js := mustRun(t, w.dir, append([]string{"events", "--json"}, tt.argv...)...)
			var evs []events.Event
			sc := bufio.NewScanner(strings.NewReader(js))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				evs = append(evs, decodeJSON[events.Event](t, sc.Text()))
			}
			if len(evs) != tt.want {
				t.Fatalf("--json gave %d events, want %d", len(evs), tt.want)
			}
			for i := range evs {
				if i > 0 && evs[i].Seq <= evs[i-1].Seq {
					t.Fatalf("events out of order: %d after %d", evs[i].Seq, evs[i-1].Seq)
				}
				if _, err := evs[i].Decode(); err != nil {
					t.Fatalf("seq %d payload: %v", evs[i].Seq, err)
				}
			}
		})
	}
}
