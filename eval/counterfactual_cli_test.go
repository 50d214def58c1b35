package eval_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
)

// A counterfactual run records what it replaced as an event of its own,
// counterfactual.forked, written with its run.started: rath show on the
// fork says what it is a counterfactual of, rath replay reproduces the
// event, and rath verify checks the replaced event's leaf hash, failing
// naming both seqs when either side is edited behind rath's back. Each
// command is the stock binary in a process of its own, on both stores.
func TestCLI_CounterfactualRecordsWhatItReplaced(t *testing.T) {
	forEach(t, func(t *testing.T, st store) {
		home := t.TempDir()
		cassette := writeFile(t, home, "paris.json", `{"scripted":true,"responses":[{"content":"Paris is the capital."}]}`)
		st.must(t, home, nil, "run", "--cassette", cassette, "What is the capital of France?")
		orig := decode[[]runJSON](t, st.must(t, home, nil, "runs", "--json"))[0].ID
		call := decode[events.Event](t, st.must(t, home, nil, "events", "--run", orig, "--type", events.TypeProviderCalled, "--json"))
		answer := writeFile(t, home, "answer.txt", "Lyon.")

		type summary struct{ Run, Original, Session, Status, Replacement string }
		sum := decode[summary](t, st.must(t, home, nil, "counterfactual", orig, "--at", fmt.Sprint(call.Seq), "--answer", answer, "--json"))
		if sum.Status != "done" || sum.Original != orig {
			t.Fatalf("counterfactual: %+v", sum)
		}
		lines := strings.Split(strings.TrimSpace(st.must(t, home, nil, "events", "--run", sum.Run, "--json")), "\n")
		if len(lines) < 2 {
			t.Fatalf("the counterfactual run's events:\n%s", lines)
		}
		// run.started, then counterfactual.forked, in one commit.
		started, forked := decode[events.Event](t, lines[0]), decode[events.Event](t, lines[1])
		if started.Type != events.TypeRunStarted || forked.Type != events.TypeCounterfactualForked || forked.Seq != started.Seq+1 || forked.Stream != events.CounterfactualStream(sum.Run) {
			t.Fatalf("the run opens with %s at %d and %s at %d on %s", started.Type, started.Seq, forked.Type, forked.Seq, forked.Stream)
		}
		blob, _ := json.Marshal(model.Response{Content: "Lyon."})
		want := events.CounterfactualForked{Run: sum.Run, Original: orig, At: call.Seq, Kind: events.ReplacedAnswer, Replaced: call.Hash,
			Replacement: eventlog.BlobHash(blob), Session: sum.Session}
		var got events.CounterfactualForked
		if err := json.Unmarshal(forked.Payload, &got); err != nil || got != want || sum.Replacement != want.Replacement {
			t.Fatalf("counterfactual.forked %+v (%v), want %+v", got, err, want)
		}

		// rath show on the fork says what it is.
		shown := decode[struct {
			Counterfactual *events.CounterfactualForked `json:"counterfactual"`
		}](t, st.must(t, home, nil, "show", sum.Session, "--json"))
		if shown.Counterfactual == nil || *shown.Counterfactual != want {
			t.Errorf("show --json: %+v, want %+v", shown.Counterfactual, want)
		}
		if out := st.must(t, home, nil, "show", sum.Session); !strings.Contains(out, fmt.Sprintf("counterfactual of run %s at seq %d: its answer", orig, call.Seq)) {
			t.Errorf("show does not say what the fork is:\n%s", out)
		}
		if orig := st.must(t, home, nil, "show", decode[[]runJSON](t, st.must(t, home, nil, "runs", "--json"))[1].Input); strings.Contains(orig, "counterfactual of") {
			t.Errorf("the original's session shows as a counterfactual:\n%s", orig)
		}
		st.must(t, home, nil, "replay", sum.Run)

		v := decode[verifyJSON](t, st.must(t, home, nil, "verify", "--json"))
		if !v.OK || v.Scores == nil || v.Scores.Counterfactuals != 1 {
			t.Fatalf("verify: %+v %+v", v, v.Scores)
		}
		if out := st.must(t, home, nil, "verify"); !strings.Contains(out, "counterfactuals 1 counterfactual runs name the events they replaced") {
			t.Errorf("verify does not count the counterfactual:\n%s", out)
		}

		// The replaced answer edited: the counterfactual names it.
		st.exec(t, st.dropGuard)
		st.exec(t, fmt.Sprintf(`UPDATE events SET payload = replace(payload, '{', '{ ') WHERE seq = %d`, call.Seq))
		r := st.cli(t, home, nil, "verify")
		if r.code != 3 || !strings.Contains(r.stderr, fmt.Sprintf("counterfactual at seq %d read seq %d", forked.Seq, call.Seq)) {
			t.Errorf("the replaced event edited: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
		}
		st.exec(t, fmt.Sprintf(`UPDATE events SET payload = replace(payload, '{ ', '{') WHERE seq = %d`, call.Seq))
		st.must(t, home, nil, "verify")

		// The leaf hash it recorded edited: both seqs named.
		st.exec(t, fmt.Sprintf(`UPDATE events SET payload = replace(payload, '%s', '%s') WHERE seq = %d`, call.Hash, strings.Repeat("0", 64), forked.Seq))
		r = st.cli(t, home, nil, "verify", "--json")
		v = decode[verifyJSON](t, r.stdout)
		if r.code != 3 || v.OK || v.FailedSeq != forked.Seq || v.Scores == nil || v.Scores.ScoreSeq != forked.Seq || v.Scores.EventSeq != call.Seq {
			t.Errorf("the recorded leaf edited: exit %d %+v %+v", r.code, v, v.Scores)
		}
	})
}
