// Command 04_tools_builtin gives an agent rath's built-in sandbox tools
// (builtin.New) and shows what the model sees and what the log keeps: each
// call's result, and evidence such as the files a call created with their
// hashes before and after.
//
// The agent writes a file, sorts it with run_shell_command, sums it with
// run_code (Python), lists the workspace and tries to read a file outside
// it, which is refused. The run is replayed twice: strictly from the record,
// then with replay.WithLiveTools, which runs the tools again in a fresh
// copy of the workspace and compares their outputs.
//
// Run it offline; the model turns come from cassette.json, written by hand:
//
//	go run ./examples/04_tools_builtin
//
// With -live a real model (OPENAI_API_KEY, ANTHROPIC_API_KEY or
// ~/.rath/config.json) drives the tools instead; -dir DIR keeps the
// database and the workspace (DIR/work).
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/examples/internal/exkit"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/builtin"
	"github.com/gorath/rath/replay"
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

	// The tools act on the sandbox of the calling session's placement,
	// taken from the runtime's pool of open sandboxes.
	tools, err := builtin.New(rt.Sandboxes(),
		builtin.WriteWorkspaceFile, builtin.RunShellCommand, builtin.RunCode,
		builtin.ListWorkspaceFiles, builtin.ReadWorkspaceFile)
	exkit.Check(err)
	p, err := exkit.Provider(cassette, *live)
	exkit.Check(err)
	agent, err := flow.NewAgent("You work with files in your workspace. Use the tools; be brief.", p, flow.WithTools(tools...))
	exkit.Check(err)

	task, err := rt.NewUserSession(ctx, "Save the numbers 42, 7 and 19, sort them, add them up, and tell me.")
	exkit.Check(err)
	task, err = task.To(ctx, "local", exkit.Workspace(rt, "work"))
	exkit.Check(err)
	run, err := rt.Start(ctx, "numbers", agent, task, rath.WithSeed("tools-builtin"))
	exkit.Check(err)

	for _, c := range run.Output.Chunks() {
		switch c.Role {
		case events.RoleAssistant:
			for _, tc := range c.ToolCalls {
				fmt.Printf("call %s %s\n", tc.Name, tc.Arguments)
			}
			if c.Content != "" {
				fmt.Println("answer:", c.Content)
			}
		case events.RoleToolResult:
			fmt.Println(indent(c.Content))
		}
	}

	// The evidence: every tool.returned event names the backend and the
	// files the call changed, with content hashes (contents are blobs).
	evs, err := rt.Store().Read(ctx, events.Query{Stream: run.Output.ID(), Types: []string{events.TypeToolReturned}})
	exkit.Check(err)
	fmt.Println("evidence:")
	for _, ev := range evs {
		payload, err := ev.Decode()
		exkit.Check(err)
		r := payload.(*events.ToolReturned)
		line := fmt.Sprintf("  %-20s on %s", r.Tool, r.Backend)
		if r.ErrorKind != "" {
			line += ", error kind " + r.ErrorKind
		}
		for _, f := range r.Files {
			line += fmt.Sprintf(", %s %s", f.Path, change(f))
		}
		fmt.Println(line)
	}

	rep, err := replay.Run(ctx, rt, run.ID, agent)
	exkit.Check(err)
	exkit.Verdict("replay", rep)
	rep, err = replay.Run(ctx, rt, run.ID, agent, replay.WithLiveTools())
	exkit.Check(err)
	exkit.Verdict("replay with live tools", rep)
}

func change(f events.FileChange) string {
	switch {
	case f.Before == "":
		return "created"
	case f.After == "":
		return "deleted"
	}
	return "modified"
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
