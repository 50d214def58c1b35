package telemetry_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gorath/rath/events"
)

// A secret with characters JSON escapes (a quote, a backslash, <>) sits
// in tool arguments, which are JSON, in its escaped form: content
// capture must scrub that form too, not only the raw bytes.
func TestExportRuns_JSONEscapedSecretScrubbed(t *testing.T) {
	const secret = `pa"ss\wo<rd>-0123456789`
	rt := openRuntime(t)
	run := recordRun(t, rt)
	evs, err := rt.Store().ReadRun(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{"q": secret}) // {"q":"pa\"ss\\wo\u003crd\u003e-…"}
	planted := false
	for i, ev := range evs {
		if ev.Type != events.TypeToolCalled {
			continue
		}
		var p map[string]any
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		p["arguments"] = string(args)
		evs[i].Payload, _ = json.Marshal(p)
		planted = true
	}
	if !planted {
		t.Fatal("the recorded run has no tool call")
	}
	escaped := strings.Trim(string(args[len(`{"q":`):len(args)-1]), `"`)
	for _, s := range exportToMemory(t, truncated{Store: rt.Store(), evs: evs}, true, []string{secret}, run.ID) {
		for _, kv := range s.Attributes {
			if v := kv.Value.String(); strings.Contains(v, secret) || strings.Contains(v, escaped) {
				t.Errorf("%s: %s holds the secret: %s", s.Name, kv.Key, v)
			}
		}
	}
}
