package eval_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Datasets through the CLI, separate processes, both stores: recorded runs
// pinned by their last event's leaf hash, cases from OpenAI evals' JSONL,
// a taken name and a bad line refused with nothing recorded.
func TestCLI_DatasetsPinRunsAndReadJSONL(t *testing.T) {
	forEach(t, func(t *testing.T, st store) {
		home := t.TempDir()
		paris, lyon := recordRuns(t, st, home)

		ds := decode[datasetJSON](t, st.must(t, home, nil, "dataset", "create", "capitals", "--runs", "--json"))
		if len(ds.Items) != 2 {
			t.Fatalf("dataset of 2 runs: %+v", ds)
		}
		for i, r := range []runJSON{paris, lyon} {
			it := ds.Items[i]
			if it.ID != r.ID || it.Run != r.ID || it.InputSession != r.Input || it.LastSeq != r.FinishedSeq || len(it.LastLeaf) != 64 {
				t.Errorf("item %d = %+v, want run %+v pinned at its last event", i, it, r)
			}
			if !strings.Contains(string(it.Input), "capital of France") {
				t.Errorf("item %d input %s", i, it.Input)
			}
		}
		// The pinned leaf is the event's hash as the log shows it.
		if ev := st.must(t, home, nil, "events", "--json", "--from", fmt.Sprint(paris.FinishedSeq), "--limit", "1"); !strings.Contains(ev, ds.Items[0].LastLeaf) {
			t.Errorf("the leaf pinned, %s, is not event %d's:\n%s", ds.Items[0].LastLeaf, paris.FinishedSeq, ev)
		}
		if got := decode[datasetJSON](t, st.must(t, home, nil, "dataset", "show", "capitals", "--json")); len(got.Items) != 2 || got.Items[1].LastLeaf != ds.Items[1].LastLeaf {
			t.Errorf("dataset show: %+v", got)
		}
		one := decode[datasetJSON](t, st.must(t, home, nil, "dataset", "create", "one", "--runs", "--run", lyon.ID, "--json"))
		if len(one.Items) != 1 || one.Items[0].Run != lyon.ID {
			t.Errorf("--run %s: %+v", lyon.ID, one)
		}

		// The same name again: refused, the first kept.
		if r := st.cli(t, home, nil, "dataset", "create", "capitals", "--runs"); r.code != 1 || !strings.Contains(r.stderr, `dataset "capitals"`) || !strings.Contains(r.stderr, "already exists") {
			t.Errorf("a taken name: exit %d\n%s", r.code, r.stderr)
		}
		if r := st.cli(t, home, nil, "dataset", "create", "none", "--runs", "--workflow", "nope"); r.code != 1 || !strings.Contains(r.stderr, "no recorded run matches") {
			t.Errorf("no run matches: exit %d\n%s", r.code, r.stderr)
		}

		jsonl := writeFile(t, home, "cases.jsonl", `{"input": [{"role": "system", "content": "Answer."}, {"role": "user", "content": "2+2?"}], "ideal": "4"}

{"input": "Capital of Italy?", "ideal": ["Rome", "Roma"], "metadata": {"topic": "geo"}}
`)
		cases := decode[datasetJSON](t, st.must(t, home, nil, "dataset", "create", "cases", "--jsonl", jsonl, "--json"))
		if len(cases.Items) != 2 || cases.Items[0].Run != "" || string(cases.Items[0].Ideal) != `"4"` ||
			!strings.Contains(strings.Join(strings.Fields(string(cases.Items[0].Input)), ""), `"role":"user"`) || cases.Items[1].Metadata["topic"] != "geo" {
			t.Errorf("JSONL dataset: %+v", cases)
		}
		bad := writeFile(t, home, "bad.jsonl", "{\"input\": \"fine\"}\n{\"ideal\": \"no input\"}\n")
		if r := st.cli(t, home, nil, "dataset", "create", "bad", "--jsonl", bad); r.code == 0 || !strings.Contains(r.stderr, "line 2") {
			t.Errorf("a line with no input: exit %d\n%s", r.code, r.stderr)
		}
		type info struct {
			Name  string `json:"name"`
			Items int64  `json:"items"`
		}
		list := decode[[]info](t, st.must(t, home, nil, "dataset", "list", "--json"))
		var names []string
		for _, d := range list {
			names = append(names, fmt.Sprintf("%s:%d", d.Name, d.Items))
		}
		if want := []string{"capitals:2", "one:1", "cases:2"}; !slices.Equal(names, want) {
			t.Errorf("dataset list = %v, want %v", names, want)
		}
		if out := st.must(t, home, nil, "verify"); !strings.Contains(out, "scores          0 scores and 5 dataset items match the 2 events they read") {
			t.Errorf("verify:\n%s", out)
		}
	})
}
