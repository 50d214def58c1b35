package modeltest_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model/modeltest"
)

// recorder is a testing.TB that collects Errorf calls instead of failing.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func post(t *testing.T, url, body string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header
}

func TestServer_EmptyQueueAndWrongPathFailTheTest(t *testing.T) {
	rec := &recorder{TB: t}
	srv := modeltest.NewOpenAI(rec)
	if status, _, _ := post(t, srv.URL()+"/chat/completions", `{"model":"m"}`); status != 500 {
		t.Errorf("empty queue: status %d, want 500", status)
	}
	if status, _, _ := post(t, srv.URL()+"/completions", `{}`); status != 404 {
		t.Errorf("wrong path: status %d, want 404", status)
	}
	if len(rec.errs) != 2 || !strings.Contains(rec.errs[0], "no reply queued") || !strings.Contains(rec.errs[1], "/v1/completions") {
		t.Fatalf("reported %q", rec.errs)
	}
}

func TestServer_RecordsRequestsInOrder(t *testing.T) {
	srv := modeltest.NewAnthropic(t)
	srv.Push(modeltest.Reply{Content: "a"}, modeltest.Reply{Content: "b"}, modeltest.Reply{Content: "c"})
	post(t, srv.URL()+"/v1/messages", `{"model":"m1"}`)
	post(t, srv.URL()+"/v1/messages", `{"model":"m2","stream":true}`)
	reqs := srv.Requests()
	if len(reqs) != 2 || srv.Pending() != 1 {
		t.Fatalf("%d requests, %d pending", len(reqs), srv.Pending())
	}
	var body struct{ Model string }
	if err := reqs[1].Decode(&body); err != nil || body.Model != "m2" || !reqs[1].Stream() || reqs[0].Stream() {
		t.Fatalf("second request %+v stream=%v (%v)", body, reqs[1].Stream(), err)
	}
	if reqs[0].Method != http.MethodPost || reqs[0].Path != "/v1/messages" || reqs[0].Header.Get("Content-Type") != "application/json" {
		t.Fatalf("first request %s %s %v", reqs[0].Method, reqs[0].Path, reqs[0].Header)
	}
}

func TestServer_OpenAIStreamWireFormat(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		wantUsage bool
	}{
		{"with usage", `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`, true},
		{"without usage", `{"model":"m","stream":true}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := modeltest.NewOpenAI(t)
			srv.Push(modeltest.Reply{Content: "hi there", ToolCalls: []events.ToolCall{{ID: "c1", Name: "f", Arguments: `{"a":1}`}},
				Usage: events.Usage{PromptTokens: 2, CompletionTokens: 3}})
			status, body, h := post(t, srv.URL()+"/chat/completions", tt.body)
			if status != 200 || h.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d content type %q", status, h.Get("Content-Type"))
			}
			if !strings.HasSuffix(body, "data: [DONE]\n\n") {
				t.Errorf("stream does not end with [DONE]:\n%s", body)
			}
			if got := strings.Contains(body, `"total_tokens":5`); got != tt.wantUsage {
				t.Errorf("usage chunk present = %v, want %v", got, tt.wantUsage)
			}
			for _, frag := range []string{`"content":"hi"`, `"content":" there"`, `"id":"c1"`, `"arguments":"{\"a\""`, `"finish_reason":"tool_calls"`} {
				if !strings.Contains(body, frag) {
					t.Errorf("stream lacks %s:\n%s", frag, body)
				}
			}
		})
	}
}

func TestServer_AnthropicStreamWireFormat(t *testing.T) {
	srv := modeltest.NewAnthropic(t)
	srv.Push(modeltest.Reply{Content: "hi", ToolCalls: []events.ToolCall{{ID: "t1", Name: "f", Arguments: `{"a":1}`}},
		Usage: events.Usage{PromptTokens: 2, CompletionTokens: 3}})
	_, body, _ := post(t, srv.URL()+"/v1/messages", `{"model":"m","stream":true}`)
	var names []string
	for _, line := range strings.Split(body, "\n") {
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			names = append(names, name)
		}
	}
	want := "message_start ping content_block_start content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
}

func TestServer_ErrorBodies(t *testing.T) {
	tests := []struct {
		name string
		srv  func(testing.TB) *modeltest.Server
		path string
		want string
	}{
		{"openai", modeltest.NewOpenAI, "/chat/completions", `"code":"rate_limit_exceeded"`},
		{"anthropic", modeltest.NewAnthropic, "/v1/messages", `"type":"rate_limit_error"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := tt.srv(t)
			srv.Push(modeltest.Reply{Status: 429, RetryAfter: "7", Message: "slow"})
			status, body, h := post(t, srv.URL()+tt.path, `{"model":"m"}`)
			if status != 429 || h.Get("Retry-After") != "7" || !strings.Contains(body, tt.want) || !strings.Contains(body, `"message":"slow"`) {
				t.Fatalf("status %d retry-after %q body %s", status, h.Get("Retry-After"), body)
			}
		})
	}
}

func TestServer_CloseRefusesConnections(t *testing.T) {
	srv := modeltest.NewOpenAI(t)
	srv.Close()
	if _, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(`{}`)); err == nil {
		t.Fatal("a closed server answered")
	}
	srv.Close() // again, and the cleanup: harmless
}
