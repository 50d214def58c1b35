package cli

import (
	"bytes"
	"fmt"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/memory/openvikingtest"
)

// rath with the OpenViking backend configured, against the test double:
// memory add/recall/list go through the server; a run recalls (the hits
// injected and recorded with their URIs and levels) and commits its
// session there (task polled to its end); the run replays in a fresh
// process with the server stopped and an empty environment; the key is
// in neither the store file nor the export.
func TestRun_MemoryOnOpenViking(t *testing.T) {
	const key = "ov-cli-5ecret-key-4242"
	srv := openvikingtest.New(openvikingtest.Options{APIKey: key, Polls: 1})
	defer srv.Close()
	dir, home := t.TempDir(), t.TempDir()
	cfg := fmt.Sprintf(`{"providers": {}, "memory": {"backend": "openviking", "url": %q, "api_key_env": "OPENVIKING_API_KEY", "user": "ana-user", "commit_wait_ms": 30000}}`, srv.URL)
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cas := filepath.Join(t.TempDir(), "cassette.json")
	os.WriteFile(cas, []byte(memoryCassette), 0o644)
	env := []string{"RATH_HOME=" + home, "OPENVIKING_API_KEY=" + key}
	store := []string{"--dir", dir}

	id := strings.TrimSpace(rathProc(t, env, append(store, "memory", "add", "user/ana", "ana wants answers in French")...))
	if !strings.HasPrefix(id, "viking://user/ana-user/memories/rath/") || !strings.Contains(strings.Join(srv.Files("default"), " "), id) {
		t.Fatalf("add: id %q, server files %v", id, srv.Files("default"))
	}
	if out := rathProc(t, env, append(store, "memory", "recall", "user/ana", "answers in French", "--json")...); !strings.Contains(out, id) || !strings.Contains(out, `"level": 2`) {
		t.Fatalf("recall: %s", out)
	}
	if out := rathProc(t, env, append(store, "memory", "list", "user/ana")...); !strings.Contains(out, "French") {
		t.Fatalf("list: %s", out)
	}

	out := rathProc(t, env, append(store, "run", "--cassette", cas, "--memory", "user/ana", "how should I answer ana in French")...)
	if !strings.Contains(out, "Bonjour Ana") {
		t.Fatalf("run: %s", out)
	}
	rt, err := rath.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := rt.Store().Read(t.Context(), eventlog.Query{Types: []string{events.TypeMemoryRecalled, events.TypeMemoryCommitted, events.TypeChunkAppended}})
	if err != nil {
		t.Fatal(err)
	}
	var recalled *events.MemoryRecalled
	var committed *events.MemoryCommitted
	injected := false
	for _, ev := range evs {
		p, err := ev.Decode()
		if err != nil {
			t.Fatal(err)
		}
		switch e := p.(type) {
		case *events.MemoryRecalled:
			recalled = e
		case *events.MemoryCommitted:
			committed = e
		case *events.ChunkAppended:
			c := e.Chunk
			injected = injected || (c.Role == events.RoleMemory && strings.Contains(c.Content, "French") && c.Meta["memory_id"] == id)
		}
	}
	rt.Close()
	if recalled == nil || recalled.Backend != "openviking" || len(recalled.Hits) != 1 || recalled.Hits[0].URI != id || recalled.Hits[0].Level == nil || recalled.Error != "" {
		t.Fatalf("recalled = %+v", recalled)
	}
	if !injected {
		t.Error("the hit was not injected as a memory chunk")
	}
	if committed == nil || committed.Remote == nil || committed.Remote.Status != "accepted" || committed.Remote.TaskStatus != "completed" || committed.Remote.Messages != 2 || !strings.Contains(committed.Remote.Extracted, "memories_extracted") {
		t.Fatalf("committed = %+v %+v", committed, committed.Remote)
	}
	if !strings.Contains(strings.Join(srv.Files("default"), " "), committed.Remote.Archive+"/messages.jsonl") {
		t.Fatalf("no archive on the server: %v", srv.Files("default"))
	}

	runs := decodeJSON[[]runView](t, mustRun(t, dir, "runs", "--json"))
	if len(runs) != 1 {
		t.Fatalf("runs = %+v", runs)
	}
	srv.Close()
	before := srv.Requests()
	replay := execpkg.Command(os.Args[0], "--dir", dir, "replay", runs[0].ID)
	replay.Env = []string{mainEnv + "=1", "HOME=" + t.TempDir()} // no key, no config file
	var rout, rerr bytes.Buffer
	replay.Stdout, replay.Stderr = &rout, &rerr
	if err := replay.Run(); err != nil || !strings.Contains(rout.String(), "reproduced: ") {
		t.Fatalf("replay with the server stopped: %v\n%s\n%s", err, rout.String(), rerr.String())
	}
	if after := srv.Requests(); after != before {
		t.Fatalf("the replay made %d requests", after-before)
	}

	export := mustRun(t, dir, "export", runs[0].Output)
	db, err := os.ReadFile(filepath.Join(dir, rath.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(db, []byte(key)) || strings.Contains(export, key) {
		t.Fatal("the OpenViking key reached the store file or the export")
	}
}

// The OpenViking server stopped before a run: the recall and the commit
// fail with typed errors the run records, and the agent goes on; the run
// replays from that record.
func TestRun_MemoryOnOpenVikingSurvivesAServerDown(t *testing.T) {
	srv := openvikingtest.New(openvikingtest.Options{})
	srv.Close()
	dir, home := t.TempDir(), t.TempDir()
	cfg := fmt.Sprintf(`{"memory": {"backend": "openviking", "url": %q, "timeout_ms": 2000}}`, srv.URL)
	os.WriteFile(filepath.Join(home, "config.json"), []byte(cfg), 0o600)
	cas := filepath.Join(t.TempDir(), "cassette.json")
	os.WriteFile(cas, []byte(memoryCassette), 0o644)
	env := []string{"RATH_HOME=" + home}
	store := []string{"--dir", dir}
	if out := rathProc(t, env, append(store, "run", "--cassette", cas, "--memory", "user/ana", "how should I answer ana")...); !strings.Contains(out, "Bonjour Ana") {
		t.Fatalf("run: %s", out)
	}
	rt, err := rath.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := rt.Store().Read(t.Context(), eventlog.Query{Types: []string{events.TypeMemoryRecalled, events.TypeMemoryCommitted}})
	rt.Close()
	if err != nil || len(evs) != 2 {
		t.Fatalf("memory events: %d, %v", len(evs), err)
	}
	for _, ev := range evs {
		p, _ := ev.Decode()
		switch e := p.(type) {
		case *events.MemoryRecalled:
			if !strings.Contains(e.Error, "openviking: unavailable") || len(e.Hits) != 0 {
				t.Errorf("recalled = %+v", e)
			}
		case *events.MemoryCommitted:
			if e.Remote == nil || !strings.Contains(e.Remote.Error, "openviking: unavailable") {
				t.Errorf("committed = %+v", e)
			}
		}
	}
	runs := decodeJSON[[]runView](t, mustRun(t, dir, "runs", "--json"))
	if out := rathProc(t, env, append(store, "replay", runs[0].ID)...); !strings.Contains(out, "reproduced: ") {
		t.Fatalf("replay: %s", out)
	}
}
