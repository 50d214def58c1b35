package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/replay"
)

// A counterfactual replaces a recorded tool result and continues the
// run's agent: without --live it stops at the first request the record
// cannot answer (exit 4); with --live it goes on as a new run linked to
// the original, which records both hashes, copies none of the original's
// events (the round before the fork is not in it) and replays. Each
// command is the stock binary in a process of its own, on both stores.
func TestCounterfactual_ReplacedToolResult(t *testing.T) {
	for _, backend := range bothStores() {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			store := storeFor(t, backend)
			env := bareEnv(t)
			rath := func(argv ...string) result {
				t.Helper()
				return rathEnv(t, env, append(slices.Clone(store), argv...)...)
			}
			cassette, err := filepath.Abs("../../../examples/cassettes/write_and_check.json")
			if err != nil {
				t.Fatal(err)
			}
			r := rath("run", "--cassette", cassette, "--workspace", t.TempDir(), "--tools", "all", "Write hello.txt")
			if r.code != 0 {
				t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
			}
			orig := runIDOf(t, r)
			all := func() []events.Event {
				t.Helper()
				r := rath("events", "--json")
				var evs []events.Event
				for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
					evs = append(evs, decodeJSON[events.Event](t, line))
				}
				return evs
			}
			before := all()
			var replaced events.Event // the shell command's result
			for _, ev := range before {
				if ev.RunID == orig && ev.Type == events.TypeToolReturned {
					replaced = ev
				}
			}
			out := filepath.Join(t.TempDir(), "out.txt")
			if err := os.WriteFile(out, []byte("cat: hello.txt: No such file or directory"), 0o600); err != nil {
				t.Fatal(err)
			}
			at := strconv.FormatInt(replaced.Seq, 10)

			r = rath("counterfactual", orig, "--at", at, "--tool-result", out, "--json")
			if r.code != ExitDiverged {
				t.Fatalf("counterfactual without --live: exit %d, want %d\n%s%s", r.code, ExitDiverged, r.stdout, r.stderr)
			}
			if s := decodeJSON[counterfactualSummary](t, r.stdout); s.NeedsLive == nil || s.NeedsLive.Type != events.TypeProviderCalled {
				t.Fatalf("counterfactual without --live: %+v", s)
			}

			mark := all()
			r = rath("counterfactual", orig, "--at", at, "--tool-result", out, "--live", "--json")
			if r.code != 0 {
				t.Fatalf("counterfactual --live: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			s := decodeJSON[counterfactualSummary](t, r.stdout)
			if s.Status != "done" || s.Original != orig || s.Replaced != replaced.Hash || s.Replacement != eventlog.BlobHash([]byte("cat: hello.txt: No such file or directory")) {
				t.Fatalf("counterfactual --live: %+v (replaced event hash %s)", s, replaced.Hash)
			}
			added := all()[len(mark):]
			var mine []events.Event
			for _, ev := range added {
				if ev.RunID == s.Run {
					mine = append(mine, ev)
				}
			}
			// Only the fork's session.forked is outside the new run: nothing
			// of the original is written again.
			if len(added) != len(mine)+1 {
				t.Fatalf("the counterfactual added %d events, its run has %d", len(added), len(mine))
			}
			var started events.RunStarted
			if err := json.Unmarshal(mine[0].Payload, &started); err != nil {
				t.Fatal(err)
			}
			p := started.Params
			if started.ParentRun != orig || p[replay.CounterfactualOfParam] != orig || p[replay.CounterfactualAtParam] != at ||
				p[replay.ReplacedParam] != replaced.Hash || p[replay.ReplacementParam] != s.Replacement {
				t.Fatalf("the new run's start records %+v", started)
			}
			// The new run starts at the round of the replaced result: its
			// first tool call is the shell command's, not the write before.
			for _, ev := range mine {
				if ev.Type == events.TypeToolCalled {
					if !strings.Contains(string(ev.Payload), `"call_id":"c2"`) {
						t.Fatalf("the new run redid the round before the fork: %s", ev.Payload)
					}
					break
				}
			}
			if r := rath("replay", s.Run); r.code != 0 {
				t.Fatalf("replay of the counterfactual run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if r := rath("verify"); r.code != 0 {
				t.Fatalf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}
