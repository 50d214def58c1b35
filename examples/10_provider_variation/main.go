// Command 10_provider_variation runs the same agent against two wire
// formats: the OpenAI chat-completions API and the Anthropic messages API.
// Only the flow.Provider changes (Kind, BaseURL, Model); the agent, its
// tool and the transcript it records are the same.
//
// Offline, two in-process HTTP servers (net/http/httptest) play the APIs:
// each decodes its wire format, takes the next turn from cassette.json
// (written by hand, not recorded from a real model) and answers in its wire
// format. The program prints what each API received, both transcripts,
// and replays both runs after shutting the servers down: a replay needs
// no network.
//
//	go run ./examples/10_provider_variation
//
// With -live it calls the real APIs instead (OPENAI_API_KEY and
// ANTHROPIC_API_KEY must both be set): the providers then differ only in
// Kind and Model.
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/session"
)

//go:embed cassette.json
var cassette []byte

type celsiusArgs struct {
	Fahrenheit float64 `json:"fahrenheit" jsonschema:"the temperature in degrees Fahrenheit"`
}

// newAgent is the one agent definition both providers run.
func newAgent(p *flow.Provider) (*flow.Agent, error) {
	toCelsius, err := flow.NewTool("to_celsius", "Convert degrees Fahrenheit to Celsius.",
		func(_ context.Context, _ *session.Session, a celsiusArgs) (string, error) {
			return fmt.Sprintf("%.1f", (a.Fahrenheit-32)*5/9), nil
		})
	if err != nil {
		return nil, err
	}
	return flow.NewAgent("You answer questions about temperatures. Convert with to_celsius.", p, flow.WithTools(toCelsius))
}

func main() {
	dir := flag.String("dir", "", "runtime directory to keep (default: a temporary one, removed at exit)")
	live := flag.Bool("live", false, "call the real OpenAI and Anthropic APIs")
	flag.Parse()
	ctx := context.Background()

	rt, cleanup := openRuntime(ctx, *dir)
	defer cleanup()

	providers := []flow.Provider{
		{Vendor: flow.VendorOpenAI, Model: "gpt-4o-mini"},
		{Vendor: flow.VendorAnthropic, Model: "claude-sonnet-4-5"},
	}
	apis := []*fakeAPI{nil, nil}
	if !*live {
		// Point each provider at its fake; the key is sent as each API
		// expects, and never recorded.
		apis = []*fakeAPI{newFakeAPI(openaiWire), newFakeAPI(anthropicWire)}
		providers[0].BaseURL, providers[0].APIKey = apis[0].srv.URL+"/v1", "sk-example"
		providers[1].BaseURL, providers[1].APIKey = apis[1].srv.URL, "example-key"
	}

	var runs []*rath.Run
	var agents []*flow.Agent
	for i, cfg := range providers {
		p, err := rath.NewProvider(cfg)
		check(err)
		agent, err := newAgent(p)
		check(err)
		q, err := rt.NewUserSession(ctx, "What is 451 °F in Celsius?")
		check(err)
		run, err := rt.Start(ctx, "temperature-"+cfg.Vendor, agent, q, rath.WithSeed("provider-"+cfg.Vendor))
		check(err)
		runs, agents = append(runs, run), append(agents, agent)

		fmt.Printf("== %s (%s)\n", cfg.Vendor, cfg.Model)
		if apis[i] != nil {
			fmt.Println("  the API received:")
			for _, line := range apis[i].requests() {
				fmt.Println("   ", line)
			}
		}
		fmt.Println("  transcript:")
		for _, line := range transcript(run.Output) {
			fmt.Println("   ", line)
		}
	}
	fmt.Println("same transcript both ways:", slices.Equal(transcript(runs[0].Output), transcript(runs[1].Output)))

	for _, api := range apis {
		if api != nil {
			api.srv.Close() // a replay needs no model
		}
	}
	for i, run := range runs {
		rep, err := replay.Run(ctx, rt, run.ID, agents[i])
		check(err)
		verdict(providers[i].Vendor+" replay (no server)", rep)
	}
}

// transcript renders a session's chunks, one line each.
func transcript(s *session.Session) []string {
	var lines []string
	for _, c := range s.Chunks() {
		line := c.Role + ": " + c.Content
		for _, tc := range c.ToolCalls {
			line += fmt.Sprintf("[call %s %s]", tc.Name, tc.Arguments)
		}
		lines = append(lines, line)
	}
	return lines
}

// fakeAPI is an in-process HTTP server answering from the cassette in one
// wire format, and a log of what it received.
type fakeAPI struct {
	srv    *httptest.Server
	script *scripted.Client

	mu  sync.Mutex // protects log
	log []string
}

// wireFormat is how a fake API reads and writes one API's JSON: decode
// turns a request into a log line and a model.Request (enough for the
// cassette's expectations), encode turns a response into the API's body.
type wireFormat struct {
	path   string
	decode func(h http.Header, body []byte) (string, model.Request, error)
	encode func(resp model.Response) any
}

func newFakeAPI(f wireFormat) *fakeAPI {
	script, err := scripted.Parse(cassette)
	check(err)
	a := &fakeAPI{script: script}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != f.path {
			http.NotFound(w, r)
			return
		}
		var body json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		line, req, err := f.decode(r.Header, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp, err := a.script.Complete(r.Context(), req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		a.mu.Lock()
		a.log = append(a.log, "POST "+f.path+" "+line)
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		// A write error is the client's to see; the server has nothing to add.
		_ = json.NewEncoder(w).Encode(f.encode(resp))
	}))
	return a
}

func (a *fakeAPI) requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.log)
}

// The OpenAI chat-completions format: a system message in the list,
// tool results as role "tool" messages, arguments as a JSON string.
var openaiWire = wireFormat{
	path: "/v1/chat/completions",
	decode: func(h http.Header, body []byte) (string, model.Request, error) {
		var in struct {
			Model    string `json:"model"`
			Messages []struct {
				Role       string `json:"role"`
				Content    string `json:"content"`
				ToolCallID string `json:"tool_call_id"`
			} `json:"messages"`
			Tools []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(body, &in); err != nil {
			return "", model.Request{}, err
		}
		req := model.Request{Model: in.Model}
		var roles []string
		for _, m := range in.Messages {
			roles = append(roles, m.Role)
			role := m.Role
			if role == "tool" {
				role = events.RoleToolResult
			}
			req.Messages = append(req.Messages, model.Message{Role: role, Content: m.Content, ToolCallID: m.ToolCallID})
		}
		auth := "no key"
		if strings.HasPrefix(h.Get("Authorization"), "Bearer ") {
			auth = "Authorization: Bearer <key>"
		}
		line := fmt.Sprintf("%s; messages %v; %d tool(s)", auth, roles, len(in.Tools))
		return line, req, nil
	},
	encode: func(resp model.Response) any {
		msg := map[string]any{"role": "assistant", "content": resp.Content}
		finish := "stop"
		if len(resp.ToolCalls) > 0 {
			finish = "tool_calls"
			var calls []any
			for _, tc := range resp.ToolCalls {
				calls = append(calls, map[string]any{"id": tc.ID, "type": "function",
					"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}})
			}
			msg["tool_calls"] = calls
		}
		return map[string]any{
			"id": "chatcmpl-example", "object": "chat.completion", "model": resp.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage": map[string]any{"prompt_tokens": resp.Usage.PromptTokens, "completion_tokens": resp.Usage.CompletionTokens,
				"total_tokens": resp.Usage.PromptTokens + resp.Usage.CompletionTokens},
		}
	},
}

// The Anthropic messages format: the system prompt apart, content as
// typed blocks, tool results as tool_result blocks in a user message,
// arguments as a JSON object.
var anthropicWire = wireFormat{
	path: "/v1/messages",
	decode: func(h http.Header, body []byte) (string, model.Request, error) {
		var in struct {
			Model    string          `json:"model"`
			System   json.RawMessage `json:"system"`
			Messages []struct {
				Role    string `json:"role"`
				Content []struct {
					Type      string          `json:"type"`
					Text      string          `json:"text"`
					ToolUseID string          `json:"tool_use_id"`
					Content   json.RawMessage `json:"content"`
				} `json:"content"`
			} `json:"messages"`
			Tools []json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(body, &in); err != nil {
			return "", model.Request{}, err
		}
		req := model.Request{Model: in.Model}
		var shapes []string
		for _, m := range in.Messages {
			var types []string
			for _, b := range m.Content {
				types = append(types, b.Type)
				switch b.Type {
				case "text":
					req.Messages = append(req.Messages, model.Message{Role: m.Role, Content: b.Text})
				case "tool_result":
					req.Messages = append(req.Messages, model.Message{Role: events.RoleToolResult, ToolCallID: b.ToolUseID, Content: blockText(b.Content)})
				}
			}
			shapes = append(shapes, m.Role+"("+strings.Join(types, ",")+")")
		}
		auth := "no key"
		if h.Get("X-Api-Key") != "" {
			auth = "x-api-key: <key>"
		}
		line := fmt.Sprintf("%s, anthropic-version: %s; system prompt apart: %v; messages %v; %d tool(s)",
			auth, h.Get("Anthropic-Version"), len(in.System) > 0, shapes, len(in.Tools))
		return line, req, nil
	},
	encode: func(resp model.Response) any {
		var blocks []any
		if resp.Content != "" {
			blocks = append(blocks, map[string]any{"type": "text", "text": resp.Content})
		}
		stop := "end_turn"
		for _, tc := range resp.ToolCalls {
			stop = "tool_use"
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": json.RawMessage(tc.Arguments)})
		}
		return map[string]any{
			"id": "msg_example", "type": "message", "role": "assistant", "model": resp.Model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": resp.Usage.PromptTokens, "output_tokens": resp.Usage.CompletionTokens},
		}
	},
}

// blockText reads a tool_result's content: a string or text blocks.
func blockText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &blocks)
	var parts []string
	for _, b := range blocks {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "")
}

// openRuntime opens the runtime in dir, or in a temporary directory
// removed by the returned func when dir is empty.
func openRuntime(ctx context.Context, dir string) (*rath.Runtime, func()) {
	remove := func() {}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "rath-example-")
		check(err)
		dir, remove = filepath.Join(tmp, "store"), func() { os.RemoveAll(tmp) }
	}
	rt, err := rath.Open(ctx, dir)
	check(err)
	return rt, func() {
		check(rt.Close())
		remove()
	}
}

// verdict prints the replay's verdict and exits 1 if it diverged.
func verdict(label string, rep *replay.Report) {
	if !rep.OK() {
		fmt.Printf("%s: %d of %d events reproduced, then diverged:\n%v\n", label, rep.Matched, rep.Recorded, rep.Divergence)
		os.Exit(1)
	}
	fmt.Printf("%s: %d of %d events reproduced (100%%)\n", label, rep.Matched, rep.Recorded)
}

// check stops the program on an error, as an example's main may.
func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
