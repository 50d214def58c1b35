package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/internal/console"
	"github.com/gorath/rath/session"
)

// hostile is model text that must reach every page as text: markup and
// a terminal escape.
const hostile = "<script>alert(1)</script> \x1b[31mred\x1b[0m <img src=x onerror=alert(2)>"

// shoutArgs are the arguments of the shout tool.
type shoutArgs struct {
	Text string `json:"text"`
}

// newAgent is a scripted agent that calls the shout tool once, then
// answers with hostile text; opts add to it (an approval policy).
func newAgent(t testing.TB, opts ...flow.AgentOption) *flow.Agent {
	t.Helper()
	shout, err := flow.NewTool("shout", "Upper-cases text.", func(ctx context.Context, s *session.Session, a shoutArgs) (string, error) {
		return strings.ToUpper(a.Text) + " " + hostile, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	u := events.Usage{PromptTokens: 30, CompletionTokens: 7, TotalTokens: 37}
	p := flow.Scripted(
		scripted.Entry{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "shout", Arguments: `{"text":"hi <b>there</b>"}`}}, Usage: &u},
		scripted.Entry{Content: "Done. " + hostile, Usage: &u},
	)
	a, err := flow.NewAgent("Use the tool.", p, append([]flow.AgentOption{flow.WithTools(shout)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// gate is a workflow that forks its input, then waits for open before it
// appends a last chunk: a run that is running while a test watches it.
type gate struct {
	open chan struct{}
}

func (g *gate) Forward(ctx context.Context, s *session.Session) (*session.Session, error) {
	f, err := s.Fork(ctx)
	if err != nil {
		return nil, err
	}
	f, err = f.Append(ctx, session.Chunk{Role: events.RoleAssistant, Content: "waiting at the gate"})
	if err != nil {
		return nil, err
	}
	select {
	case <-g.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return f.Append(ctx, session.Chunk{Role: events.RoleAssistant, Content: "through the gate " + hostile})
}

type fixture struct {
	rt   *rath.Runtime
	srv  *console.Server
	http *httptest.Server
	run  string // a finished run: agent with one tool call
	csrf string
}

func newRuntime(t testing.TB) *rath.Runtime {
	t.Helper()
	rt, err := rath.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// startRun records one finished run of the scripted agent.
func startRun(t testing.TB, rt *rath.Runtime, name, input string) string {
	t.Helper()
	ctx := context.Background()
	s, err := rt.NewUserSession(ctx, input)
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Start(ctx, name, newAgent(t), s)
	if err != nil {
		t.Fatal(err)
	}
	return run.ID
}

func newFixture(t *testing.T, token string) *fixture {
	t.Helper()
	rt := newRuntime(t)
	run := startRun(t, rt, "shouter", "Shout "+hostile)
	srv, err := console.New(console.Options{Runtime: rt, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return serveFixtureToken(t, srv, rt, run, token)
}

// serveFixture serves srv over rt, whose recorded run is run.
func serveFixture(t *testing.T, srv *console.Server, rt *rath.Runtime, run string) *fixture {
	return serveFixtureToken(t, srv, rt, run, "")
}

func serveFixtureToken(t *testing.T, srv *console.Server, rt *rath.Runtime, run, token string) *fixture {
	t.Helper()
	f := &fixture{rt: rt, srv: srv, run: run, http: httptest.NewServer(srv)}
	t.Cleanup(func() { srv.Close(); f.http.Close() })
	f.csrf = csrfOf(t, f.get(t, "/", token))
	return f
}

var csrfMeta = regexp.MustCompile(`<meta name="rath-csrf" content="([0-9a-f]{64})">`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfMeta.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF value in the page:\n%s", page)
	}
	return m[1]
}

// do sends a request with headers and returns the response and its body.
func (f *fixture) do(t *testing.T, method, path string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, f.http.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

// get fetches path (with the token as Bearer, if any) and wants a 200.
func (f *fixture) get(t *testing.T, path, token string) string {
	t.Helper()
	h := map[string]string{}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	res, body := f.do(t, "GET", path, h)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", path, res.Status, body)
	}
	return body
}

// post sends a write as the console's page does.
func (f *fixture) post(t *testing.T, path string) (*http.Response, string) {
	t.Helper()
	return f.do(t, "POST", path, map[string]string{console.CSRFHeader: f.csrf, "Origin": f.http.URL, "Sec-Fetch-Site": "same-origin"})
}

// postJSON sends a write with a JSON body as the console's page does.
func (f *fixture) postJSON(t *testing.T, path, body string, csrf bool) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("POST", f.http.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if csrf {
		req.Header.Set(console.CSRFHeader, f.csrf)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

func decode[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("not the expected JSON: %v\n%s", err, body)
	}
	return v
}

// outputOf is a run's output session.
func outputOf(t *testing.T, rt *rath.Runtime, id string) string {
	t.Helper()
	row, err := rt.Reader().Run(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return row.OutputSession
}

// unnamedRun records a run whose provider names no model (as a cassette
// run of `rath run` does): only its label, "scripted".
func unnamedRun(t *testing.T, rt *rath.Runtime) string {
	t.Helper()
	p, err := flow.ResolveProvider(flow.Provider{Vendor: flow.VendorScripted, Client: scripted.New(scripted.Entry{Content: "hello"})},
		flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "-"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := flow.NewAgent("Say hello.", p)
	if err != nil {
		t.Fatal(err)
	}
	in, err := rt.NewUserSession(t.Context(), "greet")
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Start(t.Context(), "greeter", a, in)
	if err != nil {
		t.Fatal(err)
	}
	return run.ID
}
