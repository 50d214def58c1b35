package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gorath/rath/eval"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/replay"
)

// regressConfig names two agents; %s is the triage agent's prompt.
const regressConfig = `{"agents": {"triage": {"system": %q}, "writer": {"system": "You write replies."}}}`

// A changed system prompt of one named agent, in the config file, makes
// exactly the runs of that agent differ, each at its first model
// request, as a change of wording the record cannot answer; the other
// agent's runs are the same. Each command is the stock binary in a
// process of its own, on both stores.
func TestRegress_ChangedPromptOfOneAgent(t *testing.T) {
	for _, backend := range bothStores() {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			store := storeFor(t, backend)
			home := t.TempDir()
			writeConfig := func(prompt string) {
				t.Helper()
				b, _ := json.Marshal(prompt)
				cfg := strings.Replace(regressConfig, "%q", string(b), 1)
				if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(cfg), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			writeConfig("You sort tickets.")
			cassette := filepath.Join(t.TempDir(), "c.json")
			if err := os.WriteFile(cassette, []byte(`{"scripted": true, "responses": [{"content": "sorted"}]}`), 0o600); err != nil {
				t.Fatal(err)
			}
			env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "RATH_HOME=" + home}
			rath := func(argv ...string) result {
				t.Helper()
				return rathEnv(t, env, append(slices.Clone(store), argv...)...)
			}
			agents := map[string]string{} // run -> agent
			var regressArgs []string
			for i, agent := range []string{"triage", "writer", "triage", "writer"} {
				r := rath("run", "--agent", agent, "--cassette", cassette, "ticket "+string(rune('a'+i)))
				if r.code != 0 {
					t.Fatalf("run --agent %s: exit %d\n%s", agent, r.code, r.stderr)
				}
				id := runIDOf(t, r)
				agents[id] = agent
				regressArgs = append(regressArgs, "--run", id)
			}
			if r := rath(append([]string{"dataset", "create", "tickets", "--runs"}, regressArgs...)...); r.code != 0 {
				t.Fatalf("dataset create: exit %d\n%s", r.code, r.stderr)
			}
			check := func() (eval.RegressReport, int) {
				t.Helper()
				r := rath("regress", "tickets", "--json", "--fail-on-regression")
				return decodeJSON[eval.RegressReport](t, r.stdout), r.code
			}
			if rep, code := check(); code != 0 || rep.Same != 4 {
				t.Fatalf("unchanged: exit %d, %+v", code, rep)
			}

			writeConfig("You sort tickets, urgent ones first.")
			rep, code := check()
			if code != ExitDiverged {
				t.Fatalf("changed prompt: exit %d, want %d", code, ExitDiverged)
			}
			if rep.Same != 2 || rep.NeedsLive != 2 || len(rep.Items) != 4 {
				t.Fatalf("changed prompt: %+v", rep)
			}
			for _, it := range rep.Items {
				if agents[it.Run] == "writer" {
					if it.Outcome != eval.OutcomeSame {
						t.Errorf("writer run %s: %s, want same", it.Run, it.Verdict())
					}
					continue
				}
				first := firstSeqOf(t, rath, it.Run, events.TypeProviderCalled)
				if it.Outcome != eval.OutcomeNeedsLive || it.Seq != first || it.Kind != "model request" || it.Change != replay.ChangeWording {
					t.Errorf("triage run %s: %s, want needs live answers at seq %d (its first model request), a change of wording", it.Run, it.Verdict(), first)
				}
				if !strings.Contains(it.Divergence.Diff, "urgent ones first") {
					t.Errorf("triage run %s: the diff does not show the new prompt: %s", it.Run, it.Divergence.Diff)
				}
			}

			// Four runs at a time, the report is the same as one at a
			// time, byte for byte: the dataset's order, whatever order
			// the runs finish in.
			one, four := rath("regress", "tickets", "--json", "--parallel", "1"), rath("regress", "tickets", "--json", "--parallel", "4")
			if one.code != 0 || four.code != 0 || one.stdout != four.stdout {
				t.Fatalf("--parallel 1: exit %d\n%s\n--parallel 4: exit %d\n%s%s", one.code, one.stdout, four.code, four.stdout, four.stderr)
			}
			if r := rath("regress", "tickets", "--parallel", "0"); r.code != ExitUsage {
				t.Errorf("--parallel 0: exit %d, want %d\n%s", r.code, ExitUsage, r.stderr)
			}

			// The text form says the same, one line a run; runs are also
			// given one by one.
			r := rath(append([]string{"regress"}, regressArgs...)...)
			if r.code != 0 || strings.Count(r.stdout, ": same\n") != 2 || strings.Count(r.stdout, "model request, wording; needs live answers") != 2 {
				t.Fatalf("regress: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// firstSeqOf returns the seq of run's first event of type typ, read with
// rath events.
func firstSeqOf(t *testing.T, rath func(...string) result, run, typ string) int64 {
	t.Helper()
	r := rath("events", "--run", run, "--type", typ, "--json")
	line, _, _ := strings.Cut(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || line == "" {
		t.Fatalf("events --run %s --type %s: exit %d\n%s%s", run, typ, r.code, r.stdout, r.stderr)
	}
	return decodeJSON[events.Event](t, line).Seq
}
