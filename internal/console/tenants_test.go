package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/access"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/console"
	"github.com/gorath/rath/projections"
)

// tenantData is what one tenant holds in the store the test fills.
type tenantData struct {
	runs, sessions, approvals []string
}

// fillTenants records, for each tenant, two runs of the scripted agent
// with a pending question each.
func fillTenants(t *testing.T, rt *rath.Runtime, tenants []string) map[string]*tenantData {
	t.Helper()
	ctx := context.Background()
	out := map[string]*tenantData{}
	for _, tenant := range tenants {
		d := &tenantData{}
		for i := range 2 {
			in, err := rt.NewUserSession(ctx, "hello from "+tenant)
			if err != nil {
				t.Fatal(err)
			}
			run, err := rt.Start(ctx, "agent", newAgent(t), in, rath.WithTenant(tenant))
			if err != nil {
				t.Fatal(err)
			}
			ap := fmt.Sprintf("ap-%s-%d", tenant, i)
			if _, err := rt.Store().Append(ctx, events.ApprovalStream(ap), eventlog.NoStream,
				events.ApprovalRequested{ID: ap, Run: run.ID, Session: run.Output.ID(), Kind: events.ApprovalQuestion, Question: "go on?"}); err != nil {
				t.Fatal(err)
			}
			d.runs = append(d.runs, run.ID)
			d.sessions = append(d.sessions, in.ID(), run.Output.ID())
			d.approvals = append(d.approvals, ap)
		}
		out[tenant] = d
	}
	return out
}

// as serves srv to identity id, as the console's resolver would have
// established it.
func as(srv *console.Server, id access.Identity) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.ServeHTTP(w, r.WithContext(access.WithIdentity(r.Context(), id)))
	})
}

// Random requests of three tenants' viewers, approvers and operators,
// naming runs, sessions and approvals of every tenant: another tenant's
// is 404, never its content, no answer holds an id of another tenant's,
// and no decision or cancel reaches another tenant's record.
func TestTenants_RandomRequestsSeeOnlyTheirTenant(t *testing.T) {
	for _, st := range []struct {
		name string
		n    int
		rt   func(t *testing.T) *rath.Runtime
	}{
		{"sqlite", randomRequests, func(t *testing.T) *rath.Runtime { return newRuntime(t) }},
		{"postgres", randomRequests, pgRuntime},
	} {
		t.Run(st.name, func(t *testing.T) {
			rt := st.rt(t)
			tenants := []string{"acme", "globex", "initech"}
			data := fillTenants(t, rt, tenants)
			srv, err := console.New(console.Options{Runtime: rt})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			page := httptest.NewRecorder()
			srv.ServeHTTP(page, httptest.NewRequest("GET", "http://127.0.0.1/", nil))
			csrf := csrfOf(t, page.Body.String())
			owner := map[string]string{}
			var all []string
			for tenant, d := range data {
				for _, id := range slices.Concat(d.runs, d.sessions, d.approvals) {
					owner[id] = tenant
					all = append(all, id)
				}
			}
			slices.Sort(all)
			roles := []access.Role{access.Viewer, access.Approver, access.Operator}
			rng := rand.New(rand.NewPCG(51, 3))
			crossWrites := 0
			for i := range st.n {
				tenant := tenants[rng.IntN(len(tenants))]
				id := access.Identity{Subject: "u" + tenant, Issuer: "test", Tenant: tenant, Role: roles[rng.IntN(len(roles))], Via: "test"}
				other := tenants[rng.IntN(len(tenants))]
				d := data[other]
				run, sess, ap := d.runs[rng.IntN(2)], d.sessions[rng.IntN(4)], d.approvals[rng.IntN(2)]
				var method, path, body, target string
				switch k := rng.IntN(10); k {
				case 0:
					method, path = "GET", "/api/runs?limit=50"
				case 1:
					method, path = "GET", "/api/approvals"
				case 2:
					method, path, target = "GET", "/api/runs/"+run, run
				case 3:
					method, path, target = "GET", "/api/runs/"+run+"/events", run
				case 4:
					method, path, target = "GET", "/api/sessions/"+sess, sess
				case 5:
					method, path, target = "GET", "/api/graph?run="+run, run
				case 6:
					method, path, target = "GET", "/api/compare?a="+sess+"&b="+data[tenant].sessions[0], sess
				case 7:
					method, path, target = "GET", "/api/runs/"+run+"/trace", run
				case 8:
					method, path, target = "POST", "/api/approvals/"+ap, ap
					body = `{"by": "someone", "decision": "answer", "answer": "\"yes\""}`
				default:
					method, path, target = "POST", "/api/runs/"+run+"/cancel", run
					body = `{"reason": "test"}`
				}
				req := httptest.NewRequest(method, "http://127.0.0.1"+path, strings.NewReader(body))
				if method == "POST" {
					req.Header.Set(console.CSRFHeader, csrf)
					req.Header.Set("Content-Type", "application/json")
				}
				rec := httptest.NewRecorder()
				as(srv, id).ServeHTTP(rec, req)
				got := rec.Body.String()
				if target != "" && owner[target] != tenant {
					if method == "POST" {
						crossWrites++
					}
					if rec.Code != http.StatusNotFound {
						t.Fatalf("request %d: %s %s by %s's %s: %d, want 404: %s", i, method, path, tenant, id.Role, rec.Code, got)
					}
				}
				for _, x := range all {
					if owner[x] != tenant && strings.Contains(got, x) && !strings.Contains(path, x) {
						t.Fatalf("request %d: %s %s by %s's %s answers %s of %s's: %s", i, method, path, tenant, id.Role, x, owner[x], got)
					}
				}
			}
			if crossWrites == 0 {
				t.Fatal("no write named another tenant's record")
			}
			// Whatever was decided or canceled was the deciding tenant's: each
			// tenant's identities were named by subject.
			evs, err := rt.Store().Read(t.Context(), eventlog.Query{Types: []string{events.TypeApprovalDecided}})
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				p, err := ev.Decode()
				if err != nil {
					t.Fatal(err)
				}
				e := p.(*events.ApprovalDecided)
				if ten := owner[e.ID]; e.By != "u"+ten && e.By != "someone" {
					t.Errorf("approval %s of %s decided by %q", e.ID, ten, e.By)
				}
			}
			t.Logf("%d requests, %d named another tenant's record for a write, %d decisions", st.n, crossWrites, len(evs))
		})
	}
}

// A read's access record names the tenant whose run was read, whoever
// read it (the loopback operator acts for every tenant); the records of
// a run are its tenant's admins' (a viewer is 403, another tenant's
// admin 404), a tenant's scope holds only its own, and the approvals
// inbox, which shows what each request's tool would run with, records
// one read of each run it shows.
func TestTenants_AccessRecordsAreTheTenants(t *testing.T) {
	for _, st := range []struct {
		name string
		rt   func(t *testing.T) *rath.Runtime
	}{
		{"sqlite", func(t *testing.T) *rath.Runtime { return newRuntime(t) }},
		{"postgres", pgRuntime},
	} {
		t.Run(st.name, func(t *testing.T) {
			rt := st.rt(t)
			ctx := t.Context()
			data := fillTenants(t, rt, []string{"acme", "globex"})
			srv, err := console.New(console.Options{Runtime: rt})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			get := func(h http.Handler, path string) (int, string) {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1"+path, nil))
				return rec.Code, rec.Body.String()
			}
			acmeRun := data["acme"].runs[0]
			// The loopback operator reads acme's run.
			if code, body := get(srv, "/api/runs/"+acmeRun+"/events"); code != http.StatusOK {
				t.Fatalf("operator reads events: %d %s", code, body)
			}
			rs, err := access.Records(ctx, rt.Store().DB(), access.Filter{Run: acmeRun})
			if err != nil || len(rs) != 1 || rs[0].Tenant != "acme" {
				t.Fatalf("the operator's read of acme's run: %+v (%v), want one record of tenant acme", rs, err)
			}
			admin := func(tenant string, role access.Role) http.Handler {
				return as(srv, access.Identity{Subject: string(role) + "@" + tenant, Issuer: "test", Tenant: tenant, Role: role, Via: "test"})
			}
			if code, body := get(admin("acme", access.Viewer), "/api/runs/"+acmeRun+"/access"); code != http.StatusForbidden {
				t.Errorf("acme's viewer lists the run's readers: %d %s", code, body)
			}
			if code, body := get(admin("globex", access.Admin), "/api/runs/"+acmeRun+"/access"); code != http.StatusNotFound {
				t.Errorf("globex's admin lists acme's run's readers: %d %s", code, body)
			}
			code, body := get(admin("acme", access.Admin), "/api/runs/"+acmeRun+"/access")
			var view console.AccessView
			if code != http.StatusOK || json.Unmarshal([]byte(body), &view) != nil || len(view.Records) != 1 || view.Records[0].Who == "" {
				t.Fatalf("acme's admin lists the run's readers: %d %s", code, body)
			}
			// The inbox: acme's approver sees acme's three pending requests,
			// two of one session, one of another: two records, of acme.
			for i, sess := range []string{data["acme"].sessions[1], data["acme"].sessions[1], data["acme"].sessions[3]} {
				ap := fmt.Sprintf("ask-%d", i)
				if _, err := rt.Store().Append(ctx, events.ApprovalStream(ap), eventlog.NoStream,
					events.ApprovalRequested{ID: ap, Session: sess, Kind: events.ApprovalQuestion, Question: "go on?"}); err != nil {
					t.Fatal(err)
				}
			}
			before := countViewed(t, rt)
			if code, body := get(admin("acme", access.Approver), "/api/approvals"); code != http.StatusOK || strings.Count(body, "ask-") != 3 {
				t.Fatalf("acme's approver lists approvals: %d %s", code, body)
			}
			if got := countViewed(t, rt) - before; got != 2 {
				t.Errorf("the inbox of two sessions' requests appended %d access.viewed, want 2", got)
			}
			// A list of ids and statuses is no read.
			before = countViewed(t, rt)
			if code, _ := get(admin("acme", access.Viewer), "/api/runs"); code != http.StatusOK {
				t.Fatalf("runs list: %d", code)
			}
			if got := countViewed(t, rt) - before; got != 0 {
				t.Errorf("the runs list appended %d access.viewed", got)
			}
			// globex reads its own run; each tenant's scope holds its own.
			if code, body := get(admin("globex", access.Viewer), "/api/runs/"+data["globex"].runs[0]+"/events"); code != http.StatusOK {
				t.Fatalf("globex reads its run: %d %s", code, body)
			}
			for tenant, want := range map[string]int{"acme": 3, "globex": 1} {
				sc, err := projections.NewScope(ctx, rt.Store().DB(), tenant)
				if err != nil {
					t.Fatal(err)
				}
				rs, err := access.Records(ctx, sc, access.Filter{})
				sc.Close()
				if err != nil {
					t.Fatal(err)
				}
				if len(rs) != want {
					t.Errorf("%s's scope holds %d access records, want %d: %+v", tenant, len(rs), want, rs)
				}
				for _, r := range rs {
					if r.Tenant != tenant {
						t.Errorf("%s's scope holds a record of %q: %+v", tenant, r.Tenant, r)
					}
				}
			}
		})
	}
}

// countViewed is how many access.viewed events the log holds.
func countViewed(t *testing.T, rt *rath.Runtime) int {
	t.Helper()
	evs, err := rt.Store().Read(t.Context(), eventlog.Query{Types: []string{events.TypeAccessViewed}})
	if err != nil {
		t.Fatal(err)
	}
	return len(evs)
}
