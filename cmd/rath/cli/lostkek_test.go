package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// A store written with a key-encryption key, opened without it or with
// another one, on both stores and each command a process of its own: a
// clear key-encryption key error (non-zero exit) from every command, at
// open, with none of the sealed content on stdout or stderr; with its
// key back, the store verifies and reads back whole.
func TestOpen_LostKEKIsAClearError(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			const canary = "canary-lost-kek-8e21"
			env, store := sealedStore(t, backend)
			_, sess := runAs(t, env, store, "alice", canary)
			head := decodeJSON[verifyView](t, mustRunEnv(t, env, append(store, "verify", "--json")...)).Head
			other := filepath.Join(t.TempDir(), "other-kek")
			mustRunEnv(t, env, "keys", "kek", "--out", other)
			without := bareEnv(t)
			for name, e := range map[string][]string{
				"none":    without,
				"another": append(bareEnv(t), "RATH_KEK_FILE="+other),
			} {
				for _, argv := range [][]string{{"verify"}, {"show", sess}, {"runs"}, {"export", sess}, {"new", "written in clear beside sealed content"}} {
					r := rathEnv(t, e, append(store, argv...)...)
					if r.code == 0 || !strings.Contains(r.stderr, "key-encryption key") {
						t.Errorf("%s KEK, rath %s: exit %d, want a key-encryption key error\n%s%s", name, argv[0], r.code, r.stdout, r.stderr)
					}
					if strings.Contains(r.stdout+r.stderr, canary) {
						t.Errorf("%s KEK, rath %s printed the sealed canary", name, argv[0])
					}
				}
			}
			v := decodeJSON[verifyView](t, mustRunEnv(t, env, append(store, "verify", "--json")...))
			if v.Head != head {
				t.Errorf("the refused commands changed the log: head %s, was %s", v.Head, head)
			}
			if out := mustRunEnv(t, env, append(store, "show", sess)...); !strings.Contains(out, canary) {
				t.Errorf("with its key back, show does not read the content:\n%s", out)
			}
		})
	}
}
