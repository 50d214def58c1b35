package telemetry_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/session"
)

// A failing tool and a model call that fails for good mark their spans,
// the agent's and the run's as errors, with error.type set.
func TestExportRuns_Errors(t *testing.T) {
	ctx := context.Background()
	rt := openRuntime(t)
	client := scripted.New(
		scripted.Entry{ToolCalls: []scripted.ToolCall{{ID: "b1", Name: "boom", Arguments: `{}`}}},
		scripted.Entry{Error: &scripted.Failure{Kind: model.KindAuth, Status: 401, Message: "bad key " + leakedSecret}},
	)
	p, err := flow.ResolveProvider(flow.Provider{Vendor: flow.VendorScripted, Model: "m1", Client: client}, flow.ResolveOptions{ConfigPath: "-"})
	if err != nil {
		t.Fatal(err)
	}
	boom, err := flow.NewTool("boom", "Fails.", func(context.Context, *session.Session, struct{}) (string, error) {
		return "", errors.New("it broke")
	})
	if err != nil {
		t.Fatal(err)
	}
	agent, err := flow.NewAgent("Try.", p, flow.WithTools(boom))
	if err != nil {
		t.Fatal(err)
	}
	in, err := rt.NewUserSession(ctx, "go")
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Start(ctx, "failing", agent, in, rath.WithRunID("run-fail"))
	if err == nil {
		t.Fatal("the run should fail")
	}
	// The secret is in the log (the scripted error echoes it), so the
	// checks below prove the export redacts it.
	evs, _ := rt.Store().ReadRun(ctx, run.ID)
	var log strings.Builder
	for _, ev := range evs {
		log.Write(ev.Payload)
	}
	if !strings.Contains(log.String(), leakedSecret) {
		t.Fatal("the recorded failure does not hold the secret; the test would prove nothing")
	}
	m := spansByName(exportToMemory(t, rt.Store(), false, []string{leakedSecret}, run.ID))

	tool := one(t, m, "execute_tool boom")
	if tool.Status.Code != codes.Error || attrs(tool)["error.type"].AsString() == "" {
		t.Errorf("tool span status %v, error.type %q", tool.Status, attrs(tool)["error.type"].AsString())
	}
	chats := m["chat m1"]
	if len(chats) != 2 {
		t.Fatalf("%d chat spans, want 2", len(chats))
	}
	failed := chats[1]
	if failed.Status.Code != codes.Error || attrs(failed)["error.type"].AsString() != "auth" || attrs(failed)["rath.provider.attempts"].AsInt64() != 1 {
		t.Errorf("failed chat: status %v attrs %v", failed.Status, failed.Attributes)
	}
	if d := failed.Status.Description; d == "" || contains(d, leakedSecret) {
		t.Errorf("failed chat description %q: want the error, redacted", d)
	}
	for _, name := range []string{"invoke_agent root", "invoke_workflow failing"} {
		s := one(t, m, name)
		if s.Status.Code != codes.Error || contains(s.Status.Description, leakedSecret) {
			t.Errorf("%s: status %v", name, s.Status)
		}
	}
	if got := attrs(one(t, m, "invoke_workflow failing"))["rath.run.status"].AsString(); got != "error" {
		t.Errorf("run status %q", got)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
