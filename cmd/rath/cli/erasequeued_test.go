package cli

import (
	"strings"
	"testing"

	"github.com/gorath/rath"
)

// A run still queued when its subject is erased cannot run (its prompt
// and params went with the key) and does not vanish with its read-model
// row either: on both stores, with no worker up, rath erase records it as
// failed, rath wait says so with the reason, a worker started afterwards
// leaves it alone, and the store verifies and rebuilds. A run of the
// subject submitted after the erasure is under its new key and runs.
func TestErase_QueuedRunEndsFailed(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			env, store := sealedStore(t, backend)
			rathIn := func(argv ...string) result {
				t.Helper()
				return rathEnv(t, env, append(append([]string(nil), store...), argv...)...)
			}
			submit := func() string {
				t.Helper()
				argv, _ := chaosRunArgs(t, "alice", "canary-queued-3c9d")
				r := rathIn(append([]string{"submit"}, argv...)...)
				if r.code != 0 {
					t.Fatalf("submit: exit %d\n%s", r.code, r.stderr)
				}
				return strings.TrimSpace(r.stdout)
			}
			queued := submit()
			if r := rathIn("erase", "--subject", "alice", "--reason", "erasure request"); r.code != 0 {
				t.Fatalf("erase: exit %d\n%s", r.code, r.stderr)
			}
			later := submit()
			startChaosWorker(t, env, store)
			r := rathIn("wait", "--timeout", "1m", queued)
			if r.code != ExitFailure || !strings.Contains(r.stdout, queued+"\tfailed") || !strings.Contains(r.stderr, rath.ErasedBeforeStart) {
				t.Fatalf("wait for the queued run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if r := rathIn("wait", "--timeout", "1m", later); r.code != 0 || !strings.Contains(r.stdout, later+"\tdone") {
				t.Fatalf("wait for the run submitted after the erasure: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if r := rathIn("verify"); r.code != 0 {
				t.Fatalf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if r := rathIn("rebuild", "--check"); r.code != 0 {
				t.Fatalf("rebuild --check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}
