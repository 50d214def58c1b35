package builtin_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/builtin"
	"github.com/gorath/rath/flow/model/scripted"
)

// An agent with three of the built-in tools, driven by a scripted model,
// works in a local workspace; every result carries its evidence.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "rath-builtin-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	rt, err := rath.Open(ctx, dir+"/rt")
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	tools, err := builtin.New(rt.Sandboxes(), "write_workspace_file", "run_shell_command", "read_workspace_file")
	if err != nil {
		log.Fatal(err)
	}
	model := scripted.New(
		scripted.Entry{ToolCalls: []scripted.ToolCall{{ID: "w", Name: "write_workspace_file", Arguments: `{"path":"greet.sh","content":"echo hello from the workspace\n"}`}}},
		scripted.Entry{ToolCalls: []scripted.ToolCall{{ID: "x", Name: "run_shell_command", Arguments: `{"cmd":"sh greet.sh | tee out.txt; rm greet.sh"}`}}},
		scripted.Entry{ToolCalls: []scripted.ToolCall{{ID: "r", Name: "read_workspace_file", Arguments: `{"path":"../secret"}`}}},
		scripted.Entry{Content: "Done."},
	)
	p, err := flow.ResolveProvider(flow.Provider{Client: model, Model: "scripted"}, flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: dir + "/none.json"})
	if err != nil {
		log.Fatal(err)
	}
	agent, err := flow.NewAgent("You work in the workspace.", p, flow.WithTools(tools...))
	if err != nil {
		log.Fatal(err)
	}

	s, err := rt.NewUserSession(ctx, "Greet, then clean up.")
	if err != nil {
		log.Fatal(err)
	}
	if s, err = s.To(ctx, "local", dir+"/work"); err != nil {
		log.Fatal(err)
	}
	out, err := agent.Forward(ctx, s)
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range out.Chunks() {
		if c.Role == events.RoleToolResult {
			fmt.Printf("%s:\n%s\n", c.Name, c.Content)
		}
	}
	evs, err := rt.Store().ReadStream(ctx, out.ID(), 1)
	if err != nil {
		log.Fatal(err)
	}
	for _, ev := range evs {
		p, err := ev.Decode()
		if err != nil {
			log.Fatal(err)
		}
		if r, ok := p.(*events.ToolReturned); ok {
			fmt.Printf("%s on %s: %d file changes", r.Tool, r.Backend, len(r.Files))
			for _, f := range r.Files {
				fmt.Printf(" [%s %.8s -> %.8s]", f.Path, f.Before, f.After)
			}
			fmt.Println()
		}
	}
	// Output:
	// write_workspace_file:
	// created greet.sh (30 bytes)
	// run_shell_command:
	// exit code: 0
	// stdout:
	// hello from the workspace
	// [files changed: greet.sh (deleted), out.txt (created)]
	// read_workspace_file:
	// error (tool_error): read "../secret": sandbox: path escapes the workspace (paths are relative to the workspace root and must stay inside it)
	// write_workspace_file on local: 1 file changes [greet.sh  -> da8b19c2]
	// run_shell_command on local: 2 file changes [greet.sh da8b19c2 -> ] [out.txt  -> 6669e500]
	// read_workspace_file on local: 0 file changes
}
