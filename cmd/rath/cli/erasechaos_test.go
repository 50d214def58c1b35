package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/keyring"
)

// eraseChaosSize is how much the erasure chaos does: subjects (every
// other one is erased), runs submitted per subject and executed by the
// workers, and runs per subject run inline by an appender process.
type eraseChaosSize struct {
	subjects, submitted, inline int
	// window is how long after its first run is submitted each erased
	// subject may be erased, at a random moment.
	window time.Duration
}

// Subjects are erased while their runs go, on both stores, every step a
// process of its own as users drive it: runs of several subjects are
// submitted (rath submit --subject) and executed by two rath worker
// processes, an appender process runs more of them inline (rath run
// --subject), and rath erase --subject destroys the keys of half the
// subjects at random moments meanwhile. Afterwards no run is lost or run
// twice (each run has one run.finished and its tool's effect, a line
// appended outside the log, is there once), rath verify passes and
// lists every erasure, rath rebuild --check passes, and no subject's
// canary is in the database's files. What was written before a
// subject's last erasure reads as erased (the library's reader, and
// rath show of runs that ended before it); what a run wrote after it,
// under the subject's new key, reads back, never lost under the
// destroyed key; other subjects read back in full.
func TestErase_ChaosWithWorkersAndAppenders(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			eraseChaos(t, backend, eraseChaosRuns)
		})
	}
}

// chaosRun is one run of the chaos and what it was given.
type chaosRun struct {
	id, session, subject, workspace string
}

func eraseChaos(t *testing.T, backend string, size eraseChaosSize) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	env, store := sealedStore(t, backend)
	canary := func(subject string) string { return "canary-chaos-" + backend + "-" + subject + "-7d1f" }
	runArgs := func(subject string) ([]string, string) { return chaosRunArgs(t, subject, canary(subject)) }
	subjects := make([]string, size.subjects)
	for i := range subjects {
		subjects[i] = fmt.Sprintf("s%d", i)
	}
	erasedSubject := func(s string) bool { return s[len(s)-1]%2 == 0 }

	var mu sync.Mutex // protects runs, erasures and failures
	var runs []chaosRun
	erasures := 0
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	firstSubmitted := map[string]chan struct{}{}
	for _, s := range subjects {
		firstSubmitted[s] = make(chan struct{})
	}

	var workers []*syncBuffer
	for range 2 {
		workers = append(workers, startChaosWorker(t, env, store))
	}
	var wg sync.WaitGroup
	// The submitter: every subject's runs, round robin.
	wg.Go(func() {
		for i := range size.submitted {
			for _, s := range subjects {
				argv, ws := runArgs(s)
				r := rathEnv(t, env, append(append(append([]string(nil), store...), "submit", "--json"), argv...)...)
				if r.code != 0 {
					fail("submit for %s: exit %d\n%s", s, r.code, r.stderr)
					continue
				}
				var sub struct {
					Run          string `json:"run"`
					InputSession string `json:"input_session"`
				}
				if err := json.Unmarshal([]byte(r.stdout), &sub); err != nil {
					fail("submit for %s printed %q: %v", s, r.stdout, err)
					continue
				}
				mu.Lock()
				runs = append(runs, chaosRun{id: sub.Run, session: sub.InputSession, subject: s, workspace: ws})
				mu.Unlock()
				if i == 0 {
					close(firstSubmitted[s])
				}
			}
		}
	})
	// The appender: runs inline, in processes of their own.
	wg.Go(func() {
		for range size.inline {
			for _, s := range subjects {
				argv, ws := runArgs(s)
				r := rathEnv(t, env, append(append(append([]string(nil), store...), "run"), argv...)...)
				if r.code != 0 {
					fail("run for %s: exit %d\n%s", s, r.code, r.stderr)
					continue
				}
				m := runLine.FindStringSubmatch(r.stdout)
				if m == nil {
					fail("run for %s printed no run id:\n%s", s, r.stdout)
					continue
				}
				mu.Lock()
				runs = append(runs, chaosRun{id: m[1], session: strings.TrimSpace(lastField(r.stdout, "session: ")), subject: s, workspace: ws})
				mu.Unlock()
			}
		}
	})
	// The erasers: each erased subject once, at a random moment after its
	// first run was submitted. (A second erasure of a subject one of whose
	// runs went on after the first leaves that run's later usage in the
	// read models: docs/STATUS.md.)
	for _, s := range subjects {
		if !erasedSubject(s) {
			continue
		}
		delays := []time.Duration{time.Duration(rng.Int64N(int64(size.window)))}
		wg.Go(func() {
			<-firstSubmitted[s]
			for i, d := range delays {
				time.Sleep(d)
				r := rathEnv(t, env, append(append([]string(nil), store...), "erase", "--subject", s, "--reason", fmt.Sprintf("chaos %d", i), "--as", "dpo")...)
				switch {
				case r.code == 0:
					mu.Lock()
					erasures++
					mu.Unlock()
				case i > 0 && strings.Contains(r.stderr, "already erased"):
					// no content since the first: nothing to erase
				default:
					fail("erase %s: exit %d\n%s", s, r.code, r.stderr)
				}
			}
		})
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d steps failed; the first:\n%s", len(failures), failures[0])
	}

	rt := chaosRuntime(t, env, store)
	ctx := t.Context()
	// Every run ends: the workers finish what was submitted.
	deadline := time.Now().Add(2 * time.Minute)
	finished := map[string][]events.Event{}
	for _, r := range runs {
		for {
			evs, err := rt.Store().ReadRun(ctx, r.id)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, ev := range evs {
				if ev.Stream == r.id && ev.Type == events.TypeRunFinished {
					n++
				}
			}
			if n > 1 {
				t.Fatalf("run %s finished %d times", r.id, n)
			}
			if n == 1 {
				finished[r.id] = evs
				break
			}
			if time.Now().After(deadline) {
				var got []string
				for _, ev := range evs {
					got = append(got, fmt.Sprintf("%d %s redacted=%v", ev.Seq, ev.Type, ev.Redacted))
				}
				for i, w := range workers {
					t.Logf("worker %d said:\n%s", i, w.String())
				}
				t.Fatalf("run %s of %s did not finish; its events:\n%s", r.id, r.subject, strings.Join(got, "\n"))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// Where each subject was last erased.
	last := map[string]int64{}
	all, err := rt.Erasures(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		last[strings.TrimPrefix(e.Subject, keyring.LevelUser+":")] = e.Seq
	}
	if len(all) != erasures {
		t.Fatalf("%d erasures succeeded, the log records %d", erasures, len(all))
	}
	for _, s := range subjects {
		if erasedSubject(s) && last[s] == 0 {
			t.Fatalf("subject %s was never erased", s)
		}
	}

	straddled, unstarted := 0, 0
	for _, r := range runs {
		evs := finished[r.id]
		cutoff := last[r.subject] // 0: never erased
		ended := evs[len(evs)-1].Seq
		var status string
		if p, err := evs[len(evs)-1].Decode(); err == nil {
			if f, ok := p.(*events.RunFinished); ok {
				status = f.Status + " " + f.Error
			}
		}
		// Erased while queued: it ended failed, in a record that names
		// no one (under the run's own key), and never ran.
		queued := strings.Contains(status, rath.ErasedBeforeStart)
		if queued {
			unstarted++
		}
		for _, ev := range evs {
			if ev.Type == events.TypeRunLeased || ev.Type == events.TypeRunResumed {
				continue // in clear: no one's content
			}
			if queued && ev.Stream == r.id && (ev.Type == events.TypeRunStarted || ev.Type == events.TypeRunFinished) {
				continue
			}
			erased := string(ev.Payload) == events.ErasedMarker
			before := ev.Seq < cutoff
			switch {
			case before && !erased:
				t.Errorf("run %s of %s: seq %d (%s), written before the erasure at seq %d, reads back", r.id, r.subject, ev.Seq, ev.Type, cutoff)
			case !before && ev.Redacted:
				t.Errorf("run %s of %s: seq %d (%s), written after the last erasure (seq %d), is lost: %s", r.id, r.subject, ev.Seq, ev.Type, cutoff, ev.Payload)
			}
			if before && strings.Contains(string(ev.Payload), canary(r.subject)) {
				t.Errorf("run %s: seq %d holds the erased canary", r.id, ev.Seq)
			}
		}
		if cutoff > evs[0].Seq && cutoff < ended {
			straddled++
		}
		// The tool ran once, unless the run ended without reaching it.
		b, _ := os.ReadFile(filepath.Join(r.workspace, "effects"))
		ran := strings.Count(string(b), "ran")
		switch {
		case ran > 1 || (queued && ran > 0):
			t.Errorf("run %s of %s ran its tool %d times (finished %q)", r.id, r.subject, ran, status)
		case ran == 0 && !queued && (cutoff == 0 || cutoff > ended):
			t.Errorf("run %s of %s, never erased while it ran, did not run its tool (finished %q)", r.id, r.subject, status)
		}
		// What the CLI shows of the run's input session.
		if cutoff == 0 || cutoff > ended {
			show := rathEnv(t, env, append(append([]string(nil), store...), "show", r.session)...)
			has := strings.Contains(show.stdout, canary(r.subject)+"-answer")
			if cutoff == 0 && (show.code != 0 || !has) {
				t.Errorf("rath show %s of %s, never erased: exit %d, the answer read back %v\n%s", r.session, r.subject, show.code, has, show.stderr)
			}
			if cutoff > ended && (strings.Contains(show.stdout+show.stderr, canary(r.subject)) || (show.code == 0 && !strings.Contains(show.stdout, "[erased]"))) {
				t.Errorf("rath show %s of %s, erased after the run: exit %d\n%s%s", r.session, r.subject, show.code, show.stdout, show.stderr)
			}
		}
	}
	t.Logf("%d runs, %d erasures, %d runs erased while they ran, %d while they were queued", len(runs), erasures, straddled, unstarted)

	v := rathEnv(t, env, append(append([]string(nil), store...), "verify")...)
	if v.code != 0 || strings.Count(v.stdout, ": erased at seq ") != erasures {
		t.Errorf("verify: exit %d, want %d erasures listed\n%s%s", v.code, erasures, v.stdout, v.stderr)
	}
	if r := rathEnv(t, env, append(append([]string(nil), store...), "rebuild", "--check")...); r.code != 0 {
		t.Errorf("rebuild --check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	files := chaosStoreFiles(t, store)
	for _, s := range subjects {
		if n := files(canary(s)); n != 0 {
			t.Errorf("the canary of %s is %d times in the database's files", s, n)
		}
	}
}

// startChaosWorker starts a rath worker process on the store and waits
// until it says it is up; it is stopped with SIGTERM at the end.
func startChaosWorker(t *testing.T, env, store []string) *syncBuffer {
	t.Helper()
	cmd := execpkg.Command(stockRath(t), append(append([]string(nil), store...), "worker", "--backends", "local", "--lease", "5s")...)
	cmd.Env = env
	errb := &syncBuffer{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(errb.String(), "worker "); {
		if time.Now().After(deadline) {
			t.Fatalf("rath worker did not start:\n%s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errb
}

// chaosRuntime opens the store in this process, with the key-encryption
// key env names, as a library reader.
func chaosRuntime(t *testing.T, env, store []string) *rath.Runtime {
	t.Helper()
	var kekPath string
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "RATH_KEK_FILE="); ok {
			kekPath = v
		}
	}
	kek, err := keyring.LoadKEKFile(kekPath)
	if err != nil {
		t.Fatal(err)
	}
	opts := rath.Options{Dir: store[1], KEK: kek}
	if len(store) > 3 {
		opts.DSN = store[3]
	}
	rt, err := rath.OpenWith(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// chaosStoreFiles returns a counter of a needle in the database's files:
// SQLite's rath.db*, or the PostgreSQL cluster's data directory (pg_wal
// too) after a CHECKPOINT.
func chaosStoreFiles(t *testing.T, store []string) func(string) int {
	t.Helper()
	if len(store) <= 3 {
		all := strings.Join(dbFiles(t, store[1]), "")
		return func(needle string) int { return strings.Count(all, needle) }
	}
	db, err := sql.Open("pgx", store[3])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CHECKPOINT`); err != nil {
		t.Fatal(err)
	}
	return func(needle string) int { return treeHits(t, pgServer.DataDir(), needle) }
}

// chaosRunArgs are the flags of a run of subject whose prompt, tool
// output and answer carry canary, and whose tool appends a line to
// effects in its own workspace, returned too: a count of executions
// outside the log. A worker keeps one position per cassette file: one
// each. It may be called from any goroutine.
func chaosRunArgs(t *testing.T, subject, canary string) ([]string, string) {
	cas := filepath.Join(t.TempDir(), "cassette.json")
	body := `{"scripted": true, "responses": [
  {"tool_calls": [{"id": "c1", "name": "run_shell_command", "arguments": {"cmd": "echo ` + canary + `-tool; echo ran >> effects"}}]},
  {"content": "The answer is ` + canary + `-answer."}]}`
	if err := os.WriteFile(cas, []byte(body), 0o644); err != nil {
		t.Error(err) // the run then fails, and says so
	}
	ws := t.TempDir()
	return []string{"--subject", subject, "--cassette", cas, "--workspace", ws, "--backend", "local", "--tools", "run_shell_command", "--no-stream", "tell " + canary + "-prompt"}, ws
}
