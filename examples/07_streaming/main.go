// Command 07_streaming streams an agent's answers with flow.WithStreaming:
// text and tool-call fragments reach a callback as they arrive, while the
// log still gets each assistant turn once, whole, so a replay compares
// complete chunks (and gives the callback each recorded turn in one
// piece).
//
// Run it offline; cassette.json holds the turns, written by hand, and the
// scripted client streams them word by word:
//
//	go run ./examples/07_streaming
//
// With -live a real model streams (OPENAI_API_KEY, ANTHROPIC_API_KEY or
// ~/.rath/config.json); -dir DIR keeps the database.
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/examples/internal/exkit"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/session"
)

//go:embed cassette.json
var cassette []byte

type countArgs struct {
	Text string `json:"text" jsonschema:"the text whose words to count"`
}

func countWords(_ context.Context, _ *session.Session, a countArgs) (string, error) {
	return fmt.Sprintf("%d words", len(strings.Fields(a.Text))), nil
}

// printer writes streamed deltas as they arrive: text as is, a tool call
// as its name then its argument fragments separated by dots.
type printer struct {
	w      io.Writer
	deltas int
	inCall bool
}

func (p *printer) delta(d model.Delta) {
	p.deltas++
	switch {
	case d.Content != "":
		p.endCall()
		fmt.Fprint(p.w, d.Content)
	case d.ToolName != "":
		p.endCall()
		fmt.Fprintf(p.w, "\n[call %s ", d.ToolName)
		p.inCall = true
	case d.Arguments != "":
		fmt.Fprint(p.w, d.Arguments, "·")
	}
}

func (p *printer) endCall() {
	if p.inCall {
		fmt.Fprintln(p.w, "]")
		p.inCall = false
	}
}

// newAgent builds the agent, streaming to pr.
func newAgent(p *flow.Provider, pr *printer) (*flow.Agent, error) {
	count, err := flow.NewTool("count_words", "Count the words of a text.", countWords)
	if err != nil {
		return nil, err
	}
	return flow.NewAgent("You answer questions about text. Use count_words to count.", p,
		flow.WithTools(count), flow.WithStreaming(pr.delta))
}

func main() {
	dir := flag.String("dir", "", "runtime directory to keep (default: a temporary one, removed at exit)")
	live := flag.Bool("live", false, "call a real model instead of the cassette")
	flag.Parse()
	ctx := context.Background()

	rt, cleanup := exkit.Open(ctx, *dir)
	defer cleanup()

	p, err := exkit.Provider(cassette, *live)
	exkit.Check(err)
	pr := &printer{w: os.Stdout}
	agent, err := newAgent(p, pr)
	exkit.Check(err)

	question, err := rt.NewUserSession(ctx, "How many words are in 'the quick brown fox jumps over the lazy dog'?")
	exkit.Check(err)
	fmt.Println("streaming:")
	run, err := rt.Start(ctx, "stream", agent, question, rath.WithSeed("streaming"))
	exkit.Check(err)
	pr.endCall()
	fmt.Println()

	// The log holds whole turns, not fragments.
	var turns int
	for _, c := range run.Output.Chunks() {
		if c.Role == events.RoleAssistant {
			turns++
		}
	}
	fmt.Printf("%d deltas streamed; the session holds %d assistant chunks, each appended once, whole\n", pr.deltas, turns)
	last, _ := run.Output.Last()
	fmt.Println("final chunk:", last.Content)

	// In a replay the callback gets each recorded turn in one piece; here
	// it writes nowhere.
	quiet, err := newAgent(p, &printer{w: io.Discard})
	exkit.Check(err)
	rep, err := replay.Run(ctx, rt, run.ID, quiet)
	exkit.Check(err)
	exkit.Verdict("replay", rep)
}
