package eval_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath/flow/model/modeltest"
	"github.com/gorath/rath/signkey"
)

// Scores through the CLI on both stores: each a score.recorded event of
// the experiment, naming the events it read; verify checks them, and
// fails naming the score's seq and the event's when a scored event or a
// score is edited in the database.
func TestCLI_ScoresAreEvidenceVerifyNamesBothSeqs(t *testing.T) {
	forEach(t, func(t *testing.T, st store) {
		home := t.TempDir()
		paris, lyon := recordRuns(t, st, home)
		st.must(t, home, nil, "dataset", "create", "capitals", "--runs")
		res := decode[scoreResultJSON](t, st.must(t, home, nil, "score", "capitals", "--experiment", "base", "--json",
			"--scorer", "contains:Paris", "--scorer", "tool_called:list_workspace_files", "--scorer", "no_tool_error",
			"--scorer", "max_tokens:100000", "--scorer", "regex:^(Paris|Lyon)"))
		if res.Experiment != "base" || res.ModelCalls != 0 || len(res.Scores) != 10 {
			t.Fatalf("score: %+v", res)
		}
		got := map[string]float64{}
		var parisScore scoreJSON
		for _, s := range res.Scores {
			got[s.Run+" "+s.Scorer] = s.Value
			if len(s.Reads) == 0 && s.Scorer != "no_tool_error" && s.Scorer != "tool_called:list_workspace_files" || s.Version != "1" || len(s.ConfigHash) != 64 {
				t.Errorf("score %+v: no reads or no identity", s)
			}
			if s.Run == paris.ID && s.Scorer == "contains:Paris" {
				parisScore = s
			}
		}
		want := map[string]float64{
			paris.ID + " contains:Paris": 1, lyon.ID + " contains:Paris": 0,
			paris.ID + " tool_called:list_workspace_files": 0, lyon.ID + " tool_called:list_workspace_files": 1,
			paris.ID + " no_tool_error": 1, lyon.ID + " no_tool_error": 1,
			paris.ID + " max_tokens:100000": 1, lyon.ID + " max_tokens:100000": 1,
			paris.ID + " regex:^(Paris|Lyon)": 1, lyon.ID + " regex:^(Paris|Lyon)": 1,
		}
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("%s = %v (scored: %v), want %v", k, g, ok, v)
			}
		}
		if r := st.cli(t, home, nil, "score", "capitals", "--scorer", "nope:x"); r.code != 2 || !strings.Contains(r.stderr, "unknown kind") {
			t.Errorf("a bad spec: exit %d\n%s", r.code, r.stderr)
		}
		if r := st.cli(t, home, nil, "score", "nosuch", "--scorer", "no_tool_error"); r.code != 1 || !strings.Contains(r.stderr, `dataset "nosuch"`) {
			t.Errorf("an unknown dataset: exit %d\n%s", r.code, r.stderr)
		}
		// The default experiment is the dataset's next number.
		if r := decode[scoreResultJSON](t, st.must(t, home, nil, "score", "capitals", "--scorer", "contains:Paris", "--json")); r.Experiment != "capitals-1" {
			t.Errorf("default experiment %q", r.Experiment)
		}
		type exp struct {
			Name  string `json:"name"`
			Means []struct {
				Scorer string  `json:"scorer"`
				Mean   float64 `json:"mean"`
			} `json:"means"`
		}
		xs := decode[[]exp](t, st.must(t, home, nil, "experiments", "--dataset", "capitals", "--json"))
		if len(xs) != 2 || xs[0].Name != "base" || len(xs[0].Means) != 5 || xs[0].Means[0].Mean != 0.5 {
			t.Errorf("experiments: %+v", xs)
		}
		v := decode[verifyJSON](t, st.must(t, home, nil, "verify", "--json"))
		if !v.OK || v.Scores == nil || v.Scores.Scores != 12 {
			t.Fatalf("verify: %+v", v)
		}

		// The run's bundle and dossier carry its scores.
		st.must(t, home, nil, "keys", "generate", "--out", "keys", "--name", "eval.example")
		bundleDir := filepath.Join(home, "bundle")
		st.must(t, home, nil, "export", paris.ID, "--bundle", bundleDir, "--key", filepath.Join(home, "keys", signkey.SignerFile), "--no-replay")
		lines, _ := os.ReadFile(filepath.Join(bundleDir, "events.jsonl"))
		payload, _ := os.ReadFile(filepath.Join(bundleDir, "payloads", fmt.Sprintf("%d.json", parisScore.Seq)))
		if !strings.Contains(string(lines), fmt.Sprintf(`"seq":%d,`, parisScore.Seq)) || !strings.Contains(string(payload), `"scorer":"contains:Paris"`) {
			t.Errorf("the bundle lacks the score at seq %d:\n%s\n%s", parisScore.Seq, lines, payload)
		}
		header, _, _ := strings.Cut(st.must(t, home, nil, "dossier", paris.ID, "--format", "jsonl"), "\n")
		var d struct {
			Scores []struct {
				Seq    int64   `json:"seq"`
				Scorer string  `json:"scorer"`
				Value  float64 `json:"value"`
				Reads  []int64 `json:"reads"`
			} `json:"scores"`
		}
		if err := json.Unmarshal([]byte(header), &d); err != nil || len(d.Scores) != 6 {
			t.Errorf("dossier scores: %v %+v", err, d)
		}
		if md := st.must(t, home, nil, "dossier", paris.ID, "--format", "md"); !strings.Contains(md, "## Scores") || !strings.Contains(md, fmt.Sprintf("| %d | <code>base</code> |", parisScore.Seq)) {
			t.Errorf("the Markdown dossier lacks the scores:\n%s", md)
		}

		// Edit the answer the score read, behind rath's back.
		answerSeq := parisScore.Reads[0]
		st.exec(t, st.dropGuard)
		st.exec(t, fmt.Sprintf(`UPDATE events SET payload = replace(payload, 'Paris is', 'Rome is') WHERE seq = %d`, answerSeq))
		r := st.cli(t, home, nil, "verify")
		if r.code != 3 || !strings.Contains(r.stderr, fmt.Sprintf("seq %d", answerSeq)) ||
			!strings.Contains(r.stderr, fmt.Sprintf("score at seq %d read seq %d", parisScore.Seq, answerSeq)) {
			t.Errorf("a scored event edited: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
		}
		st.exec(t, fmt.Sprintf(`UPDATE events SET payload = replace(payload, 'Rome is', 'Paris is') WHERE seq = %d`, answerSeq))
		st.must(t, home, nil, "verify")

		// Edit the score: its value, then the leaf hash it recorded.
		st.exec(t, fmt.Sprintf(`UPDATE events SET payload = replace(payload, '"value":1', '"value":0') WHERE seq = %d`, parisScore.Seq))
		if r := st.cli(t, home, nil, "verify"); r.code != 3 || !strings.Contains(r.stderr, fmt.Sprintf("seq %d", parisScore.Seq)) {
			t.Errorf("a score's value edited: exit %d\nstderr %s", r.code, r.stderr)
		}
		st.exec(t, fmt.Sprintf(`UPDATE events SET payload = replace(payload, '"value":0', '"value":1') WHERE seq = %d`, parisScore.Seq))
		st.must(t, home, nil, "verify")
		leaf := leafRecorded(t, st, home, parisScore.Seq)
		st.exec(t, fmt.Sprintf(`UPDATE events SET payload = replace(payload, '%s', '%s') WHERE seq = %d`, leaf, strings.Repeat("0", 64), parisScore.Seq))
		r = st.cli(t, home, nil, "verify", "--json")
		v = decode[verifyJSON](t, r.stdout)
		if r.code != 3 || v.OK || v.FailedSeq != parisScore.Seq || v.Scores == nil || v.Scores.ScoreSeq != parisScore.Seq || v.Scores.EventSeq != answerSeq {
			t.Errorf("a score's recorded leaf edited: exit %d %+v %+v", r.code, v, v.Scores)
		}
	})
}

// leafRecorded is the leaf hash the score at seq recorded of the first
// event it read, as `rath events --json` shows the score's payload.
func leafRecorded(t *testing.T, st store, home string, seq int64) string {
	t.Helper()
	var ev struct {
		Payload struct {
			Reads []struct {
				Leaf string `json:"leaf"`
			} `json:"reads"`
		} `json:"payload"`
	}
	if err := json.Unmarshal([]byte(st.must(t, home, nil, "events", "--json", "--from", fmt.Sprint(seq), "--limit", "1")), &ev); err != nil || len(ev.Payload.Reads) == 0 {
		t.Fatalf("event %d: %v %+v", seq, err, ev)
	}
	return ev.Payload.Reads[0].Leaf
}

// A judge is a real OpenAI-speaking server. Its calls are recorded: three
// re-scores give bit-identical scores with no call reaching the server;
// --live-judge asks again, and the items whose verdict changed flip.
func TestCLI_JudgeAnswersFromTheRecord(t *testing.T) {
	forEach(t, func(t *testing.T, st store) {
		home := t.TempDir()
		paris, lyon := recordRuns(t, st, home)
		st.must(t, home, nil, "dataset", "create", "capitals", "--runs")
		srv := modeltest.NewOpenAI(t)
		judge := writeFile(t, home, "judge.json", fmt.Sprintf(`{"prompt": "Question: {{input}}\nAnswer: {{output}}\nIs it right? Reply {\"score\": 0 or 1, \"reason\": \"...\"}",
			"provider": {"kind": "openai", "base_url": %q, "model": "judge-1", "api_key_env": "JUDGE_KEY"}}`, srv.URL()))
		env := []string{"JUDGE_KEY=" + modeltest.Key}
		srv.Push(modeltest.Reply{Content: `{"score": 1, "reason": "Paris is right"}`}, modeltest.Reply{Content: `{"score": 0, "reason": "Lyon is wrong, says ` + modeltest.Key + `"}`})
		first := decode[scoreResultJSON](t, st.must(t, home, env, "score", "capitals", "--scorer", "judge:"+judge, "--experiment", "j0", "--json"))
		if first.ModelCalls != 2 || len(srv.Requests()) != 2 || len(first.Scores) != 2 {
			t.Fatalf("first judge: %+v, %d requests", first, len(srv.Requests()))
		}
		byRun := map[string]scoreJSON{}
		for _, s := range first.Scores {
			byRun[s.Run] = s
			if len(s.Reads) != 2 {
				t.Errorf("a judge's score reads the answer and the judge's call: %+v", s)
			}
		}
		if byRun[paris.ID].Value != 1 || byRun[lyon.ID].Value != 0 || byRun[paris.ID].Reason != "Paris is right" {
			t.Fatalf("verdicts: %+v", byRun)
		}
		for _, req := range srv.Requests() {
			if !strings.Contains(string(req.Body), "capital of France") {
				t.Errorf("the judge was not given the question: %s", req.Body)
			}
		}
		same := func(s scoreJSON) string {
			s.Seq = 0
			b, _ := json.Marshal(s)
			return string(b)
		}
		for i := 1; i <= 3; i++ {
			out := st.must(t, home, env, "score", "capitals", "--scorer", "judge:"+judge, "--experiment", fmt.Sprintf("j%d", i))
			if !strings.Contains(out, "model calls: 0") {
				t.Errorf("re-score %d:\n%s", i, out)
			}
		}
		if n := len(srv.Requests()); n != 2 {
			t.Fatalf("re-scores reached the server: %d requests", n)
		}
		for i := 1; i <= 3; i++ {
			c := decode[struct {
				Items []struct {
					Item string `json:"item"`
				} `json:"items"`
				Flipped []any `json:"flipped"`
			}](t, st.must(t, home, nil, "experiments", "compare", "j0", fmt.Sprintf("j%d", i), "--json"))
			if len(c.Items) != 2 || len(c.Flipped) != 0 {
				t.Errorf("j0 vs j%d: %+v", i, c)
			}
		}
		again := decode[scoreResultJSON](t, st.must(t, home, env, "score", "capitals", "--scorer", "judge:"+judge, "--experiment", "j4", "--json"))
		for _, s := range again.Scores {
			if same(s) != same(byRun[s.Run]) {
				t.Errorf("a re-score differs:\n%s\n%s", same(s), same(byRun[s.Run]))
			}
		}

		srv.Push(modeltest.Reply{Content: `{"score": 0, "reason": "changed its mind"}`}, modeltest.Reply{Content: `{"score": 0, "reason": "still wrong"}`})
		live := decode[scoreResultJSON](t, st.must(t, home, env, "score", "capitals", "--scorer", "judge:"+judge, "--experiment", "live", "--live-judge", "--json"))
		if live.ModelCalls != 2 || len(srv.Requests()) != 4 {
			t.Fatalf("--live-judge: %+v, %d requests", live, len(srv.Requests()))
		}
		out := st.must(t, home, nil, "experiments", "compare", "j0", "live")
		if !strings.Contains(out, "1 of 2 item scores flipped") || !strings.Contains(out, paris.ID) {
			t.Errorf("compare j0 live:\n%s", out)
		}
		// From then on the record answers with the live verdict.
		after := decode[scoreResultJSON](t, st.must(t, home, env, "score", "capitals", "--scorer", "judge:"+judge, "--json"))
		if after.ModelCalls != 0 || len(srv.Requests()) != 4 {
			t.Errorf("after --live-judge: %+v", after)
		}
		if v := decode[verifyJSON](t, st.must(t, home, nil, "verify", "--json")); !v.OK || v.Scores.Scores != 14 {
			t.Errorf("verify: %+v", v)
		}
		// A judge that echoes its key: the key reaches neither the log nor
		// the terminal.
		if strings.Contains(fmt.Sprint(first), modeltest.Key) || !strings.Contains(byRun[lyon.ID].Reason, "Lyon is wrong, says [redacted:JUDGE_KEY]") {
			t.Errorf("the judge's key was printed: %+v", first)
		}
		for _, argv := range [][]string{{"events", "--json"}, {"dossier", lyon.ID, "--format", "jsonl"}} {
			if out := st.must(t, home, nil, argv...); strings.Contains(out, modeltest.Key) {
				t.Errorf("rath %v shows the judge's key", argv)
			}
		}
	})
}
