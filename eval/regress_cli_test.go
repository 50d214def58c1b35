package eval_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gorath/rath/eval"
	"github.com/gorath/rath/flow/model/modeltest"
)

// regressLiveConfig is a config file whose default provider is an
// OpenAI-speaking server (%q: its URL) and whose agent "capital" has the
// system prompt %q.
const regressLiveConfig = `{"default": "m",
 "providers": {"m": {"kind": "openai", "base_url": %q, "model": "m-1", "api_key_env": "M_KEY"}},
 "agents": {"capital": {"system": %q}, "greeter": {"system": "You greet people."}}}`

// rath regress --live against a real HTTP server speaking OpenAI's wire
// format: runs recorded from it, then the prompt of one agent changed in
// the config file. The changed run goes on live as a new run, the server
// answers otherwise than it did, and the new run is scored beside its
// baseline; the score fell, and --fail-on-regression exits 4 naming the
// item. With a tolerance the fall is within, no score has fallen. Each
// command is the stock binary in a process of its own, on both stores.
func TestCLI_RegressLiveScoresAgainstTheBaseline(t *testing.T) {
	forEach(t, func(t *testing.T, st store) {
		home := t.TempDir()
		srv := modeltest.NewOpenAI(t)
		env := []string{"M_KEY=" + modeltest.Key}
		config := func(prompt string) {
			writeFile(t, home, "config.json", fmt.Sprintf(regressLiveConfig, srv.URL(), prompt))
		}
		config("Answer briefly.")
		srv.Push(modeltest.Reply{Content: "Paris."}, modeltest.Reply{Content: "Hello!"})
		st.must(t, home, env, "run", "--agent", "capital", "What is the capital of France?")
		st.must(t, home, env, "run", "--agent", "greeter", "Say hello.")
		runs := decode[[]runJSON](t, st.must(t, home, env, "runs", "--json"))
		capital, greeter := runs[1].ID, runs[0].ID // newest first
		st.must(t, home, env, "dataset", "create", "qa", "--runs")
		ds := decode[datasetJSON](t, st.must(t, home, env, "dataset", "show", "qa", "--json"))
		itemOf := map[string]string{}
		for _, it := range ds.Items {
			itemOf[it.Run] = it.ID
		}
		base := decode[scoreResultJSON](t, st.must(t, home, env, "score", "qa", "--scorer", "regex:^Paris", "--experiment", "base", "--json"))
		var baseSeq int64
		for _, s := range base.Scores {
			if s.Run == capital {
				baseSeq = s.Seq
			}
		}

		config("Answer in one word.")
		srv.Push(modeltest.Reply{Content: "Lyon."})
		before := len(srv.Requests())
		r := st.cli(t, home, env, "regress", "qa", "--live", "--experiment", "base", "--scorer", "regex:^Paris", "--tolerance", "0", "--fail-on-regression", "--json")
		if r.code != 4 {
			t.Fatalf("regress --live: exit %d, want 4\n%s%s", r.code, r.stdout, r.stderr)
		}
		var rep eval.RegressReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("%v\n%s", err, r.stdout)
		}
		reqs := srv.Requests()[before:]
		if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "Answer in one word.") {
			t.Fatalf("the server got %d requests, want the changed one: %+v\n%s%s", len(reqs), reqs, r.stdout, r.stderr)
		}
		if len(rep.Items) != 2 || rep.Same != 1 || rep.NeedsLive != 1 {
			t.Fatalf("report: %+v", rep)
		}
		for _, it := range rep.Items {
			if it.Run == greeter {
				if it.Outcome != eval.OutcomeSame || it.LiveRun != "" {
					t.Errorf("greeter run: %s", it.Verdict())
				}
				continue
			}
			if it.Run != capital || it.Item != itemOf[capital] || it.Outcome != eval.OutcomeNeedsLive || it.Kind != "model request" || it.Change != "wording" || it.LiveRun == "" {
				t.Fatalf("capital run: %+v", it)
			}
			if len(it.Scores) != 1 || it.Scores[0].Run != it.LiveRun || it.Scores[0].Value != 0 {
				t.Errorf("the live run's scores: %+v", it.Scores)
			}
			if len(it.Baseline) != 1 || it.Baseline[0].Seq != baseSeq || it.Baseline[0].Value != 1 {
				t.Errorf("baseline scores %+v, want the one at seq %d", it.Baseline, baseSeq)
			}
			want := eval.ScoreFall{Item: itemOf[capital], Scorer: "regex:^Paris", Baseline: 1, Live: 0, BaselineSeq: baseSeq, LiveSeq: it.Scores[0].Seq}
			if len(it.Fell) != 1 || it.Fell[0] != want {
				t.Errorf("fell %+v, want %+v", it.Fell, want)
			}
			// The new run is an ordinary recorded run linked to its
			// baseline: it holds the server's new answer.
			var parent string
			for _, run := range decode[[]struct {
				ID     string `json:"id"`
				Parent string `json:"parent_run"`
			}](t, st.must(t, home, env, "runs", "--json")) {
				if run.ID == it.LiveRun {
					parent = run.Parent
				}
			}
			if out := st.must(t, home, env, "events", "--run", it.LiveRun, "--json"); parent != capital || !strings.Contains(out, "Lyon.") {
				t.Errorf("the live run %s has parent %q, want %s; its events:\n%s", it.LiveRun, parent, capital, out)
			}
		}
		if !strings.Contains(r.stderr, "scores fell") || !strings.Contains(r.stderr, itemOf[capital]+" regex:^Paris 1 → 0") {
			t.Errorf("the error does not name the item whose score fell:\n%s", r.stderr)
		}
		if v := decode[verifyJSON](t, st.must(t, home, env, "verify", "--json")); !v.OK {
			t.Fatalf("verify after regress --live: %+v", v)
		}

		// A fall within the tolerance is no fall. A new experiment holds
		// no baseline score: the recorded run is scored first.
		srv.Push(modeltest.Reply{Content: "Lyon."})
		r = st.cli(t, home, env, "regress", "qa", "--live", "--experiment", "loose", "--scorer", "regex:^Paris", "--tolerance", "1", "--fail-on-regression")
		if r.code != 4 || strings.Contains(r.stdout+r.stderr, "fell") || !strings.Contains(r.stdout, "live run scored regex:^Paris = 0 (baseline 1)") {
			t.Errorf("--tolerance 1: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if r := st.cli(t, home, env, "regress", "qa", "--tolerance", "-1", "--experiment", "x", "--scorer", "no_tool_error"); r.code != 2 {
			t.Errorf("--tolerance -1: exit %d, want 2\n%s", r.code, r.stderr)
		}
	})
}
