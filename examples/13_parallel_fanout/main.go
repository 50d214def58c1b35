// Command 13_parallel_fanout fans a code review out to three reviewer
// agents with flow.NewParallel: the session is forked once per reviewer,
// the reviewers run concurrently, each on its own fork, and their outputs
// are merged into one session that a lead reads to decide.
//
// The merged session's lineage records the fan-out: its parents are the
// three forks, whose parent is the review request. Each agent writes
// under its module path (root.reviewers.security, ...), which is also how
// cassette entries are routed to agents running in parallel.
//
// Run it offline; the model turns come from cassette.json, written by hand:
//
//	go run ./examples/13_parallel_fanout
//
// With -live a real model (OPENAI_API_KEY, ANTHROPIC_API_KEY or
// ~/.rath/config.json) reviews; -dir DIR keeps the database (then try:
// bin/rath --dir DIR graph, or bin/rath --dir DIR replay RUN).
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/replay"
)

//go:embed cassette.json
var cassette []byte

const change = `Review this change:

func Login(user, password string) error {
	if u, ok := users[user]; ok {
		if u.Password == password {
			return nil
		}
	}
	return ErrDenied
}`

func main() {
	dir := flag.String("dir", "", "runtime directory to keep (default: a temporary one, removed at exit)")
	live := flag.Bool("live", false, "call a real model instead of the cassette")
	flag.Parse()
	ctx := context.Background()

	rt, cleanup := openRuntime(ctx, *dir)
	defer cleanup()

	p, err := provider(cassette, *live)
	check(err)
	var reviewers []flow.Workflow
	for _, focus := range []string{"security", "style", "tests"} {
		a, err := flow.NewAgent("You review Go code for "+focus+" only. Leave one comment.", p, flow.WithName(focus))
		check(err)
		reviewers = append(reviewers, a)
	}
	lead, err := flow.NewAgent("You read the reviews and decide: approve or request changes, in one sentence.", p, flow.WithName("lead"))
	check(err)
	// Built of flow's layers only, the workflow is data the run records:
	// the stock binary replays it (rath --dir DIR replay RUN). The names
	// give the paths: root.reviewers.<focus>, root.lead.
	wf := flow.NewSequential(flow.NewParallel(reviewers...).SetName("reviewers"), lead)

	request, err := rt.NewUserSession(ctx, change)
	check(err)
	run, err := rt.Start(ctx, "review", wf, request, rath.WithSeed("fanout"))
	check(err)
	out := run.Output

	for _, c := range out.Chunks() {
		if c.Role == events.RoleAssistant {
			fmt.Printf("%-24s %s\n", c.Author+":", c.Content)
		}
	}

	// The lineage: request -> one fork per reviewer -> merge.
	fmt.Printf("review request %s\n", request.ID())
	for _, id := range out.Parents() {
		fork, err := rt.Session(ctx, id)
		check(err)
		last, _ := fork.Last()
		fmt.Printf("  forked into %s (%s of %v) by %s\n", id, fork.Lineage().Kind, fork.Lineage().Parents, last.Author)
	}
	fmt.Printf("  merged into %s (%s), %d parents, %d chunks\n", out.ID(), out.Lineage().Kind, len(out.Parents()), out.Len())

	rep, err := replay.Run(ctx, rt, run.ID, wf)
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
