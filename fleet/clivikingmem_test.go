package fleet_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/memory/openvikingtest"
)

// rathRun runs the rath binary with env added to the test's and returns
// its stdout; a failure ends the test.
func rathRun(t *testing.T, env []string, argv ...string) string {
	t.Helper()
	cmd := exec.Command(rathBinary(t), argv...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("rath %s: %v\nstdout: %s\nstderr: %s", strings.Join(argv, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// `rath submit --memory NS` worked by `rath worker`, with the OpenViking
// backend configured (the test double): the worker recalls from the
// server before the agent's turn (the hit injected and recorded with its
// URI and level), commits the session there (the task polled to its end),
// and the run replays in a fresh process with the server stopped and
// neither the key nor the config: no request. The key reaches neither
// the store file nor the worker's output.
func TestWorkerCLI_MemoryOnOpenViking(t *testing.T) {
	t.Parallel()
	const key = "ov-fleet-5ecret-key-9191"
	srv := openvikingtest.New(openvikingtest.Options{APIKey: key, Polls: 1})
	defer srv.Close()
	dir, home := t.TempDir(), t.TempDir()
	cfg := fmt.Sprintf(`{"providers": {}, "memory": {"backend": "openviking", "url": %q, "api_key_env": "OPENVIKING_API_KEY", "user": "ana-user", "commit_wait_ms": 30000}}`, srv.URL)
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cas := filepath.Join(t.TempDir(), "cassette.json")
	os.WriteFile(cas, []byte(`{"scripted": true, "responses": [{"content": "Bonjour Ana, en bref."}]}`), 0o644)
	env := []string{"RATH_HOME=" + home, "OPENVIKING_API_KEY=" + key}

	id := strings.TrimSpace(rathRun(t, env, "--dir", dir, "memory", "add", "user/ana", "ana wants answers in French"))
	if !strings.HasPrefix(id, "viking://user/ana-user/memories/rath/") {
		t.Fatalf("add: id %q", id)
	}
	run := strings.TrimSpace(rathRun(t, env, "--dir", dir, "submit", "--cassette", cas, "--memory", "user/ana", "how should I answer ana in French"))
	_, _, log := startRathWorkerEnv(t, dir, env)
	rathRun(t, env, "--dir", dir, "wait", "--timeout", "3m", run)

	rt, err := rath.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := rt.Store().Read(t.Context(), eventlog.Query{Types: []string{events.TypeMemoryRecalled, events.TypeMemoryCommitted, events.TypeChunkAppended}})
	rt.Close()
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
	if recalled == nil || recalled.Backend != "openviking" || len(recalled.Hits) != 1 || recalled.Hits[0].URI != id || recalled.Hits[0].Level == nil || recalled.Error != "" {
		t.Fatalf("recalled = %+v\n%s", recalled, log)
	}
	if !injected {
		t.Error("the hit was not injected as a memory chunk")
	}
	if committed == nil || committed.Remote == nil || committed.Remote.Status != "accepted" || committed.Remote.TaskStatus != "completed" || committed.Remote.Messages != 2 {
		t.Fatalf("committed = %+v\n%s", committed, log)
	}
	if !strings.Contains(strings.Join(srv.Files("default"), " "), committed.Remote.Archive+"/messages.jsonl") {
		t.Fatalf("no archive on the server: %v", srv.Files("default"))
	}

	srv.Close()
	before := srv.Requests()
	replay := exec.Command(rathBinary(t), "--dir", dir, "replay", run)
	replay.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")} // no key, no config file
	out, err := replay.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "reproduced: ") {
		t.Fatalf("replay with the server stopped: %v\n%s", err, out)
	}
	if after := srv.Requests(); after != before {
		t.Fatalf("the replay made %d requests", after-before)
	}
	db, err := os.ReadFile(filepath.Join(dir, rath.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(db, []byte(key)) || strings.Contains(log.String(), key) {
		t.Fatal("the OpenViking key reached the store file or the worker's output")
	}
}
