// Command 08_compress keeps a long session short with flow.Compressor: one
// model call summarizes the session into a new one (lineage kind
// "compress", the old session as its parent) holding a summary chunk and,
// if asked, the last few chunks as they were.
//
// A researcher reads notes with a tool, the compressor squeezes the
// transcript, and a writer works from the short version. The three steps
// are a flow.Sequential.
//
// Run it offline; the model turns come from cassette.json, written by hand:
//
//	go run ./examples/08_compress
//
// With -live a real model (OPENAI_API_KEY, ANTHROPIC_API_KEY or
// ~/.rath/config.json) does the work; -dir DIR keeps the database.
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
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/session"
)

//go:embed cassette.json
var cassette []byte

var notes = map[string]string{
	"changes": "Appends now go through one writer goroutine that commits concurrent appends in groups (group commit); under 16 concurrent writers throughput went up 3x. Replay now reports the first divergence with a field-by-field diff.",
	"fixes":   "A write through a stale handle now fails with an error naming the handle's version and the session's head version, instead of a bare conflict.",
}

type noteArgs struct {
	Name string `json:"name" jsonschema:"the note to read: changes or fixes"`
}

func readNote(_ context.Context, _ *session.Session, a noteArgs) (string, error) {
	n, ok := notes[a.Name]
	if !ok {
		return "", fmt.Errorf("no note %q", a.Name)
	}
	return n, nil
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
	note, err := flow.NewTool("read_note", "Read one of the release notes.", readNote)
	check(err)
	research, err := flow.NewAgent("You research release notes with read_note and report what matters.", p,
		flow.WithTools(note), flow.WithName("research"))
	check(err)
	write, err := flow.NewAgent("You write one-paragraph release announcements.", p, flow.WithName("write"))
	check(err)
	// Summary plus the last chunk (the researcher's report), word for word.
	compress := flow.NewCompressor(p, 1).SetName("compress")

	// Compression is a step like any other.
	pipeline := flow.NewSequential(research, compress, write)

	task, err := rt.NewUserSession(ctx, "Read the release notes and write the release note announcement.")
	check(err)
	run, err := rt.Start(ctx, "announce", pipeline, task, rath.WithSeed("compress"))
	check(err)
	out := run.Output

	// The output descends from the long session through a compress edge.
	lineage := out.Lineage()
	long, err := rt.Session(ctx, lineage.Parents[0])
	check(err)
	// Time travel: the compressed session as it was when created, before
	// the writer added its turn.
	created, err := rt.Store().ReadStream(ctx, out.ID(), 1)
	check(err)
	short, err := rt.SessionAt(ctx, out.ID(), created[0].Seq)
	check(err)
	fmt.Printf("long session %s: %d chunks, %d characters\n", long.ID(), long.Len(), size(long))
	fmt.Printf("compressed into %s (lineage %s, parent %s): %d chunks, %d characters\n",
		short.ID(), lineage.Kind, lineage.Parents[0], short.Len(), size(short))
	fmt.Println("the writer's session:")
	for _, c := range out.Chunks() {
		fmt.Printf("  %-10s %s\n", c.Role+":", c.Content)
	}

	rep, err := replay.Run(ctx, rt, run.ID, pipeline)
	check(err)
	verdict("replay", rep)
}

// size counts the characters of a session's chunks.
func size(s *session.Session) int {
	n := 0
	for _, c := range s.Chunks() {
		n += len(c.Content)
	}
	return n
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
