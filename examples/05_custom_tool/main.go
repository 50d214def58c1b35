// Command 05_custom_tool gives an agent a tool written in Go with
// flow.NewTool: the argument schema the model sees is derived from a
// struct, arguments are validated against it before the call, and a bad
// call (wrong arguments, a Go error) becomes a tool_result the model can
// read and correct, with a typed error kind, never a crash.
//
// Run it offline; the model turns come from cassette.json, written by hand:
//
//	go run ./examples/05_custom_tool
//
// With -live a real model (OPENAI_API_KEY, ANTHROPIC_API_KEY or
// ~/.rath/config.json) calls the tool instead; -dir DIR keeps the database.
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
	"github.com/gorath/rath/session"
)

//go:embed cassette.json
var cassette []byte

// orderArgs are the tool's arguments. The JSON Schema the model sees is
// derived from this struct: json tags name the fields, jsonschema tags
// describe them, and fields without omitempty are required.
type orderArgs struct {
	ID string `json:"id" jsonschema:"the order number, like A-1001"`
}

// orders stands in for a real order service.
var orders = map[string]string{
	"A-1001": "shipped on Monday, arriving Thursday",
}

func lookupOrder(_ context.Context, _ *session.Session, args orderArgs) (string, error) {
	status, ok := orders[args.ID]
	if !ok {
		// An error goes back to the model as an error tool_result.
		return "", fmt.Errorf("no order %s", args.ID)
	}
	return fmt.Sprintf("order %s: %s", args.ID, status), nil
}

func main() {
	dir := flag.String("dir", "", "runtime directory to keep (default: a temporary one, removed at exit)")
	live := flag.Bool("live", false, "call a real model instead of the cassette")
	flag.Parse()
	ctx := context.Background()

	rt, cleanup := openRuntime(ctx, *dir)
	defer cleanup()

	// Read-only, so it may run concurrently with other calls of a round.
	lookup, err := flow.NewTool("lookup_order", "Look up the status of an order by its number.", lookupOrder, flow.WithParallelSafe())
	check(err)
	fmt.Println("schema the model sees:", string(lookup.Schema()))

	p, err := provider(cassette, *live)
	check(err)
	agent, err := flow.NewAgent("You answer questions about orders. Use lookup_order.", p, flow.WithTools(lookup))
	check(err)

	question, err := rt.NewUserSession(ctx, "Where are my orders A-1001 and A-1002?")
	check(err)
	run, err := rt.Start(ctx, "orders", agent, question, rath.WithSeed("custom-tool"))
	check(err)

	for _, c := range run.Output.Chunks() {
		switch {
		case c.Role == events.RoleAssistant && len(c.ToolCalls) > 0:
			for _, tc := range c.ToolCalls {
				fmt.Printf("call %s %s\n", tc.Name, tc.Arguments)
			}
		case c.Role == events.RoleToolResult && c.Meta["error_kind"] != "":
			fmt.Printf("  [%s] %s\n", c.Meta["error_kind"], c.Content)
		case c.Role == events.RoleToolResult:
			fmt.Println(" ", c.Content)
		case c.Role == events.RoleAssistant:
			fmt.Println("answer:", c.Content)
		}
	}

	rep, err := replay.Run(ctx, rt, run.ID, agent)
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
