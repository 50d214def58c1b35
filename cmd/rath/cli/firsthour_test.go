package cli

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runs filters by status, start time, text and count; graph and sessions keep
// one run's sessions with --run; an unknown run id is hinted at.
func TestRuns_FiltersAndRunScope(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cas := writeCassette(t, "hello")
	first := decodeJSON[[]runView](t, func() string {
		mustRun(t, dir, "run", "--cassette", cas, "one")
		return mustRun(t, dir, "runs", "--json")
	}())[0]
	mustRun(t, dir, "run", "--cassette", cas, "two")
	// A model that calls an unknown tool, then has nothing more to say:
	// the run fails.
	failing := filepath.Join(t.TempDir(), "short.json")
	os.WriteFile(failing, []byte(`{"scripted":true,"responses":[{"tool_calls":[{"id":"c1","name":"nope","arguments":{}}]}]}`), 0o644)
	if r := rathCLI(t, dir, "run", "--cassette", failing, "three"); r.code != ExitFailure {
		t.Fatalf("the failing run: exit %d\n%s", r.code, r.stderr)
	}
	all := decodeJSON[[]runView](t, mustRun(t, dir, "runs", "--json"))
	if len(all) < 2 {
		t.Fatalf("runs: %+v", all)
	}
	for _, tc := range []struct {
		argv []string
		want int
	}{
		{[]string{"--status", "done"}, 2},
		{[]string{"--status", "failed,canceled"}, len(all) - 2},
		{[]string{"--limit", "1"}, 1},
		{[]string{"--since", "1h"}, len(all)},
		{[]string{"--since", "2000-01-01"}, len(all)},
		{[]string{"--since", "2999-01-01"}, 0},
		{[]string{"--status", "done", "--limit", "1"}, 1},
		{[]string{"--search", first.ID}, 1},
		{[]string{"--search", first.Input}, 1},
		{[]string{"--search", "%"}, 0},
		{[]string{"--search", "run-", "--status", "done"}, 2},
	} {
		got := decodeJSON[[]runView](t, mustRun(t, dir, append([]string{"runs", "--json"}, tc.argv...)...))
		if len(got) != tc.want {
			t.Errorf("runs %v: %d runs, want %d: %+v", tc.argv, len(got), tc.want, got)
		}
		for _, v := range got {
			if !strings.Contains(strings.Join(statusWords, " "), v.Status) {
				t.Errorf("runs %v: status %q is not a status word", tc.argv, v.Status)
			}
		}
	}
	if got := decodeJSON[[]runView](t, mustRun(t, dir, "runs", "--json", "--status", "done", "--limit", "1")); got[0].ID == first.ID {
		t.Errorf("--limit 1 kept the oldest run, not the newest")
	}
	for _, bad := range [][]string{{"--status", "ok"}, {"--since", "yesterday"}, {"--limit", "-1"}} {
		if r := rathCLI(t, dir, append([]string{"runs"}, bad...)...); r.code != ExitUsage {
			t.Errorf("runs %v: exit %d, want %d\n%s", bad, r.code, ExitUsage, r.stderr)
		}
	}

	sess := decodeJSON[[]sessionView](t, mustRun(t, dir, "sessions", "--json", "--run", first.ID))
	ids := map[string]bool{}
	for _, s := range sess {
		ids[s.ID] = true
	}
	if !ids[first.Input] || !ids[first.Output] || len(sess) >= len(decodeJSON[[]sessionView](t, mustRun(t, dir, "sessions", "--json"))) {
		t.Errorf("sessions --run %s: %+v (input %s, output %s)", first.ID, sess, first.Input, first.Output)
	}
	g := decodeJSON[graphView](t, mustRun(t, dir, "graph", "--json", "--run", first.ID))
	if len(g.Nodes) != len(sess) {
		t.Errorf("graph --run: %d nodes, sessions --run: %d", len(g.Nodes), len(sess))
	}
	for _, e := range g.Edges {
		if !ids[e.Parent] || !ids[e.Child] {
			t.Errorf("graph --run: edge %+v leaves the run", e)
		}
	}
	for _, argv := range [][]string{{"graph", "--run", "run-nope"}, {"sessions", "--run", "run-nope"}, {"wait", "run-nope"}} {
		if r := rathCLI(t, dir, argv...); r.code != ExitFailure || !strings.Contains(r.stderr, "Try: rath runs") {
			t.Errorf("%v: exit %d, no hint:\n%s", argv, r.code, r.stderr)
		}
	}
}

// A mistyped command is answered with the nearest one.
func TestRoot_NearestCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for typed, want := range map[string]string{
		"replya": "replay", "wiat": "wait", "sesions": "sessions", "aprove": "approve",
		"worekr": "worker", "verfy": "verify", "memroy": "memory", "xyzzyq": "--help",
	} {
		r := rathCLI(t, dir, typed)
		if r.code != ExitUsage || !strings.Contains(r.stderr, "Try: rath "+want+"\n") {
			t.Errorf("rath %s: exit %d, want the hint rath %s:\n%s", typed, r.code, want, r.stderr)
		}
	}
	if r := rathCLI(t, dir, "--help"); !strings.Contains(r.stdout, "  5  a run waits for a person") {
		t.Errorf("the root help lacks exit code 5:\n%s", r.stdout)
	}
}

// A PostgreSQL server that accepts and never answers: the CLI says it is
// still connecting, then fails at the DSN's connect_timeout.
func TestDSN_SlowServerShowsProgress(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn // kept open, unanswered, until the listener closes
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	dsn := "postgres://rath@" + ln.Addr().String() + "/rath?connect_timeout=3"
	r := rathWithin(t, 2*time.Minute, t.TempDir(), "--dsn", dsn, "runs")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "rath: connecting to PostgreSQL database \"rath\" at 127.0.0.1:") {
		t.Fatalf("exit %d, no progress while connecting:\n%s", r.code, r.stderr)
	}
}
