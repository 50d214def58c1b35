package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eval"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/internal/console"
)

// reasoned is a scorer whose reason is hostile text, as a judge model's
// may be: it passes every answer and reads the answer's event.
type reasoned struct{}

func (reasoned) Name() string    { return "reasoned" }
func (reasoned) Version() string { return "1" }
func (reasoned) Score(_ context.Context, in eval.ScoreInput) (eval.Score, error) {
	_, ev, _ := in.Output()
	return eval.Score{Value: 1, Reason: "because " + hostile, Reads: []events.ScoreRead{{Seq: ev.Seq, Leaf: ev.Hash}}}, nil
}

// evalsFixture is what recordEvals recorded.
type evalsFixture struct {
	right, wrong, rerun string // runs: "Paris.", "Lyon", and the right one's case answered "Marseille"
	answer              int64  // seq of the right run's answer, which its scores read
}

// answerRun records one run of the capital question answered with text.
func answerRun(t testing.TB, rt *rath.Runtime, text string) string {
	t.Helper()
	agent, err := flow.NewAgent("Answer briefly.", flow.Scripted(scripted.Entry{Content: text}))
	if err != nil {
		t.Fatal(err)
	}
	in, err := rt.NewUserSession(t.Context(), "The capital of France?")
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Start(t.Context(), "capital", agent, in)
	if err != nil {
		t.Fatal(err)
	}
	return run.ID
}

// recordEvals records, through package eval, the dataset "capitals" of
// two runs, the experiment "baseline" over it, and "candidate", where the
// right run's case is answered by a new, wrong run: that item flips. It
// also records a JSONL dataset whose metadata is hostile.
func recordEvals(t testing.TB, rt *rath.Runtime) evalsFixture {
	t.Helper()
	ctx := t.Context()
	f := evalsFixture{right: answerRun(t, rt, "Paris."), wrong: answerRun(t, rt, "Lyon, I think.")}
	ds, err := eval.CreateFromRuns(ctx, rt, "capitals", eval.RunSelection{Workflow: "capital"})
	if err != nil {
		t.Fatal(err)
	}
	f.rerun = answerRun(t, rt, "Marseille.")
	contains, err := eval.ParseSpec("contains:Paris", eval.SpecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scorers := []eval.Scorer{contains, reasoned{}}
	if _, err := eval.ScoreDataset(ctx, rt, ds, scorers, eval.ScoreOptions{Experiment: "baseline"}); err != nil {
		t.Fatal(err)
	}
	for _, it := range ds.Items {
		run := it.Run
		if run == f.right {
			run = f.rerun
		}
		if _, err := eval.RecordScores(ctx, rt, "candidate", ds, it, run, scorers); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := rt.Store().ReadRun(ctx, f.right)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == events.TypeChunkAppended && strings.Contains(string(ev.Payload), "Paris.") {
			f.answer = ev.Seq
		}
	}
	jsonl := `{"input": "Say hi", "ideal": "hi", "metadata": {"note": ` + jsonString(hostile) + `}}`
	if _, err := eval.CreateFromJSONL(ctx, rt, "cases", strings.NewReader(jsonl)); err != nil {
		t.Fatal(err)
	}
	return f
}

func jsonString(s string) string {
	b, _ := events.Canonical(s)
	return string(b)
}

// checkEvalsAPI reads the Evals endpoints as the page does.
func checkEvalsAPI(t *testing.T, f *fixture, e evalsFixture) {
	t.Helper()
	list := decode[console.DatasetsView](t, f.get(t, "/api/evals/datasets", ""))
	if len(list.Datasets) != 2 || list.Datasets[0].Name != "capitals" || list.Datasets[0].Items != 2 || len(list.Experiments) != 2 {
		t.Fatalf("datasets: %+v", list)
	}
	ds := decode[console.DatasetView](t, f.get(t, "/api/evals/datasets/capitals", ""))
	if len(ds.Items) != 2 || len(ds.Experiments) != 2 || ds.Items[0].Run == "" || ds.Items[0].LastLeaf == "" {
		t.Fatalf("dataset: %+v", ds)
	}
	body := f.get(t, "/api/evals/datasets/cases", "")
	if strings.Contains(body, "<script>") || !strings.Contains(body, `\u003cscript\u003e`) {
		t.Fatalf("hostile metadata not escaped: %s", body)
	}
	body = f.get(t, "/api/evals/experiments/baseline", "")
	if strings.Contains(body, "<script>") {
		t.Fatalf("hostile reason not escaped: %s", body)
	}
	x := decode[console.ExperimentView](t, body)
	if len(x.Scores) != 4 || len(x.Means) != 2 || x.Means[0].Scorer != "contains:Paris" || x.Means[0].Mean != 0.5 {
		t.Fatalf("experiment: %+v", x)
	}
	var read *console.ReadView
	for _, s := range x.Scores {
		if s.Run == e.right && s.Scorer == "contains:Paris" {
			if s.Value != 1 || len(s.Reads) != 1 {
				t.Fatalf("score of the right run: %+v", s)
			}
			read = &s.Reads[0]
		}
	}
	if read == nil || read.Seq != e.answer || read.Run != e.right || read.Type != events.TypeChunkAppended || !read.Matches {
		t.Fatalf("the right run's score read %+v, want seq %d of run %s, matching", read, e.answer, e.right)
	}
	c := decode[console.EvalCompareView](t, f.get(t, "/api/evals/compare?a=baseline&b=candidate", ""))
	if len(c.Flipped) != 1 || c.Flipped[0].Item != e.right || c.Flipped[0].A != 1 || c.Flipped[0].B != 0 ||
		c.RunsA[e.right] != e.right || c.RunsB[e.right] != e.rerun || len(c.Scorers) != 2 || c.Scorers[0].Delta != -0.5 {
		t.Fatalf("compare: %+v", c)
	}
	for _, p := range []string{"/api/evals/datasets/nope", "/api/evals/experiments/nope", "/api/evals/compare?a=baseline&b=nope",
		"/api/evals/datasets/" + url.PathEscape("capitals <b>")} {
		if res, body := f.do(t, "GET", p, nil); res.StatusCode != http.StatusNotFound || !strings.Contains(body, "not found") {
			t.Errorf("GET %s: %s %s", p, res.Status, body)
		}
	}
	if res, _ := f.do(t, "GET", "/api/evals/compare?a=baseline", nil); res.StatusCode != http.StatusBadRequest {
		t.Errorf("compare without b: %s", res.Status)
	}
	if res, _ := f.do(t, "POST", "/api/evals/datasets", map[string]string{console.CSRFHeader: f.csrf}); res.StatusCode < 400 {
		t.Errorf("POST datasets: %s: the console does not record evals", res.Status)
	}
}

func TestEvals_API(t *testing.T) {
	rt := newRuntime(t)
	e := recordEvals(t, rt)
	srv, err := console.New(console.Options{Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	checkEvalsAPI(t, serveFixture(t, srv, rt, e.right), e)
}

func TestPostgres_EvalsAPI(t *testing.T) {
	rt := pgRuntime(t)
	e := recordEvals(t, rt)
	srv, err := console.New(console.Options{Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	checkEvalsAPI(t, serveFixture(t, srv, rt, e.right), e)
}
