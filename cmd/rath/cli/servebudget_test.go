package cli

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/projections"
)

// rath serve --auth tokens --tenant-conns 1 on PostgreSQL: three tenants'
// viewers list their runs at once, each request answered (a request
// waits for the one connection), and the server holds no more than one
// tenant connection open; 0 is a usage error.
func TestServe_TenantConnsBoundTheTenantsPools(t *testing.T) {
	t.Parallel()
	if r := rathCLI(t, t.TempDir(), "serve", "--tenant-conns", "0"); r.code != 2 || !strings.Contains(r.stderr, "--tenant-conns") {
		t.Fatalf("--tenant-conns 0: exit %d: %s", r.code, r.stderr)
	}
	st := newTokensStore(t, "postgres")
	tenants := []string{"acme", "globex", "initech"}
	toks := map[string]string{}
	for _, tenant := range tenants {
		st.waitingRun(tenant)
		toks[tenant] = st.token("--tenant", tenant, "--role", "viewer").Secret
	}
	st.serve("--tenant-conns", "1")
	db, err := eventlog.OpenPostgresReadPool(st.store[slices.Index(st.store, "--dsn")+1])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	open := func() int {
		t.Helper()
		var n int
		if err := db.QueryRow(`SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`,
			projections.TenantPoolApp).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var wg sync.WaitGroup
	errs := make(chan string, 30)
	for i := range 30 {
		wg.Go(func() {
			tenant := tenants[i%3]
			if code, body := st.do("GET", "/api/runs?limit=50", toks[tenant], ""); code != http.StatusOK {
				errs <- tenant + ": " + body
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	// Three tenants' pools, each keeping idle connections, would hold
	// three; a closed connection's backend leaves pg_stat_activity
	// shortly after the client hangs up.
	deadline := time.Now().Add(10 * time.Second)
	for n := open(); n > 1; n = open() {
		if time.Now().After(deadline) {
			t.Fatalf("%d tenant connections open with --tenant-conns 1", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
