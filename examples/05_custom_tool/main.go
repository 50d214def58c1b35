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

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/examples/internal/exkit"
	"github.com/gorath/rath/flow"
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

	rt, cleanup := exkit.Open(ctx, *dir)
	defer cleanup()

	// Read-only, so it may run concurrently with other calls of a round.
	lookup, err := flow.NewTool("lookup_order", "Look up the status of an order by its number.", lookupOrder, flow.WithParallelSafe())
	exkit.Check(err)
	fmt.Println("schema the model sees:", string(lookup.Schema()))

	p, err := exkit.Provider(cassette, *live)
	exkit.Check(err)
	agent, err := flow.NewAgent("You answer questions about orders. Use lookup_order.", p, flow.WithTools(lookup))
	exkit.Check(err)

	question, err := rt.NewUserSession(ctx, "Where are my orders A-1001 and A-1002?")
	exkit.Check(err)
	run, err := rt.Start(ctx, "orders", agent, question, rath.WithSeed("custom-tool"))
	exkit.Check(err)

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
	exkit.Check(err)
	exkit.Verdict("replay", rep)
}
