package cli

import (
	"strings"
	"testing"
	"time"
)

// rath tokens create prints a token once and stores its hash; list shows
// its tenant, role and status but never the secret; revoke is once; bad
// flags are usage errors. Each command is a process of its own, on both
// stores.
func TestTokens_CreateListRevoke(t *testing.T) {
	t.Parallel()
	_, dsn := newDatabase(t)
	for _, store := range []struct {
		name string
		flag []string
	}{{"sqlite", nil}, {"postgres", []string{"--dsn", dsn}}} {
		t.Run(store.name, func(t *testing.T) {
			dir := t.TempDir()
			mustRun(t, dir, append(store.flag, "new", "hello")...)
			run := func(argv ...string) result {
				return rathExit(t, nil, append(append([]string{"--dir", dir}, store.flag...), argv...)...)
			}
			r := run("tokens", "create", "--tenant", "acme", "--role", "approver", "--expires", "30d")
			secret := strings.TrimSpace(r.stdout)
			if r.code != 0 || !strings.HasPrefix(secret, "rath_") || strings.Count(r.stdout, "\n") != 1 || !strings.Contains(r.stderr, "shown only now") {
				t.Fatalf("create: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			created := decodeJSON[tokenCreated](t, run("tokens", "create", "--role", "viewer", "--json").stdout)
			if created.Tenant != "default" || created.Role != "viewer" || !strings.HasPrefix(created.Secret, "rath_") || !created.ExpiresAt.IsZero() {
				t.Fatalf("create --json: %+v", created)
			}
			list := run("tokens", "list", "--json")
			vs := decodeJSON[[]tokenView](t, list.stdout)
			if len(vs) != 2 || vs[0].Tenant != "acme" || vs[0].Role != "approver" || vs[0].Status != "active" ||
				vs[0].ExpiresAt.Before(time.Now().Add(29*24*time.Hour)) || !strings.HasPrefix(vs[0].CreatedBy, "os:") {
				t.Fatalf("list: %+v", vs)
			}
			for _, out := range []string{list.stdout, run("tokens", "list").stdout, run("events", "--json").stdout} {
				if strings.Contains(out, strings.TrimPrefix(secret, "rath_")) || strings.Contains(out, strings.TrimPrefix(created.Secret, "rath_")) {
					t.Fatalf("a secret is shown again:\n%s", out)
				}
			}
			if r := run("tokens", "revoke", vs[0].ID); r.code != 0 || !strings.Contains(r.stdout, "revoked "+vs[0].ID) {
				t.Fatalf("revoke: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if r := run("tokens", "revoke", vs[0].ID); r.code != ExitFailure || !strings.Contains(r.stderr, "was revoked at") {
				t.Fatalf("second revoke: exit %d\n%s", r.code, r.stderr)
			}
			if r := run("tokens", "list"); r.code != 0 || !strings.Contains(r.stdout, vs[0].ID) || !strings.Contains(r.stdout, "revoked") {
				t.Fatalf("list after revoke: exit %d\n%s", r.code, r.stdout)
			}
			for _, bad := range [][]string{
				{"tokens", "create", "--role", "root"},
				{"tokens", "create"},
				{"tokens", "create", "--role", "viewer", "--expires", "-5h"},
				{"tokens", "revoke"},
			} {
				if r := run(bad...); r.code != ExitUsage {
					t.Errorf("%v: exit %d, want %d\n%s", bad, r.code, ExitUsage, r.stderr)
				}
			}
			if r := run("tokens", "revoke", "tok-nosuch"); r.code != ExitFailure || !strings.Contains(r.stderr, "no token tok-nosuch") {
				t.Fatalf("revoke unknown: exit %d\n%s", r.code, r.stderr)
			}
		})
	}
}
