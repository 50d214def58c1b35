package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath/access"
)

// rath serve --auth tokens, a process of its own, on both stores: a
// request without a token, or with an expired or revoked one, is 401; a
// viewer reads, and cannot decide or cancel (403); an approver decides
// with a bearer token and no CSRF value, and the decision names the
// token, not the name the body claims; each read of run content appends
// exactly one access.viewed and a list appends none; rath access --run
// lists them.
func TestServe_AuthTokens(t *testing.T) {
	t.Parallel()
	for _, backend := range bothStores() {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			testServeAuthTokens(t, backend)
		})
	}
}

func testServeAuthTokens(t *testing.T, backend string) {
	st := newTokensStore(t, backend)
	rath, token, do := st.rath, st.token, st.do
	run, req := st.waitingRun("")
	viewer, approver, expired, revoked := token("--role", "viewer"), token("--role", "approver"), token("--role", "admin", "--expires", "1s"), token("--role", "admin")
	if r := rath("tokens", "revoke", revoked.ID); r.code != 0 {
		t.Fatalf("revoke: %s", r.stderr)
	}
	time.Sleep(time.Until(expired.ExpiresAt) + 10*time.Millisecond)
	st.serve()
	records := func() []access.AccessRecord {
		t.Helper()
		return decodeJSON[[]access.AccessRecord](t, rath("access", "--run", run, "--json").stdout)
	}

	for _, tc := range []struct {
		name, tok string
		says      string
	}{
		{"no token", "", "an identity is required"},
		{"unknown", "rath_" + strings.Repeat("ab", 32), "unknown token"},
		{"expired", expired.Secret, "expired"},
		{"revoked", revoked.Secret, "revoked"},
	} {
		if code, body := do("GET", "/api/runs", tc.tok, ""); code != http.StatusUnauthorized || !strings.Contains(body, tc.says) {
			t.Errorf("%s: %d %s", tc.name, code, body)
		}
	}
	// A viewer lists runs (no record) and the inbox, which shows the
	// pending request's arguments (one record), reads events and a
	// transcript (one record each), and may not decide or cancel.
	if code, body := do("GET", "/api/runs", viewer.Secret, ""); code != http.StatusOK || !strings.Contains(body, run) {
		t.Fatalf("viewer lists runs: %d %s", code, body)
	}
	if code, _ := do("GET", "/api/approvals", viewer.Secret, ""); code != http.StatusOK {
		t.Fatalf("viewer lists approvals: %d", code)
	}
	if rs := records(); len(rs) != 1 || rs[0].What != "approval" || rs[0].Tenant != "default" {
		t.Fatalf("the runs list and the inbox recorded %+v, want the inbox's one read", rs)
	}
	code, body := do("GET", "/api/runs/"+run+"/events", viewer.Secret, "")
	var page struct{ Events []struct{ Seq int64 } }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil || len(page.Events) == 0 {
		t.Fatalf("viewer reads events: %d %s", code, body)
	}
	if code, body := do("GET", "/api/sessions/"+run, viewer.Secret, ""); code != http.StatusOK {
		t.Fatalf("viewer reads the transcript: %d %s", code, body)
	}
	rs := records()[1:]
	who := "token:" + viewer.ID
	if len(rs) != 2 || rs[0].Who != who || rs[0].Issuer != access.IssuerToken || rs[0].Tenant != "default" || rs[0].What != "events" ||
		rs[0].FromSeq != page.Events[0].Seq || rs[0].ToSeq != page.Events[len(page.Events)-1].Seq || rs[0].Route != "GET /api/runs/{id}/events" ||
		rs[1].Who != who || rs[1].What != "transcript" || rs[1].Run != run {
		t.Fatalf("access records after two reads: %+v", rs)
	}
	for _, w := range []struct{ path, body string }{
		{"/api/approvals/" + req, `{"decision":"approve"}`},
		{"/api/runs/" + run + "/cancel", `{}`},
	} {
		if code, body := do("POST", w.path, viewer.Secret, w.body); code != http.StatusForbidden || !strings.Contains(body, "viewer") {
			t.Fatalf("viewer POST %s: %d %s", w.path, code, body)
		}
	}
	// The approver decides with its bearer token alone (no CSRF value);
	// the name the body claims is not what is recorded.
	code, body = do("POST", "/api/approvals/"+req, approver.Secret, `{"decision":"approve","by":"mallory"}`)
	var dec struct {
		Decided struct{ By, Via, Issuer string }
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &dec) != nil || dec.Decided.By != "token:"+approver.ID || dec.Decided.Via != "token" {
		t.Fatalf("approver decides: %d %s", code, body)
	}
	if out := rath("events", "--json").stdout; strings.Contains(out, "mallory") || !strings.Contains(out, `"by":"token:`+approver.ID) {
		t.Fatalf("the decision does not name the approver's token:\n%s", out)
	}
	// rath access lists the three reads, and the API says the same to
	// an admin of the run's tenant; a viewer may not list who read.
	if r := rath("access", "--run", run, "--tenant", "default"); r.code != 0 || strings.Count(r.stdout, who) != 3 || !strings.Contains(r.stdout, "transcript") {
		t.Fatalf("rath access --run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := rath("access", "--run", run, "--tenant", "acme"); r.code != 0 || !strings.Contains(r.stdout, "no access records") {
		t.Fatalf("rath access --tenant acme: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if code, body := do("GET", "/api/runs/"+run+"/access", viewer.Secret, ""); code != http.StatusForbidden {
		t.Fatalf("a viewer's GET access: %d %s", code, body)
	}
	admin := token("--role", "admin")
	if code, body := do("GET", "/api/runs/"+run+"/access", admin.Secret, ""); code != http.StatusOK || strings.Count(body, `"who":"`+who) != 3 {
		t.Fatalf("GET access: %d %s", code, body)
	}
	if rs := records(); len(rs) != 3 {
		t.Fatalf("reading the access records recorded a read: %+v", rs)
	}
}
