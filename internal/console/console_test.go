package console_test

import (
	"bufio"
	"context"
	"database/sql"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/internal/console"
	"github.com/gorath/rath/session"
)

func TestRuns_PagedFilteredWithSummaries(t *testing.T) {
	f := newFixture(t, "")
	second := startRun(t, f.rt, "other", "again")
	third := startRun(t, f.rt, "shouter", "and again")

	all := decode[console.RunsPage](t, f.get(t, "/api/runs", ""))
	if len(all.Runs) != 3 || all.NextBefore != 0 {
		t.Fatalf("want 3 runs on one page, got %d (next %d)", len(all.Runs), all.NextBefore)
	}
	if all.Runs[0].ID != third || all.Runs[2].ID != f.run {
		t.Fatalf("not newest first: %v", []string{all.Runs[0].ID, all.Runs[1].ID, all.Runs[2].ID})
	}
	r := all.Runs[2]
	if r.Status != "done" || r.Workflow != "shouter" || r.ToolCalls != 1 || r.Usage.Calls != 2 || r.Usage.TotalTokens != 74 || r.Events == 0 || r.Input == "" || r.Output == "" {
		t.Fatalf("summary: %+v", r)
	}

	p1 := decode[console.RunsPage](t, f.get(t, "/api/runs?limit=2", ""))
	if len(p1.Runs) != 2 || p1.NextBefore == 0 {
		t.Fatalf("page 1: %+v", p1)
	}
	p2 := decode[console.RunsPage](t, f.get(t, "/api/runs?limit=2&before="+itoa(p1.NextBefore), ""))
	if len(p2.Runs) != 1 || p2.Runs[0].ID != f.run || p2.NextBefore != 0 {
		t.Fatalf("page 2: %+v", p2)
	}

	byName := decode[console.RunsPage](t, f.get(t, "/api/runs?q=other", ""))
	if len(byName.Runs) != 1 || byName.Runs[0].ID != second {
		t.Fatalf("q=other: %+v", byName.Runs)
	}
	// LIKE wildcards are literal.
	if n := len(decode[console.RunsPage](t, f.get(t, "/api/runs?q=%25", "")).Runs); n != 0 {
		t.Fatalf("q=%%: %d runs", n)
	}
	if n := len(decode[console.RunsPage](t, f.get(t, "/api/runs?status=done", "")).Runs); n != 3 {
		t.Fatalf("status=done: %d runs", n)
	}
	if n := len(decode[console.RunsPage](t, f.get(t, "/api/runs?status=running", "")).Runs); n != 0 {
		t.Fatalf("status=running: %d runs", n)
	}
	for _, bad := range []string{"limit=0", "limit=x", "limit=100000", "before=-1"} {
		if res, _ := f.do(t, "GET", "/api/runs?"+bad, nil); res.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %s", bad, res.Status)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestRun_OneAndUnknown(t *testing.T) {
	f := newFixture(t, "")
	v := decode[console.RunView](t, f.get(t, "/api/runs/"+f.run, ""))
	if v.ID != f.run || v.DurationMS < 0 || v.ToolCalls != 1 {
		t.Fatalf("run: %+v", v)
	}
	for _, p := range []string{"/api/runs/run-nope", "/api/runs/run-nope/events", "/api/runs/run-nope/stream", "/api/sessions/s-nope", "/api/graph?run=run-nope", "/api/nothing"} {
		res, body := f.do(t, "GET", p, nil)
		if res.StatusCode != http.StatusNotFound || !strings.Contains(body, `"error"`) {
			t.Errorf("GET %s: %s %s", p, res.Status, body)
		}
	}
}

func TestRunEvents_PagesCoverTheRun(t *testing.T) {
	f := newFixture(t, "")
	want, err := f.rt.Store().ReadRun(context.Background(), f.run)
	if err != nil {
		t.Fatal(err)
	}
	var got []events.Event
	after := int64(0)
	for pages := 0; ; pages++ {
		if pages > len(want) {
			t.Fatal("paging does not end")
		}
		p := decode[console.EventsPage](t, f.get(t, "/api/runs/"+f.run+"/events?limit=3&after="+itoa(after), ""))
		got = append(got, p.Events...)
		if p.NextAfter == 0 {
			break
		}
		if len(p.Events) != 3 || p.NextAfter != p.Events[2].Seq {
			t.Fatalf("page: %d events, next %d", len(p.Events), p.NextAfter)
		}
		after = p.NextAfter
	}
	if len(got) != len(want) {
		t.Fatalf("%d events paged, the run has %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Seq != want[i].Seq || got[i].Hash != want[i].Hash {
			t.Fatalf("event %d: seq %d, want %d", i, got[i].Seq, want[i].Seq)
		}
	}
}

// sse reads Server-Sent Events messages (event name, data) from a stream.
func sse(t *testing.T, res *http.Response) <-chan [2]string {
	t.Helper()
	ch := make(chan [2]string, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var name, data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if name != "" {
					ch <- [2]string{name, data}
				}
				name, data = "", ""
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return ch
}

func next(t *testing.T, ch <-chan [2]string) [2]string {
	t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			t.Fatal("the stream ended")
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10 s")
	}
	return [2]string{}
}

func TestStream_TailsARunningRunUntilItEnds(t *testing.T) {
	f := newFixture(t, "")
	ctx := context.Background()
	g := &gate{open: make(chan struct{})}
	in, err := f.rt.NewUserSession(ctx, "wait")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := f.rt.Start(ctx, "gated", g, in, rath.WithRunID("run-gated"))
		done <- err
	}()
	var before int
	waitFor(t, func() bool {
		v, err := f.rt.Store().ReadRun(ctx, "run-gated")
		before = len(v)
		return err == nil && len(v) > 0 && strings.Contains(string(v[len(v)-1].Payload), "waiting at the gate")
	})
	req, _ := http.NewRequest("GET", f.http.URL+"/api/runs/run-gated/stream", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	ch := sse(t, res)
	var last events.Event
	for i := 0; i < before; i++ {
		m := next(t, ch)
		if m[0] != "event" {
			t.Fatalf("message %v", m)
		}
		last = decode[events.Event](t, m[1])
	}
	// Nothing more until the gate opens; then the new events arrive.
	select {
	case m := <-ch:
		t.Fatalf("a message before the run went on: %v", m)
	case <-time.After(200 * time.Millisecond):
	}
	close(g.open)
	var types []string
	for {
		m := next(t, ch)
		if m[0] == "end" {
			break
		}
		ev := decode[events.Event](t, m[1])
		if ev.Seq <= last.Seq {
			t.Fatalf("seq %d after %d", ev.Seq, last.Seq)
		}
		if strings.Contains(m[1], "<script>") || strings.Contains(m[1], "\x1b") {
			t.Fatalf("raw markup or escape in a stream message: %s", m[1])
		}
		last = ev
		types = append(types, ev.Type)
	}
	if types[len(types)-1] != events.TypeRunFinished {
		t.Fatalf("types %v", types)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A reconnect with Last-Event-ID resumes after it: only the end.
	req, _ = http.NewRequest("GET", f.http.URL+"/api/runs/run-gated/stream", nil)
	req.Header.Set("Last-Event-ID", itoa(last.Seq-1))
	res2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res2.Body.Close()
	ch2 := sse(t, res2)
	if m := next(t, ch2); m[0] != "event" || decode[events.Event](t, m[1]).Seq != last.Seq {
		t.Fatalf("resumed with %v", m)
	}
	if m := next(t, ch2); m[0] != "end" {
		t.Fatalf("then %v", m)
	}
	// After the end of a finished run: only the end, at once.
	res3, err := http.Get(f.http.URL + "/api/runs/run-gated/stream?after=" + itoa(last.Seq))
	if err != nil {
		t.Fatal(err)
	}
	defer res3.Body.Close()
	if m := next(t, sse(t, res3)); m[0] != "end" {
		t.Fatalf("after the end: %v", m)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSession_TranscriptWithToolsAndHostileTextEscaped(t *testing.T) {
	f := newFixture(t, "")
	run := decode[console.RunView](t, f.get(t, "/api/runs/"+f.run, ""))
	body := f.get(t, "/api/sessions/"+run.Output, "")
	for _, raw := range []string{"<script>", "<img", "\x1b"} {
		if strings.Contains(body, raw) {
			t.Fatalf("the JSON holds %q unescaped", raw)
		}
	}
	if !strings.Contains(body, `\u003cscript\u003ealert(1)\u003c/script\u003e`) || !strings.Contains(body, `\u001b[31m`) {
		t.Fatalf("the hostile text is not there, escaped:\n%s", body)
	}
	v := decode[console.ShowView](t, body)
	var calls, results int
	for _, c := range v.Chunks {
		calls += len(c.ToolCalls)
		if c.Role == events.RoleToolResult && c.ToolCallID == "c1" && strings.Contains(c.Content, hostile) {
			results++
		}
	}
	if calls != 1 || results != 1 || v.Chunks[len(v.Chunks)-1].Content != "Done. "+hostile {
		t.Fatalf("transcript: %+v", v.Chunks)
	}
	if v.Session.Usage.Calls != 2 || v.Session.ID != run.Output {
		t.Fatalf("session: %+v", v.Session)
	}
}

func TestGraph_RunAndWhole(t *testing.T) {
	f := newFixture(t, "")
	ctx := context.Background()
	in, _ := f.rt.NewUserSession(ctx, "fork me")
	g := &gate{open: make(chan struct{})}
	close(g.open)
	run, err := f.rt.Start(ctx, "gated", g, in)
	if err != nil {
		t.Fatal(err)
	}
	v := decode[console.GraphView](t, f.get(t, "/api/graph?run="+run.ID, ""))
	if len(v.Nodes) != 2 || len(v.Edges) != 1 || v.Edges[0].Parent != in.ID() || v.Edges[0].Child != run.Output.ID() || v.Edges[0].Kind != "fork" {
		t.Fatalf("graph: %+v", v)
	}
	for _, n := range v.Nodes {
		if n.InRun != (n.ID == run.Output.ID()) {
			t.Fatalf("in_run of %s: %v", n.ID, n.InRun)
		}
	}
	whole := decode[console.GraphView](t, f.get(t, "/api/graph", ""))
	if len(whole.Nodes) < 3 || len(whole.Edges) != 1 {
		t.Fatalf("whole graph: %+v", whole)
	}
}

func TestReplayAndVerify_Verdicts(t *testing.T) {
	f := newFixture(t, "")
	res, body := f.post(t, "/api/runs/"+f.run+"/replay")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("replay: %s %s", res.Status, body)
	}
	rep := decode[console.ReplayView](t, body)
	if !rep.OK || rep.Matched != rep.Recorded || rep.Recorded == 0 || rep.Divergence != nil {
		t.Fatalf("replay: %s", body)
	}
	res, body = f.post(t, "/api/verify")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("verify: %s %s", res.Status, body)
	}
	v := decode[console.VerifyView](t, body)
	if !v.OK || v.Head == "" || v.Projections == nil {
		t.Fatalf("verify: %s", body)
	}
	// A workflow this runtime cannot rebuild (a program's Go code, run by
	// another runtime on the same store) is a clear refusal.
	dir := t.TempDir()
	rec, err := rath.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	in, err := rec.NewUserSession(t.Context(), "go code")
	if err != nil {
		t.Fatal(err)
	}
	run, err := rec.Start(t.Context(), "appender", appender{"text"}, in)
	if err != nil {
		t.Fatal(err)
	}
	rec.Close()
	fresh, err := rath.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	srv, err := console.New(console.Options{Runtime: fresh})
	if err != nil {
		t.Fatal(err)
	}
	g := serveFixture(t, srv, fresh, run.ID)
	if res, body := g.post(t, "/api/runs/"+run.ID+"/replay"); res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "cannot rebuild") || !strings.Contains(body, "appender") {
		t.Fatalf("a program's workflow: %s %s", res.Status, body)
	}
}

// appender appends one assistant chunk.
type appender struct{ text string }

func (a appender) Forward(ctx context.Context, s *session.Session) (*session.Session, error) {
	return s.Append(ctx, session.Chunk{Role: events.RoleAssistant, Content: a.text})
}

func TestReplay_DivergenceHasSeqWantGot(t *testing.T) {
	rt := newRuntime(t)
	// Replay with changed code: the runtime rebuilds the run with the
	// text changed.
	rt.RegisterBuilder("appender", func(context.Context, *rath.Runtime, map[string]string, rath.Mode) (flow.Workflow, error) {
		return appender{"changed"}, nil
	})
	ctx := context.Background()
	in, err := rt.NewUserSession(ctx, "diverge")
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Start(ctx, "appender", appender{"recorded <b>text</b>"}, in)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := console.New(console.Options{Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	f := serveFixture(t, srv, rt, run.ID)
	res, body := f.post(t, "/api/runs/"+run.ID+"/replay")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("replay: %s %s", res.Status, body)
	}
	rep := decode[console.ReplayView](t, body)
	d := rep.Divergence
	if rep.OK || d == nil || d.Seq == 0 || !strings.Contains(d.Want, "recorded") || !strings.Contains(d.Got, "changed") {
		t.Fatalf("divergence: %s", body)
	}
	if strings.Contains(body, "<b>") {
		t.Fatal("markup unescaped in the JSON")
	}
}

func TestDossier_Download(t *testing.T) {
	f := newFixture(t, "")
	res, body := f.do(t, "GET", "/api/runs/"+f.run+"/dossier", nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("dossier: %s %.300s", res.Status, body)
	}
	if cd := res.Header.Get("Content-Disposition"); cd != `attachment; filename="dossier-`+f.run+`.html"` {
		t.Fatalf("Content-Disposition %q", cd)
	}
	if !strings.Contains(body, "</html>") || !strings.Contains(body, f.run) || strings.Contains(body, "<script>alert(1)") {
		t.Fatalf("dossier body: %.300s", body)
	}
}

func TestWorkersAndMemory(t *testing.T) {
	f := newFixture(t, "")
	if v := decode[console.WorkersView](t, f.get(t, "/api/workers", "")); v.Workers == nil {
		t.Fatal("workers: null")
	}
	mem, err := f.rt.Memory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Remember(context.Background(), "notes", "the deploy key rotates on mondays "+hostile, nil); err != nil {
		t.Fatal(err)
	}
	body := f.get(t, "/api/memory/search?ns=notes&q=deploy+key", "")
	v := decode[console.MemoryView](t, body)
	if len(v.Hits) != 1 || !strings.Contains(v.Hits[0].Text, "mondays") || strings.Contains(body, "<script>") {
		t.Fatalf("memory: %s", body)
	}
	if res, _ := f.do(t, "GET", "/api/memory/search?ns=notes", nil); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("no q: %s", res.Status)
	}
}

// Every route of the API is documented in docs/openapi.yaml.
func TestOpenAPI_DocumentsEveryRoute(t *testing.T) {
	doc, err := os.ReadFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("server.go")
	if err != nil {
		t.Fatal(err)
	}
	routes := regexp.MustCompile(`\{"(GET|POST) (/api/[^"]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(routes) < 10 {
		t.Fatalf("found %d routes in server.go", len(routes))
	}
	for _, r := range routes {
		method, path := strings.ToLower(r[1]), r[2]
		i := strings.Index(string(doc), "\n  "+path+":\n")
		if i < 0 {
			t.Errorf("docs/openapi.yaml lacks %s", path)
			continue
		}
		rest := string(doc[i+1:])
		if j := strings.Index(rest[3:], "\n  /"); j >= 0 {
			rest = rest[:j+3]
		}
		if !strings.Contains(rest, "\n    "+method+":") {
			t.Errorf("docs/openapi.yaml lacks %s %s", r[1], path)
		}
	}
}

// A store whose projections differ from its log fails verification: the
// verdict names the table.
func TestVerify_FailureNamesTheTable(t *testing.T) {
	f := newFixture(t, "")
	db, err := sql.Open("sqlite", filepath.Join(f.rt.Dir(), rath.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE runs SET workflow = 'tampered' WHERE id = ?`, f.run); err != nil {
		t.Fatal(err)
	}
	res, body := f.post(t, "/api/verify")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("verify: %s %s", res.Status, body)
	}
	v := decode[console.VerifyView](t, body)
	if v.OK || v.FailedTable != "runs" || v.Failure == "" {
		t.Fatalf("verify of a tampered store: %s", body)
	}
}

// The runs list shows each run's models and, with a price table, its
// cost, and no content (not its prompt: the list records no read);
// counts per status; ?since= limits by start time.
func TestRuns_ModelsCostCountsSinceNoContent(t *testing.T) {
	rt := newRuntime(t)
	run := startRun(t, rt, "shouter", "Shout this\nsecond line "+hostile)
	bare, err := console.New(console.Options{Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	f := serveFixture(t, bare, rt, run)
	body := f.get(t, "/api/runs", "")
	if strings.Contains(body, "Shout this") {
		t.Fatalf("the list shows the run's prompt: %s", body)
	}
	page := decode[console.RunsPage](t, body)
	if len(page.Runs) != 1 || len(page.Runs[0].Models) != 1 || page.Runs[0].Cost != nil || page.Priced {
		t.Fatalf("without prices: %+v", page)
	}
	if page.Counts["done"] != 1 {
		t.Fatalf("counts = %v", page.Counts)
	}
	mdl := page.Runs[0].Models[0]
	priced, err := console.New(console.Options{Runtime: rt, Prices: map[string]flow.ModelPrice{mdl: {InputPerMTok: 1000, OutputPerMTok: 2000}}})
	if err != nil {
		t.Fatal(err)
	}
	g := serveFixture(t, priced, rt, run)
	page = decode[console.RunsPage](t, g.get(t, "/api/runs", ""))
	// Two calls of 30 prompt and 7 completion tokens.
	if c := page.Runs[0].Cost; c == nil || *c < 0.0879 || *c > 0.0881 || !page.Priced {
		t.Fatalf("cost = %v (%+v)", c, page.Runs[0])
	}
	later := console.Options{Runtime: rt, Now: func() time.Time { return time.Now().Add(48 * time.Hour) }}
	ls, err := console.New(later)
	if err != nil {
		t.Fatal(err)
	}
	h := serveFixture(t, ls, rt, run)
	if p := decode[console.RunsPage](t, h.get(t, "/api/runs?since=1d", "")); len(p.Runs) != 0 || p.Counts["done"] != 0 {
		t.Fatalf("since=1d two days later: %+v", p)
	}
	if p := decode[console.RunsPage](t, h.get(t, "/api/runs?since=72h", "")); len(p.Runs) != 1 {
		t.Fatalf("since=72h: %+v", p)
	}
	for _, bad := range []string{"since=x", "since=-1h", "since=0d"} {
		if res, _ := h.do(t, "GET", "/api/runs?"+bad, nil); res.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %s", bad, res.Status)
		}
	}
}
