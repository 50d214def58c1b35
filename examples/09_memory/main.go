// Command 09_memory gives an agent long-term memory with flow.WithMemory:
// before each forward it recalls what it knows about the user (BM25 over
// the memories of a namespace) and injects the hits as memory chunks;
// after it, it commits the session as short memos that one model call
// extracts.
//
// Two runs on two unrelated sessions: in the first, Ann states her
// preferences; in the second, a new question, the agent recalls them.
// Memories are events in the same log (rt.Memory), and each recall is
// recorded with its hits, so both runs replay exactly even if the index
// changes later.
//
// Run it offline; the model turns come from cassette.json, written by hand:
//
//	go run ./examples/09_memory
//
// With -live a real model (OPENAI_API_KEY, ANTHROPIC_API_KEY or
// ~/.rath/config.json) answers and extracts; with -dir DIR the memories
// persist across invocations (then try: bin/rath --dir DIR memory list user/ann).
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
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/memory"
	"github.com/gorath/rath/replay"
)

//go:embed cassette.json
var cassette []byte

func main() {
	dir := flag.String("dir", "", "runtime directory to keep (default: a temporary one, removed at exit)")
	live := flag.Bool("live", false, "call a real model instead of the cassette")
	flag.Parse()
	ctx := context.Background()

	rt, cleanup := openRuntime(ctx, *dir)
	defer cleanup()

	mem, err := rt.Memory(ctx) // the runtime's memory: events in the log, a BM25 index beside it
	check(err)
	p, err := provider(cassette, *live)
	check(err)
	ns := memory.UserNamespace("ann")
	assistant, err := flow.NewAgent("You are Ann's assistant. Follow what you remember about her.", p,
		flow.WithMemory(mem, flow.MemoryOptions{Namespace: ns, TopK: 3, Commit: true, Extract: p}))
	check(err)

	questions := []string{
		"I'm Ann. I prefer metric units and short answers. How long is a marathon?",
		"Answer briefly, in my units: how tall is Mount Everest?",
	}
	for i, q := range questions {
		s, err := rt.NewUserSession(ctx, q)
		check(err)
		run, err := rt.Start(ctx, fmt.Sprintf("ask-%d", i+1), assistant, s, rath.WithSeed(fmt.Sprintf("memory-%d", i+1)))
		check(err)

		fmt.Printf("run %d, session %s\n", i+1, run.Output.ID())
		for _, c := range run.Output.Chunks() {
			fmt.Printf("  %-10s %s\n", c.Role+":", c.Content)
		}
		items, err := mem.List(ctx, ns)
		check(err)
		fmt.Printf("  memories of %s now:", ns)
		for _, it := range items {
			fmt.Printf(" %q", it.Text)
		}
		fmt.Println()

		rep, err := replay.Run(ctx, rt, run.ID, assistant)
		check(err)
		verdict("  replay", rep)
	}

	// Each recall is an event with its hits: what the agent knew, when.
	recalls, err := rt.Store().Read(ctx, eventlog.Query{Types: []string{events.TypeMemoryRecalled}})
	check(err)
	for _, ev := range recalls {
		payload, err := ev.Decode()
		check(err)
		r := payload.(*events.MemoryRecalled)
		fmt.Printf("recall at seq %d for %q: %d hits\n", ev.Seq, r.Query, len(r.Hits))
	}
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
