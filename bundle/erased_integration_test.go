//go:build integration

package bundle_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gorath/rath/bundle"
	"github.com/gorath/rath/signkey"
)

// The bundle of a run whose subject was erased, on both stores, through
// the CLI: one exported before `rath erase` and one after both pass the
// three verifiers of cmd/rathverify with the log's key pinned. The one
// made after ships the payloads as the log keeps them, ciphertext under
// the destroyed key, and says so: every seq is listed as erased, the
// status is "erased" and the replay verdict names the answers it could
// not check. Neither holds the run's canary.
func TestBundle_ErasedRunVerifies(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			const canary = "canary-erased-bundle-5b3e"
			kek := filepath.Join(dir, "kek")
			keys, err := signkey.Generate(filepath.Join(dir, "keys"), "rath.test/log")
			if err != nil {
				t.Fatal(err)
			}
			env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "RATH_HOME=" + t.TempDir(),
				"RATH_DIR=" + filepath.Join(dir, "store"), "RATH_KEK_FILE=" + kek, "RATH_SIGNING_KEY=" + keys.Signer}
			if store == "postgres" {
				dsn, err := pg.CreateDatabase(context.Background(), "bundleerased")
				if err != nil {
					t.Fatal(err)
				}
				env = append(env, "RATH_DSN="+dsn)
			}
			runRath(t, dir, env, "keys", "kek", "--out", kek)
			cas := filepath.Join(dir, "cassette.json")
			body := `{"scripted": true, "responses": [
  {"tool_calls": [{"id": "c1", "name": "run_shell_command", "arguments": {"cmd": "echo ` + canary + `-tool"}}]},
  {"content": "The answer is ` + canary + `-answer."}]}`
			if err := os.WriteFile(cas, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			out := runRath(t, dir, env, "run", "--subject", "alice", "--cassette", cas, "--workspace", t.TempDir(),
				"--tools", "run_shell_command", "--no-stream", "say "+canary)
			_, run, ok := strings.Cut(out, "run: ")
			if !ok {
				t.Fatalf("no run id in %q", out)
			}
			run = strings.Fields(run)[0]
			before, after := filepath.Join(t.TempDir(), "before"), filepath.Join(t.TempDir(), "after")
			runRath(t, dir, env, "export", run, "--bundle", before)
			runRath(t, dir, env, "erase", "--subject", "alice", "--reason", "erasure request")
			runRath(t, dir, env, "export", run, "--bundle", after)
			cs := checks(auditorEnv(t))
			for _, b := range []string{before, after} {
				for _, c := range cs {
					if ok, msg := c.run(b, pins{log: keys.Verifier}); !ok || !strings.Contains(msg, "ok: ") {
						t.Errorf("%s on the bundle %s: ok=%v\n%s", c.name, filepath.Base(b), ok, msg)
					}
				}
				if n := treeCount(t, b, canary); n != 0 {
					t.Errorf("the bundle %s holds the canary %d times", filepath.Base(b), n)
				}
			}
			vkey, err := os.ReadFile(keys.Verifier)
			if err != nil {
				t.Fatal(err)
			}
			at, err := bundle.Open(before, strings.TrimSpace(string(vkey)))
			if err != nil {
				t.Fatal(err)
			}
			if p := at.Predicate; p.Status != "ok" || len(p.Erased) != 0 || !slices.Contains(p.Tools, "run_shell_command") {
				t.Errorf("the bundle made before the erasure: status %q, erased %v, tools %v", p.Status, p.Erased, p.Tools)
			}
			if at, err = bundle.Open(after, strings.TrimSpace(string(vkey))); err != nil {
				t.Fatal(err)
			}
			p := at.Predicate
			if p.Status != "erased" || len(p.Erased) != p.Events || !strings.Contains(p.Replay.Verdict, "subject was erased") {
				t.Errorf("the bundle made after the erasure: status %q, erased %v of %d events, verdict %q", p.Status, p.Erased, p.Events, p.Replay.Verdict)
			}
		})
	}
}

// treeCount counts needle in every file under root.
func treeCount(t *testing.T, root, needle string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		n += strings.Count(string(b), needle)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
