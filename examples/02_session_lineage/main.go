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
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/examples/internal/exkit"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/session"
	"github.com/gorath/rath/session/jsonl"
)

//go:embed cassette.json
var cassette []byte

func main() {
	dir := flag.String("dir", "", "runtime directory to keep (default: a temporary one, removed at exit)")
	live := flag.Bool("live", false, "call a real model instead of the cassette")
	flag.Parse()
	ctx := context.Background()

	rt, cleanup := exkit.Open(ctx, *dir)
	defer cleanup()

	p, err := exkit.Provider(cassette, *live)
	exkit.Check(err)
	planner, err := flow.NewAgent("You plan outings. Answer in one sentence.", p, flow.WithName("planner"))
	exkit.Check(err)

	// The workflow: draft, fork the draft to explore a variant, merge.
	plan := flow.Func(func(ctx context.Context, s *session.Session) (*session.Session, error) {
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

	question, err := rt.NewUserSession(ctx, "Plan a picnic for Saturday.")
	exkit.Check(err)
	run, err := rt.Start(ctx, "plan", plan, question, rath.WithSeed("session-lineage"))
	exkit.Check(err)
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
	exkit.Check(err)

	names := map[string]string{question.ID(): "question", merged.ID(): "merged", shared.ID(): "shared"}
	for _, id := range merged.Parents() {
		if names[id] == "" {
			names[id] = "rainy"
		}
	}
	exkit.Check(printGraph(ctx, rt, names))

	// Export the shared copy as JSONL (the OpenRath v1 record format).
	file := filepath.Join(rt.Dir(), "shared.jsonl")
	f, err := os.Create(file)
	exkit.Check(err)
	exkit.Check(jsonl.Export(ctx, rt.Sessions(), shared.ID(), f))
	exkit.Check(f.Close())
	data, err := os.ReadFile(file)
	exkit.Check(err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	fmt.Printf("exported shared to %s: %d records (header, %d chunks, trailer); header:\n  %s\n",
		filepath.Base(file), len(lines), shared.Len(), lines[0])

	rep, err := replay.Run(ctx, rt, run.ID, plan)
	exkit.Check(err)
	exkit.Verdict("replay", rep)
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
