// Command 02_session_lineage shows what makes a session a value: immutable
// handles, Fork, Merge and Detach, the lineage graph they leave behind, and
// a JSONL export of a session that OpenRath (Python) can read.
//
// A recorded run drafts a picnic plan, forks the draft to explore a rainy
// day variant, and merges both. Afterwards the program detaches a copy to
// share (same chunks, no lineage edge), shows that writing through an old
// handle is refused, prints the graph and exports the copy.
//
// Run it offline; the model turns come from cassette.json, written by hand:
//
//	go run ./examples/02_session_lineage
//
// With -live it calls a real model (OPENAI_API_KEY, ANTHROPIC_API_KEY or a
// default provider in ~/.rath/config.json); with -dir DIR it keeps the
// database and shared.jsonl in DIR (then try: bin/rath --dir DIR graph).
//
// The program is also a rath CLI that knows its workflow, to replay its
// runs from the store it kept:
//
//	go run ./examples/02_session_lineage rath --dir DIR replay RUN
package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/cmd/rath/cli"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/session"
	"github.com/gorath/rath/session/jsonl"
)

//go:embed cassette.json
var cassette []byte

// workflowName is the name the runs record, and the CLI registers.
const workflowName = "plan"

func main() {
	// The stock rath cannot replay this program's runs: the workflow is Go
	// code (a flow.Func) the log does not describe. "rath ARGS" makes the
	// program a rath CLI with the same workflow registered, which can.
	if len(os.Args) > 1 && os.Args[1] == "rath" {
		os.Args = os.Args[1:]
		cli.Main(cli.Config{Setup: func(_ context.Context, rt *rath.Runtime) error {
			p, err := provider(cassette, false) // a replay answers the model from the record
			if err != nil {
				return err
			}
			rt.Register(workflowName, lineage(p))
			return nil
		}})
	}

	dir := flag.String("dir", "", "runtime directory to keep (default: a temporary one, removed at exit)")
	live := flag.Bool("live", false, "call a real model instead of the cassette")
	flag.Parse()
	ctx := context.Background()

	rt, cleanup := openRuntime(ctx, *dir)
	defer cleanup()

	p, err := provider(cassette, *live)
	check(err)
	plan := lineage(p)

	question, err := rt.NewUserSession(ctx, "Plan a picnic for Saturday.")
	check(err)
	run, err := rt.Start(ctx, workflowName, plan, question, rath.WithSeed("session-lineage"))
	check(err)
	merged := run.Output

	fmt.Println("merged plan:")
	for _, c := range merged.Chunks() {
		fmt.Printf("  %-10s %s\n", c.Role+":", c.Content)
	}

	// Handles are immutable: the question handle is still version 1, while
	// the run appended to its session. Writing through it is refused.
	_, err = question.Append(ctx, session.Chunk{Role: events.RoleUser, Content: "One more thing..."})
	var stale *session.StaleError
	if !errors.As(err, &stale) {
		log.Fatalf("expected a stale handle error, got %v", err)
	}
	fmt.Printf("stale handle refused: handle at version %d, session at version %d\n", stale.Have, stale.Head)

	// Detach: same chunks, no lineage parent. The log still records where
	// it came from (the export's "source" field says so).
	shared, err := merged.Detach(ctx)
	check(err)

	names := map[string]string{question.ID(): "question", merged.ID(): "merged", shared.ID(): "shared"}
	for _, id := range merged.Parents() {
		if names[id] == "" {
			names[id] = "rainy"
		}
	}
	check(printGraph(ctx, rt, names))

	// Export the shared copy as JSONL (the OpenRath v1 record format).
	file := filepath.Join(rt.Dir(), "shared.jsonl")
	f, err := os.Create(file)
	check(err)
	check(jsonl.Export(ctx, rt.Sessions(), shared.ID(), f))
	check(f.Close())
	data, err := os.ReadFile(file)
	check(err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	fmt.Printf("exported shared to %s: %d records (header, %d chunks, trailer); header:\n  %s\n",
		filepath.Base(file), len(lines), shared.Len(), lines[0])

	rep, err := replay.Run(ctx, rt, run.ID, plan)
	check(err)
	verdict("replay", rep)
}

// lineage is the workflow: draft, fork the draft to explore a variant,
// merge.
func lineage(p *flow.Provider) flow.Workflow {
	planner, err := flow.NewAgent("You plan outings. Answer in one sentence.", p, flow.WithName("planner"))
	check(err)
	return flow.Func(func(ctx context.Context, s *session.Session) (*session.Session, error) {
		draft, err := flow.Forward(ctx, planner, s)
		if err != nil {
			return nil, err
		}
		// The fork shares the draft's chunks (no copy) and can grow on
		// its own; the draft handle does not change.
		rainy, err := draft.Fork(ctx)
		if err != nil {
			return nil, err
		}
		if rainy, err = rainy.Append(ctx, session.Chunk{Role: events.RoleUser, Content: "And what if it rains?"}); err != nil {
			return nil, err
		}
		if rainy, err = flow.Forward(ctx, planner, rainy); err != nil {
			return nil, err
		}
		// The merge holds the draft, then what the fork added after the
		// prefix they share.
		return draft.Merge(ctx, rainy)
	})
}

// printGraph prints every session with its lineage kind, then every edge
// of the session graph, naming sessions by their role in this program.
func printGraph(ctx context.Context, rt *rath.Runtime, names map[string]string) error {
	rows, err := rt.Reader().Sessions(ctx)
	if err != nil {
		return err
	}
	fmt.Println("sessions:")
	for _, r := range rows {
		fmt.Printf("  %-8s %s  %-6s %d chunks\n", names[r.ID], r.ID, r.Kind, r.Length)
	}
	edges, err := rt.Reader().Edges(ctx)
	if err != nil {
		return err
	}
	fmt.Println("graph edges (the detached copy has none):")
	for _, e := range edges {
		fmt.Printf("  %s -> %s (%s)\n", names[e.Parent], names[e.Child], e.Kind)
	}
	return nil
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
