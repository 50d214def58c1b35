package cli

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/gorath/rath/access"
)

// rath serve --auth tokens, a process of its own on PostgreSQL, with
// three tenants' viewer, approver and operator tokens and random
// requests naming every tenant's runs and requests: an answer holds no
// id of another tenant's, a write naming another tenant's record is 404
// and changes nothing, an operator's submission is a run of its tenant,
// and the log holds exactly one access.viewed per content read served
// (the runs list shows none: no prompt).
func TestServe_TenantsRandomRequests(t *testing.T) {
	t.Parallel()
	st := newTokensStore(t, "postgres")
	rath, do := st.rath, st.do
	tenants := []string{"acme", "globex", "initech"}
	roles := []access.Role{access.Viewer, access.Approver, access.Operator}
	owner := map[string]string{} // run or request id: its tenant
	runs, reqs, toks := map[string]string{}, map[string]string{}, map[string]map[access.Role]string{}
	for _, tenant := range tenants {
		runs[tenant], reqs[tenant] = st.waitingRun(tenant)
		owner[runs[tenant]], owner[reqs[tenant]] = tenant, tenant
		toks[tenant] = map[access.Role]string{}
		for _, role := range roles {
			toks[tenant][role] = st.token("--tenant", tenant, "--role", string(role)).Secret
		}
	}
	st.serve()

	// Each operator submits a run: it is its tenant's, another's 404.
	for i, tenant := range tenants {
		code, body := do("POST", "/api/runs", toks[tenant][access.Operator], `{"prompt": "hello"}`)
		var sub []struct{ Run string }
		if code != http.StatusCreated || json.Unmarshal([]byte(body), &sub) != nil || len(sub) != 1 {
			t.Fatalf("%s's operator submits: %d %s", tenant, code, body)
		}
		if code, body := do("GET", "/api/runs/"+sub[0].Run, toks[tenant][access.Viewer], ""); code != http.StatusOK {
			t.Fatalf("%s's submitted run, read by its viewer: %d %s", tenant, code, body)
		}
		other := tenants[(i+1)%len(tenants)]
		if code, body := do("GET", "/api/runs/"+sub[0].Run, toks[other][access.Viewer], ""); code != http.StatusNotFound {
			t.Fatalf("%s's submitted run, read by %s's viewer: %d %s", tenant, other, code, body)
		}
		owner[sub[0].Run] = tenant
	}
	if code, body := do("POST", "/api/runs", toks["acme"][access.Viewer], `{"prompt": "hello"}`); code != http.StatusForbidden {
		t.Fatalf("a viewer submits: %d %s", code, body)
	}

	rng := rand.New(rand.NewPCG(51, 6))
	reads, crossWrites := 0, 0
	for i := range serveRequests {
		tenant, other := tenants[rng.IntN(3)], tenants[rng.IntN(3)]
		role := roles[rng.IntN(3)]
		run, req := runs[other], reqs[other]
		var method, path, body, target string
		content := false
		switch rng.IntN(6) {
		case 0:
			method, path = "GET", "/api/runs?limit=50"
		case 1:
			method, path = "GET", "/api/approvals"
		case 2:
			method, path, target, content = "GET", "/api/runs/"+run+"/events", run, true
		case 3:
			method, path, target, content = "GET", "/api/sessions/"+run, run, true
		case 4:
			method, path, target, body = "POST", "/api/approvals/"+req, req, `{"decision": "reject", "note": "no"}`
		default:
			method, path, target, body = "POST", "/api/runs/"+run+"/cancel", run, `{"reason": "test"}`
		}
		code, got := do(method, path, toks[tenant][role], body)
		if target != "" && owner[target] != tenant {
			if method == "POST" {
				crossWrites++
			}
			if code != http.StatusNotFound {
				t.Fatalf("request %d: %s %s by %s's %s: %d, want 404: %s", i, method, path, tenant, role, code, got)
			}
			continue
		}
		for id, o := range owner {
			if o != tenant && strings.Contains(got, id) {
				t.Fatalf("request %d: %s %s by %s's %s answers %s of %s's: %s", i, method, path, tenant, role, id, o, got)
			}
		}
		// A list is no content read (no record): it shows no prompt.
		for _, prompt := range []string{"write out", "hello"} {
			if strings.HasPrefix(path, "/api/runs?") && strings.Contains(got, prompt) {
				t.Fatalf("request %d: %s %s shows the prompt %q with no access record: %s", i, method, path, prompt, got)
			}
		}
		switch {
		case content && code == http.StatusOK:
			reads++
		case path == "/api/approvals" && code == http.StatusOK:
			var pending []struct{ Run string }
			if err := json.Unmarshal([]byte(got), &pending); err != nil {
				t.Fatalf("request %d: approvals: %v: %s", i, err, got)
			}
			reads += len(pending) // one run each
		}
	}
	if crossWrites == 0 {
		t.Fatal("no write named another tenant's record")
	}
	var recs []access.AccessRecord
	if err := json.Unmarshal([]byte(rath("access", "--json").stdout), &recs); err != nil {
		t.Fatal(err)
	}
	// The submitted runs' reads by their viewers were no content (a
	// run's status): reads counts every content read served.
	if len(recs) != reads {
		t.Fatalf("%d access records for %d content reads", len(recs), reads)
	}
	t.Logf("%d requests, %d content reads, %d writes naming another tenant's record", serveRequests, reads, crossWrites)
}
