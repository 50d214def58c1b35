package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

const memoryCassette = `{"scripted": true, "description": "answer once", "responses": [{"content": "Bonjour Ana, en bref."}]}`

// rath run --memory: the agent recalls from each namespace before its
// turn (the hits injected and recorded), commits the session to those not
// marked :recall, and the run replays from its record.
func TestRun_MemoryFlag(t *testing.T) {
	dir := t.TempDir()
	cas := filepath.Join(t.TempDir(), "cassette.json")
	os.WriteFile(cas, []byte(memoryCassette), 0o644)
	store := []string{"--dir", dir}
	rathProc(t, nil, append(store, "memory", "add", "user/ana", "ana wants answers in French")...)
	rathProc(t, nil, append(store, "memory", "add", "team", "answers to ana stay short")...)

	out := rathProc(t, nil, append(store, "run", "--cassette", cas, "--memory", "user/ana", "--memory", "team:recall", "how should I answer ana")...)
	if !strings.Contains(out, "Bonjour Ana") {
		t.Fatalf("run: %s", out)
	}

	rt, err := rath.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	recalled := map[string]string{}
	committed := map[string]int{}
	evs, err := rt.Store().Read(t.Context(), eventlog.Query{Types: []string{events.TypeMemoryRecalled, events.TypeMemoryCommitted}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		p, err := ev.Decode()
		if err != nil {
			t.Fatal(err)
		}
		switch e := p.(type) {
		case *events.MemoryRecalled:
			for _, h := range e.Hits {
				recalled[e.Namespace] += h.Text
			}
		case *events.MemoryCommitted:
			committed[e.Namespace] += len(e.IDs)
		}
	}
	rt.Close()
	if !strings.Contains(recalled["user/ana"], "French") || !strings.Contains(recalled["team"], "short") {
		t.Errorf("recalled = %v, want a hit from each namespace", recalled)
	}
	if committed["user/ana"] != 2 || committed["team"] != 0 {
		t.Errorf("committed = %v, want the question and the answer in user/ana only", committed)
	}
	if list := rathProc(t, nil, append(store, "memory", "list", "user/ana")...); !strings.Contains(list, "Bonjour Ana") {
		t.Errorf("memory list after the commit: %s", list)
	}

	runs := decodeJSON[[]runView](t, mustRun(t, dir, "runs", "--json"))
	if len(runs) != 1 {
		t.Fatalf("runs = %+v", runs)
	}
	// The index no longer holds what was recalled: the replay answers
	// from the record, not from the index.
	os.RemoveAll(filepath.Join(dir, rath.MemoryDir))
	rathProc(t, nil, append(store, "memory", "add", "user/ana", "ana now wants answers in German")...)
	if out := rathProc(t, nil, append(store, "replay", runs[0].ID)...); !strings.Contains(out, "reproduced: ") {
		t.Fatalf("replay: %s", out)
	}
}

func TestRun_MemoryFlagRejectsBadNamespaces(t *testing.T) {
	dir := t.TempDir()
	for _, bad := range []string{"", " user/ana", ":recall", "a\nb"} {
		r := rathCLI(t, dir, "run", "--cassette", "x.json", "--memory", bad, "hi")
		if r.code != ExitUsage || !strings.Contains(r.stderr, "--memory") {
			t.Errorf("--memory %q: exit %d, stderr %s", bad, r.code, r.stderr)
		}
	}
	if r := rathCLI(t, dir, "submit", "--memory", "x", "--memory", "x:recall", "hi"); r.code != ExitUsage {
		t.Errorf("a namespace twice: exit %d, stderr %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, rath.DBFile)); err == nil {
		t.Error("a bad --memory created the store")
	}
}
