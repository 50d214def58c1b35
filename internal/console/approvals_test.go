package console_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/gorath/rath/access"
	"github.com/gorath/rath/approval"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/internal/console"
	"github.com/gorath/rath/replay"
)

// waitingRun records a run of the shouting agent that stops on its tool
// call until a person approves it.
func waitingRun(t *testing.T, f *fixture) string {
	t.Helper()
	ctx := context.Background()
	s, err := f.rt.NewUserSession(ctx, "Shout, with approval")
	if err != nil {
		t.Fatal(err)
	}
	run, err := f.rt.Start(ctx, "gated-shouter", newAgent(t, flow.WithApproval("shout", flow.Always())), s)
	if !errors.Is(err, flow.ErrWaiting) {
		t.Fatalf("start: %v, want the run waiting", err)
	}
	return run.ID
}

// The inbox lists what waits, escaped; refused decisions (no CSRF, no
// decider, a rejection without a reason, an unknown id, a bad verb)
// write nothing; an approval lands once, a second is a conflict; the
// resumed run then finishes.
func TestApprovals_InboxAndDecisions(t *testing.T) {
	f := newFixture(t, "")
	run := waitingRun(t, f)
	body := f.get(t, "/api/approvals", "")
	if strings.Contains(body, "<b>") || strings.Contains(body, "\x1b") {
		t.Fatalf("unescaped model text in the inbox: %s", body)
	}
	pend := decode[[]approval.View](t, body)
	if len(pend) != 1 || pend[0].Run != run || pend[0].Tool != "shout" || !strings.Contains(string(pend[0].Arguments), "there") {
		t.Fatalf("pending = %+v", pend)
	}
	if other := decode[[]approval.View](t, f.get(t, "/api/approvals?run=run-none", "")); len(other) != 0 {
		t.Fatalf("filtered by another run: %+v", other)
	}
	id := pend[0].ID
	head, _ := f.rt.Store().Head(t.Context())
	refusals := []struct {
		name, path, body string
		csrf             bool
		code             int
	}{
		{"no CSRF header", "/api/approvals/" + id, `{"decision":"approve","by":"ann"}`, false, http.StatusForbidden},
		{"rejection without a reason", "/api/approvals/" + id, `{"decision":"reject","by":"ann"}`, true, http.StatusBadRequest},
		{"an answer to a tool call", "/api/approvals/" + id, `{"decision":"answer","by":"ann","answer":1}`, true, http.StatusBadRequest},
		{"unknown verb", "/api/approvals/" + id, `{"decision":"maybe","by":"ann"}`, true, http.StatusBadRequest},
		{"unknown field", "/api/approvals/" + id, `{"decision":"approve","by":"ann","force":true}`, true, http.StatusBadRequest},
		{"unknown id", "/api/approvals/apr-nosuch", `{"decision":"approve","by":"ann"}`, true, http.StatusNotFound},
	}
	for _, tt := range refusals {
		res, b := f.postJSON(t, tt.path, tt.body, tt.csrf)
		if res.StatusCode != tt.code {
			t.Errorf("%s: %s %s, want %d", tt.name, res.Status, b, tt.code)
		}
	}
	if after, _ := f.rt.Store().Head(t.Context()); after != head {
		t.Fatalf("a refused decision wrote to the log: head %v -> %v", head, after)
	}
	res, b := f.postJSON(t, "/api/approvals/"+id, `{"decision":"approve","by":"ann","note":"fine"}`, true)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("approve: %s %s", res.Status, b)
	}
	if v := decode[console.DecisionView](t, b); v.Decided.By != access.Local("").Subject || v.Decided.Via != access.ViaLoopback || v.Decided.Run != run || !strings.Contains(v.Next, "rath resume "+run) {
		t.Fatalf("decision = %+v", v)
	}
	if res, b := f.postJSON(t, "/api/approvals/"+id, `{"decision":"reject","by":"bob","note":"no"}`, true); res.StatusCode != http.StatusConflict {
		t.Fatalf("second decision: %s %s", res.Status, b)
	}
	if pend := decode[[]approval.View](t, f.get(t, "/api/approvals", "")); len(pend) != 0 {
		t.Fatalf("still pending after the decision: %+v", pend)
	}
	if _, err := replay.Resume(t.Context(), f.rt, run, newAgent(t, flow.WithApproval("shout", flow.Always()))); err != nil {
		t.Fatalf("resume after the approval: %v", err)
	}
	if r, _ := f.rt.Reader().Run(t.Context(), run); r.Status != "ok" {
		t.Fatalf("run after the approval: %+v", r)
	}
}
