package modeltest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
)

// What the conformance suite configures its clients with.
const (
	// Key is the API key. The scripted failures echo it back where a real
	// server might ("Incorrect API key provided: sk-..."), so the leak
	// checks can fail; a Vendor's own ErrorCases should do the same.
	Key = "sk-rath-conformance-KEY-0123456789abcdef"
	// Model is the configured model; OtherModel is the one a request
	// names to override it.
	Model      = "conformance-model"
	OtherModel = "conformance-other-model"
)

// ClientConfig is what Vendor.NewClient builds a client from.
type ClientConfig struct {
	BaseURL    string       // Server.URL of the vendor's fake
	APIKey     string       // Key, or empty
	Model      string       // Model, or empty (then every request must fail as bad_request)
	HTTPClient *http.Client // nil, or a client with a Timeout
}

// Vendor describes a model client for [Conformance]: how to build it
// against its fake server, and where its wire format legitimately differs
// from the others'.
type Vendor struct {
	// Name is the Provider field of the client's errors.
	Name string
	// NewServer starts the vendor's fake, like [NewOpenAI].
	NewServer func(testing.TB) *Server
	// NewClient builds the client under test. It must also implement
	// model.Streamer.
	NewClient func(ClientConfig) model.Client
	// FinishStop and FinishToolCalls are the finish reasons the API
	// reports for a text answer and for one with tool calls.
	FinishStop, FinishToolCalls string
	// Header holds headers a request must carry with exactly these values
	// (the key in the vendor's header, a version header); an empty value
	// means the header must not be sent.
	Header map[string]string
	// Wire is the expected request body of each Scenario; every scenario
	// must be described.
	Wire map[Scenario]Fields
	// Errors are failures in the vendor's own wire format (error events
	// inside a stream, a stream missing its terminator), checked like the
	// shared ones, key leak included.
	Errors []ErrorCase
}

// Scenario names a request the suite sends; Vendor.Wire says how it looks
// on the wire.
type Scenario string

// The scenarios. Unless said otherwise a request is a Complete call with
// one user message "hi", the configured Model and nothing else.
const (
	WirePlain Scenario = "plain"
	// WireRoundTrip is the second request of the tool round trip: system
	// "You are terse.", memory "The user likes cats.", summary "We
	// discussed the weather.", user "Count cats and dogs.", the assistant
	// answer "Checking both." with calls call_a search {"q":"cats"} and
	// call_b search {"q":"dogs"}, then their results "3 cats" and
	// "timeout" (the second with Meta error_kind=timeout), with the tool
	// of SearchTool.
	WireRoundTrip Scenario = "round trip"
	// The tool choice scenarios offer one tool named "lookup" without
	// description or parameters; WireToolChoiceNoneNoTools offers none.
	WireToolChoiceAuto        Scenario = "tool choice auto"
	WireToolChoiceRequired    Scenario = "tool choice required"
	WireToolChoiceNone        Scenario = "tool choice none"
	WireToolChoiceNoneNoTools Scenario = "tool choice none without tools"
	WireToolChoiceForced      Scenario = "tool choice forced"
	// WireSampling sets Temperature 0.25, TopP 0.5, MaxTokens 64, Seed 7
	// and Stop ["END"].
	WireSampling Scenario = "sampling"
	// WireZeroTemperature sets an explicit Temperature of 0, which must be
	// sent, not dropped as a zero value.
	WireZeroTemperature Scenario = "zero temperature"
	// WireStream is the plain request made with Stream.
	WireStream Scenario = "stream"
)

var scenarios = []Scenario{WirePlain, WireRoundTrip, WireToolChoiceAuto, WireToolChoiceRequired, WireToolChoiceNone,
	WireToolChoiceNoneNoTools, WireToolChoiceForced, WireSampling, WireZeroTemperature, WireStream}

// Fields maps top-level fields of a request body to the JSON expected
// there, compared after decoding (so spacing and key order do not
// matter), or to Absent. Fields not named are not checked.
type Fields map[string]string

// Absent, as a value in Fields, means the field must not be sent.
const Absent = "(absent)"

// SearchTool is the tool of the tool-call scenarios.
var SearchTool = model.ToolSpec{Name: "search", Description: "Search the zoo.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}`)}

// ErrorCase is a failure the fake is scripted to produce and the error the
// client must return for it.
type ErrorCase struct {
	Name       string
	Reply      Reply
	Stream     bool // call Stream instead of Complete
	Kind       model.ErrorKind
	Status     int           // the error's StatusCode
	RetryAfter time.Duration // the error's RetryAfter
}

// sharedErrors are failures every vendor's fake renders in its own format.
var sharedErrors = []ErrorCase{
	{"429 seconds", Reply{Status: 429, RetryAfter: "2", Message: "Rate limit reached for " + Key}, false, model.KindRateLimit, 429, 2 * time.Second},
	{"429 fractional seconds stream", Reply{Status: 429, RetryAfter: "1.5"}, true, model.KindRateLimit, 429, 1500 * time.Millisecond},
	{"429 no header", Reply{Status: 429}, false, model.KindRateLimit, 429, 0},
	{"500", Reply{Status: 500, Message: "boom " + Key}, false, model.KindServer, 500, 0},
	{"503 with Retry-After stream", Reply{Status: 503, RetryAfter: "3"}, true, model.KindServer, 503, 3 * time.Second},
	{"502 html", Reply{Status: 502, Raw: "<html>bad gateway " + Key + "</html>"}, false, model.KindServer, 502, 0},
	{"401", Reply{Status: 401, Message: "Incorrect API key provided: " + Key}, false, model.KindAuth, 401, 0},
	{"403 stream", Reply{Status: 403, Message: "forbidden"}, true, model.KindAuth, 403, 0},
	{"400", Reply{Status: 400, Message: "context too long"}, false, model.KindBadRequest, 400, 0},
	{"404", Reply{Status: 404, Message: "no such model"}, false, model.KindBadRequest, 404, 0},
	{"422 stream", Reply{Status: 422, Message: "unprocessable"}, true, model.KindBadRequest, 422, 0},
	{"malformed JSON", Reply{Raw: `{"id": "x", "choices": oops ` + Key}, false, model.KindMalformed, 0, 0},
	{"JSON body cut", Reply{Content: "a long answer", CutAfter: 20}, false, model.KindConnection, 0, 0},
	{"stream cut", Reply{Content: "a long answer that is cut", CutAfter: 4}, true, model.KindConnection, 0, 0},
}

// Conformance runs the behaviour every model client must share against
// the vendor's fake server, one subtest each: completion, tool calls and
// their round trip, tool choice, requests refused before sending,
// sampling, error kinds, cancellation, timeouts, connection failures, the
// key never leaking, and streaming.
func Conformance(t *testing.T, v Vendor) {
	t.Helper()
	checkVendor(t, v)
	s := suite{v}
	tests := []struct {
		name string
		run  func(*testing.T)
	}{
		{"CompleteText", s.completeText},
		{"RequestModelOverridesConfig", s.modelOverride},
		{"ToolCallsAndRoundTrip", s.toolCalls},
		{"ToolChoice", s.toolChoice},
		{"InvalidRequestsFailBeforeSending", s.invalidRequests},
		{"Sampling", s.sampling},
		{"ErrorKinds", s.errorKinds},
		{"RetryAfterHTTPDate", s.retryAfterDate},
		{"Cancel", s.cancel},
		{"Timeouts", s.timeouts},
		{"ConnectionRefused", s.connectionRefused},
		{"KeyNeverLeaks", s.keyNeverLeaks},
		{"StreamAssembly", s.streamAssembly},
		{"StreamNilCallback", s.streamNilCallback},
		{"StreamAndCompleteAgree", s.streamAgrees},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

// checkVendor fails early on an incomplete description, so a missing
// scenario is not silently left unchecked.
func checkVendor(t *testing.T, v Vendor) {
	t.Helper()
	if v.Name == "" || v.NewServer == nil || v.NewClient == nil || v.FinishStop == "" || v.FinishToolCalls == "" {
		t.Fatalf("modeltest: Vendor %q lacks Name, NewServer, NewClient or a finish reason", v.Name)
	}
	for _, sc := range scenarios {
		if _, ok := v.Wire[sc]; !ok {
			t.Errorf("modeltest: Vendor %s has no Wire for scenario %q", v.Name, sc)
		}
	}
	for sc := range v.Wire {
		if !slices.Contains(scenarios, sc) {
			t.Errorf("modeltest: Vendor %s describes unknown scenario %q", v.Name, sc)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

type suite struct{ v Vendor }

// setup starts a fake with replies queued and a client for it.
func (s suite) setup(t *testing.T, replies ...Reply) (*Server, model.Client) {
	t.Helper()
	srv := s.v.NewServer(t)
	srv.Push(replies...)
	return srv, s.v.NewClient(ClientConfig{BaseURL: srv.URL(), APIKey: Key, Model: Model})
}

func streamer(t *testing.T, c model.Client) model.Streamer {
	t.Helper()
	st, ok := c.(model.Streamer)
	if !ok {
		t.Fatalf("%T does not implement model.Streamer", c)
	}
	return st
}

func userReq(text string) model.Request {
	return model.Request{Messages: []model.Message{{Role: events.RoleUser, Content: text}}}
}

// call makes one call the plain way, streamed or not.
func call(ctx context.Context, t *testing.T, c model.Client, stream bool, req model.Request) (model.Response, error) {
	t.Helper()
	if stream {
		return streamer(t, c).Stream(ctx, req, func(model.Delta) {})
	}
	return c.Complete(ctx, req)
}

// body decodes the n-th request the server received.
func body(t *testing.T, srv *Server, n int) map[string]any {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) <= n {
		t.Fatalf("server got %d requests, want more than %d", len(reqs), n)
	}
	var m map[string]any
	if err := reqs[n].Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// checkWire compares the n-th request body with the vendor's description
// of the scenario.
func (s suite) checkWire(t *testing.T, srv *Server, n int, sc Scenario) {
	t.Helper()
	got := body(t, srv, n)
	for field, want := range s.v.Wire[sc] {
		value, ok := got[field]
		if want == Absent {
			if ok {
				t.Errorf("%s: %s = %v, want absent", sc, field, value)
			}
			continue
		}
		var w any
		if err := json.Unmarshal([]byte(want), &w); err != nil {
			t.Fatalf("modeltest: Vendor %s, scenario %q, field %s: expected value is not JSON: %v", s.v.Name, sc, field, err)
		}
		if !ok {
			t.Errorf("%s: %s absent, want %s", sc, field, want)
			continue
		}
		if diff := cmp.Diff(w, value); diff != "" {
			t.Errorf("%s: %s (-want +got):\n%s", sc, field, diff)
		}
	}
}

func (s suite) completeText(t *testing.T) {
	srv, c := s.setup(t, Reply{Content: "Hello there.", Model: Model + "-2026",
		Usage: events.Usage{PromptTokens: 12, CompletionTokens: 3}})
	got, err := c.Complete(t.Context(), userReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	want := model.Response{Content: "Hello there.", FinishReason: s.v.FinishStop, Model: Model + "-2026",
		Usage: events.Usage{PromptTokens: 12, CompletionTokens: 3, TotalTokens: 15, Calls: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("response (-want +got):\n%s", diff)
	}
	h := srv.Requests()[0].Header
	for name, want := range s.v.Header {
		if got := h.Get(name); got != want {
			t.Errorf("header %s = %q, want %q", name, got, want)
		}
	}
	s.checkWire(t, srv, 0, WirePlain)
}

func (s suite) modelOverride(t *testing.T) {
	srv, c := s.setup(t, Reply{Content: "ok"})
	req := userReq("hi")
	req.Model = OtherModel
	got, err := c.Complete(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if w := body(t, srv, 0)["model"]; w != OtherModel || got.Model != OtherModel {
		t.Fatalf("model sent %v, reported %q, want %s", w, got.Model, OtherModel)
	}
}

func (s suite) toolCalls(t *testing.T) {
	calls := []events.ToolCall{
		{ID: "call_a", Name: "search", Arguments: `{"q":"cats"}`},
		{ID: "call_b", Name: "search", Arguments: `{"q":"dogs"}`},
	}
	usage := events.Usage{PromptTokens: 40, CompletionTokens: 20}
	t.Run("tool calls only", func(t *testing.T) {
		// A tool-only answer has no text: OpenAI sends "content": null,
		// Anthropic no text block; both are "".
		_, c := s.setup(t, Reply{ToolCalls: calls, Usage: usage})
		got, err := c.Complete(t.Context(), model.Request{Messages: userReq("Count cats and dogs.").Messages, Tools: []model.ToolSpec{SearchTool}})
		if err != nil {
			t.Fatal(err)
		}
		want := model.Response{ToolCalls: calls, FinishReason: s.v.FinishToolCalls, Model: Model,
			Usage: events.Usage{PromptTokens: 40, CompletionTokens: 20, TotalTokens: 60, Calls: 1}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("response (-want +got):\n%s", diff)
		}
	})
	t.Run("round trip", func(t *testing.T) {
		srv, c := s.setup(t, Reply{Content: "Checking both.", ToolCalls: calls, Usage: usage},
			Reply{Content: "3 cats; the dog count failed."})
		msgs := []model.Message{
			{Role: events.RoleSystem, Content: "You are terse."},
			{Role: events.RoleMemory, Content: "The user likes cats."},
			{Role: events.RoleSummary, Content: "We discussed the weather."},
			{Role: events.RoleUser, Content: "Count cats and dogs."},
		}
		first, err := c.Complete(t.Context(), model.Request{Messages: msgs, Tools: []model.ToolSpec{SearchTool}})
		if err != nil {
			t.Fatal(err)
		}
		want := model.Response{Content: "Checking both.", ToolCalls: calls, FinishReason: s.v.FinishToolCalls, Model: Model,
			Usage: events.Usage{PromptTokens: 40, CompletionTokens: 20, TotalTokens: 60, Calls: 1}}
		if diff := cmp.Diff(want, first); diff != "" {
			t.Fatalf("first response (-want +got):\n%s", diff)
		}
		msgs = append(msgs,
			model.Message{Role: events.RoleAssistant, Content: first.Content, ToolCalls: first.ToolCalls},
			model.Message{Role: events.RoleToolResult, ToolCallID: "call_a", Name: "search", Content: "3 cats"},
			model.Message{Role: events.RoleToolResult, ToolCallID: "call_b", Name: "search", Content: "timeout",
				Meta: map[string]string{"error_kind": "timeout"}},
		)
		second, err := c.Complete(t.Context(), model.Request{Messages: msgs, Tools: []model.ToolSpec{SearchTool}})
		if err != nil {
			t.Fatal(err)
		}
		if second.Content != "3 cats; the dog count failed." || second.FinishReason != s.v.FinishStop || second.ToolCalls != nil {
			t.Fatalf("second response %+v", second)
		}
		s.checkWire(t, srv, 1, WireRoundTrip)
	})
}

func (s suite) toolChoice(t *testing.T) {
	lookup := []model.ToolSpec{{Name: "lookup"}}
	tests := []struct {
		sc     Scenario
		tools  []model.ToolSpec
		choice string
	}{
		{WireToolChoiceAuto, lookup, model.ToolChoiceAuto},
		{WireToolChoiceRequired, lookup, model.ToolChoiceRequired},
		{WireToolChoiceNone, lookup, model.ToolChoiceNone},
		{WireToolChoiceNoneNoTools, nil, model.ToolChoiceNone},
		{WireToolChoiceForced, lookup, "lookup"},
	}
	for _, tt := range tests {
		t.Run(string(tt.sc), func(t *testing.T) {
			srv, c := s.setup(t, Reply{Content: "ok"})
			req := userReq("hi")
			req.Tools, req.ToolChoice = tt.tools, tt.choice
			if _, err := c.Complete(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			s.checkWire(t, srv, 0, tt.sc)
		})
	}
}

func (s suite) invalidRequests(t *testing.T) {
	msgs := userReq("x").Messages
	tests := []struct {
		name  string
		model string // the configured model
		req   model.Request
	}{
		{"unknown forced tool", Model, model.Request{Messages: msgs, Tools: []model.ToolSpec{{Name: "a"}}, ToolChoice: "b"}},
		{"required without tools", Model, model.Request{Messages: msgs, ToolChoice: model.ToolChoiceRequired}},
		{"schema not JSON", Model, model.Request{Messages: msgs, Tools: []model.ToolSpec{{Name: "a", Parameters: json.RawMessage(`{`)}}}},
		{"tool without name", Model, model.Request{Messages: msgs, Tools: []model.ToolSpec{{Description: "nameless"}}}},
		{"unknown role", Model, model.Request{Messages: []model.Message{{Role: "wizard", Content: "x"}}}},
		{"tool result without id", Model, model.Request{Messages: []model.Message{{Role: events.RoleToolResult, Content: "x"}}}},
		{"no model", "", model.Request{Messages: msgs}},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", tt.name, stream), func(t *testing.T) {
				srv := s.v.NewServer(t)
				c := s.v.NewClient(ClientConfig{BaseURL: srv.URL(), APIKey: Key, Model: tt.model})
				_, err := call(t.Context(), t, c, stream, tt.req)
				if got := model.KindOf(err); got != model.KindBadRequest {
					t.Fatalf("kind = %q (%v), want bad_request", got, err)
				}
				if n := len(srv.Requests()); n != 0 {
					t.Fatalf("%d requests sent, want 0", n)
				}
			})
		}
	}
}

func ptr[T any](v T) *T { return &v }

func (s suite) sampling(t *testing.T) {
	tests := []struct {
		sc       Scenario
		sampling model.Sampling
	}{
		{WireSampling, model.Sampling{Temperature: ptr(0.25), TopP: ptr(0.5), MaxTokens: 64, Seed: ptr(7), Stop: []string{"END"}}},
		{WireZeroTemperature, model.Sampling{Temperature: ptr(0.0)}},
	}
	for _, tt := range tests {
		t.Run(string(tt.sc), func(t *testing.T) {
			srv, c := s.setup(t, Reply{Content: "ok"})
			req := userReq("hi")
			req.Sampling = tt.sampling
			if _, err := c.Complete(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			s.checkWire(t, srv, 0, tt.sc)
		})
	}
}
