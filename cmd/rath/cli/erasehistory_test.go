package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath/bundle"
	"github.com/gorath/rath/replay"
)

// A subject whose sessions were forked and merged by others, one of whose
// runs was retained and one of whose events was redacted, is erased; each
// command a process of its own, on both stores. Then verify passes and
// lists the erasure, rebuild --check and rebuild pass (the forks and the
// merge rebuild from the shapes the erasure kept), a replay of the
// subject's run names the answers it could not check (exit 6, as for a
// redaction) while another subject's run reproduces, and a bundle made
// before the erasure and one made after both verify.
func TestErase_AfterForksMergesRetentionAndRedaction(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			env, store := sealedStore(t, backend)
			keys := filepath.Join(t.TempDir(), "keys")
			mustRunEnv(t, env, "keys", "generate", "--out", keys)
			env = append(env, "RATH_SIGNING_KEY="+filepath.Join(keys, "signer.key"))
			rath := func(argv ...string) result { t.Helper(); return rathEnv(t, env, append(store, argv...)...) }
			must := func(argv ...string) string { t.Helper(); return mustRunEnv(t, env, append(store, argv...)...) }

			oldRun, _ := runAs(t, env, store, "alice", "canary-93be-old")
			cas := canaryCassette(t, "canary-93be")
			out := must("run", "--subject", "alice", "--cassette", cas, "--workspace", t.TempDir(), "--backend", "local", "--tools", "all", "--no-stream", "tell canary-93be")
			aliceRun, alice := runIDOf(t, result{stdout: out}), strings.TrimSpace(lastField(out, "session: "))
			bobRun, bob := runAs(t, env, store, "bob", "canary-93be-bob")
			must("fork", alice)
			must("merge", alice, bob)
			before := filepath.Join(t.TempDir(), "before")
			must("export", aliceRun, "--bundle", before)
			// The tool's output is redacted; the oldest run is retained.
			var toolSeq string
			for _, line := range strings.Split(must("events", "--run", aliceRun), "\n") {
				if strings.Contains(line, " tool.returned ") {
					toolSeq = strings.Fields(line)[0]
				}
			}
			if toolSeq == "" {
				t.Fatal("no tool.returned in the run")
			}
			must("redact", "--event", toolSeq, "--reason", "tool output")
			time.Sleep(1100 * time.Millisecond) // retain counts whole seconds
			if r := must("retain", "--completed-before", "1s", "--keep-last", "2"); !strings.Contains(r, "retained "+oldRun) {
				t.Fatalf("retain did not take %s:\n%s", oldRun, r)
			}

			must("erase", "--subject", "alice", "--reason", "erasure request")

			if v := rath("verify"); v.code != 0 || !strings.Contains(v.stdout, "erased          user:alice") {
				t.Fatalf("verify after the erasure: exit %d\n%s%s", v.code, v.stdout, v.stderr)
			}
			must("rebuild", "--check")
			must("rebuild")
			r := rath("replay", "--json", aliceRun)
			rep := decodeJSON[replay.Report](t, r.stdout)
			if r.code != ExitUnchecked || len(rep.Erased) == 0 || rep.Erased[0].Type != "provider.called" {
				t.Fatalf("replay of the erased run: exit %d, want %d naming the erased answers\n%s%s", r.code, ExitUnchecked, r.stdout, r.stderr)
			}
			if r := rath("replay", aliceRun); !strings.Contains(r.stdout, "could not be checked (seq ") {
				t.Fatalf("replay of the erased run does not name the answers:\n%s", r.stdout)
			}
			if r := rath("replay", bobRun); r.code != 0 || !strings.Contains(r.stdout, "reproduced: ") {
				t.Fatalf("replay of bob's run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if show := must("show", bob); !strings.Contains(show, "canary-93be-bob") {
				t.Fatalf("bob's session after alice's erasure:\n%s", show)
			}
			after := filepath.Join(t.TempDir(), "after")
			must("export", bobRun, "--bundle", after)
			for _, dir := range []string{before, after} {
				if _, err := bundle.Open(dir, ""); err != nil {
					t.Errorf("the bundle %s does not verify after the erasure: %v", filepath.Base(dir), err)
				}
				b, _ := os.ReadFile(filepath.Join(dir, "events.jsonl"))
				if dir == after && strings.Contains(string(b), "canary-93be\"") {
					t.Errorf("the bundle made after the erasure holds alice's canary")
				}
			}
		})
	}
}
