package flow_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/session"
)

// Two agents in sequence on a scripted model: each writes one turn,
// authored by its module path.
func ExampleSequential() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rath-example")
	defer os.RemoveAll(dir)
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	p := flow.Scripted(
		scripted.Entry{Agent: "root.writer", Content: "Logs flow, append-only."},
		scripted.Entry{Agent: "root.critic", Content: "Good: short and true."},
	)
	writer, _ := flow.NewAgent("Write one line.", p, flow.WithName("writer"))
	critic, _ := flow.NewAgent("Judge the line.", p, flow.WithName("critic"))

	s, _ := rt.NewUserSession(ctx, "A line about event logs, please.")
	out, err := flow.NewSequential(writer, critic).Forward(ctx, s)
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range out.Chunks()[1:] {
		fmt.Printf("%s: %s\n", c.Author, c.Content)
	}
	// Output:
	// root.writer: Logs flow, append-only.
	// root.critic: Good: short and true.
}

// A custom tool whose schema is derived from a Go struct.
func ExampleNewTool() {
	type args struct {
		City string `json:"city" jsonschema:"the city to look up"`
	}
	tool, err := flow.NewTool("weather", "Today's weather in a city.", func(ctx context.Context, s *session.Session, a args) (string, error) {
		return "sunny in " + a.City, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tool.Name())
	fmt.Println(string(tool.Schema()))
	// Output:
	// weather
	// {"type":"object","properties":{"city":{"type":"string","description":"the city to look up"}},"required":["city"],"additionalProperties":false}
}

// Every model request of a run can be rebuilt from the log; a
// RequestLoader shares the decoding of the history successive calls have
// in common.
func ExampleRequestLoader() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rath-example")
	defer os.RemoveAll(dir)
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	agent, _ := flow.NewAgent("Answer briefly.", flow.Scripted(scripted.Entry{Content: "Paris."}, scripted.Entry{Content: "Rome."}))
	s, _ := rt.NewUserSession(ctx, "Capital of France?")
	s, _ = agent.Forward(ctx, s)
	s, _ = s.Append(ctx, session.Chunk{Role: "user", Content: "And of Italy?"})
	s, _ = agent.Forward(ctx, s)

	evs, _ := rt.Store().ReadStream(ctx, s.ID(), 1)
	requests := flow.NewRequestLoader(rt.Store())
	for _, ev := range evs {
		p, err := ev.Decode()
		if err != nil {
			log.Fatal(err)
		}
		if call, ok := p.(*events.ProviderCalled); ok {
			req, err := requests.Load(ctx, call.RequestRef)
			if err != nil {
				log.Fatal(err)
			}
			last := req.Messages[len(req.Messages)-1]
			fmt.Printf("%d messages, the last: %s\n", len(req.Messages), last.Content)
		}
	}
	// Output:
	// 2 messages, the last: Capital of France?
	// 4 messages, the last: And of Italy?
}

// AnnotationsOf reads a tool's hints about its effects (MCP tools carry
// their server's annotations); a tool without them knows nothing.
func ExampleAnnotationsOf() {
	t, err := flow.NewTool("clock", "Tell the time.", func(context.Context, *session.Session, struct{}) (string, error) {
		return "noon", nil
	})
	if err != nil {
		panic(err)
	}
	a := flow.AnnotationsOf(t)
	fmt.Println(a.ReadOnly, a.Destructive == nil)
	// Output: false true
}

// A run records what its provider resolved to, never the key; a replay on
// another machine rebuilds the same provider from that record alone,
// answering with a client of its own.
func ExampleProvider_Recordable() {
	p, err := flow.ResolveProvider(flow.Provider{Vendor: flow.VendorOpenAI, Model: "m", BaseURL: "https://user:pw@llm.example/v1?key=k", APIKey: "sk-secret"},
		flow.ResolveOptions{Models: rath.Models(), Getenv: func(string) string { return "" }, ConfigPath: os.DevNull + ".none"})
	if err != nil {
		log.Fatal(err)
	}
	rec := p.Recordable()
	fmt.Println(rec.Vendor, rec.Model, rec.BaseURL, rec.APIKey == "", rec.Retry.MaxAttempts)

	replayed := flow.FromRecord(rec, scripted.New(scripted.Entry{Content: "from the record"}))
	fmt.Println(replayed.Vendor, replayed.Model)
	// Output:
	// openai m https://llm.example/v1 true 4
	// openai m
}

// A caller that records its own end takes the root workflow's exit record
// and writes it with that end, in one commit.
func ExampleContextDeferringExit() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rath-example")
	defer os.RemoveAll(dir)
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	s, _ := rt.NewUserSession(ctx, "hello")

	dctx, exit := flow.ContextDeferringExit(ctx)
	greet := flow.Func(func(ctx context.Context, s *session.Session) (*session.Session, error) {
		return s.Append(ctx, session.Chunk{Role: "assistant", Content: "hi"})
	})
	out, err := flow.Forward(dctx, greet, s)
	if err != nil {
		log.Fatal(err)
	}
	w, _ := exit.Write()
	// Here with the caller's own end record, in the same append.
	if _, err := rt.Store().AppendWrites(ctx, w); err != nil {
		log.Fatal(err)
	}
	evs, _ := rt.Store().ReadStream(ctx, out.ID(), 1)
	for _, ev := range evs {
		fmt.Println(ev.Type)
	}
	fmt.Println("output at the exit record:", out.Version() == evs[len(evs)-1].Version)
	// Output:
	// session.created
	// workflow.entered
	// chunk.appended
	// workflow.exited
	// output at the exit record: true
}
