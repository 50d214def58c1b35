package cli

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sealedStore makes a store of backend ("sqlite" or "postgres") with a
// key-encryption key, and returns the environment every command of the
// test runs with and the store's flags.
func sealedStore(t *testing.T, backend string) (env, store []string) {
	t.Helper()
	kek := filepath.Join(t.TempDir(), "kek")
	env = append(bareEnv(t), "RATH_KEK_FILE="+kek)
	mustRunEnv(t, env, "keys", "kek", "--out", kek)
	store = storeFor(t, backend)
	mustRunEnv(t, env, append(store, "new", "a store with a key-encryption key")...)
	return env, store
}

// runAs runs a scripted run of the user subject whose prompt and answer
// carry canary, and returns its run id and session.
func runAs(t *testing.T, env, store []string, subject, canary string) (runID, session string) {
	t.Helper()
	cas := filepath.Join(t.TempDir(), "cassette.json")
	if err := os.WriteFile(cas, []byte(`{"scripted": true, "responses": [{"content": "The answer is `+canary+`-answer."}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustRunEnv(t, env, append(store, "run", "--subject", subject, "--cassette", cas, "--no-stream", "tell "+canary+"-prompt")...)
	return runIDOf(t, result{stdout: out}), strings.TrimSpace(lastField(out, "session: "))
}

// A console (`rath serve`, a process of its own) that read a subject's
// run keeps the subject's key and the session's chunks in memory; `rath
// erase` in another process destroys the key, and without a restart the
// console's API answers "[erased]" for the subject's session and its
// run's events, while another subject's run still reads back. On both
// stores.
func TestErase_ReachesARunningConsole(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			env, store := sealedStore(t, backend)
			aliceRun, alice := runAs(t, env, store, "alice", "canary-41c2-alice")
			_, bob := runAs(t, env, store, "bob", "canary-41c2-bob")
			base, _, _ := serveWith(t, env, store)
			get := func(path string) string { t.Helper(); return getOK(t, base+path) }
			// The console reads alice's content, caching her key and
			// her session's chunks.
			for _, path := range []string{"api/sessions/" + alice, "api/runs/" + aliceRun + "/events"} {
				if body := get(path); !strings.Contains(body, "canary-41c2-alice-answer") {
					t.Fatalf("GET %s before the erasure lacks alice's answer:\n%.2000s", path, body)
				}
			}
			mustRunEnv(t, env, append(store, "erase", "--subject", "alice", "--reason", "erasure request")...)
			session := get("api/sessions/" + alice)
			if strings.Contains(session, "canary-41c2-alice") || !strings.Contains(session, "[erased]") {
				t.Fatalf("the console's session after the erasure, want [erased] and no canary:\n%.2000s", session)
			}
			// The erased run left the read models (a rebuild could not
			// make its row again): its events are not found, or sealed.
			res, err := http.Get(base + "api/runs/" + aliceRun + "/events")
			if err != nil {
				t.Fatal(err)
			}
			evs, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if (res.StatusCode != http.StatusOK && res.StatusCode != http.StatusNotFound) || strings.Contains(string(evs), "canary-41c2-alice") {
				t.Fatalf("the console's run events after the erasure: %s\n%.2000s", res.Status, evs)
			}
			if body := get("api/sessions/" + bob); !strings.Contains(body, "canary-41c2-bob-answer") {
				t.Fatalf("bob's session after alice's erasure:\n%.2000s", body)
			}
		})
	}
}
