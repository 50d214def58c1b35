package cli

import (
	"fmt"
	"strings"
	"testing"
)

// rath migrate as a user that owns its database but may not create or
// grant roles stops at migration 00018 with a message that names
// CREATEROLE and what an administrator runs instead; once the
// administrator has, the same command migrates the store.
func TestMigrate_NamesCreateRoleWhenMissing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	name := fmt.Sprintf("cli%d", pgDBs.Add(1))
	user := name + "_owner"
	for _, sql := range []string{
		fmt.Sprintf(`CREATE ROLE %s LOGIN NOCREATEROLE NOSUPERUSER`, user),
		fmt.Sprintf(`CREATE DATABASE %s OWNER %s`, name, user),
	} {
		if err := pgServer.Exec(ctx, "postgres", sql); err != nil {
			t.Fatal(err)
		}
	}
	dsn := strings.Replace(pgServer.DSN(name), "postgres@", user+"@", 1)
	dir := t.TempDir()
	r := rathExit(t, nil, "--dir", dir, "--dsn", dsn, "migrate", "up")
	if r.code == 0 || !strings.Contains(r.stderr, "00018_tenants.sql needs a migrating user with CREATEROLE") ||
		!strings.Contains(r.stderr, "GRANT rath_tenant TO") {
		t.Fatalf("migrate without CREATEROLE: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	grant := `DO $$ BEGIN
		IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'rath_tenant') THEN CREATE ROLE rath_tenant NOLOGIN NOBYPASSRLS; END IF;
	END $$; GRANT rath_tenant TO ` + user
	if err := pgServer.Exec(ctx, "postgres", grant); err != nil {
		t.Fatal(err)
	}
	if r := rathExit(t, nil, "--dir", dir, "--dsn", dsn, "migrate", "up"); r.code != 0 {
		t.Fatalf("migrate after the grant: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
