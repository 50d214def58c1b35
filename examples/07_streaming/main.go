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
	"log"
	"os"
	"path/filepath"
	"strings"

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

	rt, cleanup := openRuntime(ctx, *dir)
	defer cleanup()

	p, err := provider(cassette, *live)
	check(err)
	pr := &printer{w: os.Stdout}
	agent, err := newAgent(p, pr)
	check(err)

	question, err := rt.NewUserSession(ctx, "How many words are in 'the quick brown fox jumps over the lazy dog'?")
	check(err)
	fmt.Println("streaming:")
	run, err := rt.Start(ctx, "stream", agent, question, rath.WithSeed("streaming"))
	check(err)
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
	check(err)
	rep, err := replay.Run(ctx, rt, run.ID, quiet)
	check(err)
	verdict("replay", rep)
}

// provider answers from the embedded cassette, or with -live from a real
// model (OPENAI_API_KEY, ANTHROPIC_API_KEY or ~/.rath/config.json).
func provider(cassette []byte, live bool) (*flow.Provider, error) {
	if live {
		return rath.NewProvider(flow.Provider{})
	}
	c, err := scripted.Parse(cassette)
	if err != nil {
		return nil, fmt.Errorf("parse cassette: %w", err)
	}
	return rath.NewProvider(flow.Provider{Vendor: flow.VendorScripted, Client: c, Model: "scripted"})
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
